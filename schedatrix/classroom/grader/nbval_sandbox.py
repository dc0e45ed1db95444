"""The notebook's run as the learner ran it: ``pytest --nbval-lax`` in a sandbox, for feedback.

Once the grader's own evaluation (:mod:`.evaluation`) has passed every check, the notebook runs
top to bottom in a real kernel in the sandbox, with the whole package: every cell must run and
each check cell's saved output must match what it prints now. Its check cells reach the grader
through one socket, send one short line naming their check, and get back the evaluation's
verdict on it, which they print: the grader runs nothing for them and reads nothing else from
them. This run can fail a notebook (a cell that raises or runs out of time, an output that
differs, a check cell that never ran its check), never pass one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..checking.boundary import BoundaryError, Channel
from ..checking.exercises import Exercise
from .evaluation import cell_where
from .sandbox import Limits, Sandbox, end, leftover_prefix, over_memory

__all__ = ["Run", "run_nbval", "explain", "MAX_CONNECTIONS"]

#: Check cells one run may open (a loop of checks is cut off there).
MAX_CONNECTIONS = 64
_HELLO_BYTES = 4 * 1024
_HELLO_WAIT_S = 10.0
_SUMMARY_BYTES = 64 * 1024
_RUNNER = Path(__file__).with_name("nbval_run.py")
_ANSI = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*[A-Za-z]")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning))\b:?")


@dataclass
class Run:
    """What one sandboxed nbval run left: which registered checks its check cells asked for,
    and nbval's summary (written inside the sandbox, so it only ever explains a failure)."""

    reached: list[str] = field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    summary: dict = field(default_factory=dict)
    stderr: str = ""
    over_memory: str = ""  # why its memory bound ended it ("" when it did not)
    peak_mb: float = 0.0


def _drain(stream, keep: list[bytes]) -> None:
    """Read a pipe to its end, keeping at most the first 64 kB."""
    size = 0
    while chunk := stream.read(8192):
        if size < _SUMMARY_BYTES:
            keep.append(chunk[: _SUMMARY_BYTES - size])
            size += len(chunk)
    stream.close()


def _answer(conn: socket.socket, deadline: float, verdicts: dict[str, dict],
            run: Run) -> None:
    """One check cell: read the check it names (one short line), send it its verdict."""
    with Channel.over_socket(conn) as channel:
        try:
            hello = channel.receive(min(_HELLO_WAIT_S, deadline - time.monotonic()),
                                    limit=_HELLO_BYTES)
        except BoundaryError:
            return
        name = hello.get("check")
        verdict = verdicts.get(name) if isinstance(name, str) else None
        if verdict is None:
            shown = str(name)[:80]
            verdict = {"verdict": "fail", "error": "AssertionError",
                       "message": f"{shown!r} is not a check of this exercise"}
        else:
            run.reached.append(name)
        with contextlib.suppress(BoundaryError):
            channel.send(verdict)


def _serve(server: socket.socket, process: subprocess.Popen, deadline: float,
           verdicts: dict[str, dict], run: Run) -> None:
    """Answer check cells until the sandboxed run ends or its time is up."""
    answered = 0
    with selectors.DefaultSelector() as selector:
        selector.register(server, selectors.EVENT_READ)
        pidfd = None
        with contextlib.suppress(AttributeError, OSError):
            pidfd = os.pidfd_open(process.pid)
            selector.register(pidfd, selectors.EVENT_READ)
        try:
            while process.poll() is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                for key, _ in selector.select(timeout=min(left, 0.5 if pidfd is None else left)):
                    if key.fileobj is not server:
                        continue
                    conn, _ = server.accept()
                    if answered >= MAX_CONNECTIONS:
                        conn.close()
                        continue
                    answered += 1
                    _answer(conn, deadline, verdicts, run)
        finally:
            if pidfd is not None:
                os.close(pidfd)


