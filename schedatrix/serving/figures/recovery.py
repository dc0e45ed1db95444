"""What a fault cost and how long the fleet took to recover (the spec's recovery time).

**Recovery time**: from a fault until the windowed p95 TTFT and goodput are back within
``tolerance`` of their pre-fault level (p95 TTFT at most ``1 + tolerance`` times it, goodput at
least ``1 - tolerance`` times it) and stay there for ``hold`` windows; ``None`` ("never") if
that does not happen within the run. Windows are ``window_s`` seconds from the fault; the
pre-fault level is measured over the ``before_s`` seconds before it. A request that failed
counts as an infinitely late one in its window's p95 TTFT. Goodput is requests ending within
their class's SLOs (all completed requests when no class has SLOs), per second.

**Goodput lost**: requests that met their SLOs in the same run without the fault (the same
arrivals) but not with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .metrics import met_slo
from .record import COMPLETED, FAILED, UNFINISHED, Run

__all__ = ["FaultFigures", "fault_figures", "recovery_time", "recovery_from_series",
           "recovery_series", "windowed", "p95_counting_failures"]


@dataclass(frozen=True)
class FaultFigures:
    """One fault's figures in one run (seconds; counts of requests)."""

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

    def as_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in self.__dict__.items()}


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
    end = float(np.nanmax(np.where(np.isnan(run.done_s), arr, run.done_s)))
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
    arr = run.arrival_s
    end = float(np.nanmax(np.where(np.isnan(run.done_s), arr, run.done_s)))
    if end <= at_s:
        return [], pre_p95, pre_good
    starts, p95, goodput = windowed(run, at_s, end, window_s)
    windows = [{"since_fault_s": float(s - at_s),
                "ttft_p95_s": None if math.isnan(p) else float(p),
                "goodput_rps": float(g)}
               for s, p, g in zip(starts, p95, goodput, strict=True) if s + window_s <= end]
    return windows, pre_p95, pre_good


def fault_figures(run: Run, baseline: Run | None = None, window_s: float = 10.0,
                  tolerance: float = 0.25, hold: int = 3) -> list[FaultFigures]:
    """Figures of each fault in ``run`` (``baseline``: the same arrivals without faults)."""
    out = []
    lost = int(((run.status == UNFINISHED) & ~np.isnan(run.arrival_s)).sum())
    failed = int((run.status == FAILED).sum())
    retried = int(getattr(run, "retried", 0))
    goodput_lost = None
    if baseline is not None:
        goodput_lost = int((_good(baseline) & ~_good(run)).sum())
    for entry in getattr(run, "fault_log", []):
        at = entry["at_s"]
        until = entry.get("until_s") or entry.get("left_s") or at
        arr = run.arrival_s
        during = (arr >= at) & (arr <= until)
        ttft = np.where(run.status == COMPLETED, run.first_token_s - arr, np.inf)[during]
        p95 = p95_counting_failures(ttft)
        rec, pre_p95, pre_good = recovery_time(run, at, window_s, tolerance, hold)
        out.append(FaultFigures(entry["fault"], at, entry.get("until_s"), retried, failed, lost,
                                goodput_lost, p95, pre_p95, pre_good, rec, window_s, tolerance))
    return out
