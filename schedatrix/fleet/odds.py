"""Over the lottery: how often each check fails for a plan, and which knobs matter.

Both run the vectorised engine over many draws (seeds ``seed, seed + 1, ...``), so the same
arguments give the same answer on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest
from tqdm.auto import tqdm

from ..errors import InputError
from .cards import CARD_CLASSES
from .engine import simulate_many
from .plan import Plan
from .run_set import SHAPES
from .window import NAMED_WINDOWS

__all__ = ["CheckOdds", "check_odds", "KnobStep", "knob_steps", "mattered_vs_noise"]

CHECKS = ("capacity", "convergence", "evictions")
_Z95 = 1.959963984540054  # two-sided 95% normal quantile
_EXACT = 1e-6  # dollars: a shift this small is a rounding error, not an effect


@dataclass(frozen=True)
class CheckOdds:
    """How often each check failed over ``months`` lottery draws of one plan.

    ``fail_share[c]`` is the observed share of months failing check ``c``; ``interval[c]`` its
    Wilson confidence interval at ``confidence``; ``signatures`` counts each signature seen.
    """

    plan: Plan
    months: int
    seed: int
    confidence: float
    failures: dict[str, int]
    fail_share: dict[str, float]
    interval: dict[str, tuple[float, float]]
    signatures: dict[str, int]


def check_odds(plan: Plan, months: int = 2_000, seed: int = 0, confidence: float = 0.95,
               progress: bool = False, chunk: int = 100_000) -> CheckOdds:
    """Monte Carlo over ``months`` draws: each check's failure share with a confidence interval.

    Months run in chunks of ``chunk`` so memory stays bounded; ``progress=True`` shows a
    progress bar (tqdm, on stderr).
    """
    if not (isinstance(confidence, float) and 0 < confidence < 1):
        raise InputError(f"confidence must be a fraction in (0, 1), got {confidence!r}")
    if not (isinstance(months, int) and not isinstance(months, bool) and months >= 1):
        raise InputError(f"months must be a whole number >= 1, got {months!r}")
    failures = dict.fromkeys(CHECKS, 0)
    signatures: dict[str, int] = {}
    starts = range(seed, seed + months, chunk)
    for start in tqdm(starts, desc="months", unit="chunk", disable=not progress, leave=False):
        m = simulate_many(plan, min(chunk, seed + months - start), start)
        passed = (m.capacity_ok, m.convergence_ok, m.evictions_ok)
        for name, ok in zip(CHECKS, passed, strict=True):
            failures[name] += int(np.count_nonzero(~ok))
        digits = passed[0].astype(int) * 100 + passed[1].astype(int) * 10 + passed[2]
        for value, count in zip(*np.unique(digits, return_counts=True), strict=True):
            key = f"{int(value):03d}"
            signatures[key] = signatures.get(key, 0) + int(count)
    interval = {}
    for name in CHECKS:
        ci = binomtest(failures[name], months).proportion_ci(confidence, method="wilson")
        interval[name] = (float(ci.low), float(ci.high))
    return CheckOdds(
        plan=plan, months=months, seed=seed, confidence=confidence, failures=failures,
        fail_share={c: failures[c] / months for c in CHECKS}, interval=interval,
        signatures=dict(sorted(signatures.items())),
    )


@dataclass(frozen=True)
class KnobStep:
    """One step of one knob, and what it did to the bill over the same lottery draws.

    Every month of the stepped plan is paired with the month of the unchanged plan on the same
    seed, so ``shift`` (dollars) is the mean of the paired differences and ``shift_sd`` their
    standard deviation: a knob that adds exactly one churn fee to every month has a shift of
    that fee and a spread of zero. ``noise`` is the standard deviation of the unchanged plan's
    bill over the lottery: how much one month's luck moves the bill.

    Two questions, two answers: ``real`` says whether the paired months tell the shift apart
    from zero (its 95% interval, ``interval``, leaves zero out); ``beats_luck`` whether the
    shift is larger than one month's luck. A step ``mattered`` when both hold.
    """

    knob: str
    step: str
    plan: Plan
    shift: float
    noise: float
    shift_sd: float
    months: int

    @property
    def shift_se(self) -> float:
        """Standard error of the mean shift (dollars)."""
        return self.shift_sd / math.sqrt(self.months)

    @property
    def interval(self) -> tuple[float, float]:
        """A 95% interval for the mean shift (dollars), from the paired differences."""
        half = _Z95 * self.shift_se
        return self.shift - half, self.shift + half

    @property
    def real(self) -> bool:
        """The paired months tell the shift apart from zero (its interval leaves zero out)."""
        low, high = self.interval
        return abs(self.shift) > _EXACT and (low > 0 or high < 0)

    @property
    def beats_luck(self) -> bool:
        """The shift is larger than one month's luck (the bill's spread with no knob turned)."""
        return abs(self.shift) > self.noise

    @property
    def mattered(self) -> bool:
        """Real and larger than one month's luck."""
        return self.real and self.beats_luck

    @property
    def label(self) -> str:
        """``mattered``, ``real, smaller than one month's luck`` or ``noise``."""
        if self.mattered:
            return "mattered"
        return "real, smaller than one month's luck" if self.real else "noise"

    @property
    def ratio(self) -> float:
        """|shift| / one month's luck."""
        return abs(self.shift) / self.noise if self.noise > 0 else float("inf") * (self.shift != 0)


