"""Helpers for the live serving tests: an emulator started as its own process on a free
loopback port, and always ended (SIGTERM, then a kill) when the test is done."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_READY = re.compile(r"on http://127\.0\.0\.1:(\d+) at ")


@dataclass
class Emulator:
    proc: subprocess.Popen
    url: str
    banner: str

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> tuple[int, str, str]:
        """Signal it and wait: its exit status and what it printed after the banner."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"the emulator did not stop within {timeout:g} s of "
                                 f"{signal.Signals(sig).name}") from None
        return self.proc.returncode, out, err


def start_emulator(*args: str, timeout: float = 30.0) -> Emulator:
    """``schedatrix serving emulate --port 0 ARGS`` in a process of its own, once it listens."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "schedatrix", "serving", "emulate",
                             "--host", "127.0.0.1", "--port", "0", *map(str, args)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    end = time.monotonic() + timeout
    line = ""
    try:
        while time.monotonic() < end:
            if sel.select(timeout=max(0.0, end - time.monotonic())):
                line = proc.stdout.readline()
                if _READY.search(line) or not line:
                    break
        m = _READY.search(line)
        if not m:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"the emulator did not start: {line!r} {out!r} {err!r}")
    finally:
        sel.close()
    return Emulator(proc, f"http://127.0.0.1:{m.group(1)}", line.strip())


@contextlib.contextmanager
def emulator(*args: str):
    """An emulator for the ``with`` block; stopped by SIGTERM after it (killed if it hangs)
    and checked to have stopped cleanly."""
    emu = start_emulator(*args)
    try:
        yield emu
    finally:
        if emu.proc.poll() is None:
            code, out, err = emu.stop()
            assert code == 0, err
            assert "emulator stopped" in out
