"""Checks of exercises 5 to 7: the month by hand, the ideal operator, the eviction check's odds.

Like every check, these run in the checker process; the learner's functions cross the
boundary as plain data (lists, dicts of numbers and text) and each answer is compared with
the library's own month, built here from the same pool:

* ``month_figures(true_tok_s, measured_tok_s, knobs) -> dict``: evicted, warm, bill,
  delivered_tok_s, idle_bill, mtok_per_dollar of one month, from its cards' rates and knobs;
* ``ideal_operator(true_tok_s, knobs) -> dict`` (cards, bill, delivered_tok_s,
  mtok_per_dollar) and ``signature(figures) -> str`` (the three checks' digits);
* ``measured_rate(true_tok_s, misread, dip_draw, hours, dip_depth) -> float`` (the window),
  ``wilson_interval(successes, trials, z) -> (low, high)`` and
  ``eviction_fail_chance(card, cards, hours, evict_share, months, seed) -> float`` (a Monte
  Carlo estimate, checked against the library's own Monte Carlo within their joint error).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import asdict
from functools import cache

import numpy as np

from ...fleet.cards import CARD_CLASSES
from ...fleet.checks import (
    check_capacity,
    check_convergence,
    check_evictions,
    unmet_share,
    wrong_share,
)
from ...fleet.checks import signature as _signature
from ...fleet.constants import JUMPY_PEAK, SECONDS_PER_MONTH
from ...fleet.month import Month, simulate
from ...fleet.odds import check_odds
from ...fleet.plan import Plan
from ...fleet.presets import PRESETS
from ...fleet.run_set import SHAPES
from ...fleet.window import measured_tok_s
from .check_support import (
    DRAWN,
    RANDOM_SEED,
    as_number,
    brief,
    call,
    close,
    drawn,
    fmt,
    off_by,
    passed,
)

__all__ = ["check_month", "check_ideal", "check_signature", "check_window", "check_wilson",
           "check_eviction_odds", "knobs_of", "ODDS_CASES", "ODDS_MONTHS", "ODDS_Z"]

MONTH_KEYS = ("evicted", "warm", "bill", "delivered_tok_s", "idle_bill", "mtok_per_dollar")
IDEAL_KEYS = ("cards", "bill", "delivered_tok_s", "mtok_per_dollar")


def knobs_of(month: Month) -> dict:
    """A month's knobs as the exercises hand them over: plain numbers and text, no seed."""
    p = month.plan
    return {"rent_per_month": float(month.card_class.rent_per_month),
            "demand_tok_s": float(p.demand_tok_s), "shape": p.shape,
            "headroom": float(p.headroom), "evict_share": float(p.evict_share)}


def _shown_pool(month: Month) -> str:
    p = month.plan
    return (f"{p.cards} {p.card_class} cards, {p.demand_tok_s:,.0f} tok/s {p.shape}"
            + (f" +{p.headroom:.0%}" if p.shape == "steady" else "")
            + f", {p.evict_share:.0%} evicted")


@cache
def _months() -> list[tuple[Month, str]]:
    """The preset months, then seeded random ones of every shape, class and share."""
    out = [(simulate(PRESETS[name].plan), f"the {name} month") for name in PRESETS]
    return out + _random_months(RANDOM_SEED + 5)


def _all_months() -> list[tuple[Month, str]]:
    """The visible months, and under grading the drawn ones after them."""
    return _months() + drawn(lambda s: _random_months(s, 12, DRAWN), 5)


@cache
def _random_months(seed: int, count: int = 24, what: str = "a random month"
                   ) -> list[tuple[Month, str]]:
    """Seeded random months of every shape, class and share."""
    out = []
    r = random.Random(seed)
    classes = list(CARD_CLASSES)
    for k in range(count):
        cls = classes[k % 3]
        cards = 4 + int(r.random() * 37)
        rated = CARD_CLASSES[cls].rated_tok_s
        plan = Plan(cards=cards, card_class=cls,
                    demand_tok_s=float(round(cards * rated * (0.2 + 0.6 * r.random()), -2)),
                    headroom=0.05 * int(r.random() * 5), shape=SHAPES[k % 3],
                    window=("hour", "day", "week")[int(r.random() * 3)],
                    evict_share=0.05 * int(r.random() * 9), seed=int(r.random() * 10**9))
        out.append((simulate(plan), what))
    return out


