"""The figures of a run, exactly as the spec defines them (the same as vLLM's serving benchmark).

All times are seconds from a request's arrival at the front door. Percentiles are over
completed requests, numpy's default linear interpolation; ITL pools every gap between two
successive output tokens of every request. TPOT is (E2E - TTFT) / (output tokens - 1) for
requests with at least two output tokens. A request meets its class's SLOs when it completed
with TTFT at most the class's ``ttft_s`` and (two or more output tokens) TPOT at most its
``tpot_s``; goodput counts those per second of the measured span (first arrival to last
end), SLO attainment divides them by the requests that arrived.

Two spans, named: ``span_s``, the run's (first arrival to last end, the drain tail included),
and ``load_span_s``, the load's (first arrival to last arrival). ``throughput_tok_s``, what
cost per million tokens divides by, is output tokens over the load's span, so two runs of
equal designs on equal loads cost the same whatever their last request's length;
``run_throughput_tok_s`` is the same tokens over the run's span.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from .record import COMPLETED, FAILED, REJECTED, GapRecord, Run

__all__ = ["Figures", "figures", "gap_quantiles", "met_slo", "missed_slos", "time_series",
           "TimeSeries"]

_QS = (50, 95, 99)


@dataclass(frozen=True)
class Figures:
    """A run's figures, overall or for one class (seconds, fractions, per second)."""

    arrived: int
    completed: int
    rejected: int
    failed: int
    ttft_p50: float
    ttft_p95: float
    ttft_p99: float
    itl_p50: float
    itl_p95: float
    tpot_p50: float
    tpot_p95: float
    e2e_p50: float
    e2e_p95: float
    e2e_mean: float
    queue_p50: float
    queue_p95: float
    queue_mean: float
    mean_in_system: float
    throughput_tok_s: float
    run_throughput_tok_s: float
    throughput_rps: float
    goodput_rps: float
    slo_attainment: float
    preemptions: int
    span_s: float
    load_span_s: float = 0.0

    def as_dict(self) -> dict:
        return {k: _json_number(v) for k, v in self.__dict__.items()}


def _json_number(v):
    if isinstance(v, (int, np.integer)):
        return int(v)
    v = float(v)
    return None if v != v else v


def _pct(x: np.ndarray, q) -> float:
    return float(np.percentile(x, q)) if len(x) else float("nan")


def met_slo(run: Run) -> np.ndarray:
    """Per request: completed and within every SLO threshold of its class."""
    req = run.requests
    ok = run.status == COMPLETED
    ttft = run.first_token_s - run.arrival_s
    out = req.output_tokens
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out >= 2, (run.done_s - run.first_token_s) / (out - 1), 0.0)
    for c, cls in enumerate(req.classes):
        mine = req.class_id == c
        if cls.ttft_s is not None:
            ok &= ~mine | (ttft <= cls.ttft_s)
        if cls.tpot_s is not None:
            ok &= ~mine | (tpot <= cls.tpot_s)
    return ok


def missed_slos(run: Run, class_id: int = 0) -> tuple[float, float]:
    """Which SLO a class's requests miss: the shares of its arrived requests that completed
    with TTFT over the class's ``ttft_s`` and with TPOT over its ``tpot_s`` (a request may
    miss both; 0 for a threshold the class does not set)."""
    req = run.requests
    if not 0 <= class_id < len(req.classes):
        raise InputError(f"class_id: {class_id!r}; allowed: 0 to {len(req.classes) - 1}")
    cls = req.classes[class_id]
    mine = (req.class_id == class_id) & ~np.isnan(run.arrival_s)
    done = mine & (run.status == COMPLETED)
    out = req.output_tokens
    with np.errstate(invalid="ignore", divide="ignore"):
        ttft = run.first_token_s - run.arrival_s
        tpot = np.where(out >= 2, (run.done_s - run.first_token_s) / (out - 1), 0.0)
    n = max(int(mine.sum()), 1)
    over_ttft = 0.0 if cls.ttft_s is None else float((done & (ttft > cls.ttft_s)).sum()) / n
    over_tpot = 0.0 if cls.tpot_s is None else float((done & (tpot > cls.tpot_s)).sum()) / n
    return over_ttft, over_tpot


