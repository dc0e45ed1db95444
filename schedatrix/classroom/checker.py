"""The checker: runs one check against a kernel across the boundary and gives its verdict.

It lives outside the learner's kernel: in the grader (one socket per submission, see
:mod:`~schedatrix.classroom.grade_folder`), or, when a learner runs a check cell in JupyterLab,
as a process the check cell starts (``python -m schedatrix.classroom.checker``, over pipes).
The verdict it records is its own; the kernel only ever hands it answers.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from .boundary import BoundaryError, Channel, RemoteFunction
from .checks import CHECKS as CHECK_FUNCTIONS
from .exercises import CHECKS

__all__ = ["Session", "run_session", "main"]


@dataclass(frozen=True)
class Session:
    """One check cell's run as the checker saw it."""

    check: str  # the check's name, or "" when the kernel never named a registered one
    passed: bool
    error: str  # "AssertionError", "NotImplementedError", "BoundaryError", ... ("" on a pass)
    message: str  # the line the learner sees

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
        remotes = [RemoteFunction(channel, f, deadline) for f in check.functions]
        try:
            message = CHECK_FUNCTIONS[name](*remotes)
        except BoundaryError as exc:
            return Session(name, False, "BoundaryError",
                           f"the check stopped before its end ({exc})")
        except (AssertionError, NotImplementedError) as exc:
            session = Session(name, False, type(exc).__name__, str(exc))
        except Exception as exc:  # answers the check did not foresee: a fail, never a crash
            session = Session(name, False, "CheckerError",
                              f"the check could not read an answer ({type(exc).__name__}: {exc})")
        else:
            session = Session(name, True, "", message)
    verdict = {"verdict": "pass" if session.passed else "fail", "message": session.message}
    if not session.passed:
        verdict["error"] = session.error
    try:
        channel.send(verdict)
    except BoundaryError:
        pass
    return session


def main() -> int:
    """One check over stdin and stdout: what a check cell starts when no grader is running."""
    channel = Channel(sys.stdin.buffer, sys.stdout.buffer)
    session = run_session(channel)
    return 0 if session.passed else 1


if __name__ == "__main__":
    sys.exit(main())
