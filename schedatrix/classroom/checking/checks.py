"""The exercises' checks: the learner's function against the library, case by case.

This is the trusted side of grading. It runs in the checker process, never in the learner's
kernel: each ``check_*`` gets the learner's functions as callables that cross the boundary
(:mod:`schedatrix.classroom.checking.boundary`: arguments out and answers back as plain data), calls
them on fixed cases (the spec's figures and the edge cases) and on seeded random ones,
compares every answer with the library's own function, and raises ``AssertionError`` naming
the input, what came back and what was expected (``NotImplementedError`` for an untouched
stub). On success it returns the one line the learner sees. Nothing is read from a notebook's
saved outputs: a check passes only if the function passes it now.

The learner's functions, as the exercises ask for them:

* ``score_card(true_tok_s, rent_per_month) -> float``: million tokens per dollar;
* ``greedy_run_set(rates_tok_s, target_tok_s) -> indices``: the run set (any order);
* ``evict_worst(scores, share) -> indices`` (any order) and
  ``wrong_evictions(true_tok_s, evicted) -> int``;
* ``diagnose(month) -> (failing_check, knob)`` for a month with at most one failing check
  (``(None, None)`` for a clean month), and ``fix(plan) -> Plan`` that repairs a famous month.

The check cells in the notebooks call these through :mod:`schedatrix.classroom.grading`;
which check belongs to which exercise is registered in
:mod:`schedatrix.classroom.checking.exercises`.
"""

from __future__ import annotations

import importlib
import math
import random
from collections.abc import Callable
from functools import cache

import numpy as np

from ...fleet.cards import CARD_CLASSES
from ...fleet.checks import CHECK_NAMES, REPAIR_KNOBS
from ...fleet.eviction import evict_worst as _evict_worst
from ...fleet.eviction import wrong_evictions as _wrong_evictions
from ...fleet.month import Month, simulate
from ...fleet.plan import Plan
from ...fleet.presets import PRESETS
from ...fleet.run_set import SHAPES
from ...fleet.run_set import greedy_run_set as _greedy_run_set
from ...fleet.score import score as _score
from .check_support import (
    DRAWN,
    RANDOM_SEED,
    as_indices,
    as_number,
    brief,
    call,
    close,
    describe,
    drawn,
    fmt,
    passed,
)

__all__ = [
    "CHECK_NAMES",
    "REPAIR_KNOBS",
    "CHECKS",
    "check_score",
    "check_run_set",
    "check_eviction",
    "check_famous_months",
]

#: The famous months a learner's ``fix`` must repair, and the check each one fails.
FAMOUS = {"golden-idler": "convergence", "noise-evictor": "evictions",
          "bargain-shortfall": "capacity"}

# --------------------------------------------------------------------------- challenge 1


@cache
def _score_cases() -> tuple[list[tuple[float, float, str]], list[tuple[float, float, str]]]:
    fixed = [
        (10_000.0, 2_600.0, "the flagship at its rated rate (spec: 10.108)"),
        (4_500.0, 1_400.0, "the bargain at its rated rate (spec: 8.447)"),
        (2_400.0, 2_600.0, "a flagship having a bad month (spec: 2.426)"),
        (9_000.0, 1_700.0, "the b-stock at its rated rate"),
        (0.0, 2_600.0, "a card that serves nothing"),
        (1.0, 1.0, "one token per second for one dollar"),
        (6_723.0, 2_600.0, "the walkthrough's median flagship"),
    ]
    return fixed, _score_random(RANDOM_SEED)


@cache
def _score_random(seed: int, what: str = "a random card") -> list[tuple[float, float, str]]:
    rng = np.random.default_rng(seed)
    rents = [1_400.0, 1_700.0, 2_600.0]
    rand = []
    for _ in range(30):
        rent = rents[int(rng.integers(3))] if rng.random() < 0.5 else float(rng.uniform(200, 5000))
        rand.append((float(rng.uniform(0, 12_000)), round(rent, 2), what))
    return rand