def span(run: Run) -> tuple[float, float]:
    """(start, end) of the measured span: the first arrival to the last end."""
    arrived = run.arrival_s[~np.isnan(run.arrival_s)]
    if not len(arrived):
        return 0.0, 0.0
    ends = np.where(np.isnan(run.done_s), run.arrival_s, run.done_s)
    ends = ends[~np.isnan(ends)]
    return float(arrived.min()), float(ends.max())


def figures(run: Run, class_id: int | None = None) -> Figures:
    """The run's figures, overall (``class_id`` None) or for one class."""
    itl = gap_quantiles(run.gaps, (50, 95), class_id)   # first: its arrays are the largest
    req = run.requests
    mask = np.ones(len(req), bool) if class_id is None else req.class_id == class_id
    mask &= ~np.isnan(run.arrival_s)        # closed loop: requests never sent don't count
    t0, t1 = span(run)
    length = max(t1 - t0, 1e-300)
    arrived = run.arrival_s[mask]
    load_span = float(arrived.max() - arrived.min()) if len(arrived) else 0.0
    load_length = load_span if load_span > 0 else length    # one arrival: the run's span
    done = mask & (run.status == COMPLETED)
    arr, first, end = run.arrival_s[done], run.first_token_s[done], run.done_s[done]
    out = req.output_tokens[done]
    ttft = first - arr
    e2e = end - arr
    queue = run.scheduled_s[done] - arr
    many = out >= 2
    tpot = (end[many] - first[many]) / (out[many] - 1)
    met = met_slo(run) & mask
    return Figures(
        arrived=int(mask.sum()),
        completed=int(done.sum()),
        rejected=int((mask & (run.status == REJECTED)).sum()),
        failed=int((mask & (run.status == FAILED)).sum()),
        ttft_p50=_pct(ttft, 50), ttft_p95=_pct(ttft, 95), ttft_p99=_pct(ttft, 99),
        itl_p50=itl[0], itl_p95=itl[1],
        tpot_p50=_pct(tpot, 50), tpot_p95=_pct(tpot, 95),
        e2e_p50=_pct(e2e, 50), e2e_p95=_pct(e2e, 95),
        e2e_mean=float(e2e.mean()) if len(e2e) else float("nan"),
        queue_p50=_pct(queue, 50), queue_p95=_pct(queue, 95),
        queue_mean=float(queue.mean()) if len(queue) else float("nan"),
        mean_in_system=_mean_in_system(run, mask, t0, length),
        throughput_tok_s=float(out.sum()) / load_length,
        run_throughput_tok_s=float(out.sum()) / length,
        throughput_rps=float(done.sum()) / length,
        goodput_rps=float(met.sum()) / length,
        slo_attainment=float(met.sum()) / max(int(mask.sum()), 1),
        preemptions=int(run.preemptions[mask].sum()),
        span_s=t1 - t0,
        load_span_s=load_span,
    )


def _mean_in_system(run: Run, mask: np.ndarray, t0: float, length: float) -> float:
    """Time-average of the number of requests in the system (arrived, not yet ended), by
    sweeping the arrival (+1) and end (-1) events in time order."""
    arr = run.arrival_s[mask]
    end = np.where(np.isnan(run.done_s[mask]), arr, run.done_s[mask])
    times = np.concatenate([arr, end])
    steps = np.concatenate([np.ones(len(arr)), -np.ones(len(end))])
    order = np.argsort(times, kind="stable")
    times, steps = times[order], steps[order]
    count = np.cumsum(steps)
    area = float(np.sum(count[:-1] * np.diff(times))) if len(times) > 1 else 0.0
    return area / length


# -- pooled inter-token gaps ------------------------------------------------------------------

