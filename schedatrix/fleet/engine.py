"""The vectorised engine: many fleet months at once, with numpy.

Month ``i`` of ``simulate_many(plan, months, seed)`` is the plan with seed ``seed + i``, and its
figures equal ``schedatrix.simulate(plan.with_knobs(seed=seed + i))`` (the tests check it).
Each step is the reference's step done on arrays: the draws on (months, cards), sorts row by
row, then running sums down (rank, month) arrays in the reference's order, so every figure
agrees with the reference to the last bit. docs/DESIGN.md says what each step does for speed.

Months run in blocks of about ``BLOCK_CELLS`` cards (a block's work arrays, kept and reused,
fit the processor's cache) spread over worker threads (numpy releases the GIL in its
kernels). A block's figures depend only on its own months, never on which thread ran it or
how many there were: same seed, same month, on every machine. Memory: the result's arrays
(about 250 bytes a month) plus ``BLOCK_CELLS`` x 115 bytes (3.8 MB) of scratch per thread,
whatever the card count.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields

import numpy as np

from .cards import CardClass, card_class
from .draws import below, hashes, to_unit
from .eviction import evict_count
from .figures import month_figures
from .inputs import whole_number
from .plan import MAX_SEED, Plan
from .run_set import shape_target
from .window import dip_chance, dip_cost, error_bound

__all__ = ["Months", "draw_pools", "simulate_many", "BLOCK_CELLS", "MAX_WORKERS"]

#: Months x cards in one block of work (32,768 cells: about 3.8 MB of scratch).
BLOCK_CELLS = 1 << 15
#: The most worker threads ``simulate_many`` starts by default (it uses the cores it may run on,
#: up to this many), which bounds its scratch memory at MAX_WORKERS x 3.8 MB.
MAX_WORKERS = 8
#: Up to this many cards, running sums go rank by rank over all the block's months at once
#: (numpy's cumsum along a short axis pays a fixed cost per month); beyond it, numpy's cumsum.
_RANK_LOOP_MAX_CARDS = 128
_STREAMS = ("ticket", "misread", "dip")


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


@dataclass(frozen=True)
class _Knobs:
    """What every block of one plan needs, worked out once."""

    cls: CardClass
    cards: int
    evicted: int
    target_tok_s: float
    jumpy: bool
    bound: float
    dip_chance: float
    dip_factor: float

    @classmethod
    def of(cls, plan: Plan) -> _Knobs:
        card = card_class(plan.card_class)
        hours = plan.window_hours
        return cls(
            cls=card, cards=plan.cards, evicted=evict_count(plan.evict_share, plan.cards),
            target_tok_s=shape_target(plan.shape, plan.demand_tok_s, plan.headroom),
            jumpy=plan.shape == "jumpy", bound=error_bound(hours), dip_chance=dip_chance(hours),
            dip_factor=1 - card.dip_depth * dip_cost(hours),
        )


class _Scratch:
    """One thread's work arrays for blocks of up to ``months`` x ``cards``, kept and reused:
    fresh arrays of this size cost more in page faults than the arithmetic done in them."""

    def __init__(self, months: int, cards: int) -> None:
        shape, ranks = (months, cards), (cards, months)
        self.hash = np.empty((len(_STREAMS), *shape), dtype=np.uint64)
        self.tmp = np.empty_like(self.hash)
        self.true = np.empty(shape)
        self.measured = np.empty(shape)
        self.key = np.empty(shape, dtype=np.int64)
        self.gathered = np.empty(shape)
        self.caught = np.empty(shape, dtype=bool)
        self.bad = np.empty(shape, dtype=bool)
        # Card-major (rank, month) arrays: by_rank[0] measured in eviction order, [1] true in
        # that order, [2] true ascending. Sums and counts then run over whole rows of months.
        self.by_rank = np.empty((3, *ranks))
        self.mask = np.empty(ranks, dtype=bool)
        self.cards = np.arange(cards)
        self.positions = np.arange(months * cards).reshape(shape)  # flat, within the block
        self.rows = np.arange(months)

    #: Which axis of each array counts months (0 where not listed; ``cards`` has none).
    _MONTHS_AXIS = {"hash": 1, "tmp": 1, "mask": 1, "by_rank": 2}

    def first(self, months: int) -> _Scratch:
        """The same memory as arrays for ``months`` months (fewer than it was made for): each
        a contiguous front part of its array, shaped for the fewer months."""
        if months == len(self.rows):
            return self
        cut = object.__new__(_Scratch)
        for name, arr in vars(self).items():
            if name == "cards":
                cut.cards = arr
                continue
            shape = list(arr.shape)
            shape[self._MONTHS_AXIS.get(name, 0)] = months
            setattr(cut, name, arr.reshape(-1)[:math.prod(shape)].reshape(shape))
        return cut


_local = threading.local()


def _scratch(months: int, cards: int) -> _Scratch:
    """This thread's scratch for blocks of ``months`` x ``cards`` (it keeps one, the last)."""
    kept = getattr(_local, "scratch", None)
    if kept is None or kept.cards.size != cards or len(kept.rows) < months:
        kept = _local.scratch = _Scratch(max(months, BLOCK_CELLS // cards), cards)
    return kept.first(months)


def _fill_pools(knobs: _Knobs, seeds: np.ndarray, true: np.ndarray, measured: np.ndarray,
                scratch: _Scratch | None = None) -> None:
    """Write the true and measured rates of every card of every month into two (months,
    cards) arrays: the reference's float operations, in its order, in place."""
    cls = knobs.cls
    if scratch is None:
        scratch = _Scratch(seeds.size, knobs.cards)
    # The three streams in one hash pass.
    h = hashes(seeds, _STREAMS, knobs.cards, out=scratch.hash, scratch=scratch.tmp)
    caught = below(h[2], knobs.dip_chance, out=scratch.caught)  # the window held a blip
    # The ticket: the class's quantile function, step by step as CardClass.true_share does.
    u = to_unit(h[0], out=true)
    bad = np.less(u, cls.bad_chance, out=scratch.bad)
    true -= cls.bad_chance
    true /= 1 - cls.bad_chance
    true *= cls.good_high - cls.good_low
    true += cls.good_low
    np.putmask(true, bad, cls.bad_share)
    true *= cls.rated_tok_s
    # The window's reading: true x (1 + bound x misread), less a dip where one was caught.
    m = to_unit(h[1], out=measured)
    m *= 2.0
    m -= 1.0
    m *= knobs.bound
    m += 1
    m *= true
    # x 1.0 leaves a reading as it is: one plain multiplication beats a masked one 4 to 1.
    factor = scratch.gathered  # free until the gather
    factor.fill(1.0)
    np.copyto(factor, knobs.dip_factor, where=caught)
    m *= factor


def draw_pools(plan: Plan, seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """True and measured rates of every card of every month: two (months, cards) arrays."""
    seeds = np.asarray(seeds, dtype=np.uint64).reshape(-1)
    true = np.empty((seeds.size, plan.cards))
    measured = np.empty_like(true)
    _fill_pools(_Knobs.of(plan), seeds, true, measured)
    return true, measured


def _sort_by_measured(measured: np.ndarray, true: np.ndarray, k: int,
                      measured_out: np.ndarray, true_out: np.ndarray,
                      scratch: _Scratch | None = None) -> None:
    """Each month's cards in eviction order, card-major: ``measured_out[j, m]`` and
    ``true_out[j, m]`` are the measured and true rates of month ``m``'s card of rank ``j``,
    the k evicted cards first (worst first, ties: lower index first), then the survivors so
    that read from the last rank back they go best first (ties: lower index first), as the
    reference orders them. ``measured`` and ``true`` are (months, cards).

    Measured rates are positive, so their bit patterns sort like them: one integer sort of
    the bits, with the card's flat position in the block in the lowest bits (15 of the 52
    bits of the mantissa for a block of 32,768), does the work. A month whose rates do not
    come out strictly increasing (a tie, or two rates so close that those low bits decided)
    is redone exactly, so every month is the reference's.
    """
    months, n = measured.shape
    if scratch is None:
        scratch = _Scratch(months, n)
    low = (1 << max(1, (months * n - 1).bit_length())) - 1
    key = np.bitwise_and(measured.view(np.int64), ~low, out=scratch.key)
    key |= scratch.positions
    key.sort(axis=1)
    key &= low  # each month's flat positions, in order
    # Gather month by month (reads stay near each other), then turn card-major. mode="clip":
    # every position is valid, and numpy's default mode buffers the output.
    for rates, rates_out in ((measured, measured_out), (true, true_out)):
        np.take(rates.reshape(-1), key, out=scratch.gathered, mode="clip")
        np.copyto(rates_out, scratch.gathered.T)
    if n < 2:
        return
    unsure = np.less_equal(measured_out[1:], measured_out[:-1], out=scratch.mask[1:])
    if not unsure.any():
        return
    for month in np.flatnonzero(unsure.any(axis=0)):
        rates = measured[month]
        ranked = np.lexsort((np.arange(n), rates))
        survivors = ranked[k:]
        ranked[k:] = survivors[np.lexsort((-survivors, rates[survivors]))]
        measured_out[:, month] = rates[ranked]
        true_out[:, month] = true[month, ranked]


def _suffix_sums(by_rank: np.ndarray, k: int) -> None:
    """In place, running sums from the last rank back: ``by_rank[0]`` and ``[1]`` (each
    (cards, months)) down to rank ``k``, ``[2]`` down to rank 0. Each is the reference's
    left-to-right ``total += rate`` over the cards best first, so the sums agree to the last
    bit. Up to 128 cards one addition per rank does all months at once; beyond, numpy's
    cumsum down the ranks (blocks then hold few months)."""
    n = by_rank.shape[1]
    if n <= _RANK_LOOP_MAX_CARDS:
        for j in range(n - 2, -1, -1):
            part = by_rank[:, j:j + 2] if j >= k else by_rank[2, j:j + 2]
            np.add(part[..., 0, :], part[..., 1, :], out=part[..., 0, :])
    else:
        for part in (by_rank[:2, k:], by_rank[2]):
            backwards = part[..., ::-1, :]
            np.cumsum(backwards, axis=-2, out=backwards)


def _run_block(knobs: _Knobs, seeds: np.ndarray, out: dict[str, np.ndarray], lo: int) -> None:
    """Months ``lo .. lo + len(seeds) - 1``: their counts and capacities into ``out``."""
    months, n, k = seeds.size, knobs.cards, knobs.evicted
    scratch = _scratch(months, n)
    true, by_rank, mask, rows = scratch.true, scratch.by_rank, scratch.mask, scratch.rows
    _fill_pools(knobs, seeds, true, scratch.measured, scratch)
    _sort_by_measured(scratch.measured, true, k, by_rank[0], by_rank[1], scratch)
    true.view(np.int64).sort(axis=1)  # positive floats sort like their bits
    median = true[:, n // 2] + true[:, (n - 1) // 2]
    median /= 2
    true_up = by_rank[2]
    np.copyto(true_up, true.T)
    wrong = np.count_nonzero(np.greater_equal(by_rank[1][:k], median, out=mask[:k]), axis=0)
    _suffix_sums(by_rank, k)
    target = knobs.target_tok_s
    # Run set: the shortest best-measured prefix of the survivors covering the target.
    # Rates are positive, so running sums never fall: the prefixes short of the target are
    # exactly those before the first that reaches it.
    if knobs.jumpy:
        warm = np.full(months, n - k)
    else:
        short = np.count_nonzero(np.less(by_rank[0][k:], target, out=mask[k:]), axis=0)
        warm = np.minimum(short + 1, n - k)
    # The ideal operator: all cards best true first, same target, nobody evicted.
    short = np.count_nonzero(np.less(true_up, target, out=mask), axis=0)
    ideal = np.minimum(short + 1, n)
    hi = lo + months
    out["warm"][lo:hi] = warm
    out["wrong"][lo:hi] = wrong
    out["median"][lo:hi] = median
    out["run_true"][lo:hi] = by_rank[1][n - warm, rows]
    out["ideal_cards"][lo:hi] = ideal
    out["ideal_true"][lo:hi] = true_up[n - ideal, rows]


def _block_bounds(months: int, most: int, workers: int) -> list[int]:
    """Where the blocks start (and the last ends): blocks of at most ``most`` months, as many
    for each worker, of equal size to a month. No block is a multiple of 64 months long: the
    card-major arrays' rows would then lie a multiple of 512 bytes apart and share cache sets,
    which made the running sums up to three times slower."""
    count = -(-months // most)
    count = min(months, -(-count // workers) * workers)
    while count < months and (months // count % 64 == 0 or -(-months // count) % 64 == 0):
        count = min(months, count + workers)
    return [i * months // count for i in range(count + 1)]


def _default_workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


@functools.cache
def _executor(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(workers, thread_name_prefix="schedatrix-engine")


if hasattr(os, "register_at_fork"):  # a forked child has none of the parent's threads
    os.register_at_fork(after_in_child=_executor.cache_clear)


def simulate_many(plan: Plan, months: int, seed: int | None = None, *,
                  workers: int | None = None) -> Months:
    """Figures of ``months`` months of ``plan``, seeds ``seed, seed + 1, ...``.

    Parameters
    ----------
    plan : Plan
    months : int
        How many months, >= 1: any whole number, Python's or numpy's (not a bool).
    seed : int, optional
        The first month's seed (default: the plan's own); the last, ``seed + months - 1``,
        must stay within 0 .. 2**63 - 1.
    workers : int, optional
        Threads to spread the months over (default: the cores this process may use, at most
        ``MAX_WORKERS``). The figures never depend on it.

    Returns
    -------
    Months, whose arrays have shape (months,).
    """
    months = whole_number("months", months, low=1)
    start = plan.seed if seed is None else seed
    start = whole_number("seed", start, low=0, high=MAX_SEED - months + 1,
                         allowed="a whole number from 0 to 2**63 - months")
    workers = _default_workers() if workers is None else whole_number("workers", workers, low=1)
    knobs = _Knobs.of(plan)
    seeds = np.arange(months, dtype=np.uint64) + np.uint64(start)
    out = {name: np.empty(months, dtype=np.int64) for name in ("warm", "wrong", "ideal_cards")}
    out.update({name: np.empty(months) for name in ("median", "run_true", "ideal_true")})
    bounds = _block_bounds(months, max(1, BLOCK_CELLS // plan.cards), workers)
    count = len(bounds) - 1

    def run(i: int) -> None:
        lo, hi = bounds[i], bounds[i + 1]
        _run_block(knobs, seeds[lo:hi], out, lo)

    workers = min(workers, count)
    if workers == 1:
        for i in range(count):
            run(i)
    else:
        for _ in _executor(workers).map(run, range(count)):
            pass
    rent = knobs.cls.rent_per_month
    figures = month_figures(rent, plan.demand_tok_s, out["warm"], np.full(months, knobs.evicted),
                            out["wrong"], out["run_true"], out["ideal_cards"], out["ideal_true"])
    return Months(seed=seeds, median_true_tok_s=out["median"], **figures)