def check_score(score_card: Callable) -> str:
    """Challenge 1: ``score_card(true_tok_s, rent_per_month)`` in million tokens per dollar.

    Answers may be rounded to 3 decimals (the page prints 10.108); anything further off fails.
    """
    fixed, rand = _score_cases()
    for rate, rent, what in fixed + rand + drawn(lambda s: _score_random(s, DRAWN)):
        got = call("score_card", score_card, rate, rent)
        want = _score(rate, rent)
        try:
            value = as_number("score_card", f"{fmt(rate)}, {fmt(rent)}", got)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; expected {want:.4f} ({what})") from None
        if not close(value, want, rel=1e-6, abs_tol=5e-4):
            hint = ""
            if want and math.isclose(value / 1_000_000, want, rel_tol=1e-3):
                hint = " Looks like tokens per dollar: divide by a million."
            elif want and math.isclose(value, want * 2_592_000 / 2_628_000, rel_tol=1e-6):
                hint = " A month here is 730 hours, 2,628,000 s (365 x 24 / 12), not 30 days."
            raise AssertionError(
                f"score_card({fmt(rate)} tok/s, ${fmt(rent)}/month) returned {value:.6g}, "
                f"expected {want:.4f} ({what}). The score is tok/s x 2,628,000 s / rent / "
                f"1,000,000.{hint}"
            )
    return passed("check_score", {"spec figures and fixed cards": len(fixed), "random": len(rand)})


# --------------------------------------------------------------------------- challenge 2


def _month_rates(name: str) -> tuple[list[float], float, str]:
    """A preset's survivors (measured rates, pool order) and its run-set target."""
    m = simulate(PRESETS[name].plan)
    gone = set(m.pool.evicted)
    rates = [m.pool.measured_tok_s[i] for i in range(m.cards) if i not in gone]
    return rates, m.target_tok_s, f"{name}: {len(rates)} survivors, expected {m.warm} warm"


@cache
def _run_set_cases():
    fixed = []
    for name in ("walkthrough", "golden-idler-steady", "noise-evictor-day",
                 "bargain-shortfall-flagship"):
        fixed.append(_month_rates(name))
    fixed += [
        ([5.0, 7.0, 7.0, 3.0], 10.0, "ties: equal rates go lower index first"),
        ([7.0, 5.0, 5.0, 3.0], 12.0, "ties decide which card runs"),
        ([6.0, 4.0, 3.0], 10.0, "a prefix that hits the target exactly is enough"),
        ([1.0, 2.0, 3.0], 100.0, "no prefix reaches the target: every card runs"),
        ([], 100.0, "an empty pool runs nobody"),
        ([4.0], 3.0, "one card that covers the target"),
        ([2.0, 9.0, 4.0, 9.0, 1.0], 9.0, "the first of two equal best cards is enough"),
    ]
    return fixed, _run_set_random(RANDOM_SEED + 2)


@cache
def _run_set_random(seed: int, what: str = "a random pool"):
    rng = np.random.default_rng(seed)
    rand = []
    for _ in range(40):
        n = int(rng.integers(1, 25))
        rates = [float(v) for v in rng.integers(1, 12, size=n)]
        target = float(rng.integers(1, int(sum(rates) * 1.2) + 2))
        rand.append((rates, target, what))
    return rand


def check_run_set(greedy_run_set: Callable) -> str:
    """Challenge 2: ``greedy_run_set(rates_tok_s, target_tok_s)``, the whole-card greedy.

    The answer is the set of indices of the shortest prefix, highest rate first (ties: lower
    index first), whose rates sum to at least the target; every card if none does. The
    order the indices come back in is not graded.
    """
    fixed, rand = _run_set_cases()
    for rates, target, what in fixed + rand + drawn(lambda s: _run_set_random(s, DRAWN), 2):
        shown = f"{fmt(rates)}, {fmt(target)}"
        got = as_indices("greedy_run_set", shown,
                          call("greedy_run_set", greedy_run_set, list(rates), target))
        want = _greedy_run_set(rates, target).tolist()
        if sorted(got) != sorted(want):
            hint = ""
            if len(got) == len(want):
                hint = " Same size, other cards: sort by rate, highest first, ties lower index."
            elif len(got) == len(want) + 1:
                hint = " One card too many: stop as soon as the sum reaches the target (>=)."
            elif len(got) + 1 == len(want):
                hint = " One card short: keep taking cards until the sum is >= the target."
            raise AssertionError(
                f"greedy_run_set({shown}) returned {fmt(sorted(got))}, expected "
                f"{fmt(sorted(want))} ({what}).{hint}"
            )
    return passed("check_run_set", {"spec months and edge cases": len(fixed), "random": len(rand)})