class _Gaps:
    """Weighted gaps as single values (sorted, with running weights) and arithmetic runs, with
    a count of the gaps at or below a value; the k-th smallest gap by a narrowing search."""

    #: Gaps listed one by one once the search has narrowed to them.
    ENUMERATE = 200_000

    def __init__(self, first, step, count, weight):
        single = (count == 1) | (step == 0)
        values = first[single]
        order = np.argsort(values, kind="stable")
        self.values = values[order]
        self.cum = np.concatenate([[0], np.cumsum((count[single] * weight[single])[order])])
        del values, order
        run = ~single
        self.first, self.step = first[run], step[run]
        self.count, self.weight = count[run], weight[run]
        self.inv = 1.0 / self.step
        self.total = int(self.cum[-1] + np.sum(self.count * self.weight))

    def last_le(self, x: float) -> np.ndarray:
        """Per run, the index of its last gap <= x (-1 for none), settled on the computed
        values ``first + step * j`` so that rounding can't misplace a gap."""
        first, step, count = self.first, self.step, self.count
        j = np.clip(np.floor((x - first) * self.inv), -1, count - 1).astype(np.int64)
        j += (j + 1 < count) & (first + step * (j + 1) <= x)
        j -= (j >= 0) & (first + step * j > x)
        return j

    def count_le(self, x: float, j=None) -> int:
        j = self.last_le(x) if j is None else j
        return int(self.cum[np.searchsorted(self.values, x, side="right")]
                   + np.sum((j + 1) * self.weight))

    def guesses(self, ks) -> list[float]:
        """Values near the k-th smallest for each k of ``ks``: each run stood in for by its
        middle (one sort for all of them, its arrays freed as it goes)."""
        vals = np.concatenate([self.values, self.first + self.step * (self.count - 1) / 2])
        order = np.argsort(vals, kind="stable")
        vals = vals[order]
        cum = np.concatenate([np.diff(self.cum), self.count * self.weight])[order]
        del order
        np.cumsum(cum, out=cum)
        at = np.searchsorted(cum, np.asarray(ks, dtype=np.int64) + 1)
        return [float(vals[min(a, len(vals) - 1)]) for a in at]

    def kth(self, k: int, g: float) -> float:
        """The k-th smallest gap (0-based), searched from ``g`` (a guess near it)."""
        lows = [v for v in (self.values[:1], self.first) if len(v)]
        highs = [v for v in (self.values[-1:], self.first + self.step * (self.count - 1))
                 if len(v)]
        lo = float(np.nextafter(min(float(v.min()) for v in lows), -np.inf))
        hi = float(max(float(v.max()) for v in highs))
        width = max(abs(g) * 1e-6, 1e-12)
        # bracket the answer around the guess, widening until it is inside
        while True:
            a, b = max(lo, g - width), min(hi, g + width)
            ok_a = a == lo or self.count_le(a) <= k
            ok_b = b == hi or self.count_le(b) > k
            if ok_a and ok_b:
                lo, hi = a, b
                break
            if ok_a:
                lo = a
            if ok_b:
                hi = b
            width *= 8
        j_lo, j_hi = self.last_le(lo), self.last_le(hi)
        while True:
            inside = int(np.sum(j_hi - j_lo)) + int(
                np.searchsorted(self.values, hi, "right") - np.searchsorted(self.values, lo,
                                                                            "right"))
            mid = lo + (hi - lo) / 2
            if inside <= self.ENUMERATE or mid <= lo or mid >= hi:
                break
            j_mid = self.last_le(mid)
            if self.count_le(mid, j_mid) > k:
                hi, j_hi = mid, j_mid
            else:
                lo, j_lo = mid, j_mid
        below = self.count_le(lo, j_lo)             # gaps <= lo: all before the k-th
        n = j_hi - j_lo
        seg = np.repeat(np.arange(len(n)), n)
        j = np.arange(len(seg)) - np.repeat(np.cumsum(n) - n, n) + np.repeat(j_lo + 1, n)
        a = np.searchsorted(self.values, lo, "right")
        b = np.searchsorted(self.values, hi, "right")
        values = np.concatenate([self.first[seg] + self.step[seg] * j, self.values[a:b]])
        weights = np.concatenate([self.weight[seg], np.diff(self.cum[a:b + 1])])
        order = np.argsort(values, kind="stable")
        cum = below + np.cumsum(weights[order])
        return float(values[order][np.searchsorted(cum, k + 1)])