def knob_steps(plan: Plan) -> list[tuple[str, str, Plan]]:
    """One step of each knob from ``plan``: (knob, what the step is, the stepped plan)."""
    steps = []
    more = max(1, round(plan.cards * 0.25))
    if plan.cards + more <= 4096:
        steps.append(("cards", f"{plan.cards} -> {plan.cards + more}",
                      plan.with_knobs(cards=plan.cards + more)))
    for key in CARD_CLASSES:
        if key != plan.card_class:
            steps.append(("card class", f"{plan.card_class} -> {key}",
                          plan.with_knobs(card_class=key)))
    steps.append(("demand", "+10%", plan.with_knobs(demand_tok_s=plan.demand_tok_s * 1.1)))
    steps.append(("headroom", "+10 points", plan.with_knobs(headroom=plan.headroom + 0.10)))
    for shape in SHAPES:
        if shape != plan.shape:
            steps.append(("shape", f"{plan.shape} -> {shape}", plan.with_knobs(shape=shape)))
    hours = plan.window_hours
    longer = next((name for name, h in NAMED_WINDOWS.items() if h > hours), "day")
    steps.append(("window", f"{plan.window} -> {longer}", plan.with_knobs(window=longer)))
    share = plan.evict_share
    new_share = round(share + 0.10, 10) if share + 0.10 < 1 else round(share - 0.10, 10)
    steps.append(("evict share", f"{share:.0%} -> {new_share:.0%}",
                  plan.with_knobs(evict_share=new_share)))
    return steps


def mattered_vs_noise(plan: Plan, months: int = 400, seed: int = 0,
                      progress: Callable[[int], object] | None = None) -> list[KnobStep]:
    """For each knob, how far one step moves the bill, month by month, against the lottery.

    Every variant runs on the same ``months`` seeds (``seed, seed + 1, ...``) as the plan
    itself (common random numbers), and each of its months is compared with the plan's month
    on the same seed: the shift is the knob's effect, not a different draw. ``progress``, if
    given, is called with 1 after the plan and after each step (a progress bar's update).
    """
    if not (isinstance(months, int) and not isinstance(months, bool) and months >= 2):
        raise InputError(f"months must be a whole number >= 2, got {months!r}")
    base = simulate_many(plan, months, seed).bill
    noise = float(np.std(base))
    if progress is not None:
        progress(1)
    out = []
    for knob, step, stepped in knob_steps(plan):
        diff = simulate_many(stepped, months, seed).bill - base
        out.append(KnobStep(knob=knob, step=step, plan=stepped, shift=float(np.mean(diff)),
                            noise=noise, shift_sd=float(np.std(diff, ddof=1)), months=months))
        if progress is not None:
            progress(1)
    return out
