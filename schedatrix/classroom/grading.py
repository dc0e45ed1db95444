"""Check cells: what a learner's notebook calls to check its functions.

These run in the learner's kernel, so they hold no checking code: each one hands the
learner's functions to :func:`run_check`, which opens a channel to a checker in another
process (the grader's, or a fresh one) and serves its calls across the boundary
(:mod:`~schedatrix.classroom.boundary`). The checker decides; the cell prints its one line on
a pass, or raises its ``AssertionError`` (naming the input, what came back and what was
expected) or the stub's ``NotImplementedError``. The checks themselves are in
:mod:`~schedatrix.classroom.checks`.
"""

from __future__ import annotations

from collections.abc import Callable

from .boundary import connect, serve_check
from .exercises import CHECKS

__all__ = ["run_check", "check_score", "check_run_set", "check_eviction", "check_famous_months"]

_ERRORS = {"AssertionError": AssertionError, "NotImplementedError": NotImplementedError}


def run_check(name: str, **functions: Callable) -> None:
    """Run the registered check ``name`` on the learner's ``functions`` in a checker process.

    Prints the checker's line on a pass; raises its ``AssertionError`` or
    ``NotImplementedError`` on a fail (``RuntimeError`` when the checker itself broke down).
    """
    __tracebackhide__ = True  # IPython shows the learner the check cell, not this plumbing
    check = CHECKS[name]
    with connect() as channel:
        verdict, raised = serve_check(channel, name, functions, check.answers)
    message = str(verdict.get("message", ""))
    if verdict.get("verdict") == "pass":
        print(message)
        return
    error = _ERRORS.get(str(verdict.get("error")), RuntimeError)
    if error is NotImplementedError and isinstance(raised, NotImplementedError):
        raise raised  # the learner's own stub, with its line in the traceback
    raise error(message) from (raised if error is AssertionError else None)


def check_score(score_card: Callable) -> None:
    """Challenge 1: ``score_card(true_tok_s, rent_per_month)`` in million tokens per dollar."""
    __tracebackhide__ = True
    run_check("check_score", score_card=score_card)


def check_run_set(greedy_run_set: Callable) -> None:
    """Challenge 2: ``greedy_run_set(rates_tok_s, target_tok_s)``, the whole-card greedy."""
    __tracebackhide__ = True
    run_check("check_run_set", greedy_run_set=greedy_run_set)


def check_eviction(evict_worst: Callable, wrong_evictions: Callable) -> None:
    """Challenge 3: ``evict_worst(scores, share)`` and ``wrong_evictions(true_tok_s, evicted)``."""
    __tracebackhide__ = True
    run_check("check_eviction", evict_worst=evict_worst, wrong_evictions=wrong_evictions)


def check_famous_months(diagnose: Callable, fix: Callable) -> None:
    """The famous months: ``diagnose(month)`` and ``fix(plan)``."""
    __tracebackhide__ = True
    run_check("check_famous_months", diagnose=diagnose, fix=fix)
