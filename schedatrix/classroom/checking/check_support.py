"""What every check shares: calling the learner's function, showing values, the pass line.

The checks (:mod:`~schedatrix.classroom.checking.checks` and the modules it gathers) run in the
checker process; these helpers turn what comes back across the boundary into a verdict a learner can
read: a crash names the input that caused it, a call to the library's own answer is named as such,
and a value is shown short.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from contextvars import ContextVar

import numpy as np

from ...fleet.month import Month
from ...fleet.plan import Plan
from ...text import WIDTH
from .boundary import MAX_MESSAGE_BYTES, AnswerRefused, AnswerTooBig, BoundaryError, LearnerRaised

__all__ = ["RANDOM_SEED", "DRAWN", "fmt", "brief", "call", "as_indices", "as_number", "passed",
           "describe", "close", "drawing", "drawn_seed", "drawn", "finite", "off_by"]

#: The seed of every check's visible random cases (the ones a check cell runs, in JupyterLab
#: and under nbval: the same cases, and the same pass line, every time).
RANDOM_SEED = 20_260_301
#: How a message names a case the grader drew for this grading run.
DRAWN = "a case drawn for this grading"
#: The seed of the grader's drawn cases while a check runs for the grader (``None``: a check
#: cell's own run, which has the visible cases only).
_DRAWN_SEED: ContextVar[int | None] = ContextVar("schedatrix_drawn_seed", default=None)


@contextlib.contextmanager
def drawing(seed: int | None) -> Iterator[None]:
    """While inside, the checks run on this thread also evaluate the learner's functions on the
    cases drawn from ``seed`` (the grader's seed for one grading run; ``None``: none drawn)."""
    token = _DRAWN_SEED.set(seed)
    try:
        yield
    finally:
        _DRAWN_SEED.reset(token)


def drawn_seed() -> int | None:
    """The seed of the grader's drawn cases for the check running now, or ``None``."""
    return _DRAWN_SEED.get()


def drawn(make: Callable[[int], list], offset: int = 0) -> list:
    """The grader's drawn cases of one kind: ``make(seed + offset)`` while a check runs for the
    grader, ``[]`` otherwise. ``make`` builds cases from a seed, as it builds the visible ones
    from :data:`RANDOM_SEED` (so a drawn case is a case like any other, at inputs no student
    could know in advance: a table of the published cases' answers fails them)."""
    seed = _DRAWN_SEED.get()
    return [] if seed is None else list(make(seed + offset))
#: The most characters a message shows of one value (a learner's answer may be huge).
SHOWN_CHARS = 300


def brief(x) -> str:
    """``repr(x)``, cut to :data:`SHOWN_CHARS` characters (what a message shows of an answer)."""
    text = repr(x)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[: SHOWN_CHARS - 30]}... ({len(text):,} characters)"


def fmt(x) -> str:
    """A short, readable repr of an input or an answer for a message."""
    text = _fmt(x)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[: SHOWN_CHARS - 30]}... ({len(text):,} characters)"


def _fmt(x) -> str:
    if isinstance(x, Month):
        return f"<month: {describe(x.plan)}; signature {x.signature}>"
    if isinstance(x, Plan):
        return f"<plan: {describe(x)}>"
    if isinstance(x, np.ndarray):
        x = x.tolist()
    if isinstance(x, float):
        return f"{x:g}" if abs(x) < 1e6 else f"{x:,.1f}"
    if isinstance(x, (list, tuple)):
        items = [_fmt(v) for v in x[:13]]
        if len(x) > 12:
            items = items[:12] + [f"... ({len(x)} in all)"]
        return "[" + ", ".join(items) + "]"
    return repr(x)


def call(name: str, func: Callable, *args):
    """Call the learner's function; a crash becomes a failed check that names the input.

    ``func`` is a :class:`~schedatrix.classroom.checking.boundary.RemoteFunction` in the checker
    (its crash arrives as :class:`~schedatrix.classroom.checking.boundary.LearnerRaised`) or a plain
    callable in tests. A broken boundary
    (:class:`~schedatrix.classroom.checking.boundary.BoundaryError`) is not the learner's answer and
    propagates as it is.
    """
    try:
        return func(*args)
    except (NotImplementedError, BoundaryError):
        raise
    except LearnerRaised as exc:
        if exc.type_name == "NotImplementedError":
            raise NotImplementedError(exc.message) from None
        shown = ", ".join(fmt(a) for a in args)
        raise AssertionError(
            f"{name}({shown}) raised {exc.type_name}: {exc.message}"
        ) from None
    except AnswerRefused as exc:
        shown = ", ".join(fmt(a) for a in args)
        raise AssertionError(
            f"{name}({shown}) called {exc.answer}, the library's own answer: this exercise "
            "asks you to write it yourself."
        ) from None
    except AnswerTooBig:
        shown = ", ".join(fmt(a) for a in args)
        raise AssertionError(
            f"{name}({shown}) returned an answer over {MAX_MESSAGE_BYTES // 2**20} MB as plain "
            "data: return what the exercise asks for, nothing more."
        ) from None
    except Exception as exc:  # the learner's bug, reported with the input that caused it
        shown = ", ".join(fmt(a) for a in args)
        raise AssertionError(
            f"{name}({shown}) raised {type(exc).__name__}: {exc}"
        ) from exc


