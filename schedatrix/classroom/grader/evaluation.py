"""The grader's own evaluation of a notebook: the evidence a pass rests on.

For a notebook whose template is intact, the grader starts a fresh process in the sandbox
(:mod:`.evaluate_run`) that imports a copy of the package without the exercise's answers
(:mod:`.answer_free`), and sends it the notebook's code cells one at a time, in order. At each
registered check cell it runs that check itself (:func:`~.checker.drive_check`): it picks the
inputs, the process calls the learner's functions on them and sends back plain data, and the
grader compares each answer with the library, here. Nothing the notebook prints or saves is
read, no check cell of the notebook runs, and every wait has a deadline: a cell its seconds, a
check its check cell's seconds, the whole evaluation the notebook's.

A cell that raises here is not a failure by itself (the notebook's own run, in a real kernel
with the whole package, says whether every cell runs); only the checks, a cell that runs out of
time and a process that stops decide here.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..checking.boundary import BoundaryError, Channel
from ..checking.checker import Session, drive_check
from ..checking.exercises import Check, Exercise
from . import answer_free
from .sandbox import Limits, Sandbox, end, leftover_prefix, over_memory

__all__ = ["Evaluation", "cell_where", "code_cells", "evaluate", "stopped"]

_REPLY_LIMIT = 64 * 1024
_STDERR_KEPT = 64 * 1024


@dataclass
class Evaluation:
    """What the grader's evaluation found: one session per check it ran, in order."""

    sessions: list[Session] = field(default_factory=list)
    failure: str = ""  # the first thing that fails the notebook ("" when every check passed)
    cell_errors: list[str] = field(default_factory=list)  # cells that raised here (no failure)
    cpu_s: float = 0.0  # the CPU the sandboxed process says it used (for the benchmark only)
    where: str = ""  # the step it was at when it stopped
    peak_mb: float = 0.0  # the most its processes held together, as its memory bound saw it
    notes: list[str] = field(default_factory=list)  # for the instructor (the library's own
    # functions handed in as the learner's)

    @property
    def passed(self) -> bool:
        return not self.failure


def cell_where(index: int) -> str:
    """A code cell as a student counts it (nbval counts code cells from 0)."""
    return f"code cell {index + 1} (counting code cells from the top)"


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _skipped(cell) -> bool:
    """Whether nbval skips a cell: asked of nbval's own readers of its comment markers
    (``# NBVAL_SKIP``, ``## NBVAL_SKIP``, ...) and tags, combined as nbval combines them
    (tags last), so the evaluation runs exactly the cells the notebook's own run runs."""
    import warnings

    from nbval.plugin import find_comment_markers, find_metadata_tags

    options: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, value in find_comment_markers(_source(cell)):
            options[key] = value
        for key, value in find_metadata_tags(cell.get("metadata") or {}):
            options[key] = value
    return bool(options.get("skip", False))


def code_cells(nb, exercise: Exercise) -> list[tuple[int, str, Check | None, bool]]:
    """(index among code cells, source, the registered check it is or None, skipped)."""
    checks = {c.cell_source: c for c in exercise.checks}
    out = []
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            source = _source(cell)
            out.append((len(out), source, checks.get(source.strip()), _skipped(cell)))
    return out


def stopped(where: str, limits: Limits, deadline: float, step_deadline: float) -> str:
    """Why a step that got no answer failed: the notebook's time, the step's, or a stop."""
    now = time.monotonic()
    if now >= deadline:
        return f"timed out after {limits.notebook_timeout_s} s (the whole notebook)"
    if now >= step_deadline:
        return f"{where}: timed out after {limits.cell_timeout_s} s"
    return f"{where}: the kernel stopped (the code ended it, or it ran out of memory)"


