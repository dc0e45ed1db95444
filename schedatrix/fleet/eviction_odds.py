"""How often the eviction check fails for a window and a share: Monte Carlo and closed form.

Monte Carlo runs the engine over many lottery draws and counts months with more than 20%
wrong evictions. The closed form works the same model with scipy, under two assumptions:

1. **The cut and the median are fixed.** With many cards, the k-th lowest measured rate sits
   near the measured distribution's ``k/n`` quantile ``m*``, and the pool's median true rate
   near the lottery's median ``t_med``. Both are computed exactly from the lottery
   (``scipy.integrate.quad`` and ``scipy.optimize.brentq``).
2. **Evictions are independent draws.** Given the cut, each of the k evicted cards is healthy
   (true rate >= ``t_med``) with the same chance ``r = P(T >= t_med | M < m*)``, so the wrong
   count is Binomial(k, r), and the check fails with chance ``P(W / k > 20%)``.

How a card reads: ``M = T x (1 + b e) x D`` with ``T`` the lottery's true rate, ``e`` uniform
in [-1, 1), ``b = 25% / sqrt(hours)`` and ``D = 1 - depth x min(1, 1/hours)`` with chance
``min(1, hours / 100)`` (a blip in the window), else 1. ``T`` is an atom (bad tickets) plus a
uniform (good ones), so every probability is a one-dimensional integral.

Both assumptions ignore how much the median and the cut wobble in a small pool, which is
why the two columns part for a dozen cards and meet as the pool grows (the lesson shows it).
The large-pool limit is sharp: the check fails almost surely when ``r`` > 20%, almost never
when ``r`` < 20%.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .cards import CardClass, card_class
from .constants import WRONG_EVICTION_CAP
from .eviction import evict_count
from .odds import check_odds
from .plan import Plan
from .window import dip_chance, dip_cost, error_bound

__all__ = [
    "ratio_cdf",
    "measured_cdf",
    "ClosedForm",
    "closed_form",
    "OddsRow",
    "odds_table",
]


def ratio_cdf(x, hours: float, dip_depth: float):
    """P(M / T <= x): the window's reading as a share of the truth (misread and blip)."""
    b = error_bound(hours)
    p = dip_chance(hours)
    c = dip_depth * dip_cost(hours)
    x = np.asarray(x, dtype=float)

    def spread(y):
        return np.clip((y - (1 - b)) / (2 * b), 0.0, 1.0)

    return (1 - p) * spread(x) + p * spread(x / (1 - c))


def _good_range(cls: CardClass) -> tuple[float, float]:
    return cls.rated_tok_s * cls.good_low, cls.rated_tok_s * cls.good_high


def _kinks(m: float, lo: float, hi: float, hours: float, dip_depth: float) -> list[float]:
    """True rates in (lo, hi) where P(M <= m | T = t) bends: help for ``quad``."""
    b = error_bound(hours)
    c = dip_depth * dip_cost(hours)
    edges = [1 - b, 1 + b, (1 - b) * (1 - c), (1 + b) * (1 - c)]
    return sorted(m / e for e in edges if lo < m / e < hi)


def _integral(m: float, lo: float, hi: float, hours: float, dip_depth: float) -> float:
    """The integral of P(M <= m | T = t) over t from lo to hi."""
    from scipy import integrate  # here: importing scipy costs a second a process

    value, _ = integrate.quad(lambda t: float(ratio_cdf(m / t, hours, dip_depth)), lo, hi,
                              points=_kinks(m, lo, hi, hours, dip_depth) or None, limit=200)
    return value


def measured_cdf(m: float, cls: CardClass, hours: float) -> float:
    """P(M <= m) for one card of class ``cls`` read through a window of ``hours``."""
    lo, hi = _good_range(cls)
    bad = cls.rated_tok_s * cls.bad_share
    good = _integral(m, lo, hi, hours, cls.dip_depth)
    return (cls.bad_chance * float(ratio_cdf(m / bad, hours, cls.dip_depth))
            + (1 - cls.bad_chance) * good / (hi - lo))


@dataclass(frozen=True)
class ClosedForm:
    """The closed-form answer for one pool: ``cut_tok_s`` (m*), ``median_tok_s`` (t_med),
    ``wrong_rate`` (r, the share of evictions expected wrong), ``fail`` (chance the check
    fails with k = ``evicted`` evictions) and ``fail_large_pool`` (the limit as n grows)."""

    cards: int
    evicted: int
    cut_tok_s: float
    median_tok_s: float
    wrong_rate: float
    fail: float
    fail_large_pool: float


def closed_form(plan: Plan) -> ClosedForm:
    """Chance the eviction check fails for ``plan``'s class, pool size, window and share."""
    from scipy import optimize, stats  # here: importing scipy costs a second a process

    cls = card_class(plan.card_class)
    if cls.bad_chance >= 0.5:
        raise InputError(f"closed form needs bad_chance < 0.5, got {cls.bad_chance!r}")
    hours = plan.window_hours
    n = plan.cards
    k = evict_count(plan.evict_share, n)
    t_med = cls.true_tok_s(0.5)
    lo, hi = _good_range(cls)
    if k == 0:
        return ClosedForm(cards=n, evicted=0, cut_tok_s=0.0, median_tok_s=t_med,
                          wrong_rate=0.0, fail=0.0, fail_large_pool=0.0)
    share = k / n
    top = hi * 2.0
    cut = optimize.brentq(lambda m: measured_cdf(m, cls, hours) - share, 1e-9, top,
                          xtol=1e-6)
    healthy_low = _integral(cut, t_med, hi, hours, cls.dip_depth)
    q = (1 - cls.bad_chance) * healthy_low / (hi - lo)
    r = min(1.0, max(0.0, q / share))
    w = np.arange(k + 1)
    fails = w / k > WRONG_EVICTION_CAP
    fail = float(stats.binom.pmf(w[fails], k, r).sum())
    large = 1.0 if r > WRONG_EVICTION_CAP else 0.0
    return ClosedForm(cards=n, evicted=k, cut_tok_s=float(cut), median_tok_s=t_med,
                      wrong_rate=r, fail=fail, fail_large_pool=large)


@dataclass(frozen=True)
class OddsRow:
    """One window and share, side by side: Monte Carlo (with its Wilson interval and the mean
    wrong share it saw) and the closed form."""

    window: str
    evict_share: float
    cards: int
    mc_fail: float
    mc_interval: tuple[float, float]
    mc_wrong_share: float
    closed_fail: float
    closed_wrong_rate: float


def odds_table(
    base: Plan,
    windows=("hour", "day", "week"),
    shares=(0.10, 0.20, 0.40),
    months: int = 2_000,
    seed: int = 0,
    progress=None,
) -> list[OddsRow]:
    """Every window x share of ``base`` (its class and pool size), both ways.

    ``progress`` is an optional callable run once per row (e.g. a tqdm bar's ``update``).
    """
    from .engine import simulate_many

    rows = []
    for window in windows:
        for share in shares:
            plan = base.with_knobs(window=window, evict_share=share)
            odds = check_odds(plan, months=months, seed=seed)
            wrong = simulate_many(plan, months, seed).wrong_share
            cf = closed_form(plan)
            rows.append(OddsRow(
                window=str(window), evict_share=share, cards=plan.cards,
                mc_fail=odds.fail_share["evictions"], mc_interval=odds.interval["evictions"],
                mc_wrong_share=float(np.mean(wrong)), closed_fail=cf.fail,
                closed_wrong_rate=cf.wrong_rate,
            ))
            if progress is not None:
                progress()
    return rows
