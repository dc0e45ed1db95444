"""Exercise 11's check: a recovery rule the learner designs, graded by what it must get right.

The learner writes ``recovery_s(windows)``: seconds from a fault until the fleet has recovered,
read from windows of the faulted run beside the paired baseline (the same arrivals without the
fault), or None. The exercise states what the rule is for, not the rule: the margin, the hold
and how the two figures combine are the learner's to choose. Each case is a requirement with
one right answer that any rule meeting every requirement gives: series built from the
baseline's figures times ratios (the load's own noise within 8%; damage at 1.8 times the p95
TTFT or more, or 55% of the goodput or less; lulls of one or two good windows inside damage;
a clean tail of six windows or more), and simulated faults (a fault that does nothing must
read 0 s; a crash must read between the readings of the loosest and the tightest rules the
requirements allow).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from functools import cache

from ...serving.cluster.deployment import Design
from ...serving.cluster.faults import parse_fault
from ...serving.figures.recovery import paired_recovery_from_series, paired_series
from ...serving.load.requests import SLOClass
from ...serving.load.workload import Load, generate
from ...serving.sim.simulate import simulate
from .check_support import DRAWN, as_number, call, close, drawn, passed

__all__ = ["check_recovery", "paired_windows", "RECOVERY_KEYS", "CLEAN", "HAND_CASES"]

#: What exercise 11 hands over of each window (``paired_series``'s, less its own verdicts).
RECOVERY_KEYS = ("since_fault_s", "ttft_p95_s", "baseline_ttft_p95_s", "goodput_rps",
                 "baseline_goodput_rps")
#: The load's own noise: a clean window's figures are within this share of the baseline's.
CLEAN = 0.08
#: The loosest and the tightest rules the requirements allow, (p95 TTFT at most this times the
#: baseline's, goodput at least this times it, windows in a row): just short of the damage and
#: longer than a lull; just past the noise and as long as the clean tail. A simulated crash's
#: answer must fall between their readings.
LOOSEST, TIGHTEST = (1.8, 0.55, 3), (1 + CLEAN, 1 - CLEAN, 6)


def paired_windows(run, baseline, at_s: float) -> list[dict]:
    """A fault's windows against its paired baseline as exercise 11 hands them over."""
    return [{k: w[k] for k in RECOVERY_KEYS} for w in paired_series(run, baseline, at_s)]


def _window(k: int, base_p95, base_good: float, p95_ratio: float, good_ratio: float) -> dict:
    p95 = None if base_p95 is None else base_p95 * p95_ratio
    return dict(zip(RECOVERY_KEYS, (10.0 * k, p95, base_p95, base_good * good_ratio, base_good),
                    strict=True))


def _series(levels, ratios) -> list[dict]:
    """Windows of 10 s: the baseline's (p95, goodput) levels, the faulted run at ``ratios``."""
    return [_window(k, p, g, rp, rg) for k, ((p, g), (rp, rg)) in
            enumerate(zip(levels, ratios, strict=True))]


OK, NOISY_HI, NOISY_LO = (1.0, 1.0), (1.07, 0.93), (0.94, 1.06)
SLOW, SHORT, BOTH, FAILED = (2.5, 1.0), (1.0, 0.5), (3.0, 0.4), (math.inf, 0.3)


def _levels(n: int, p95: float = 0.28, good: float = 5.2, swing: float = 1.0) -> list:
    """A baseline of ``n`` windows around (p95, goodput), each window ``swing`` times the last
    way round (a bursty load has windows unlike each other)."""
    return [(p95 * (swing if k % 2 else 1.0), good * (swing if k % 3 == 1 else 1.0))
            for k in range(n)]


@cache
def _hand_cases() -> list[tuple[list[dict], float | None, str]]:
    """(windows, the answer every sound rule gives, the requirement) for each hand-made case."""
    def case(ratios, want, what, **kw):
        return _series(_levels(len(ratios), **kw), ratios), want, what
    tail = [OK, NOISY_HI, OK, NOISY_LO, OK, OK]
    cases = [
        case([OK] * 8, 0.0, "a fault that did nothing: the baseline's figures in every window",
             swing=3.0),
        case([SLOW, SLOW, NOISY_HI, OK, NOISY_LO, OK, OK, OK], 20.0,
             "a burst the baseline has too: its slow windows are the load's, not the fault's",
             swing=4.0),
        case([BOTH, NOISY_HI, NOISY_LO, NOISY_HI, NOISY_LO, NOISY_HI, NOISY_LO], 10.0,
             "the load's own noise, up to 8% either way, is not damage"),
        case([SLOW] * 3 + tail, 30.0, "slow only: the goodput as the baseline's, the p95 TTFT "
                                      "2.5 times it"),
        case([SHORT] * 3 + tail, 30.0, "short of goodput only, as fast as the baseline"),
        case([SLOW, OK, OK, BOTH, SHORT] + tail, 50.0,
             "a lull: two good windows between bad ones are not a recovery"),
        case([BOTH, OK, SLOW] + tail, 30.0, "a lull of one good window"),
        case([BOTH] * 4 + [OK, OK, SLOW], None,
             "never: the series ends before the fleet is back"),
        case([OK, OK, SLOW, SLOW] + tail, 40.0,
             "damage that shows late: the first windows fine, then the crash's effect"),
        case([FAILED, FAILED] + tail, 20.0,
             "failed requests: an infinite p95 TTFT, goodput a third of the baseline's"),
        case([SLOW] * 3 + tail, 30.0, "a quiet baseline (p95 TTFT 0.05 s, 0.5 requests/s)",
             p95=0.05, good=0.5),
        case([SLOW] * 3 + tail, 30.0, "a busy baseline (p95 TTFT 5 s, 50 requests/s)",
             p95=5.0, good=50.0),
        ([], None, "no windows at all"),
    ]
    # nobody arrived in a window (None on both sides, no goodput): nobody is late in it
    quiet = _series(_levels(8), [BOTH] + [OK] * 7)
    quiet[1] = _window(1, None, 0.0, 1.0, 1.0)
    quiet[4] = _window(4, None, 0.0, 1.0, 1.0)
    cases.insert(9, (quiet, 10.0, "windows nobody arrived in (None on both sides) are not late"))
    return cases


