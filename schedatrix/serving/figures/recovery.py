"""What a fault cost and how long the fleet took to recover (the spec's recovery time).

**Recovery time, against the paired baseline** (the spec's): the baseline is the same requests
(same seed, same arrivals) served by the same design without the faults. Both runs are cut into
the same windows of ``window_s`` seconds from the fault; a window of the faulted run is
**within the margin** when its p95 TTFT is at most ``1 + tolerance`` times the baseline's in
that window and its goodput at least ``1 - tolerance`` times the baseline's. The recovery time
is the start (seconds since the fault) of the first of ``hold`` windows in a row within the
margin; ``None`` ("never") when no such run of windows ends before the baseline's last request
does. What the faulted run lost in each window (goodput, p95 TTFT) is the difference between
the two runs' windows (:func:`paired_series`).

**Noise floor**: the recovery time the pre-fault-level rule (below) reads on the baseline itself
at the fault's time: what a fault that does nothing would read by that rule (a burst after any
moment looks like damage to it). A fault does **no measurable damage** when its paired recovery
time is within the floor (at most it, or 0) and no request charged to it lost its SLO against
the baseline (a fault that cost requests their SLO did damage, however short its recovery: on
lesson 11's fleet a node failure losing 243 to 340 requests' SLOs recovers in 40 s, within
the 70 s floor of seeds 5 and 8). A baseline on which that rule never settles gives no floor
("never"), and the paired recovery time stands on its own.

**Recovery against the pre-fault level** (the older rule, reported beside the paired one;
exercise 11 asks for the paired rule, :func:`paired_recovery_from_series`): from a fault until
the windowed p95 TTFT and goodput are back within ``tolerance`` of their pre-fault level (p95
TTFT at most ``1 + tolerance`` times it, goodput at least ``1 - tolerance`` times it) and stay
there for ``hold`` windows; the pre-fault level is measured over the ``before_s`` seconds
before the fault.

In every window a request that failed counts as an infinitely late one in its window's p95 TTFT.
Goodput is requests ending within their class's SLOs (all completed requests when no class has
SLOs), per second, by the window they end in.

**Goodput lost**: requests that met their SLOs in the baseline but not with the faults. With
several faults, each such request is charged to one fault: the last one to strike before the
request ended in the baseline (a request done before a fault struck ran the same in both runs
until then, so only a fault already struck can have cost it). The faults' shares add up to the
run's whole loss (``goodput_lost_run``). Each fault's recovery time is still measured from its
own strike, so an earlier fault whose recovery a later one interrupts counts the later one's
windows too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .metrics import met_slo
from .record import COMPLETED, FAILED, UNFINISHED, Run

__all__ = ["FaultFigures", "fault_figures", "recovery_time", "recovery_from_series",
           "recovery_series", "windowed", "p95_counting_failures", "paired_series",
           "paired_recovery_from_series", "paired_recovery", "NO_DAMAGE"]

#: What a fault whose paired recovery is within the noise floor reads.
NO_DAMAGE = "no measurable damage"


@dataclass(frozen=True)
class FaultFigures:
    """One fault's figures in one run (seconds; counts of requests).

    ``recovery_s`` is against the paired baseline when the run had one (``paired``), else
    against the pre-fault level; ``noise_floor_s`` is the pre-fault-level rule read on the
    baseline at the fault's time; ``pre_level_recovery_s`` that rule read on the faulted run
    (the older figure, for comparison). ``goodput_lost`` is this fault's share of the run's
    loss (``goodput_lost_run``); ``peak_ttft_p95_excess_s`` and ``peak_goodput_deficit_rps``
    are the largest differences from the baseline over the windows from the fault on (the
    faulted run's p95 TTFT above the baseline's, its goodput below it; 0 when never)."""

    fault: str
    at_s: float
    until_s: float | None
    retried: int
    failed: int
    lost: int
    goodput_lost: int | None
    ttft_p95_during: float
    pre_ttft_p95: float
    pre_goodput_rps: float
    recovery_s: float | None
    window_s: float
    tolerance: float
    hold: int = 3
    paired: bool = False
    noise_floor_s: float | None = None
    pre_level_recovery_s: float | None = None
    goodput_lost_run: int | None = None
    peak_ttft_p95_excess_s: float | None = None
    peak_goodput_deficit_rps: float | None = None

    @property
    def measurable(self) -> bool:
        """Whether the fault did measurable damage. Not when its paired recovery time is within
        the noise floor (or 0) and no request it is charged with lost its SLO against the
        baseline; never recovering always is. Without a baseline there is no floor: any
        recovery time above 0 counts."""
        if self.recovery_s is None or (self.paired and self.goodput_lost):
            return True
        if self.recovery_s <= 0:
            return False
        return not (self.paired and self.noise_floor_s is not None
                    and self.recovery_s <= self.noise_floor_s)

    @property
    def effective_recovery_s(self) -> float | None:
        """The recovery time a limit is held to: 0 when there is no measurable damage."""
        return self.recovery_s if self.measurable else 0.0

    def verdict(self) -> str:
        """The recovery in words, with the noise floor beside it when there is a baseline."""
        rec = "never within the run" if self.recovery_s is None else f"{self.recovery_s:g} s"
        if not self.paired:
            return f"recovered in {rec}" if self.recovery_s is not None else \
                "never recovered within the run"
        floor = "never" if self.noise_floor_s is None else f"{self.noise_floor_s:g} s"
        if not self.measurable:
            return f"{NO_DAMAGE} (recovery {rec} against the baseline, noise floor {floor})"
        head = "never recovered within the run" if self.recovery_s is None else \
            f"recovered in {rec}"
        return f"{head} against the baseline (noise floor {floor}; goodput lost " \
               f"{self.goodput_lost})"

    def as_dict(self) -> dict:
        d = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
             for k, v in self.__dict__.items()}
        d["measurable"] = self.measurable
        d["verdict"] = self.verdict()
        return d


def p95_counting_failures(values: np.ndarray) -> float:
    """p95 of TTFTs where a failed request is infinitely late (inf when more than 5% failed)."""
    if not len(values):
        return math.nan
    big = np.where(np.isfinite(values), values, 1e300)
    q = float(np.percentile(big, 95))
    return math.inf if q >= 1e299 else q


def windowed(run: Run, start: float, end: float, window_s: float):
    """(window starts, p95 TTFT by arrival window, goodput per window by end time)."""
    n = max(1, int(math.ceil((end - start) / window_s)))
    edges = start + window_s * np.arange(n + 1)
    arr = run.arrival_s
    ttft = np.where(run.status == COMPLETED, run.first_token_s - arr, np.inf)
    ttft = np.where(np.isnan(ttft) & (run.status != COMPLETED), np.inf, ttft)
    p95 = np.full(n, np.nan)
    which = np.searchsorted(edges, arr, side="right") - 1
    for w in range(n):
        vals = ttft[(which == w) & (run.status != UNFINISHED)]
        if len(vals):
            p95[w] = p95_counting_failures(vals)
    good = _good(run)
    done = run.done_s[good]
    goodput = np.histogram(done, bins=edges)[0] / window_s
    return edges[:-1], p95, goodput


def _end(run: Run) -> float:
    """The run's last moment: its last request's end (or arrival, for one that never ended)."""
    return float(np.nanmax(np.where(np.isnan(run.done_s), run.arrival_s, run.done_s)))


def _good(run: Run) -> np.ndarray:
    if any(c.has_slo for c in run.requests.classes):
        return met_slo(run)
    return run.status == COMPLETED


def recovery_from_series(since_fault_s, ttft_p95_s, goodput_rps, pre_ttft_p95_s: float,
                         pre_goodput_rps: float, tolerance: float = 0.25,
                         hold: int = 3) -> float | None:
    """Recovery time from a windowed series after a fault: the start (seconds since the fault)
    of the first of ``hold`` windows in a row whose p95 TTFT is at most ``1 + tolerance``
    times the pre-fault level and whose goodput is at least ``1 - tolerance`` times it;
    ``None`` ("never") when no such run of windows exists.

    ``since_fault_s``, ``ttft_p95_s`` and ``goodput_rps`` hold one value per whole window, in
    time order; a p95 of NaN (no request arrived in the window) is no late request."""
    p95 = np.nan_to_num(np.asarray(ttft_p95_s, dtype=float), nan=0.0)
    good = np.asarray(goodput_rps, dtype=float)
    ok = (p95 <= pre_ttft_p95_s * (1 + tolerance)) & (good >= pre_goodput_rps * (1 - tolerance))
    return _first_held(since_fault_s, ok, hold)


def _first_held(since_fault_s, ok, hold: int) -> float | None:
    """The start of the first of ``hold`` windows in a row that are all ``ok``, or None."""
    ok = np.asarray(ok, dtype=bool)
    for w in range(len(ok) - hold + 1):
        if ok[w:w + hold].all():
            return float(since_fault_s[w])
    return None


def recovery_time(run: Run, at_s: float, window_s: float = 10.0, tolerance: float = 0.25,
                  hold: int = 3, before_s: float = 120.0):
    """(recovery seconds or None, pre-fault p95 TTFT, pre-fault goodput per second)."""
    arr = run.arrival_s
    before = (arr >= at_s - before_s) & (arr < at_s) & (run.status == COMPLETED)
    pre_p95 = float(np.percentile((run.first_token_s - arr)[before], 95)) if before.any() \
        else math.nan
    good = _good(run)
    t0 = max(float(np.nanmin(arr)), at_s - before_s)
    done = run.done_s[good]
    span = at_s - t0
    pre_good = float(((done >= t0) & (done < at_s)).sum() / span) if span > 0 else math.nan
    end = _end(run)
    if not math.isfinite(pre_p95) or end <= at_s:
        return None, pre_p95, pre_good
    starts, p95, goodput = windowed(run, at_s, end, window_s)
    whole = starts + window_s <= end                       # a cut last window can't vouch
    rec = recovery_from_series(starts[whole] - at_s, p95[whole], goodput[whole], pre_p95,
                               pre_good, tolerance, hold)
    return rec, pre_p95, pre_good


def recovery_series(run: Run, at_s: float, window_s: float = 10.0,
                    before_s: float = 120.0) -> tuple[list[dict], float, float]:
    """The windows after a fault as plain data, with the pre-fault levels they are judged
    against: ``([{"since_fault_s", "ttft_p95_s", "goodput_rps"}, ...], pre-fault p95 TTFT,
    pre-fault goodput per second)``. ``ttft_p95_s`` is None for a window no request arrived
    in; only whole windows are listed (a cut last window can't vouch for anything), so
    :func:`recovery_from_series` on them gives :func:`recovery_time`'s answer."""
    _, pre_p95, pre_good = recovery_time(run, at_s, window_s, before_s=before_s)
    end = _end(run)
    if end <= at_s:
        return [], pre_p95, pre_good
    starts, p95, goodput = windowed(run, at_s, end, window_s)
    windows = [{"since_fault_s": float(s - at_s),
                "ttft_p95_s": None if math.isnan(p) else float(p),
                "goodput_rps": float(g)}
               for s, p, g in zip(starts, p95, goodput, strict=True) if s + window_s <= end]
    return windows, pre_p95, pre_good


def paired_recovery_from_series(since_fault_s, ttft_p95_s, goodput_rps, base_ttft_p95_s,
                                base_goodput_rps, tolerance: float = 0.25,
                                hold: int = 3) -> float | None:
    """Recovery time against the paired baseline, from aligned windowed series: the start
    (seconds since the fault) of the first of ``hold`` windows in a row in which the faulted
    run's p95 TTFT is at most ``1 + tolerance`` times the baseline's and its goodput at least
    ``1 - tolerance`` times the baseline's; ``None`` ("never") when no such run of windows
    exists. A p95 of NaN (no request arrived in the window) is no late request."""
    p95 = np.nan_to_num(np.asarray(ttft_p95_s, dtype=float), nan=0.0)
    base = np.nan_to_num(np.asarray(base_ttft_p95_s, dtype=float), nan=0.0)
    good = np.asarray(goodput_rps, dtype=float)
    base_good = np.asarray(base_goodput_rps, dtype=float)
    return _first_held(since_fault_s, within_margin(p95, good, base, base_good, tolerance),
                       hold)


def within_margin(p95, good, base_p95, base_good, tolerance: float) -> np.ndarray:
    """Per window: the faulted run's p95 TTFT at most ``1 + tolerance`` times the baseline's
    and its goodput at least ``1 - tolerance`` times the baseline's (NaN p95s read as 0)."""
    with np.errstate(invalid="ignore"):     # inf * (1 + tolerance) is inf: no warning
        late = np.asarray(p95) <= np.asarray(base_p95) * (1 + tolerance)
    return late & (np.asarray(good) >= np.asarray(base_good) * (1 - tolerance))


def paired_series(run: Run, baseline: Run, at_s: float, window_s: float = 10.0,
                  tolerance: float = 0.25) -> list[dict]:
    """The windows from a fault on, the faulted run beside its paired baseline (the same
    arrivals without the fault), as plain data: ``[{"since_fault_s", "ttft_p95_s",
    "baseline_ttft_p95_s", "goodput_rps", "baseline_goodput_rps", "goodput_lost_rps",
    "ttft_p95_excess_s", "within_margin"}, ...]``. ``goodput_lost_rps`` is the baseline's
    goodput less the faulted run's (negative: the faulted run caught up), ``ttft_p95_excess_s``
    the faulted run's p95 less the baseline's (None where neither had an arrival; inf where
    more than 5% failed in the faulted run only). Only whole windows ending by the baseline's
    last request are listed: after it there is nothing to compare with."""
    end = _end(baseline)
    if end <= at_s:
        return []
    starts, p95, good = windowed(run, at_s, end, window_s)
    _, base_p95, base_good = windowed(baseline, at_s, end, window_s)
    whole = starts + window_s <= end
    ok = within_margin(np.nan_to_num(p95, nan=0.0), good, np.nan_to_num(base_p95, nan=0.0),
                       base_good, tolerance)
    out = []
    for w in np.flatnonzero(whole):
        p, b = p95[w], base_p95[w]
        if math.isnan(p) and math.isnan(b):
            excess = None
        else:
            pp, bb = (0.0 if math.isnan(p) else p), (0.0 if math.isnan(b) else b)
            excess = 0.0 if pp == bb else float(pp - bb)
        out.append({"since_fault_s": float(starts[w] - at_s),
                    "ttft_p95_s": None if math.isnan(p) else float(p),
                    "baseline_ttft_p95_s": None if math.isnan(b) else float(b),
                    "goodput_rps": float(good[w]), "baseline_goodput_rps": float(base_good[w]),
                    "goodput_lost_rps": float(base_good[w] - good[w]),
                    "ttft_p95_excess_s": excess, "within_margin": bool(ok[w])})
    return out


def paired_recovery(run: Run, baseline: Run, at_s: float, window_s: float = 10.0,
                    tolerance: float = 0.25, hold: int = 3) -> float | None:
    """Recovery time of the fault at ``at_s`` against the paired baseline (see the module)."""
    windows = paired_series(run, baseline, at_s, window_s, tolerance)
    return _first_held([w["since_fault_s"] for w in windows],
                       [w["within_margin"] for w in windows], hold)


def _peaks(windows: list[dict]) -> tuple[float, float]:
    """(largest p95 TTFT excess over the baseline, largest goodput deficit), 0 when none."""
    excess = [w["ttft_p95_excess_s"] for w in windows if w["ttft_p95_excess_s"] is not None]
    deficit = [w["goodput_lost_rps"] for w in windows]
    return max([0.0, *excess]), max([0.0, *deficit])


def _goodput_lost_shares(run: Run, baseline: Run, ats: list[float]) -> tuple[int, list[int]]:
    """(the run's goodput lost, each fault's share): a request within SLO in the baseline but
    not with the faults is charged to the last fault struck before it ended in the baseline
    (to the first fault if it ended before every one: it cannot have, as the runs are the same
    until then, but the count must add up)."""
    lost = _good(baseline) & ~_good(run)
    ends = baseline.done_s[lost]
    order = np.argsort(ats, kind="stable")
    struck = np.asarray(ats, dtype=float)[order]
    which = np.clip(np.searchsorted(struck, ends, side="right") - 1, 0, None)
    shares = np.zeros(len(ats), dtype=int)
    for k, n in zip(*np.unique(which, return_counts=True), strict=True):
        shares[order[k]] += int(n)
    return int(lost.sum()), [int(x) for x in shares]


def fault_figures(run: Run, baseline: Run | None = None, window_s: float = 10.0,
                  tolerance: float = 0.25, hold: int = 3) -> list[FaultFigures]:
    """Figures of each fault in ``run``. ``baseline``: the same arrivals served by the same
    design without the faults (the paired baseline); with it, recovery is read against it and
    its noise floor beside it, and the goodput lost is shared among the faults; without it,
    recovery is read against the pre-fault level and there is no goodput lost or floor."""
    out = []
    lost = int(((run.status == UNFINISHED) & ~np.isnan(run.arrival_s)).sum())
    failed = int((run.status == FAILED).sum())
    retried = int(getattr(run, "retried", 0))
    log = list(getattr(run, "fault_log", []))
    total, shares = None, [None] * len(log)
    if baseline is not None and log:
        total, shares = _goodput_lost_shares(run, baseline, [e["at_s"] for e in log])
    for entry, share in zip(log, shares, strict=True):
        at = entry["at_s"]
        until = entry.get("until_s") or entry.get("left_s") or at
        arr = run.arrival_s
        during = (arr >= at) & (arr <= until)
        ttft = np.where(run.status == COMPLETED, run.first_token_s - arr, np.inf)[during]
        p95 = p95_counting_failures(ttft)
        old, pre_p95, pre_good = recovery_time(run, at, window_s, tolerance, hold)
        extra: dict = {"hold": hold, "pre_level_recovery_s": old}
        rec = old
        if baseline is not None:
            windows = paired_series(run, baseline, at, window_s, tolerance)
            rec = _first_held([w["since_fault_s"] for w in windows],
                              [w["within_margin"] for w in windows], hold)
            excess, deficit = _peaks(windows)
            extra.update(paired=True, goodput_lost_run=total,
                         noise_floor_s=recovery_time(baseline, at, window_s, tolerance, hold)[0],
                         peak_ttft_p95_excess_s=excess, peak_goodput_deficit_rps=deficit)
        out.append(FaultFigures(entry["fault"], at, entry.get("until_s"), retried, failed, lost,
                                share, p95, pre_p95, pre_good, rec, window_s, tolerance,
                                **extra))
    return out
