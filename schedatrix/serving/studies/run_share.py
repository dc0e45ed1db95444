"""Repeated runs as a statistical decision: pass, fail or undecided, with its confidence.

Each run (an independent seed of the load) either *meets* a criterion or not. What is decided
is the **share of runs that meet**, against a required share ``q``:

- PASS when the one-sided lower Clopper-Pearson bound of that share, at ``confidence``, is above
  ``q``;
- FAIL when the one-sided upper bound is below ``q``;
- UNDECIDED otherwise: the runs so far cannot tell.

Clopper-Pearson (the exact binomial bound) is used rather than Wilson because its coverage is
guaranteed at every number of runs: at a fixed number of runs, a design whose true share is
below ``q`` passes with probability at most ``1 - confidence``, and one whose true share is
above ``q`` fails with probability at most ``1 - confidence``. More runs narrow both bounds, so
they make a decision more certain, never harsher: a design that meets in most runs is not
refused for the odd miss (the old "every run must meet" rule passed with probability p^n).

A *mean figure* against a bound (a p95 against a share of its threshold, the KV cache's peak)
is decided the same way with a one-sided Student-t bound of the mean over the runs
(:func:`decide_mean`); one run has no t bound and is undecided.

``runs = "auto"`` (:func:`auto_schedule`) starts with a few runs and doubles them until every
criterion is decided or the cap is reached. Looking again after each batch is a sequential
test; its error rates are measured by simulation (see ``docs/serving.md`` and
``tests/test_run_share.py``), not assumed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ..numbers import check_int, check_real

__all__ = ["RUN_SHARE", "CONFIDENCE", "AUTO_START", "MAX_RUNS", "Decision", "share_bounds",
           "decide_share", "decide_mean", "fewest_runs", "auto_schedule", "check_runs",
           "combine",
           "check_run_share", "check_confidence", "exact"]

#: The required share of runs that meet, by default: nine load windows in ten.
RUN_SHARE = 0.9
#: The confidence of each one-sided bound, by default.
CONFIDENCE = 0.95
#: ``runs = "auto"``: the first batch, and the cap on runs unless one is given.
AUTO_START = 3
MAX_RUNS = 60

PASS, FAIL, UNDECIDED = "pass", "fail", "undecided"


def check_run_share(value, name: str = "run_share") -> float:
    """A required share of runs: above 0, below 1 (a share of 1 can never be shown)."""
    value = check_real(name, value, 0.0, 1.0, low_open=True)
    if value == 1.0:
        raise InputError(f"{name} must be above 0 and below 1 (no number of runs shows a share "
                         f"of 1), got {value!r}")
    return value


def check_confidence(value, name: str = "confidence") -> float:
    """A confidence: at least 0.5, below 1."""
    value = check_real(name, value, 0.5, 1.0)
    if value == 1.0:
        raise InputError(f"{name} must be from 0.5 to below 1 (no number of runs gives "
                         f"certainty), got {value!r}")
    return value


def _beta_ppf(q: float, a: float, b: float) -> float:
    from scipy import stats  # here: importing scipy costs a second a process

    return float(stats.beta.ppf(q, a, b))


def share_bounds(met: int, runs: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """(low, high): one-sided Clopper-Pearson bounds, each at ``confidence``, of the share of
    runs that meet when ``met`` of ``runs`` did. (0, 1) with no runs."""
    runs = check_int("runs", runs, 0, 10**9)
    met = check_int("met", met, 0, runs)
    check_confidence(confidence)
    if runs == 0:
        return (0.0, 1.0)
    a = 1.0 - confidence
    low = 0.0 if met == 0 else _beta_ppf(a, met, runs - met + 1)
    high = 1.0 if met == runs else _beta_ppf(confidence, met + 1, runs - met)
    return (low, high)


@dataclass(frozen=True)
class Decision:
    """A criterion decided over runs. ``state``: "pass", "fail" or "undecided". ``low`` and
    ``high`` are the one-sided bounds at ``confidence`` (of the share of runs that meet, or of
    a mean figure when ``kind`` is "mean"); ``required`` what is needed."""

    state: str
    met: int
    runs: int
    required: float
    confidence: float
    low: float
    high: float
    kind: str = "share"
    exact: bool = False      # a replayed trace: one deterministic run, nothing to estimate

    @property
    def passed(self) -> bool | None:
        """True when decided pass, False when decided fail, None while undecided."""
        return {PASS: True, FAIL: False}.get(self.state)

    @property
    def indicative(self) -> bool:
        """What the runs so far point to, without confidence: the share observed at least the
        required share (for a mean: the mean within the bound)."""
        if self.kind == "mean":
            return self.met == self.runs
        return self.runs > 0 and self.met >= self.required * self.runs

    def runs_to_pass(self) -> int | None:
        """The fewest further runs, all meeting, after which this would pass (None: decided)."""
        if self.state != UNDECIDED or self.kind != "share":
            return None
        extra = 1
        while share_bounds(self.met + extra, self.runs + extra, self.confidence)[0] \
                <= self.required:
            extra += 1
        return extra

    def text(self) -> str:
        """'3 of 3 runs met (95% lower bound on the share 37%, 90% needed)'-like text."""
        if self.exact:
            return "a replayed trace: one deterministic run, " + \
                ("met" if self.met else "missed")
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''}"
        conf = f"{self.confidence:.0%}"
        bounds = (f"the share of runs that meet is {self.low:.0%} to {self.high:.0%} "
                  f"(one-sided {conf} bounds; {self.required:.0%} needed)")
        return f"{self.met} of {runs} met; {bounds}"


def decide_share(met: int, runs: int, required: float = RUN_SHARE,
                 confidence: float = CONFIDENCE) -> Decision:
    """Decide the share of runs that meet: pass when its lower bound is above ``required``,
    fail when its upper bound is below, undecided otherwise."""
    check_run_share(required)
    low, high = share_bounds(met, runs, confidence)
    state = PASS if low > required else FAIL if high < required else UNDECIDED
    return Decision(state, met, runs, required, confidence, low, high)


def exact(met: bool) -> Decision:
    """A deterministic run (a replayed trace): met or not, with nothing left to estimate."""
    return Decision(PASS if met else FAIL, int(met), 1, 1.0, 1.0, float(met), float(met),
                    exact=True)


def decide_mean(values, bound: float, confidence: float = CONFIDENCE) -> Decision:
    """Decide 'the mean of ``values`` over runs is at most ``bound``' with a one-sided Student-t
    bound at ``confidence``: pass when the upper bound is at most ``bound``, fail when the
    lower bound is above it, undecided otherwise (always with a single run). NaN runs are left
    out. ``met`` counts the runs at most ``bound`` (for the record)."""
    x = np.asarray([v for v in values if v is not None and v == v], dtype=float)
    n = len(x)
    met = int((x <= bound).sum())
    if n < 2:
        m = float(x.mean()) if n else math.nan
        return Decision(UNDECIDED, met, n, bound, confidence, m, m, kind="mean")
    from scipy import stats

    m, sd = float(x.mean()), float(x.std(ddof=1))
    half = float(stats.t.ppf(confidence, n - 1)) * sd / math.sqrt(n)
    low, high = m - half, m + half
    state = PASS if high <= bound else FAIL if low > bound else UNDECIDED
    return Decision(state, met, n, bound, confidence, low, high, kind="mean")


def combine(decisions) -> str | None:
    """Several criteria at once: fail when any fails, pass when all pass, else undecided
    (None when there are none)."""
    states = [d.state for d in decisions if d is not None]
    if not states:
        return None
    return FAIL if FAIL in states else PASS if all(s == PASS for s in states) else UNDECIDED


def fewest_runs(required: float = RUN_SHARE, confidence: float = CONFIDENCE) -> int:
    """The fewest runs that can pass at all, every one of them meeting: the lower bound with
    all n meeting is (1 - confidence)^(1/n), above ``required`` from this n on (29 runs for
    a share of 0.9 at 95%)."""
    required, confidence = check_run_share(required), check_confidence(confidence)
    n = max(1, math.floor(math.log(1 - confidence) / math.log(required)) + 1)
    while share_bounds(n, n, confidence)[0] <= required:   # the float edge
        n += 1
    return n


def auto_schedule(start: int = AUTO_START, cap: int = MAX_RUNS):
    """The run counts at which ``runs = "auto"`` looks: ``start``, then doubling, up to
    ``cap`` (the last look is at the cap)."""
    start = check_int("runs", start, 1, 10_000)
    cap = check_int("max_runs", cap, 1, 10_000)
    n = min(start, cap)
    out = [n]
    while n < cap:
        n = min(cap, 2 * n)
        out.append(n)
    return out


def check_runs(runs, name: str = "runs") -> int | str:
    """``runs``: a whole number of runs (1 to 10,000) or "auto"."""
    if isinstance(runs, str):
        if runs.strip().lower() == "auto":
            return "auto"
        try:
            runs = int(runs)
        except ValueError:
            raise InputError(f"{name}: {runs!r}; allowed: a whole number 1 to 10000, or "
                             f"\"auto\"") from None
    return check_int(name, runs, 1, 10_000)
