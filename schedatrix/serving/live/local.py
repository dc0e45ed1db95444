"""The emulator as a child process on a free loopback port, for a lesson or a script: started,
its address read from its first line, and stopped cleanly (SIGTERM, then a kill if it hangs).

    emu = start_local("--speed", "4")      # schedatrix serving emulate --port 0 --speed 4
    ... emu.url ...                        # http://127.0.0.1:PORT
    emu.stop()                             # 0: it stopped cleanly

:func:`run_json` runs any ``schedatrix`` command the same way, as a shell would, and returns the
JSON it printed (``--json``). Needs the live extra (the emulator does).
"""

from __future__ import annotations

import atexit
import json
import re
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

__all__ = ["Local", "start_local", "run_json"]

_READY = re.compile(r" on (http://127\.0\.0\.1:\d+) at ")


@dataclass
class Local:
    """A running emulator: its process, its root URL and the line it started with."""

    proc: subprocess.Popen
    url: str
    banner: str

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout_s: float = 15.0) -> int:
        """SIGTERM, wait for it to end (a kill after ``timeout_s``): its exit status."""
        if self.running:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
        return self.proc.returncode


def start_local(*args: str, timeout_s: float = 60.0) -> Local:
    """``schedatrix serving emulate --host 127.0.0.1 --port 0 ARGS``, once it listens."""
    proc = subprocess.Popen([sys.executable, "-m", "schedatrix", "serving", "emulate",
                             "--host", "127.0.0.1", "--port", "0", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env())
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    end, line = time.monotonic() + timeout_s, ""
    try:
        while time.monotonic() < end and sel.select(timeout=max(0.0, end - time.monotonic())):
            line = proc.stdout.readline()
            if _READY.search(line) or not line:
                break
    finally:
        sel.close()
    m = _READY.search(line)
    if not m:
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"the emulator did not start: {(err or line).strip()[-300:]}")
    local = Local(proc, m.group(1), line.strip())
    atexit.register(local.stop)          # a kernel or script that ends stops it too
    return local


def _env() -> dict:
    import os
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def run_json(*args: str, timeout_s: float = 600.0) -> dict:
    """``schedatrix ARGS --json`` in a process of its own: the object it printed (a command
    that exits 2 raises ValueError with its one line)."""
    done = subprocess.run([sys.executable, "-m", "schedatrix", *map(str, args), "--json"],
                          capture_output=True, text=True, timeout=timeout_s, env=_env())
    if done.returncode not in (0, 1):
        raise ValueError(done.stderr.strip().splitlines()[-1] if done.stderr.strip()
                         else f"exit status {done.returncode}")
    return json.loads(done.stdout)
