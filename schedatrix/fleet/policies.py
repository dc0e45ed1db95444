"""Eviction policies over a month of windows, and the trade-off a window length buys.

The month model judges a pool once. Here the autoscaler reviews the pool at the end of every
window, all month long, and one card goes bad mid-month: its true rate falls to the class's
bad ticket at a random hour in the first half of the month. An evicted card is replaced by a
fresh card from the lottery (rent moves on, the slot stays). Each hour reads a card within
+-25% of its truth, a blip hour takes ``dip_depth`` of it (as in
:mod:`schedatrix.fleet.card_trace`); a window's reading is the average of its hours.

Two figures judge a policy on a window length:

* **wrong share**: evictions of cards whose true rate was at or above the pool's median
  true rate at that moment, as a share of all evictions (the month's eviction check, 20% cap);
* **days serving degraded**: from the hour the card went bad to the end of the window whose
  review evicted it (the whole rest of the month when no review did).

Policies (each looks only at the readings, as a real autoscaler would):

* ``worst_first(share)``: the library's rule at every review, the floor(share x n) worst go;
* ``consecutive(k, share)``: flagged in the worst share at k reviews in a row, then out;
* ``below_median(gap, margin)``: out when reading below the median reading by more than
  ``gap`` plus ``margin`` x the window's error bound (25% / sqrt(hours)), however many that
  is. The gap says how slow is too slow (a quarter below the median); the margin keeps the
  window's own noise from pushing a card over it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .card_trace import HOURS_PER_MONTH
from .cards import CardClass, card_class
from .constants import HOUR_WINDOW_ERROR
from .eviction import evict_count
from .inputs import real_number, whole_number
from .window import BLIP_CHANCE_PER_HOUR, error_bound

__all__ = [
    "Policy",
    "worst_first",
    "consecutive",
    "below_median",
    "Watch",
    "watch",
    "tradeoff",
]


@dataclass(frozen=True)
class Policy:
    """An eviction rule applied at every review. Build one with :func:`worst_first`,
    :func:`consecutive` or :func:`below_median`."""

    name: str
    kind: str
    share: float = 0.0
    k: int = 1
    gap: float = 0.0
    margin: float = 1.0


def _share(share: float) -> float:
    """A policy's eviction share: any real number in [0, 1), kept as a float."""
    evict_count(share, 1)  # validates it
    return float(share)


def worst_first(share: float = 0.10) -> Policy:
    """Evict the floor(share x n) worst readings at every review."""
    share = _share(share)
    return Policy(name=f"worst-first {share:.0%}", kind="worst", share=share)


def consecutive(k: int = 3, share: float = 0.10) -> Policy:
    """Evict a card only once it sat in the worst ``share`` at ``k`` reviews in a row."""
    share = _share(share)
    k = whole_number("k", k, low=1)
    return Policy(name=f"{k} in a row, worst {share:.0%}", kind="consecutive", share=share, k=k)


def below_median(gap: float = 0.25, margin: float = 1.0) -> Policy:
    """Evict a card reading below the median reading by more than ``gap`` (a share) plus
    ``margin`` window errors: the cut is median x (1 - gap - margin x 25% / sqrt(hours))."""
    gap = real_number("gap", gap, "a fraction in [0, 1)", lambda x: 0 <= x < 1)
    margin = real_number("margin", margin, "a number >= 0 with gap + margin x 25% below 1",
                         lambda x: x >= 0 and gap + x * HOUR_WINDOW_ERROR < 1)
    return Policy(name=f"{gap:.0%} below median + {margin:g} x error", kind="margin", gap=gap,
                  margin=margin)


@dataclass(frozen=True)
class Watch:
    """One policy on one window length over ``months`` months (pooled)."""

    policy: str
    hours: int
    months: int
    evictions_per_month: float
    wrong_share: float
    degraded_days: float
    missed: float  # share of months in which the degraded card was never evicted


def _tickets(cls: CardClass, u: np.ndarray) -> np.ndarray:
    spread = (u - cls.bad_chance) / (1 - cls.bad_chance)
    share = np.where(u < cls.bad_chance, cls.bad_share,
                     cls.good_low + (cls.good_high - cls.good_low) * spread)
    return cls.rated_tok_s * share


