"""The vectorised engine: many fleet months at once, with numpy.

Month ``i`` of ``simulate_many(plan, months, seed)`` is the plan with seed ``seed + i``, and its
figures equal ``schedatrix.simulate(plan.with_knobs(seed=seed + i))`` (the tests check it).
Each step is the reference's step done on a (months, cards) array: sorts become row-wise
stable argsorts, prefix scans become cumulative sums.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from . import bill, checks
from .cards import card_class
from .draws import uniforms
from .errors import InputError
from .eviction import evict_count
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
    u = uniforms(seeds, "ticket", n)
    spread = (u - cls.bad_chance) / (1 - cls.bad_chance)
    share = np.where(
        u < cls.bad_chance, cls.bad_share, cls.good_low + (cls.good_high - cls.good_low) * spread
    )
    true = cls.rated_tok_s * share
    misread = 2.0 * uniforms(seeds, "misread", n) - 1.0
    measured = true * (1 + error_bound(hours) * misread)
    caught = uniforms(seeds, "dip", n) < dip_chance(hours)
    measured = np.where(caught, measured * (1 - cls.dip_depth * dip_cost(hours)), measured)
    return true, measured


def _covering_count(sorted_rates: np.ndarray, target: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row: length of the shortest prefix reaching the target (all if none), and its sum."""
    cums = np.cumsum(sorted_rates, axis=1)
    covered = cums >= target
    width = sorted_rates.shape[1]
    count = np.where(covered.any(axis=1), covered.argmax(axis=1) + 1, width)
    return count, cums


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
    rows = np.arange(months)[:, None]

    # Eviction: worst measured first, ties lower index first.
    k = evict_count(plan.evict_share, n)
    worst_first = np.argsort(measured, axis=1, kind="stable")
    gone = np.zeros((months, n), dtype=bool)
    gone[rows, worst_first[:, :k]] = True
    median = np.median(true, axis=1)
    wrong = np.count_nonzero(gone & (true >= median[:, None]), axis=1)

    # Run set: survivors best measured first (evicted pushed to the end), covering prefix.
    target = shape_target(plan.shape, plan.demand_tok_s, plan.headroom)
    order = np.argsort(np.where(gone, np.inf, -measured), axis=1, kind="stable")[:, : n - k]
    run_true_sorted = true[rows, order]
    if plan.shape == "jumpy":
        warm = np.full(months, n - k)
    else:
        warm, _ = _covering_count(measured[rows, order], target)
    run_true = np.cumsum(run_true_sorted, axis=1)[np.arange(months), warm - 1]

    # The ideal operator: all cards best true first, same target, nobody evicted.
    ideal_sorted = np.take_along_axis(true, np.argsort(-true, axis=1, kind="stable"), axis=1)
    ideal_cards, ideal_cums = _covering_count(ideal_sorted, target)
    ideal_true = ideal_cums[np.arange(months), ideal_cards - 1]

    evicted = np.full(months, k)
    rr = bill.run_rent(rent, warm)
    fees = bill.churn_fees(rent, evicted)
    total = rr + fees
    delivered = bill.delivered_tok_s(plan.demand_tok_s, run_true)
    ideal_bill = bill.run_rent(rent, ideal_cards)
    ideal_delivered = bill.delivered_tok_s(plan.demand_tok_s, ideal_true)
    unmet = checks.unmet_share(delivered, plan.demand_tok_s)
    convergence = ideal_bill / total
    share_wrong = checks.wrong_share(wrong, evicted)
    return Months(
        seed=seeds,
        warm=warm,
        evicted=evicted,
        wrong_evictions=wrong,
        wrong_share=share_wrong,
        bill=total,
        run_rent=rr,
        churn_fees=fees,
        idle_bill=bill.idle_bill(rent, warm, delivered, run_true),
        delivered_tok_s=delivered,
        run_true_tok_s=run_true,
        unmet_share=unmet,
        mtok_per_dollar=bill.mtok_per_dollar(delivered, total),
        ideal_bill=ideal_bill,
        ideal_cards=ideal_cards,
        ideal_mtok_per_dollar=bill.mtok_per_dollar(ideal_delivered, ideal_bill),
        convergence=convergence,
        median_true_tok_s=median,
        capacity_ok=checks.check_capacity(unmet),
        convergence_ok=checks.check_convergence(convergence),
        evictions_ok=checks.check_evictions(share_wrong),
    )
