"""A pytest plugin: plain ``pytest --nbval-lax`` grades exercises by the grader's rules.

Installed with the package (entry point ``pytest11``), it wakes up only when nbval runs. It
hosts a checker in the pytest process (not in the kernel) on a private socket, which the
kernels nbval starts inherit (``SCHEDATRIX_CHECKER``); for a notebook named after a registered
exercise, it fails the notebook's first cell when the template is broken (a check cell
changed, removed, retagged or moved) and fails a check cell that did not reach this checker
or did not pass it, whatever the kernel printed. Other notebooks (other names, and lessons
that share an exercise's name: no exercise mark, no check cell) are left to nbval. Every
notebook's kernel is started patiently (:mod:`.kernel_start`): one that never answers is
replaced by a fresh one.

Under ``schedatrix grade`` this plugin is not loaded (the sandboxed pytest loads nbval alone):
the grader decides from its own evaluation and only tells the check cells its verdicts.

Unlike ``schedatrix grade`` nothing here is sandboxed, and the check is run for the kernel that
asks: a kernel that opens its own session or switches off the refusal of the library's answers
(docs/grading.md) fools this plugin, not the grader. It is the learner's feedback, on the
learner's machine.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from ..checking.boundary import CHECKER_ENV, Channel
from ..checking.checker import Session, run_session
from ..checking.exercises import exercise_of, is_exercise_notebook, template_problem
from .kernel_start import install as start_kernels_patiently

_WAIT_S = 5.0


class _Checker:
    """A checker thread serving every kernel of this pytest run."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="schedatrix-checker-")
        self.path = str(Path(self.folder) / "checker.sock")
        self.sessions: list[Session] = []
        self.busy = threading.Event()
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(4)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.busy.set()
            try:
                with Channel.over_socket(conn) as channel:
                    self.sessions.append(run_session(channel))
            finally:
                self.busy.clear()

    def settle(self) -> None:
        """Wait (a little) for a check the kernel just finished to be recorded."""
        end = time.monotonic() + _WAIT_S
        while self.busy.is_set() and time.monotonic() < end:
            time.sleep(0.01)

    def close(self) -> None:
        self.server.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_checker: _Checker | None = None
_outer: str | None = None  # the variable's value before this run (a pytest inside a pytest)
_seen_files: set[str] = set()


def pytest_configure(config) -> None:
    global _checker, _outer
    option = config.option
    if not (getattr(option, "nbval", False) or getattr(option, "nbval_lax", False)):
        return
    start_kernels_patiently()
    if _checker is not None:
        return
    _checker = _Checker()
    _outer = os.environ.get(CHECKER_ENV)
    os.environ[CHECKER_ENV] = _checker.path


def pytest_unconfigure(config) -> None:
    global _checker
    if _checker is not None:
        if _outer is None:
            os.environ.pop(CHECKER_ENV, None)
        else:
            os.environ[CHECKER_ENV] = _outer
        _checker.close()
        _checker = None


def _exercise_cell(item):
    """(exercise, registered check or None) for an nbval cell of an exercise notebook."""
    cell = getattr(item, "cell", None)
    parent = getattr(item, "parent", None)
    if cell is None or parent is None or not hasattr(parent, "nb"):
        return None, None
    exercise = exercise_of(Path(str(parent.fspath)).stem)
    if exercise is None or not is_exercise_notebook(parent.nb, exercise):
        return None, None
    source = cell.source.strip()
    return exercise, next((c for c in exercise.checks if c.cell_source == source), None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    start = len(_checker.sessions) if _checker is not None else 0
    item._schedatrix_sessions_from = start
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if _checker is None:
        return
    exercise, check = _exercise_cell(item)
    if exercise is None:
        return
    report = outcome.get_result()
    problem = ""
    file = str(item.parent.fspath)
    if call.when == "setup" and file not in _seen_files:
        _seen_files.add(file)
        problem = template_problem(item.parent.nb, exercise)
    elif call.when == "call" and check is not None and report.passed:
        _checker.settle()
        mine = _checker.sessions[getattr(item, "_schedatrix_sessions_from", 0):]
        failed = [s for s in mine if not s.passed]
        if failed:
            problem = failed[0].failure
        elif not any(s.check == check.name for s in mine):
            problem = (f"{check.name}: the check cell never reached the checker (run it as "
                       f"it is, without redefining {check.name})")
    if problem:
        report.outcome = "failed"
        report.longrepr = f"schedatrix: {problem}"