def watch(
    policy: Policy,
    hours: int,
    card_class_key: str = "flagship",
    cards: int = 16,
    months: int = 200,
    seed: int = 0,
) -> Watch:
    """Run ``policy`` with reviews every ``hours`` hours over ``months`` months of a pool of
    ``cards`` cards of one class. Same seed, same months, for every policy and window: the
    hourly noise, blips, replacement tickets and the bad card's hour are drawn up front."""
    cls = card_class(card_class_key)
    hours = whole_number("hours", hours, low=1, high=HOURS_PER_MONTH // 2)
    cards = whole_number("cards", cards, low=2, high=1024)
    months = whole_number("months", months, low=1)
    rng = np.random.default_rng(seed)
    H, n, M = HOURS_PER_MONTH, cards, months
    rows = np.arange(M)
    noise = rng.uniform(-1.0, 1.0, (M, n, H))
    blips = rng.random((M, n, H)) < BLIP_CHANCE_PER_HOUR
    factor = (1 + HOUR_WINDOW_ERROR * noise) * np.where(blips, 1 - cls.dip_depth, 1.0)
    csum = np.concatenate([np.zeros((M, n, 1)), np.cumsum(factor, axis=2)], axis=2)
    true = _tickets(cls, rng.random((M, n)))
    bad_slot = rng.integers(0, n, M)
    bad_hour = rng.integers(0, H // 2, M)
    bad_rate = cls.rated_tok_s * cls.bad_share
    # Replacement tickets, drawn lazily from a stream of their own.
    fresh = np.random.default_rng([seed, 1])

    degraded = np.zeros(M, dtype=bool)  # the bad card is serving now
    done_at = np.full(M, -1)  # hour the bad card left (-1: not yet)
    streak = np.zeros((M, n), dtype=int)
    evictions = wrong = 0
    bound = error_bound(hours)
    k_worst = evict_count(policy.share, n)
    for start in range(0, H - hours + 1, hours):
        end = start + hours
        sums = csum[:, :, end] - csum[:, :, start]
        # The card goes bad at bad_hour: this window mixes before and after.
        crossing = (bad_hour >= start) & (bad_hour < end) & (done_at < 0)
        reading = true * sums / hours
        if crossing.any():
            r, d, h = rows[crossing], bad_slot[crossing], bad_hour[crossing]
            before = csum[r, d, h] - csum[r, d, start]
            after = csum[r, d, end] - csum[r, d, h]
            old = true[r, d]
            true[r, d] = np.minimum(old, bad_rate)
            reading[r, d] = (old * before + true[r, d] * after) / hours
            degraded |= crossing

        out = _decide(policy, reading, streak, k_worst, bound)
        if out.any():
            median = np.median(true, axis=1, keepdims=True)
            evictions += int(out.sum())
            wrong += int(np.count_nonzero(out & (true >= median)))
            hit = out[rows, bad_slot] & degraded & (done_at < 0)
            done_at[hit] = end
            degraded[hit] = False
            count = int(out.sum())
            true[out] = _tickets(cls, fresh.random(count))
            streak[out] = 0
    served = np.where(done_at >= 0, done_at, H) - bad_hour
    return Watch(
        policy=policy.name, hours=hours, months=M,
        evictions_per_month=evictions / M,
        wrong_share=wrong / evictions if evictions else 0.0,
        degraded_days=float(np.mean(served)) / 24,
        missed=float(np.mean(done_at < 0)),
    )


def _decide(policy: Policy, reading: np.ndarray, streak: np.ndarray, k_worst: int,
            bound: float) -> np.ndarray:
    """Which cards the policy evicts at this review: a (months, cards) bool array.
    Updates ``streak`` in place for the consecutive rule."""
    M, n = reading.shape
    out = np.zeros((M, n), dtype=bool)
    if policy.kind == "margin":
        median = np.median(reading, axis=1, keepdims=True)
        return reading < median * (1 - policy.gap - policy.margin * bound)
    if k_worst == 0:
        return out
    worst = np.argsort(reading, axis=1, kind="stable")[:, :k_worst]
    flagged = np.zeros((M, n), dtype=bool)
    flagged[np.arange(M)[:, None], worst] = True
    if policy.kind == "worst":
        return flagged
    streak[:] = np.where(flagged, streak + 1, 0)
    return streak >= policy.k


def tradeoff(
    policies,
    windows=(1, 6, 24, 72, 168),
    card_class_key: str = "flagship",
    cards: int = 16,
    months: int = 200,
    seed: int = 0,
    progress=None,
) -> list[Watch]:
    """Every policy on every window length (same seed, so the same months for all).
    ``progress`` is an optional callable run once per (policy, window)."""
    out = []
    for policy in policies:
        for hours in windows:
            out.append(watch(policy, int(hours), card_class_key, cards, months, seed))
            if progress is not None:
                progress()
    return out