def run_nbval(data: bytes, exercise: Exercise, sandbox: Sandbox, limits: Limits,
              verdicts: dict[str, dict], slot: int = 0, deadline: float | None = None) -> Run:
    """Run ``pytest --nbval-lax`` on a copy of a notebook in ``sandbox``, answering its check
    cells with ``verdicts`` (check name -> the verdict message they print)."""
    run = Run()
    if deadline is None:
        deadline = time.monotonic() + limits.notebook_timeout_s
    with tempfile.TemporaryDirectory(prefix=leftover_prefix("grade")) as tmp:
        os.chmod(tmp, 0o711)
        work = Path(tmp) / "work"
        work.mkdir()
        sock_dir = Path(tmp) / "checker"
        sock_dir.mkdir()
        os.chmod(sock_dir, 0o711)
        sock_path = sock_dir / "checker.sock"
        notebook = Path(tmp) / "notebook.ipynb"
        notebook.write_bytes(data)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(sock_path))
        uid = sandbox.uid(slot)
        if uid is not None:  # only the run's own uid may reach this run's socket
            os.chown(sock_path, uid, uid)
        os.chmod(sock_path, 0o600)
        server.listen(4)
        data_fd = os.open(notebook, os.O_RDONLY)
        summary_r, summary_w = os.pipe()
        name = f"{exercise.name}.ipynb"
        with open(Path(tmp) / "stderr", "w+b") as err, contextlib.ExitStack() as stack:
            stack.callback(server.close)
            stack.callback(os.close, data_fd)
            inner = [sys.executable, str(_RUNNER), name, *sandbox.runner_args(limits, slot),
                     f"--cell-timeout-s={limits.cell_timeout_s}", f"--summary-fd={summary_w}"]
            launch = sandbox.launch(inner, work, limits, slot, pass_fds=(summary_w,),
                                    files={name: data_fd}, socket_path=sock_path)
            try:
                process = launch.start(stderr=err)
            finally:
                os.close(summary_w)
            kept: list[bytes] = []
            reader = threading.Thread(target=_drain, args=(os.fdopen(summary_r, "rb"), kept),
                                      daemon=True)
            reader.start()
            try:
                _serve(server, process, deadline, verdicts, run)
                if process.poll() is None:
                    run.timed_out = True
            finally:
                run.exit_code = end(process, bound=launch.bound)
                sandbox.clean_up(slot)
            if launch.bound is not None:
                run.peak_mb = launch.bound.peak_bytes / 2**20
                if launch.bound.exceeded:
                    run.over_memory = over_memory(limits)
            reader.join(timeout=10)
            err.seek(0)
            run.stderr = err.read(_SUMMARY_BYTES).decode("utf-8", "replace")
        try:
            run.summary = json.loads(b"".join(kept).decode("utf-8", "replace") or "{}")
        except ValueError:
            run.summary = {}
        if not isinstance(run.summary, dict):
            run.summary = {}
    return run


def explain(failure: dict, limits: Limits) -> str:
    """One line for a cell nbval failed, from its report (never pytest's internals)."""
    where = str(failure.get("where", "notebook"))[:40]
    if where.startswith("Cell ") and where[5:].isdigit():
        # nbval counts code cells from 0; a student counts what they see, from 1
        where = cell_where(int(where[5:]))
    text = _ANSI.sub("", str(failure.get("text", "")))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if any("Timeout of" in line and "exceeded" in line for line in lines):
        if any("Failed to interrupt kernel" in line for line in lines):
            return (f"{where}: timed out after {limits.cell_timeout_s} s (it could not be "
                    "interrupted, or the kernel stopped)")
        return f"{where}: timed out after {limits.cell_timeout_s} s"
    if any("Kernel dead" in line or "Kernel died" in line for line in lines):
        return f"{where}: the kernel stopped (the code ended it, or it ran out of memory)"
    if any("Cell outputs differ" in line for line in lines):
        return f"{where}: saved output differs from a fresh run (re-run all, save)"
    exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)
                  and "Traceback (most recent call last)" not in line
                  and not line.startswith(("NbCellError", "nbval."))]
    if exceptions:
        last = exceptions[-1].rstrip(":")
        if last.startswith("MemoryError"):
            return (f"{where}: {last} (over the limit of {limits.address_mb} MiB of address "
                    "space per process)")
        return f"{where}: {last[:300]}"
    return f"{where}: failed"