def _dict_answer(name: str, shown: str, got, keys: tuple[str, ...]) -> dict:
    if not isinstance(got, dict):
        raise AssertionError(f"{name}({shown}) returned {fmt(got)}: return a dict with the "
                             f"keys {', '.join(keys)}")
    missing = [k for k in keys if k not in got]
    if missing:
        raise AssertionError(f"{name}({shown}) returned a dict without "
                             f"{', '.join(repr(k) for k in missing)}: return every one of "
                             f"{', '.join(keys)}")
    return got


def _figure(name: str, shown: str, got: dict, key: str, want: float, what: str,
            hint: str = "", count: bool = False) -> None:
    value = as_number(name, shown, got[key], f"a number for {key!r}")
    ok = value == want if count else close(value, want, rel=1e-6, abs_tol=5e-3)
    if not ok:
        fmt_want = f"{want:,.0f}" if count else f"{want:,.4f}"
        raise AssertionError(f"{name}({shown}): {key} is {value:,.6g}, expected {fmt_want} "
                             f"({what}).{(' ' + hint) if hint else ''}")


# --------------------------------------------------------------------------- exercise 5


def _month_hint(m: Month, key: str, value: float) -> str:
    """What a wrong figure most likely means (never the figure itself)."""
    p, rent = m.plan, float(m.card_class.rent_per_month)
    measured = m.pool.measured_tok_s
    run_measured = sum(measured[i] for i in m.pool.run)
    if key == "evicted":
        if value == round(p.evict_share * p.cards):
            return "Rounded to the nearest card? A share never evicts part of a card: round down."
        return "How many cards does a share of the pool come to, in whole cards?"
    if key == "warm":
        survivors = m.cards - m.evicted
        if p.shape == "jumpy":
            return "On a jumpy month the autoscaler keeps every survivor warm for the burst."
        if value > survivors:
            return "Only survivors can run: the evicted cards are gone."
        return ("The autoscaler ranks survivors by what it can see (measured rates), best "
                "first, and stops as soon as they cover the shape's target"
                + (" (headroom included)." if p.shape == "steady" else "."))
    if key == "bill":
        if close(value, rent * m.warm):
            return "Evicted cards are not free: each bills a churn fee on its way out."
        if close(value, rent * (m.warm + m.evicted)):
            return "An evicted card pays a fee, not a whole month's rent."
        return "Who bills what: warm cards, evicted cards, skipped cards."
    if key == "delivered_tok_s":
        if close(value, min(p.demand_tok_s, run_measured)):
            return "The warm cards serve at their TRUE rates, whatever the window read."
        if close(value, m.run_true_tok_s):
            return "Nobody serves more than was asked for."
        return "What can the warm cards really serve, and what was asked?"
    if key == "idle_bill":
        return "Idle rent is the share of the warm cards' rent spent on capacity nobody used."
    if key == "mtok_per_dollar":
        if close(value, m.delivered_tok_s * SECONDS_PER_MONTH / m.bill):
            return "That is tokens per dollar: the figure is in millions."
        return "Tokens delivered over the month, per dollar of the whole bill, in millions."
    return ""


def check_month(month_figures: Callable) -> str:
    """Exercise 5: ``month_figures(true_tok_s, measured_tok_s, knobs)`` for preset and random
    months. Counts must be exact, money and rates within a millionth (or half a cent)."""
    months = _months()
    for m, what in _all_months():
        true, measured, knobs = list(m.pool.true_tok_s), list(m.pool.measured_tok_s), knobs_of(m)
        shown = f"<{_shown_pool(m)}>"
        got = _dict_answer("month_figures", shown,
                           call("month_figures", month_figures, true, measured, knobs),
                           MONTH_KEYS)
        label = f"{what}: {_shown_pool(m)}"
        for key in MONTH_KEYS:
            want = float(getattr(m, key))
            count = key in ("evicted", "warm")
            value = got[key]
            try:
                _figure("month_figures", shown, got, key, want, label, count=count)
            except AssertionError as exc:
                hint = _month_hint(m, key, as_number("month_figures", shown, value))
                raise AssertionError(f"{exc} {hint}".rstrip()) from None
    return passed("check_month", {"preset months": len(PRESETS),
                                  "random months": len(months) - len(PRESETS)})