#: How many hand-made cases the check holds a rule to.
HAND_CASES = 14


@cache
def _simulated_cases() -> list[tuple[list[dict], tuple, str]]:
    """(windows, (lowest, highest) answer allowed, what) for faults simulated on a small fleet:
    a fault that does nothing must read 0 s; a crash, between the loosest and the tightest
    rule's readings (None: no upper bound)."""
    load = Load(rate_rps=8.0, input_len="lognormal:800,0.8", output_len="exp:120",
                classes=[SLOClass("chat", 1.0, 0, 0.6, 0.05)])
    out = []
    for seed, fault in ((1, "link:0@300+0.1:1.01"), (1, "worker:0@300+60"),
                        (2, "worker:1@250+30")):
        f = parse_fault(fault)
        requests = generate(load, seed=seed, duration_s=900)
        base = simulate(requests, Design(replicas=3))
        windows = paired_windows(simulate(requests, Design(replicas=3), faults=[f]), base,
                                 f.at_s)
        if f.kind == "link":
            out.append((windows, (0.0, 0.0), f"{fault}, a fault that does nothing: its run is "
                                             "the baseline's"))
        else:
            out.append((windows, (_first_back(windows, *LOOSEST), _first_back(windows, *TIGHTEST)),
                        f"{fault} on 3 replicas at 8 requests/s, against the same arrivals "
                        "without it"))
    return out


def _first_back(windows, slow: float, short: float, hold: int):
    """The start of the first ``hold`` windows in a row whose p95 TTFT is at most ``slow``
    times the baseline's and goodput at least ``short`` times it (None: no such run)."""
    in_a_row = 0
    for k, w in enumerate(windows):
        ok = (w["ttft_p95_s"] or 0.0) <= slow * (w["baseline_ttft_p95_s"] or 0.0) and \
            w["goodput_rps"] >= short * w["baseline_goodput_rps"]
        in_a_row = in_a_row + 1 if ok else 0
        if in_a_row == hold:
            return windows[k - hold + 1]["since_fault_s"]
    return None


def _library(windows, margin: float, hold: int):
    """The library's rule at one margin and hold."""
    def series(k):
        return [math.nan if w[k] is None else w[k] for w in windows]
    return paired_recovery_from_series([w["since_fault_s"] for w in windows],
                                       series("ttft_p95_s"), series("goodput_rps"),
                                       series("baseline_ttft_p95_s"),
                                       series("baseline_goodput_rps"), margin, hold)


@cache
def _drawn_cases(seed: int) -> list[tuple[list[dict], float | None, str]]:
    """Ten series drawn from ``seed``: a baseline of its own level and swings, damage of either
    figure or both for a while (lulls of one or two good windows inside it), then a clean tail
    of six windows or more (or the series ends damaged), noise within 8%."""
    r = random.Random(seed)
    out = []
    for _ in range(10):
        p95, good = math.exp(r.uniform(math.log(0.05), math.log(5))), \
            math.exp(r.uniform(math.log(0.5), math.log(50)))
        ratios, k_bad = [], -1
        for _k in range(r.randrange(0, 7)):
            ratios.append(r.choice([(r.uniform(1.8, 20), r.uniform(0.9, 1.1)),
                                    (r.uniform(0.92, 1.08), r.uniform(0.0, 0.55)),
                                    (math.inf, r.uniform(0.0, 0.55))]))
            k_bad = len(ratios) - 1
            if r.random() < 0.25:          # a lull, then damage again
                ratios += [(r.uniform(0.92, 1.08), r.uniform(0.92, 1.08))
                           for _ in range(r.choice([1, 2]))]
                ratios.append((r.uniform(1.8, 20), r.uniform(0.0, 0.55)))
                k_bad = len(ratios) - 1
        ends_damaged = k_bad >= 0 and r.random() < 0.15
        if not ends_damaged:
            ratios += [(r.uniform(0.92, 1.08), r.uniform(0.92, 1.08))
                       for _ in range(r.randrange(6, 12))]
        levels = [(p95 * r.uniform(0.5, 2.0), good * r.uniform(0.5, 2.0)) for _ in ratios]
        windows = _series(levels, ratios)
        for k in range(k_bad + 1, len(windows)):
            if r.random() < 0.08:          # nobody arrived in this window
                windows[k] = _window(k, None, 0.0, 1.0, 1.0)
        want = None if ends_damaged else 10.0 * (k_bad + 1)
        out.append((windows, want, DRAWN))
    return out


