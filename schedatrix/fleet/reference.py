"""The readable reference: one fleet month in plain Python, step by step.

This is the implementation a learner reads. ``schedatrix.fleet.engine`` does the same for many
months at once with numpy, and the tests prove both give the same figures on the same draws.

Complexity, for a pool of n cards: drawing the cards is O(n); eviction sorts by measured
score, O(n log n); the median of the true rates, O(n log n) here (sorting; a selection
algorithm would make it O(n)); the run set sorts the survivors and scans a prefix, O(n log n);
the ideal operator sorts by true rate and scans, O(n log n). One month is O(n log n) time
and O(n) memory; a 16-card month takes a few tens of microseconds.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .cards import card_class
from .draws import uniform
from .eviction import evict_count
from .plan import Plan
from .run_set import shape_target
from .window import measured_tok_s

__all__ = ["PoolMonth", "run_month"]


@dataclass(frozen=True)
class PoolMonth:
    """Who was drawn, evicted, kept warm and picked by the ideal operator in one month."""

    true_tok_s: tuple[float, ...]
    measured_tok_s: tuple[float, ...]
    evicted: tuple[int, ...]  # worst measured first
    run: tuple[int, ...]  # best measured first
    ideal_run: tuple[int, ...]  # best true first
    median_true_tok_s: float
    target_tok_s: float


def _covering_prefix(order: list[int], rates: list[float], target: float) -> list[int]:
    """The shortest prefix of ``order`` whose rates sum to >= target (all of it if none)."""
    taken, total = [], 0.0
    for i in order:
        taken.append(i)
        total += rates[i]
        if total >= target:
            break
    return taken


def run_month(plan: Plan) -> PoolMonth:
    """Draw the pool, read it through the window, evict, size the run set, and the ideal."""
    cls = card_class(plan.card_class)
    hours = plan.window_hours
    n = plan.cards

    # 1. The lottery: each card's true rate, then what the window reads of it.
    true = [cls.true_tok_s(uniform(plan.seed, "ticket", i)) for i in range(n)]
    measured = [
        measured_tok_s(
            true[i],
            2.0 * uniform(plan.seed, "misread", i) - 1.0,
            uniform(plan.seed, "dip", i),
            hours,
            cls.dip_depth,
        )
        for i in range(n)
    ]

    # 2. Eviction: the floor(share x n) worst measured scores leave (ties: lower index first).
    by_measured_worst_first = sorted(range(n), key=lambda i: (measured[i], i))
    evicted = by_measured_worst_first[: evict_count(plan.evict_share, n)]
    gone = set(evicted)

    # 3. The run set: survivors best measured first, the shortest prefix covering the target;
    #    a jumpy month keeps every survivor warm.
    target = shape_target(plan.shape, plan.demand_tok_s, plan.headroom)
    survivors = [i for i in sorted(range(n), key=lambda i: (-measured[i], i)) if i not in gone]
    if plan.shape == "jumpy":
        run = survivors
    else:
        run = _covering_prefix(survivors, measured, target)

    # 4. The ideal operator: all n cards best TRUE rate first, no evictions, same target.
    ideal_run = _covering_prefix(sorted(range(n), key=lambda i: (-true[i], i)), true, target)

    return PoolMonth(
        true_tok_s=tuple(true),
        measured_tok_s=tuple(measured),
        evicted=tuple(evicted),
        run=tuple(run),
        ideal_run=tuple(ideal_run),
        median_true_tok_s=statistics.median(true),
        target_tok_s=target,
    )