def as_indices(name: str, shown: str, result) -> list[int]:
    """The learner's answer as a list of ints, or a failed check saying what is wrong."""
    if result is None:
        raise AssertionError(f"{name}({shown}) returned None: return the chosen indices")
    items = list(result) if isinstance(result, (list, tuple)) else None
    if items is None:
        try:
            items = np.asarray(result).reshape(-1).tolist()
        except (TypeError, ValueError):
            items = [result]
    try:
        values = [int(v) for v in items]
        whole = all(float(v) == int(v) for v in items)
    except (TypeError, ValueError, OverflowError):
        values, whole = [], False
    if not whole or any(isinstance(v, bool) for v in items):
        raise AssertionError(
            f"{name}({shown}) returned {brief(result)}: return a list of card indices (ints)"
        )
    if len(set(values)) != len(values):
        raise AssertionError(f"{name}({shown}) returned {fmt(values)}: an index is repeated")
    return values


def passed(name: str, counts: dict[str, int]) -> str:
    """The line a passing check shows; where it would be wider than the output area
    (:data:`~schedatrix.text.WIDTH`), the cases' breakdown goes on an indented second line."""
    total = sum(counts.values())
    parts = ", ".join(f"{n} {what}" for what, n in counts.items())
    head, tail = f"{name}: all {total} cases pass", f"({parts}). Well done!"
    return f"{head} {tail}" if len(head) + 1 + len(tail) <= WIDTH else f"{head}\n    {tail}"


def describe(plan: Plan) -> str:
    return (f"{plan.cards} {plan.card_class} cards, {plan.demand_tok_s:,.0f} tok/s {plan.shape}, "
            f"{plan.window} window, {plan.evict_share:.0%} evicted, seed {plan.seed}")


def finite(value: float) -> bool:
    """Whether a figure is a number a check can compare: not NaN, not an infinity. Every
    numeric comparison of every check goes through :func:`as_number` and :func:`close`, which
    use it, so ``abs(nan - want) > 1`` (false) can never pass an answer."""
    return not (math.isnan(value) or math.isinf(value))


def as_number(name: str, shown: str, got, what: str = "a number") -> float:
    """The learner's answer as a finite float, or a failed check saying it is not a number
    (text, a bool, None, a list) or not a finite one (NaN, an infinity, too big for a float)."""
    if isinstance(got, (str, bytes, bool)) or got is None:
        raise AssertionError(f"{name}({shown}) returned {brief(got)}: return {what}")
    try:
        value = float(got)
    except OverflowError:
        raise AssertionError(f"{name}({shown}) returned a number too big for a float: return "
                             f"{what}") from None
    except (TypeError, ValueError):
        raise AssertionError(f"{name}({shown}) returned {brief(got)}: return {what}") from None
    if not finite(value):
        raise AssertionError(f"{name}({shown}) returned {value!r}, not a finite number: return "
                             f"{what}")
    return value


def close(got: float, want: float, rel: float = 1e-6, abs_tol: float = 1e-9) -> bool:
    """Whether two figures agree: both finite and within ``rel`` (or ``abs_tol``) of each other.
    NaN and the infinities agree with nothing, not even themselves."""
    got, want = float(got), float(want)
    if not (finite(got) and finite(want)):
        return False
    return math.isclose(got, want, rel_tol=rel, abs_tol=abs_tol)


def off_by(got: float, want: float) -> float:
    """How far an answer is from the expected figure (``inf`` when either is not finite), for
    checks that allow a margin: ``off_by(got, want) > margin`` fails NaN too."""
    got, want = float(got), float(want)
    if not (finite(got) and finite(want)):
        return math.inf
    return abs(got - want)