# --------------------------------------------------------------------------- challenge 3


@cache
def _evict_cases():
    fixed = []
    for name in ("walkthrough", "noise-evictor", "noise-evictor-day", "bargain-shortfall"):
        m = simulate(PRESETS[name].plan)
        fixed.append((list(m.pool.measured_tok_s), m.plan.evict_share,
                      f"{name}: expected {m.evicted} evicted"))
    fixed += [
        ([3.0, 1.0, 1.0, 2.0], 0.5, "ties: equal scores go lower index first"),
        ([1.0, 1.0, 1.0, 1.0], 0.5, "all equal"),
        ([5.0, 4.0, 3.0], 0.0, "share 0 evicts nobody"),
        ([], 0.2, "an empty pool"),
        ([float(v) for v in range(24)], 0.2, "20% of 24 is 4: floor, not round"),
        ([float(v % 7) for v in range(100)], 0.29,
         "29% of 100 is 29 (but 0.29 * 100 is 28.999999999999996 in floating point)"),
    ]
    return fixed, _evict_random(RANDOM_SEED + 3)


@cache
def _evict_random(seed: int, what: str = "a random pool"):
    rng = np.random.default_rng(seed)
    rand = []
    while len(rand) < 40:
        n = int(rng.integers(1, 40))
        share = float(rng.integers(0, 20)) / 20
        raw = share * n
        if math.floor(raw) != math.floor(raw + 1e-9):  # only the one fixed float trap above
            continue
        scores = [float(v) for v in rng.integers(0, 10, size=n)]
        rand.append((scores, share, what))
    return rand


@cache
def _wrong_cases():
    fixed = []
    for name in ("walkthrough", "golden-idler", "noise-evictor"):
        m = simulate(PRESETS[name].plan)
        fixed.append((list(m.pool.true_tok_s), list(m.pool.evicted),
                      f"{name}: {m.wrong_evictions} of {m.evicted} wrong"))
    fixed += [
        ([1.0, 2.0, 3.0, 4.0], [2], "even pool: the median is 2.5"),
        ([1.0, 2.0, 3.0, 4.0], [0, 1], "both below the median"),
        ([1.0, 2.0, 3.0], [1], "at the median counts as wrong"),
        ([5.0, 1.0, 9.0], [], "nobody evicted"),
        ([4.0, 4.0, 4.0, 4.0], [3, 0], "all equal: every eviction is wrong"),
    ]
    return fixed, _wrong_random(RANDOM_SEED + 4)


@cache
def _wrong_random(seed: int, what: str = "a random pool"):
    rng = np.random.default_rng(seed)
    rand = []
    for _ in range(40):
        n = int(rng.integers(1, 30))
        rates = [float(v) for v in rng.integers(1, 10, size=n)]
        k = int(rng.integers(0, n + 1))
        evicted = [int(v) for v in rng.permutation(n)[:k]]
        rand.append((rates, evicted, what))
    return rand


