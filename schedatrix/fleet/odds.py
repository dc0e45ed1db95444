"""Over the lottery: how often each check fails for a plan, and which knobs matter.

Both run the vectorised engine over many draws (seeds ``seed, seed + 1, ...``), so the same
arguments give the same answer on every machine.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from ..errors import InputError
from .cards import CARD_CLASSES
from .engine import simulate_many
from .inputs import real_number, shown, whole_number
from .plan import MAX_SEED, Plan
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


#: The most bytes of results ``check_odds`` holds at once: it runs the months in chunks that
#: fit (about 250 bytes a month, so 65,536 months a chunk), whatever the card count; with the
#: engine's scratch (at most ``MAX_WORKERS`` x 3.8 MB) the whole run stays under ODDS_MEMORY_CAP.
ODDS_CHUNK_BYTES = 16 * 2**20
_BYTES_PER_MONTH = 256
#: What check_odds' arrays add up to at most, whatever the knobs (the tests measure it).
ODDS_MEMORY_CAP = 64 * 2**20
#: A run this long (cards x months) shows a progress bar unless told not to: a few seconds.
PROGRESS_CARD_MONTHS = 50_000_000
#: Seconds between progress refreshes: on a terminal, and where stderr is a file or a pipe (a
#: log gets a line every 10 s, not thousands).
PROGRESS_REFRESH_S = {"terminal": 0.5, "log": 10.0}


#: The most card-months one call may run (cards x months, over every variant): about a minute
#: at the engine's target (1,000,000 months of 32 cards a second), 7 minutes at the 5 million
#: card-months a second measured on this project's busy two cores. Beyond, the answer would
#: take hours (odds --months 1e12 ran for about 300 h): run shorter calls on other seeds.
MAX_CARD_MONTHS = 2_000_000_000


def _not_too_long(plan: Plan, months: int, variants: int = 1) -> None:
    total = plan.cards * months * variants
    if total > MAX_CARD_MONTHS:
        most = MAX_CARD_MONTHS // (plan.cards * variants)
        runs = f"{variants} plans of " if variants > 1 else ""
        raise InputError(f"months = {months:,}: that is {total:,} card-months ({runs}"
                         f"{plan.cards} cards), and a call runs at most "
                         f"{MAX_CARD_MONTHS:,} (minutes of CPU; more would take hours): "
                         f"at most {most:,} months of this plan")


class _NoBar:
    """What :func:`check_odds` counts on when no bar is shown: nothing at all (a disabled
    tqdm still takes tqdm's process-wide lock, which a grader's threads, each checking odds,
    were once all found waiting on for good)."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None


def _bar(months: int, show: bool):
    if not show:
        return _NoBar()
    stream = sys.stderr
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    refresh = PROGRESS_REFRESH_S["terminal" if terminal else "log"]
    # A terminal's bar disappears when done; a log (or a notebook) keeps its last line.
    return tqdm(total=months, desc="lottery draws", unit=" months", unit_scale=True,
                leave=not terminal, mininterval=refresh, file=stream)


def check_odds(plan: Plan, months: int = 2_000, seed: int = 0, confidence: float = 0.95,
               progress: bool | None = None, chunk: int | None = None) -> CheckOdds:
    """Monte Carlo over ``months`` draws: each check's failure share with a confidence interval.

    Parameters
    ----------
    plan : Plan
    months : int
        Lottery draws, >= 1 (an int or a numpy integer); seeds ``seed .. seed + months - 1``.
    seed : int
        The first seed, 0 to 2**63 - months.
    confidence : real number
        Of the Wilson intervals, in (0, 1); any real type.
    progress : bool or None
        ``None`` (the default) shows a progress bar when the run is long (cards x months
        above ``PROGRESS_CARD_MONTHS``, a few seconds); ``True`` always, ``False`` never.
        The bar goes to stderr even when stderr is not a terminal (a notebook shows a
        widget), refreshing every 0.5 s on a terminal (then cleared) and every 10 s
        elsewhere (a log keeps a few lines and the last one).
    chunk : int or None
        Months per engine call; by default as many as fit ``ODDS_CHUNK_BYTES`` (fewer when a
        bar is shown, so that it moves). The answer never depends on it.

    Memory stays under ``ODDS_MEMORY_CAP`` (64 MiB of arrays) whatever the card count and
    months: the engine's own work arrays do not grow with the months it is given.
    """
    from scipy.stats import binomtest  # here: importing scipy costs a second a process

    months = whole_number("months", months, low=1)
    _not_too_long(plan, months)
    seed = whole_number("seed", seed, low=0, high=MAX_SEED - months + 1,
                        allowed="a whole number from 0 to 2**63 - months")
    confidence = real_number("confidence", confidence, "a fraction in (0, 1)",
                             lambda x: 0 < x < 1)
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise InputError(f"progress must be True, False or None, got {shown(progress)}")
    show = plan.cards * months > PROGRESS_CARD_MONTHS if progress is None else bool(progress)
    fits = max(1, ODDS_CHUNK_BYTES // _BYTES_PER_MONTH)
    if chunk is None:
        chunk = min(fits, -(-months // 100)) if show else fits
    else:
        chunk = whole_number("chunk", chunk, low=1, high=fits,
                             allowed=f"a whole number of months from 1 to {fits}")
    failures = dict.fromkeys(CHECKS, 0)
    signatures: dict[str, int] = {}
    with _bar(months, show) as bar:
        for start in range(seed, seed + months, chunk):
            m = simulate_many(plan, min(chunk, seed + months - start), start)
            passed = (m.capacity_ok, m.convergence_ok, m.evictions_ok)
            for name, ok in zip(CHECKS, passed, strict=True):
                failures[name] += len(ok) - int(np.count_nonzero(ok))
            digits = passed[0].astype(int) * 100 + passed[1].astype(int) * 10 + passed[2]
            for value, count in zip(*np.unique(digits, return_counts=True), strict=True):
                key = f"{int(value):03d}"
                signatures[key] = signatures.get(key, 0) + int(count)
            bar.update(len(m))
            del m, passed, digits
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
    months = whole_number("months", months, low=2)
    _not_too_long(plan, months, 1 + len(knob_steps(plan)))
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