# --------------------------------------------------------------------------- exercise 6


def _ideal_hint(m: Month, key: str, value: float) -> str:
    p = m.plan
    if key == "cards":
        if p.shape == "jumpy" and value < m.ideal_cards:
            return (f"A jumpy month's ideal operator sizes for the burst, about {JUMPY_PEAK:g} "
                    "x the average, not for the average.")
        if value == m.warm:
            return "That is the autoscaler's run set: the ideal operator sees the TRUE rates."
        return ("The ideal operator evicts nobody and ranks every card by its true rate; it "
                "stops as soon as they cover its target.")
    if key == "bill":
        return "The ideal operator pays rent for its cards and no churn fee."
    if key == "delivered_tok_s":
        return "Its cards deliver the demand, or their true capacity if that is less."
    if key == "mtok_per_dollar":
        return "Its own delivered tokens over its own bill, in millions per dollar."
    return ""


def check_ideal(ideal_operator: Callable) -> str:
    """Exercise 6: ``ideal_operator(true_tok_s, knobs)``, the operator who sees true rates."""
    months = _months()
    for m, what in _all_months():
        true, knobs = list(m.pool.true_tok_s), knobs_of(m)
        shown = f"<{_shown_pool(m)}>"
        got = _dict_answer("ideal_operator", shown,
                           call("ideal_operator", ideal_operator, true, knobs), IDEAL_KEYS)
        wants = {"cards": m.ideal_cards, "bill": m.ideal_bill,
                 "delivered_tok_s": m.ideal_delivered_tok_s,
                 "mtok_per_dollar": m.ideal_mtok_per_dollar}
        for key in IDEAL_KEYS:
            try:
                _figure("ideal_operator", shown, got, key, float(wants[key]),
                        f"{what}: {_shown_pool(m)}", count=key == "cards")
            except AssertionError as exc:
                hint = _ideal_hint(m, key, as_number("ideal_operator", shown, got[key]))
                raise AssertionError(f"{exc} {hint}".rstrip()) from None
    return passed("check_ideal", {"preset months": len(PRESETS),
                                  "random months": len(months) - len(PRESETS)})


def _figures_of(m: Month) -> dict:
    return {"demand_tok_s": float(m.demand_tok_s), "delivered_tok_s": float(m.delivered_tok_s),
            "bill": float(m.bill), "ideal_bill": float(m.ideal_bill),
            "evicted": int(m.evicted), "wrong_evictions": int(m.wrong_evictions)}


def _expected_signature(f: dict) -> str:
    unmet = unmet_share(f["delivered_tok_s"], f["demand_tok_s"])
    return _signature(bool(check_capacity(unmet)),
                     bool(check_convergence(f["ideal_bill"] / f["bill"])),
                     bool(check_evictions(wrong_share(f["wrong_evictions"], f["evicted"]))))


@cache
def _signature_cases() -> list[tuple[dict, str]]:
    edges = [
        ({"demand_tok_s": 60_000.0, "delivered_tok_s": 60_000.0, "bill": 27_170.0,
          "ideal_bill": 26_000.0, "evicted": 0, "wrong_evictions": 0},
         "nobody evicted: 0% of evictions are wrong"),
        ({"demand_tok_s": 60_000.0, "delivered_tok_s": 60_000.0, "bill": 26_000.0,
          "ideal_bill": 20_800.0, "evicted": 5, "wrong_evictions": 1},
         "convergence exactly 80% and 1 of 5 wrong: both at their limits"),
        ({"demand_tok_s": 60_000.0, "delivered_tok_s": 60_000.0, "bill": 26_000.0,
          "ideal_bill": 20_799.0, "evicted": 9, "wrong_evictions": 2},
         "convergence just under 80%, 2 of 9 wrong"),
        ({"demand_tok_s": 100_000.0, "delivered_tok_s": 96_000.0, "bill": 20_000.0,
          "ideal_bill": 31_200.0, "evicted": 3, "wrong_evictions": 0},
         "4% unmet, and the ideal bills more than you (convergence above 100%)"),
        ({"demand_tok_s": 100_000.0, "delivered_tok_s": 94_000.0, "bill": 20_000.0,
          "ideal_bill": 19_000.0, "evicted": 3, "wrong_evictions": 0},
         "6% unmet"),
    ]
    return edges + [(_figures_of(m), what) for m, what in _months()]