def gap_quantiles(gaps: GapRecord, qs=(50, 95), class_id: int | None = None) -> list[float]:
    """Percentiles of the pooled inter-token gaps (numpy's linear interpolation), overall or
    for one class, computed on the runs without expanding them."""
    first, step, count, w = gaps.arrays()
    if class_id is None:
        weight = w[:, 0] if w.shape[1] == 1 else w.sum(axis=1)
    else:
        weight = w[:, class_id]
    keep = weight > 0
    if not keep.all():
        first, step, count, weight = first[keep], step[keep], count[keep], weight[keep]
    del keep
    g = _Gaps(first, step, count, weight)
    if g.total == 0:
        return [float("nan")] * len(qs)
    wanted = []          # per q: (h, the ranks its interpolation needs)
    for q in qs:
        h = (g.total - 1) * q / 100
        lo = int(np.floor(h))
        wanted.append((h, lo, lo + 1 if lo + 1 < g.total and h > lo else None))
    ranks = sorted({k for _, lo, hi in wanted for k in (lo, hi) if k is not None})
    value = {k: g.kth(k, near) for k, near in zip(ranks, g.guesses(ranks), strict=True)}
    out = []
    for h, lo, hi in wanted:
        a = value[lo]
        b = value[hi] if hi is not None else a
        out.append(a + (h - lo) * (b - a))
    return out


# -- windowed series, for plots ---------------------------------------------------------------

@dataclass(frozen=True)
class TimeSeries:
    """Per window of ``window_s`` seconds (``start_s`` each window's start): p95 TTFT of the
    requests that arrived in it, goodput (requests ending in it within their SLOs, per
    second), requests waiting for their first prefill and requests in the system at its end,
    and the peak share of the fleet's KV cache in use (as noted at scheduler events)."""

    window_s: float
    start_s: np.ndarray
    ttft_p95: np.ndarray
    goodput_rps: np.ndarray
    waiting: np.ndarray
    in_system: np.ndarray
    kv_share: np.ndarray


def time_series(run: Run, window_s: float | None = None, windows: int = 60) -> TimeSeries:
    t0, t1 = span(run)
    if window_s is None:
        window_s = max((t1 - t0) / windows, 1e-9)
    edges = t0 + window_s * np.arange(int(np.ceil((t1 - t0) / window_s)) + 1)
    if len(edges) < 2:
        edges = np.array([t0, t0 + window_s])
    n = len(edges) - 1
    arr, first, done = run.arrival_s, run.first_token_s, run.done_s
    ok = ~np.isnan(arr)
    idx = np.clip(((arr[ok] - t0) // window_s).astype(np.int64), 0, n - 1)
    ttft = (first - arr)[ok]
    p95 = np.full(n, np.nan)
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(n + 1))
    for w in range(n):
        vals = ttft[order[bounds[w]:bounds[w + 1]]]
        vals = vals[~np.isnan(vals)]
        if len(vals):
            p95[w] = np.percentile(vals, 95)
    met = met_slo(run)
    good = np.histogram(done[met], bins=edges)[0] / window_s
    ends = edges[1:]
    sched = np.where(np.isnan(run.scheduled_s), np.inf, run.scheduled_s)
    gone = np.where(np.isnan(done), np.where(run.status == REJECTED, arr, np.inf), done)
    a_sorted = np.sort(arr[ok])
    arrived_by = np.searchsorted(a_sorted, ends, side="right")
    waiting = arrived_by - np.searchsorted(np.sort(np.minimum(sched, gone)[ok]), ends,
                                           side="right")
    in_system = arrived_by - np.searchsorted(np.sort(gone[ok]), ends, side="right")
    return TimeSeries(window_s, edges[:-1], p95, good, waiting, in_system,
                      _kv_per_window(run, edges))


def _kv_per_window(run: Run, edges: np.ndarray) -> np.ndarray:
    """Peak share of all KV blocks in use per window (the level carried into a window counts)."""
    n = len(edges) - 1
    if not run.kv_samples or not run.kv_samples[2]:
        return np.zeros(n)
    t, delta, total = run.kv_samples
    if not len(t):          # nothing ever held a block (every request rejected at the door)
        return np.zeros(n)
    order = np.argsort(t, kind="stable")
    t, level = t[order], np.cumsum(delta[order]) / total
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n - 1)
    peak = np.zeros(n)
    np.maximum.at(peak, idx, level)
    # the level at each window's start (the last change before it) also counts
    before = np.searchsorted(t, edges[:-1], side="right") - 1
    carried = np.where(before >= 0, level[np.maximum(before, 0)], 0.0)
    return np.maximum(peak, carried)