def _describe(w: dict) -> str:
    """One window beside the baseline's, as ratios."""
    def ratio(a, b):
        if b in (None, 0.0) or a is None:
            return "no arrivals" if a is None and b is None else f"{a} against {b}"
        return f"{a / b:.2f}x the baseline's" if math.isfinite(a) else "infinite (a failure)"
    return (f"the window from {w['since_fault_s']:g} s has p95 TTFT "
            f"{ratio(w['ttft_p95_s'], w['baseline_ttft_p95_s'])} and goodput "
            f"{ratio(w['goodput_rps'], w['baseline_goodput_rps'])}")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _outside(w: dict) -> bool:
    """Whether a window's figures are outside the load's own noise against the baseline's."""
    p95, base = w["ttft_p95_s"] or 0.0, w["baseline_ttft_p95_s"] or 0.0
    return p95 > base * (1 + CLEAN) or w["goodput_rps"] < w["baseline_goodput_rps"] * (1 - CLEAN)


def _where(windows, got, want) -> str:
    """The window the learner's answer and the right one part on."""
    starts = [w["since_fault_s"] for w in windows]
    if got is not None and not any(close(got, s) for s in starts):
        return f" {got:g} s is not the start of any window."
    k_got = None if got is None else next(i for i, s in enumerate(starts) if close(got, s))
    if want is None:
        later = [w for w in windows[k_got:] if _outside(w)] if k_got is not None else []
        return (" " + _cap(_describe(later[-1])) + ": the series ends before the fleet is back."
                if later else " The series ends before the fleet is back.")
    k = starts.index(want)
    if got is None or got > want:
        return (f" From {want:g} s every window is back within the load's own noise (8%): "
                + _describe(windows[k]) + ", and so are the ones after it.")
    bad = [w for w in windows[k_got:k] if _outside(w)]
    where = bad[-1] if bad else windows[k - 1]
    return " " + _cap(_describe(where)) + ": the fleet is not back yet."


def _rule_text(rule) -> str:
    slow, short, hold = rule
    return (f"p95 TTFT at most {slow:g} times the baseline's and goodput at least {short:g} "
            f"times it, {hold} windows in a row")


def check_recovery(recovery_s: Callable) -> str:
    """Exercise 11: ``recovery_s(windows)`` -> seconds from the fault until the fleet has
    recovered against the paired baseline, or None; a rule of the learner's own design, held
    to the requirements above."""
    hand = _hand_cases()
    for windows, want, what in hand + drawn(_drawn_cases, 11):
        shown = f"<{len(windows)} windows: {what}>"
        got = call("recovery_s", recovery_s, [dict(w) for w in windows])
        if got is not None:
            got = as_number("recovery_s", shown, got, "seconds since the fault, or None")
        if want is None and got is None:
            continue
        if want is not None and got is not None and close(got, want):
            continue
        expected = "None (never)" if want is None else f"{want:g} s"
        returned = "None" if got is None else f"{got:g} s"
        raise AssertionError(f"recovery_s({shown}) returned {returned}, expected {expected}."
                             + _where(windows, got, want))
    simulated = _simulated_cases()
    for windows, (low, high), what in simulated:
        shown = f"<{len(windows)} windows: {what}>"
        got = call("recovery_s", recovery_s, [dict(w) for w in windows])
        if got is None:
            if high is None:
                continue
            raise AssertionError(f"recovery_s({shown}) returned None: the fleet is back at "
                                 f"{high:g} s even by the tightest rule the requirements allow "
                                 f"({_rule_text(TIGHTEST)}).")
        got = as_number("recovery_s", shown, got, "seconds since the fault, or None")
        if got < low - 1e-9 or (high is not None and got > high + 1e-9):
            span = f"{low:g} s" if high == low else (
                f"{low:g} s or more" if high is None else f"{low:g} to {high:g} s")
            raise AssertionError(
                f"recovery_s({shown}) returned {got:g} s, expected {span}: the loosest rule the "
                f"requirements allow ({_rule_text(LOOSEST)}) reads {low:g} s"
                + ("" if high is None else
                   f", the tightest ({_rule_text(TIGHTEST)}) {high:g} s") + ".")
    return passed("check_recovery", {"hand-made series": len(hand),
                                     "simulated faults": len(simulated)})