def check_eviction(evict_worst: Callable, wrong_evictions: Callable) -> str:
    """Challenge 3: ``evict_worst(scores, share)`` and ``wrong_evictions(true_tok_s, evicted)``.

    ``evict_worst`` returns the floor(share x n) lowest scores' indices (ties: lower index
    first; order not graded); ``wrong_evictions`` counts evicted cards whose true rate is at
    or above the median true rate of the whole pool.
    """
    fixed, rand = _evict_cases()
    for scores, share, what in fixed + rand + drawn(lambda s: _evict_random(s, DRAWN), 3):
        shown = f"{fmt(scores)}, {fmt(share)}"
        got = as_indices("evict_worst", shown,
                          call("evict_worst", evict_worst, list(scores), share))
        want = _evict_worst(scores, share).tolist()
        if sorted(got) != sorted(want):
            hint = ""
            if len(got) != len(want):
                hint = (f" Evict floor(share x n) = {len(want)} cards"
                        + (" (add a tiny slack before flooring, e.g. 1e-9)"
                           if len(got) + 1 == len(want) else "") + ".")
            else:
                hint = " Same count, other cards: lowest scores first, ties lower index first."
            raise AssertionError(
                f"evict_worst({shown}) returned {fmt(sorted(got))}, expected "
                f"{fmt(sorted(want))} ({what}).{hint}"
            )
    wfixed, wrand = _wrong_cases()
    for rates, evicted, what in wfixed + wrand + drawn(lambda s: _wrong_random(s, DRAWN), 4):
        shown = f"{fmt(rates)}, {fmt(evicted)}"
        got = call("wrong_evictions", wrong_evictions, list(rates), list(evicted))
        want = _wrong_evictions(rates, evicted)
        try:
            ok = as_number("wrong_evictions", shown, got) == want
        except AssertionError:
            ok = False
        if not ok:
            median = float(np.median(rates)) if rates else float("nan")
            raise AssertionError(
                f"wrong_evictions({shown}) returned {brief(got)}, expected {want} ({what}). The "
                f"pool's median true rate is {median:g} (all {len(rates)} cards, numpy's "
                "median); count evicted cards at or above it."
            )
    counts = {"spec months and edge cases": len(fixed) + len(wfixed),
              "random": len(rand) + len(wrand)}
    return passed("check_eviction", counts)


# --------------------------------------------------------------------------- famous months


def expected_diagnosis(month: Month) -> str | None:
    """The failing check of a month with at most one (``None`` for a clean month)."""
    failing = [c for c, ok in month.checks.items() if not ok]
    if len(failing) > 1:
        raise ValueError(f"month fails {len(failing)} checks: {failing}")
    return failing[0] if failing else None


@cache
def _preset_months() -> list[tuple[Month, str]]:
    return [(simulate(p.plan), name) for name, p in PRESETS.items()]


@cache
def _random_months(count_per_signature: int = 3, seed: int = RANDOM_SEED,
                   what: str = "a random month") -> list[tuple[Month, str]]:
    """Seeded random months with exactly one failing check (and a few clean ones)."""
    r = random.Random(seed)
    wanted = {"111": 2, "011": count_per_signature, "101": count_per_signature,
              "110": count_per_signature}
    found: list[tuple[Month, str]] = []
    classes = list(CARD_CLASSES)
    for _ in range(5_000):
        plan = Plan(
            cards=8 + int(r.random() * 33),
            card_class=classes[int(r.random() * len(classes))],
            demand_tok_s=float(30_000 + 10_000 * int(r.random() * 7)),
            headroom=0.05 * int(r.random() * 5),
            shape=SHAPES[int(r.random() * 3)],
            window=("hour", "day", "week")[int(r.random() * 3)],
            evict_share=0.1 * int(r.random() * 5),
            seed=int(r.random() * 1_000_000),
        )
        m = simulate(plan)
        if wanted.get(m.signature, 0) > 0:
            wanted[m.signature] -= 1
            found.append((m, what))
        if not any(wanted.values()):
            break
    return found