def check_signature(signature: Callable) -> str:
    """Exercise 6: ``signature(figures)`` -> three digits (capacity, convergence, evictions)."""
    cases = _signature_cases()
    for figures, what in cases + [(_figures_of(m), what) for m, what in
                                  drawn(lambda s: _random_months(s, 12, DRAWN), 5)]:
        shown = fmt_figures(figures)
        got = call("signature", signature, dict(figures))
        want = _expected_signature(figures)
        if not isinstance(got, str):
            raise AssertionError(f"signature({shown}) returned {fmt(got)}: return the three "
                                 "digits as text, like '101'")
        if got != want:
            wrong = [n for n, a, b in zip(("capacity", "convergence", "evictions"), got.ljust(3),
                                          want, strict=False) if a != b]
            raise AssertionError(
                f"signature({shown}) returned {brief(got)}, expected {want!r} ({what}). Look again "
                f"at the {' and '.join(wrong) or 'length'} digit: which side of its limit "
                "is the figure, and does the limit itself pass?")
    return passed("check_signature", {"edge cases": 5, "months": len(cases) - 5})


def fmt_figures(figures: dict) -> str:
    """A month's figures, short."""
    return ("{" + ", ".join(f"{k}: {v:,.0f}" if isinstance(v, float) else f"{k}: {v}"
                            for k, v in figures.items()) + "}")


# --------------------------------------------------------------------------- exercise 7


@cache
def _window_cases() -> list[tuple[float, float, float, float, float, str]]:
    fixed = [
        (6_723.0, 0.0, 0.5, 24.0, 0.2, "a day window, no misread, no blip"),
        (6_723.0, 1.0, 0.5, 1.0, 0.2, "the hour window's largest misread up"),
        (6_723.0, -1.0, 0.5, 1.0, 0.2, "the hour window's largest misread down"),
        (10_000.0, 0.5, 0.5, 168.0, 0.2, "a week window: a quarter over sqrt(168)"),
        (4_500.0, 0.0, 0.005, 1.0, 0.2, "an hour window that caught a blip"),
        (4_500.0, 0.0, 0.015, 1.0, 0.2, "an hour window that missed a blip (1% chance)"),
        (9_000.0, -0.3, 0.1, 24.0, 0.4, "a day window that caught a b-stock blip"),
        (9_000.0, -0.3, 0.3, 24.0, 0.4, "a day window that missed it (24% chance)"),
        (9_000.0, 0.2, 0.99, 730.0, 0.4, "the whole month: a blip is certain, and small"),
        (7_000.0, 0.0, 0.0, 0.5, 0.2, "half an hour: the blip takes the whole dip"),
    ]
    return fixed + _window_random(RANDOM_SEED + 7)


@cache
def _window_random(seed: int, what: str = "a random card and window"
                   ) -> list[tuple[float, float, float, float, float, str]]:
    r = np.random.default_rng(seed)
    rand = []
    for _ in range(30):
        hours = float(r.choice([0.5, 1.0, 6.0, 24.0, 72.0, 168.0, 730.0]))
        rand.append((float(r.uniform(1_000, 10_000)), float(r.uniform(-1, 1)),
                     float(r.uniform(0, 1)), hours, float(r.choice([0.2, 0.4])), what))
    return rand


