"""Grading one notebook: its template, the grader's own evaluation, then its run as handed in.

For one submission's bytes, in this order:

1. parse it and look its name up in the package's registry ("not a valid notebook", "unknown
   exercise" otherwise) and check the template: every registered check cell present,
   unchanged, with its tags, in order, and the ``python3`` kernel
   (:func:`~schedatrix.classroom.checking.exercises.template_problem`);
2. the grader's evaluation (:mod:`.evaluation`): a fresh sandboxed process without the
   exercise's answers runs the notebook's code, and the grader calls its functions on inputs
   it picks and compares the answers with the library, itself. This decides: a notebook
   passes only if every check passes here;
3. the notebook's own run (:mod:`.nbval_sandbox`): ``pytest --nbval-lax`` in a sandbox, its
   check cells told the evaluation's verdicts. It can fail the notebook (a cell that raises,
   an output that differs, a check cell that never ran), never pass it.

It also notes, without failing anyone, a notebook whose graded functions match the
instructor's solution or name the library's own answer (:mod:`.copying`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

from ..checking.exercises import Exercise, exercise_of, template_problem
from ..releases.copying import library_calls, solution_copy
from .evaluation import Evaluation, evaluate
from .nbval_sandbox import Run, explain, run_nbval
from .sandbox import Limits, Sandbox
from .submissions import parse_notebook, printable

__all__ = ["Grade", "MAX_TEXT", "decide", "verdicts", "grade_notebook"]

#: The longest failure or note a row keeps (a learner's answer may be long; a row is not).
MAX_TEXT = 1_000


@dataclass(frozen=True)
class Grade:
    """One row of the table. Every text is :func:`~.submissions.printable` (made so here), and
    a failure or a note at most :data:`MAX_TEXT` characters."""

    student: str
    exercise: str
    passed: bool
    failure: str  # the first failing check's message ("" when passed)
    note: str = ""  # what the instructor may want to read (a copied solution, ...)
    sandbox: str = ""  # the kind of sandbox it ran in ("none": no sandbox; "": it did not run)
    seed: int | None = None  # the grading run's seed of the drawn cases (None: not evaluated)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, str):
                value = printable(value)
                if f.name in ("failure", "note") and len(value) > MAX_TEXT:
                    value = value[: MAX_TEXT - 3] + "..."
                object.__setattr__(self, f.name, value)


def decide(exercise: Exercise, evaluation: Evaluation, run: Run | None,
           limits: Limits) -> tuple[bool, str]:
    """(passed, first failure): the evaluation decides; the notebook's own run may only fail
    it."""
    if not evaluation.passed or run is None:
        return False, evaluation.failure or "the notebook was not run"
    if run.over_memory:
        return False, f"the notebook's own run: {run.over_memory}"
    if run.timed_out:
        return False, f"timed out after {limits.notebook_timeout_s} s (the whole notebook)"
    failures = run.summary.get("failures") if isinstance(run.summary, dict) else None
    failures = [f for f in failures or [] if isinstance(f, dict)]
    explained = [explain(f, limits) for f in failures]
    timeouts = [e for e in explained if "timed out after" in e]
    if timeouts:
        return False, timeouts[0]
    for check in exercise.checks:
        if check.name not in run.reached:
            call = check.cell_source.splitlines()[-1]
            if explained:
                return False, explained[0]
            return False, (f"{check.name}: the check cell never reached the grader's checker "
                           f"(run `{call}` as it is, without redefining {check.name})")
    if run.exit_code != 0:
        if explained:
            return False, explained[0]
        return False, f"the notebook did not run to its end (exit status {run.exit_code})"
    return True, ""


def verdicts(evaluation: Evaluation) -> dict[str, dict]:
    """What the notebook's check cells are told: the evaluation's verdict on each check."""
    told = {}
    for s in evaluation.sessions:
        told[s.check] = ({"verdict": "pass", "message": s.message} if s.passed else
                         {"verdict": "fail", "error": s.error, "message": s.message})
    return told


def grade_notebook(data: bytes, exercise_name: str, sandbox: Sandbox, limits: Limits,
                   slot: int = 0, solutions: dict[str, list[str]] | None = None,
                   seed: int | None = None) -> tuple[bool, str, str]:
    """Grade one notebook's bytes as exercise ``exercise_name``: (passed, failure, note).
    ``seed``: the grading run's seed of the checks' drawn cases."""
    exercise = exercise_of(exercise_name)
    if exercise is None:
        return False, f"unknown exercise {exercise_name!r}", ""
    nb, problem = parse_notebook(data)
    if nb is None:
        return False, problem, ""
    problem = template_problem(nb, exercise)
    if problem:
        return False, problem, ""
    notes = [library_calls(nb, exercise),
             solution_copy(nb, (solutions or {}).get(exercise.name, []))]
    note = "; ".join(n for n in notes if n)
    deadline = time.monotonic() + limits.notebook_timeout_s
    evaluation = evaluate(nb, exercise, sandbox, limits, slot, deadline, seed)
    run = None
    if evaluation.passed:
        run = run_nbval(data, exercise, sandbox, limits, verdicts(evaluation), slot, deadline)
    passed, failure = decide(exercise, evaluation, run, limits)
    note = "; ".join(n for n in (note, *evaluation.notes) if n)
    return passed, failure, note