def _drive(channel: Channel, nb, exercise: Exercise, limits: Limits,
           deadline: float, seed: int | None) -> Evaluation:
    found = Evaluation()
    try:
        channel.receive(deadline - time.monotonic(), limit=_REPLY_LIMIT)
    except BoundaryError as exc:
        if time.monotonic() >= deadline:
            found.failure = f"timed out after {limits.notebook_timeout_s} s (the whole notebook)"
        else:
            found.failure = f"the grader's evaluation did not start ({exc})"
        return found
    for index, source, check, skipped in code_cells(nb, exercise):
        where = found.where = cell_where(index)
        step_deadline = min(deadline, time.monotonic() + limits.cell_timeout_s)
        if check is not None:
            session = drive_check(channel, check.name, step_deadline, seed)
            found.sessions.append(session)
            if session.library:
                found.notes.append(session.library)
            if session.passed:
                continue
            if session.error == "BoundaryError":
                found.failure = stopped(where, limits, deadline, step_deadline)
            elif session.error == "NameError":
                found.failure = f"{where}: NameError: {session.message}"
            else:
                found.failure = session.failure
            return found
        if skipped:
            continue
        try:
            channel.send({"run": index, "source": source})
            reply = channel.receive(step_deadline - time.monotonic(), limit=_REPLY_LIMIT)
        except BoundaryError:
            found.failure = stopped(where, limits, deadline, step_deadline)
            return found
        raised = reply.get("raised")
        if isinstance(raised, dict):
            found.cell_errors.append(f"{where}: {str(raised.get('type'))[:80]}: "
                                     f"{str(raised.get('message'))[:300]}")
    with contextlib.suppress(BoundaryError):
        channel.send({"done": True})
        said = channel.receive(min(2.0, deadline - time.monotonic()), limit=_REPLY_LIMIT)
        cpu_s = said.get("cpu_s")
        if isinstance(cpu_s, (int, float)) and 0 <= cpu_s < 1e6:
            found.cpu_s = float(cpu_s)
    return found


def evaluate(nb, exercise: Exercise, sandbox: Sandbox, limits: Limits, slot: int = 0,
             deadline: float | None = None, seed: int | None = None) -> Evaluation:
    """Evaluate a parsed notebook of ``exercise`` in ``sandbox``: the grader's verdict.

    ``deadline`` (``time.monotonic()``) bounds the whole evaluation (default: the notebook's
    seconds from now); ``seed`` draws each check's cases beside the visible ones (the grading
    run's seed; ``None``: the visible cases only).
    """
    if deadline is None:
        deadline = time.monotonic() + limits.notebook_timeout_s
    package = answer_free.package_for(exercise)
    inside = sandbox.package_inside(package)
    with tempfile.TemporaryDirectory(prefix=leftover_prefix("evaluate")) as tmp:
        os.chmod(tmp, 0o711)
        work = Path(tmp) / "work"
        work.mkdir()
        mine, theirs = socket.socketpair()
        inner = [sys.executable, str(inside / "classroom" / "grader" / "evaluate_run.py"),
                 *sandbox.runner_args(limits, slot), f"--channel-fd={theirs.fileno()}",
                 f"--package-root={inside.parent}"]
        launch = sandbox.launch(inner, work, limits, slot, pass_fds=(theirs.fileno(),),
                                package=package)
        with open(Path(tmp) / "stderr", "w+b") as err:
            try:
                process = launch.start(stderr=err)
            finally:
                theirs.close()
            channel = Channel.over_socket(mine)
            try:
                found = _drive(channel, nb, exercise, limits, deadline, seed)
            finally:
                channel.close()
                end(process, grace_s=2.0, bound=launch.bound)  # a moment to exit, then the end
                sandbox.clean_up(slot)
            if launch.bound is not None:
                found.peak_mb = launch.bound.peak_bytes / 2**20
                if launch.bound.exceeded:
                    found.failure = f"{found.where or 'the notebook'}: {over_memory(limits)}"
            if found.failure.startswith("the grader's evaluation did not start"):
                err.seek(0)
                lines = err.read(_STDERR_KEPT).decode("utf-8", "replace").strip().splitlines()
                if lines:
                    found.failure += f": {lines[-1][:300]}"
    return found