def check_window(measured_rate: Callable) -> str:
    """Exercise 7: ``measured_rate(true_tok_s, misread, dip_draw, hours, dip_depth)``."""
    cases = _window_cases()
    for true, misread, dip, hours, depth, what in cases + drawn(
            lambda s: _window_random(s, DRAWN), 7):
        shown = ", ".join(fmt(v) for v in (true, misread, dip, hours, depth))
        value = as_number("measured_rate", shown,
                          call("measured_rate", measured_rate, true, misread, dip, hours, depth))
        want = measured_tok_s(true, misread, dip, hours, depth)
        if not close(value, want, rel=1e-9, abs_tol=1e-6):
            bound = 0.25 / math.sqrt(hours)
            no_dip = true * (1 + bound * misread)
            if close(value, no_dip, rel=1e-9):
                hint = "This window caught the card in a blip: what does a blip cost it?"
            elif dip >= min(1.0, hours / 100) and not close(value, no_dip, rel=1e-9):
                hint = "This window did not catch a blip: only the misread moves the reading."
            elif close(value, true * (1 + 0.25 * misread), rel=1e-9):
                hint = "The misread shrinks as the window grows: one over the square root."
            else:
                hint = ("A reading is the true rate, misread by up to the window's bound, then "
                        "cut by a blip if the window caught one.")
            raise AssertionError(f"measured_rate({shown}) returned {value:,.4f}, expected "
                                 f"{want:,.4f} ({what}). {hint}")
    return passed("check_window", {"fixed cards": 10, "random": len(cases) - 10})


def _wilson_random(seed: int, what: str = "a random count") -> list[tuple[int, int, float, str]]:
    r = random.Random(seed)
    cases = []
    for _ in range(20):
        n = 1 + int(r.random() * 5000)
        cases.append((int(r.random() * (n + 1)), n, r.choice([1.645, 1.96, 2.576, 3.0]), what))
    return cases


def _wilson(successes: int, trials: int, z: float) -> tuple[float, float]:
    from scipy import stats  # here: importing scipy costs a second a process

    confidence = 2 * stats.norm.cdf(z) - 1
    ci = stats.binomtest(successes, trials).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


def check_wilson(wilson_interval: Callable) -> str:
    """Exercise 7: ``wilson_interval(successes, trials, z)`` -> (low, high), the Wilson score
    interval (no continuity correction), compared with scipy's."""
    cases = [(514, 2000, 1.96, "the noise evictor's odds over 2,000 months"),
             (0, 1000, 1.96, "no failures at all: the interval still has a top"),
             (1000, 1000, 1.96, "every month failed"), (1, 10, 1.96, "a small sample"),
             (50, 100, 2.576, "a 99% interval"), (7, 40, 1.0, "about a 68% interval")]
    cases += _wilson_random(RANDOM_SEED + 8)
    for k, n, z, what in cases + drawn(lambda s: _wilson_random(s, DRAWN), 8):
        shown = f"{k}, {n}, {z:g}"
        got = call("wilson_interval", wilson_interval, k, n, z)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise AssertionError(f"wilson_interval({shown}) returned {fmt(got)}: return a pair "
                                 "(low, high)")
        low = as_number("wilson_interval", shown, got[0])
        high = as_number("wilson_interval", shown, got[1])
        want = _wilson(k, n, z)
        if not (close(low, want[0], rel=1e-7, abs_tol=1e-9)
                and close(high, want[1], rel=1e-7, abs_tol=1e-9)):
            p = k / n
            wald = z * math.sqrt(p * (1 - p) / n)
            hint = ("That is the Wald interval, p +- z sqrt(p(1-p)/n): it collapses at 0 and "
                    "at n." if close(low, max(0.0, p - wald)) or close(low, p - wald) else
                    "The Wilson interval's centre moves toward 1/2 by z^2/(2n), and its half "
                    "width has z^2/(4n^2) under the root.")
            raise AssertionError(f"wilson_interval({shown}) returned ({low:.6f}, {high:.6f}), "
                                 f"expected ({want[0]:.6f}, {want[1]:.6f}) ({what}). {hint}")
    return passed("check_wilson", {"fixed counts": 6, "random": len(cases) - 6})


#: The pools whose eviction check the learner estimates: (class, cards, hours, share).
ODDS_CASES = (("bargain", 32, 1.0, 0.40), ("flagship", 16, 1.0, 0.30),
              ("b-stock", 16, 1.0, 0.30), ("flagship", 20, 1.0, 0.25),
              ("bargain", 32, 24.0, 0.30))