def check_famous_months(diagnose: Callable, fix: Callable) -> str:
    """The famous months: ``diagnose(month)`` and ``fix(plan)``.

    ``diagnose(month)`` gets a :class:`~schedatrix.Month` with at most one failing check and
    returns ``(failing_check, knob)``: the check's name (``"capacity"``, ``"convergence"``
    or ``"evictions"``) and a :class:`~schedatrix.Plan` knob that repairs it (the learner
    finds which by experiment; :data:`REPAIR_KNOBS` holds the answer), or ``(None, None)``
    when the month is clean. A wrong knob's message never names the right ones.

    ``fix(plan)`` gets a famous month's plan and returns a new plan that keeps the seed and
    the demand, turns only knobs that repair the failing check, and passes all three checks.
    """
    months = _preset_months() + _random_months()
    for month, what in months + drawn(lambda s: _random_months(2, s, DRAWN)):
        label = f"{what} ({describe(month.plan)}; signature {month.signature})"
        got = call("diagnose", diagnose, month)
        want = expected_diagnosis(month)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise AssertionError(
                f"diagnose(month) for {label} returned {brief(got)}: return a pair "
                "(failing_check, knob)"
            )
        check, knob = got
        if check != want:
            digit = (f"digit {CHECK_NAMES.index(want) + 1} of the signature is 0"
                     if want else "every digit is 1")
            raise AssertionError(
                f"diagnose(month) for {label} named the failing check {check!r}, expected "
                f"{want!r}: {digit} (digits: capacity, convergence, evictions)."
            )
        if want is None:
            if knob is not None:
                raise AssertionError(
                    f"diagnose(month) for {label} returned knob {knob!r}: a clean month "
                    "needs no repair, return (None, None)."
                )
            continue
        if knob not in REPAIR_KNOBS[want]:
            raise AssertionError(
                f"diagnose(month) for {label} named the knob {knob!r}, which does not repair "
                f"the {want} check. Turn it on a famous month that fails {want} and watch the "
                "signature; then try the other knobs."
            )
    for name, failing in FAMOUS.items():
        plan = PRESETS[name].plan
        got = call("fix", fix, plan)
        if not isinstance(got, Plan):
            raise AssertionError(
                f"fix({name} plan) returned {brief(got)}: return a Plan (plan.with_knobs(...))"
            )
        changed = {k for k, v in got.to_dict().items() if plan.to_dict()[k] != v}
        kept = sorted(changed & {"seed", "demand_tok_s"})
        if kept:
            raise AssertionError(
                f"fix({name} plan) changed the {' and '.join(kept)}: "
                "keep the same cards (seed) and the same demand, and turn a knob instead."
            )
        extra = changed - REPAIR_KNOBS[failing]
        if extra:
            raise AssertionError(
                f"fix({name} plan) turned {', '.join(sorted(extra))}, which does not repair "
                f"the {failing} check the {name} fails: turn only knobs that do."
            )
        m = simulate(got)
        if m.signature != "111":
            raise AssertionError(
                f"fix({name} plan) gave {describe(got)}: signature {m.signature}, bill "
                f"${m.bill:,.0f}, {m.warm} warm, convergence {m.convergence:.1%}. Expected a "
                "clean month, signature 111."
            )
    return passed("check_famous_months",
                   {"months diagnosed": len(months), "famous fixes": len(FAMOUS)})


def _later(module: str, name: str) -> Callable[..., str]:
    """A check of another module, imported when it first runs (the serving checks need the
    simulator, the odds check scipy: a checker for exercise 1 should not wait for them)."""

    def check(*functions: Callable) -> str:
        return getattr(importlib.import_module(module, __package__), name)(*functions)

    check.__name__ = check.__qualname__ = name
    return check


#: Every check by the name its check cell calls.
CHECKS: dict[str, Callable[..., str]] = {
    "check_score": check_score,
    "check_run_set": check_run_set,
    "check_eviction": check_eviction,
    "check_famous_months": check_famous_months,
    **{name: _later(".checks_month", name) for name in (
        "check_month", "check_ideal", "check_signature", "check_window", "check_wilson",
        "check_eviction_odds")},
    **{name: _later(".checks_serving", name) for name in (
        "check_kv_capacity", "check_largest_batch", "check_smallest_tp", "check_decode_step",
        "check_tp_for_tpot", "check_log_figures", "check_router")},
    **{name: _later(".checks_queueing", name) for name in ("check_pk_wait", "check_max_rate")},
    **{name: _later(".checks_sizing", name) for name in ("check_weight_reads",
                                                          "check_batch_for_tpot")},
    "check_recovery": _later(".checks_recovery", "check_recovery"),
}
