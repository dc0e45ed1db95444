"""The checker: runs one check across the boundary and gives its verdict.

It never shares a process with the learner's code. Under ``schedatrix grade`` the grader drives
each check itself (:func:`drive_check`): it names the check and the learner's functions to a
sandboxed evaluation of the notebook (:mod:`~schedatrix.classroom.grader.evaluation`), picks every
input, and compares every answer with the library here. When a learner runs a check cell in
JupyterLab the kernel names the check (:func:`run_session`), to a process the check cell starts
(``python -m schedatrix.classroom.checking.checker``, over pipes) or to the pytest plugin's checker:
feedback, since there the kernel chose to run it.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from .boundary import BoundaryError, Channel, RemoteFunction
from .check_support import drawing
from .checks import CHECKS as CHECK_FUNCTIONS
from .exercises import CHECKS

__all__ = ["Session", "run_session", "drive_check", "main"]


@dataclass(frozen=True)
class Session:
    """One check cell's run as the checker saw it."""

    check: str  # the check's name, or "" when the kernel never named a registered one
    passed: bool
    error: str  # "AssertionError", "NotImplementedError", "BoundaryError", ... ("" on a pass)
    message: str  # the line the learner sees
    library: str = ""  # the library functions the learner handed in as their own, if any

    @property
    def failure(self) -> str:
        """The failure as the grade table shows it (``""`` on a pass)."""
        return "" if self.passed else f"{self.check or 'check'}: {self.error}: {self.message}"


def run_session(channel: Channel, allowed: set[str] | None = None,
                deadline: float | None = None) -> Session:
    """Run the check the kernel names on ``channel`` and send it the verdict.

    ``allowed`` limits which checks may run (the grader passes the exercise's own);
    ``deadline`` (``time.monotonic()``) bounds how long the kernel may take to answer.
    """
    left = None if deadline is None else deadline - time.monotonic()
    try:
        hello = channel.receive(left)
    except BoundaryError as exc:
        return Session("", False, "BoundaryError", f"the check cell sent nothing ({exc})")
    name = hello.get("check")
    check = CHECKS.get(name) if isinstance(name, str) else None
    if check is None or (allowed is not None and name not in allowed):
        shown = str(name)[:80]
        session = Session("", False, "AssertionError",
                          f"{shown!r} is not a check of this exercise")
    else:
        handed = _library_handed_in(name, hello.get("library"))
        session = handed or _judge(channel, name, deadline)
        if session.error == "BoundaryError":
            return session
    verdict = {"verdict": "pass" if session.passed else "fail", "message": session.message}
    if not session.passed:
        verdict["error"] = session.error
    try:
        channel.send(verdict)
    except BoundaryError:
        pass
    return session


def _library_handed_in(name: str, said) -> Session | None:
    """A failed check when the learner handed in the library's own function (or a wrapper of
    it) as one of theirs, as the other side saw it (``said``: function name -> origin)."""
    if not isinstance(said, dict):
        return None
    found = [(f, str(said[f])[:200]) for f in CHECKS[name].functions
             if isinstance(said.get(f), str) and said[f]]
    if not found:
        return None
    function, origin = found[0]
    return Session(name, False, "AssertionError",
                   f"{function} is {origin}, the library's own function (or a wrapper of it): "
                   f"this exercise asks you to write {function} yourself.",
                   "; ".join(f"{o} handed in as {f}" for f, o in found))


def _judge(channel: Channel, name: str, deadline: float | None,
           seed: int | None = None) -> Session:
    """Run the check ``name``, its learner's functions on the other side of ``channel``; with
    ``seed``, on the cases drawn from it too (the grader's)."""
    remotes = [RemoteFunction(channel, f, deadline) for f in CHECKS[name].functions]
    try:
        with drawing(seed):
            message = CHECK_FUNCTIONS[name](*remotes)
    except BoundaryError as exc:
        return Session(name, False, "BoundaryError", f"the check stopped before its end ({exc})")
    except (AssertionError, NotImplementedError) as exc:
        return Session(name, False, type(exc).__name__, str(exc))
    except Exception as exc:  # answers the check did not foresee: a fail, never a crash
        return Session(name, False, "CheckerError",
                       f"the check could not read an answer ({type(exc).__name__}: {exc})")
    return Session(name, True, "", message)


def drive_check(channel: Channel, name: str, deadline: float | None = None,
                seed: int | None = None) -> Session:
    """Run the registered check ``name`` on an evaluation of a notebook (the grader's way).

    The grader names the check and its functions; the evaluation says which of them the
    notebook does not define (a :class:`Session` with error ``NameError``), then answers the
    check's calls until it is told the check has ended. ``deadline``
    (``time.monotonic()``) bounds every wait; ``seed`` is the grading run's seed of the drawn
    cases (the pass line names only the visible cases, which the check cell shows).
    """
    check = CHECKS[name]
    left = None if deadline is None else deadline - time.monotonic()
    try:
        channel.send({"check": name, "functions": list(check.functions)})
        reply = channel.receive(left, limit=64 * 1024)
    except BoundaryError as exc:
        return Session(name, False, "BoundaryError", f"the check stopped before its end ({exc})")
    missing = reply.get("missing")
    if not isinstance(missing, list):
        return Session(name, False, "BoundaryError", "the evaluation broke the protocol")
    missing = [m for m in check.functions if m in missing]
    if missing:
        return Session(name, False, "NameError", f"name {missing[0]!r} is not defined")
    session = _library_handed_in(name, reply.get("library")) or _judge(channel, name,
                                                                        deadline, seed)
    if session.error != "BoundaryError":
        try:
            channel.send({"end": True})
        except BoundaryError as exc:
            return Session(name, False, "BoundaryError", f"the check stopped at its end ({exc})")
    return session


def main() -> int:
    """One check over stdin and stdout: what a check cell starts when no grader is running."""
    channel = Channel(sys.stdin.buffer, sys.stdout.buffer)
    session = run_session(channel)
    return 0 if session.passed else 1


if __name__ == "__main__":
    sys.exit(main())