#: Months the learner's Monte Carlo runs per case; the library's own runs 20 times as many.
ODDS_MONTHS = 2_000
#: How many standard errors apart the two estimates may be (a right answer misses by more than
#: four about once in 16,000 cases).
ODDS_Z = 4.0
#: The pools a grading run draws two of (each with a drawn seed for the learner's Monte Carlo):
#: classes, sizes, windows and shares like the visible ones.
ODDS_GRID = tuple((cls, cards, hours, share) for cls in ("bargain", "flagship", "b-stock")
                  for cards in (12, 16, 20, 24, 32) for hours in (1.0, 24.0)
                  for share in (0.20, 0.25, 0.30, 0.40))


@cache
def _odds_drawn(seed: int) -> list[tuple[str, int, float, float, int]]:
    """Two pools of :data:`ODDS_GRID` and a seed for each, drawn from ``seed``."""
    r = random.Random(seed)
    return [(*pool, r.randrange(1, 2**31)) for pool in r.sample(ODDS_GRID, 2)]


@cache
def _library_odds(cls: str, cards: int, hours: float, share: float) -> float:
    plan = Plan(cards=cards, card_class=cls, window=hours, evict_share=share)
    return check_odds(plan, months=20 * ODDS_MONTHS, seed=0, progress=False) \
        .fail_share["evictions"]


def check_eviction_odds(eviction_fail_chance: Callable) -> str:
    """Exercise 7: ``eviction_fail_chance(card, cards, hours, evict_share, months, seed)``, a
    Monte Carlo estimate of how often the eviction check fails; it must be within ``ODDS_Z``
    joint standard errors of the library's own Monte Carlo (20 times the months), and the
    same seed must give the same estimate."""
    cases = [(*pool, 7) for pool in ODDS_CASES] + drawn(_odds_drawn, 11)
    for cls, cards, hours, share, seed in cases:
        card = {k: v for k, v in asdict(CARD_CLASSES[cls]).items() if k not in ("blurb",)}
        args = (card, cards, hours, share, ODDS_MONTHS, seed)
        shown = f"<{cls} card>, {cards}, {hours:g}, {share:g}, {ODDS_MONTHS}, {seed}"
        got = as_number("eviction_fail_chance", shown,
                        call("eviction_fail_chance", eviction_fail_chance, *args),
                        "the share of months that failed the check, a number from 0 to 1")
        if not 0 <= got <= 1:
            raise AssertionError(f"eviction_fail_chance({shown}) returned {got:g}: a share of "
                                 "months is between 0 and 1")
        again = call("eviction_fail_chance", eviction_fail_chance, *args)
        if again != got:
            raise AssertionError(f"eviction_fail_chance({shown}) returned {got:g}, then "
                                 f"{fmt(again)} with the same seed: seed your random draws "
                                 "with the seed you are given.")
        want = _library_odds(cls, cards, hours, share)
        p = min(max(want, 1 / ODDS_MONTHS), 1 - 1 / ODDS_MONTHS)
        se = math.sqrt(p * (1 - p) * (1 / ODDS_MONTHS + 1 / (20 * ODDS_MONTHS)))
        if off_by(got, want) > ODDS_Z * se:
            raise AssertionError(
                f"eviction_fail_chance({shown}) returned {got:.4f}; the library's Monte Carlo "
                f"over {20 * ODDS_MONTHS:,} months says {want:.4f}, and {ODDS_MONTHS:,} months "
                f"should land within {ODDS_Z * se:.4f} of it ({ODDS_Z:g} standard errors). "
                f"{_odds_hint(got, want)}")
    return passed("check_eviction_odds", {"pools within their error": len(ODDS_CASES)})


def _odds_hint(got: float, want: float) -> str:
    if got < want:
        return ("Too few failures: does every month draw fresh cards, each with its own "
                "misread, and does a card AT the median count as healthy?")
    return ("Too many failures: is the eviction count rounded down, is the median taken over "
            "the whole pool's true rates, before anyone leaves, and does a month exactly at "
            "the cap pass?")

