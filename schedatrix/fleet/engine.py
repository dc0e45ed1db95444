"""The vectorised engine: many fleet months at once, with numpy.

Month ``i`` of ``simulate_many(plan, months, seed)`` is the plan with seed ``seed + i``, and its
figures equal ``schedatrix.simulate(plan.with_knobs(seed=seed + i))`` (the tests check it).
Each step is the reference's step done on a (months, cards) array: sorts become row-wise
stable argsorts, prefix scans become cumulative sums.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..errors import InputError
from .cards import card_class
from .draws import uniforms
from .eviction import evict_count
from .figures import month_figures
from .plan import MAX_SEED, Plan
from .run_set import shape_target
from .window import dip_chance, dip_cost, error_bound

__all__ = ["Months", "draw_pools", "simulate_many"]


@dataclass(frozen=True)
class Months:
    """Per-month figures of many months: every field is an array of shape (months,)."""

    seed: np.ndarray
    warm: np.ndarray
    evicted: np.ndarray
    wrong_evictions: np.ndarray
    wrong_share: np.ndarray
    bill: np.ndarray
    run_rent: np.ndarray
    churn_fees: np.ndarray
    idle_bill: np.ndarray
    delivered_tok_s: np.ndarray
    run_true_tok_s: np.ndarray
    unmet_share: np.ndarray
    mtok_per_dollar: np.ndarray
    ideal_bill: np.ndarray
    ideal_cards: np.ndarray
    ideal_delivered_tok_s: np.ndarray
    ideal_mtok_per_dollar: np.ndarray
    convergence: np.ndarray
    median_true_tok_s: np.ndarray
    capacity_ok: np.ndarray
    convergence_ok: np.ndarray
    evictions_ok: np.ndarray

    def __len__(self) -> int:
        return len(self.seed)

    def as_dict(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def draw_pools(plan: Plan, seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """True and measured rates of every card of every month: two (months, cards) arrays."""
    cls = card_class(plan.card_class)
    hours = plan.window_hours
    n = plan.cards
    # The ticket: the class's quantile function, step by step as CardClass.true_share does,
    # in place to spare memory traffic (the same float operations, the same results).
    u = uniforms(seeds, "ticket", n)
    true = u - cls.bad_chance
    true /= 1 - cls.bad_chance
    true *= cls.good_high - cls.good_low
    true += cls.good_low
    np.putmask(true, u < cls.bad_chance, cls.bad_share)
    true = np.multiply(cls.rated_tok_s, true, out=true)
    # The window's reading: true x (1 + bound x misread), less a dip where one was caught.
    measured = uniforms(seeds, "misread", n)
    measured *= 2.0
    measured -= 1.0
    measured *= error_bound(hours)
    measured += 1
    measured *= true
    caught = np.flatnonzero(uniforms(seeds, "dip", n) < dip_chance(hours))
    flat = measured.reshape(-1)
    flat[caught] *= 1 - cls.dip_depth * dip_cost(hours)
    return true, measured


def _take(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Row-wise gather ``values[row, index[row]]`` (a flat take: faster than take_along_axis)."""
    rows, width = values.shape
    offsets = (np.arange(rows) * width)[:, None]
    return values.ravel()[index + offsets]


def _orders(measured: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise: the k worst cards (worst first), the survivors (best first) and the
    survivors' measured rates in that order; ties always go to the lower index first.

    A fast sort does the work; rows holding a tie (measured rates almost never tie) are
    redone exactly, so the result is the reference's on every row.
    """
    order = np.argsort(measured, axis=1)
    ordered = _take(measured, order)
    survivors = order[:, k:][:, ::-1].copy()
    best = ordered[:, k:][:, ::-1].copy()
    for row in np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1)):
        index = np.arange(measured.shape[1])
        order[row] = np.lexsort((index, measured[row]))
        index = order[row, k:]
        survivors[row] = index[np.lexsort((index, -measured[row, index]))]
    return order[:, :k], survivors, best


def _covering_count(sorted_rates: np.ndarray, target: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row: length of the shortest prefix reaching the target (all if none), and the
    prefix sums. Rates are positive, so prefix sums never fall: the prefixes still short of
    the target are exactly those before the first that reaches it."""
    cums = np.cumsum(sorted_rates, axis=1)
    short = np.count_nonzero(cums < target, axis=1)
    return np.minimum(short + 1, sorted_rates.shape[1]), cums


def simulate_many(plan: Plan, months: int, seed: int | None = None) -> Months:
    """Figures of ``months`` months of ``plan``, seeds ``seed, seed + 1, ...``.

    ``seed`` defaults to the plan's own seed.
    """
    if not (isinstance(months, int) and not isinstance(months, bool) and months >= 1):
        raise InputError(f"months must be a whole number >= 1, got {months!r}")
    start = plan.seed if seed is None else seed
    if not (isinstance(start, int) and 0 <= start and start + months - 1 <= MAX_SEED):
        raise InputError(f"seed must be a whole number from 0 to 2**63 - months, got {seed!r}")
    seeds = np.arange(months, dtype=np.uint64) + np.uint64(start)
    true, measured = draw_pools(plan, seeds)
    cls = card_class(plan.card_class)
    rent = cls.rent_per_month
    n = plan.cards
    rows = np.arange(months)

    # One row-wise sort of the measured rates serves both eviction (worst first) and the run
    # set (survivors best first).
    k = evict_count(plan.evict_share, n)
    evicted_idx, survivors, survivors_measured = _orders(measured, k)
    true_desc = np.negative(true)
    true_desc.sort(axis=1)
    np.negative(true_desc, out=true_desc)  # each row's true rates, highest first
    median = (true_desc[:, (n - 1) // 2] + true_desc[:, n // 2]) / 2
    wrong = np.count_nonzero(_take(true, evicted_idx) >= median[:, None], axis=1)

    # Run set: the shortest best-measured prefix of the survivors covering the target.
    target = shape_target(plan.shape, plan.demand_tok_s, plan.headroom)
    if plan.shape == "jumpy":
        warm = np.full(months, n - k)
    else:
        warm, _ = _covering_count(survivors_measured, target)
    run_cums = np.cumsum(_take(true, survivors), axis=1)
    run_true = run_cums[rows, warm - 1]

    # The ideal operator: all cards best true first, same target, nobody evicted. Ties in
    # true rate carry equal values, so their order cannot change a sum.
    ideal_cards, ideal_cums = _covering_count(true_desc, target)
    ideal_true = ideal_cums[rows, ideal_cards - 1]

    figures = month_figures(rent, plan.demand_tok_s, warm, np.full(months, k), wrong,
                            run_true, ideal_cards, ideal_true)
    return Months(seed=seeds, median_true_tok_s=median, **figures)
