"""Stream a trace into per-pool counters: bounded memory whatever the trace's size.

Per pool the tally keeps
- requests per second (for burstiness), one int64 per second of the trace's span;
- per time bucket (``bucket_s`` seconds, aligned to multiples of ``bucket_s`` from time 0, so
  minutes fall on the minute): requests and tokens in each input-length bin (the bins' edges are
  the routing thresholds the what-if can use), input and output tokens;
- exact integer histograms of input and output tokens and of latencies in milliseconds
  (:class:`~.histogram.IntHistogram`), status counts, and requests per replica id.

Memory is O(span in seconds + span in buckets x bins + largest token count), not O(requests):
a month at 60 s buckets is about 11 MB per pool, a year about 130 MB. The span is capped at
`MAX_SPAN_DAYS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from .histogram import IntHistogram
from .note import FleetNote
from .trace import Chunk, read_trace

__all__ = ["Tally", "PoolTally", "Grid", "ROUTING_EDGES", "routing_edges", "tally_traces",
           "MAX_SPAN_DAYS", "LATENCY_CAP_MS"]

#: Input-token edges the routing what-if can split at (a 1-1.5-2-3-5-7 series, 10 to 1e6).
ROUTING_EDGES = tuple(int(m * 10**k) for k in range(1, 6) for m in (1, 1.5, 2, 3, 5, 7)) + (
    1_000_000,)
#: The longest trace span the tally accepts (guards against a misread time unit).
MAX_SPAN_DAYS = 370
#: Latencies at or above this many milliseconds share the histograms' top bin.
LATENCY_CAP_MS = 600_000


def routing_edges(extra: Iterable[int] = ()) -> tuple[int, ...]:
    """The standard edges plus the given thresholds, sorted and unique."""
    return tuple(sorted(set(ROUTING_EDGES) | {int(x) for x in extra}))


class Grid:
    """Counters indexed by an integer key (a second or a bucket) x `width` columns, growing
    to cover whatever keys arrive, in any order. ``max_len`` bounds the span of keys."""

    def __init__(self, width: int = 1, dtype=np.int64, max_len: int | None = None):
        self.width, self.dtype, self.max_len = width, dtype, max_len
        self.origin = 0
        self.seen = (math.inf, -math.inf)
        self.data = np.zeros((0, width), dtype=dtype)

    def _cover(self, lo: int, hi: int) -> None:
        self.seen = (min(lo, self.seen[0]), max(hi, self.seen[1]))
        if self.max_len is not None and self.seen[1] - self.seen[0] >= self.max_len:
            raise OverflowError(self.seen)
        end = self.origin + len(self.data) - 1
        if len(self.data) == 0:
            new_lo, new_hi = lo, hi
        elif lo >= self.origin and hi <= end:
            return
        else:
            slack = len(self.data) // 2  # geometric growth: amortised O(1) per key
            new_lo = min(lo, self.origin - slack) if lo < self.origin else self.origin
            new_hi = max(hi, end + slack) if hi > end else end
        grown = np.zeros((new_hi - new_lo + 1, self.width), dtype=self.dtype)
        if len(self.data):
            at = self.origin - new_lo
            grown[at: at + len(self.data)] = self.data
        self.origin, self.data = new_lo, grown

    def add(self, keys: np.ndarray, cols: np.ndarray | None = None,
            weights: np.ndarray | None = None) -> None:
        """Add 1 (or `weights`) at each (key, col); `cols` defaults to column 0."""
        if len(keys) == 0:
            return
        lo, hi = int(keys.min()), int(keys.max())
        self._cover(lo, hi)
        flat = (keys - lo) * self.width
        if cols is not None:
            flat = flat + cols
        n = (hi - lo + 1) * self.width
        add = np.bincount(flat, weights=weights, minlength=n).reshape(-1, self.width)
        self.data[lo - self.origin: hi - self.origin + 1] += add.astype(self.dtype, copy=False)

    def window(self, lo: int, hi: int) -> np.ndarray:
        """Rows for keys lo..hi inclusive (zeros where nothing arrived), shape (hi-lo+1, width)."""
        out = np.zeros((hi - lo + 1, self.width), dtype=self.dtype)
        if len(self.data):
            a, b = max(lo, self.origin), min(hi, self.origin + len(self.data) - 1)
            if a <= b:
                out[a - lo: b - lo + 1] = self.data[a - self.origin: b - self.origin + 1]
        return out


@dataclass
class PoolTally:
    """Everything the audit keeps of one pool's requests (see the module docstring)."""

    bucket_s: int
    edges: tuple[int, ...]
    per_second: Grid = field(init=False)
    bins: Grid = field(init=False)
    bin_tokens: Grid = field(init=False)
    tokens: Grid = field(init=False)
    input_hist: IntHistogram = field(default_factory=IntHistogram)
    output_hist: IntHistogram = field(default_factory=IntHistogram)
    ttft_ms: IntHistogram = field(default_factory=lambda: IntHistogram(LATENCY_CAP_MS))
    e2e_ms: IntHistogram = field(default_factory=lambda: IntHistogram(LATENCY_CAP_MS))
    n_status: int = 0
    n_errors: int = 0
    replicas: dict[str, int] = field(default_factory=dict)
    n: int = 0
    t_min: float = math.inf
    t_max: float = -math.inf

    def __post_init__(self):
        span_s = MAX_SPAN_DAYS * 86_400
        nb = len(self.edges) + 1
        self.per_second = Grid(1, dtype=np.int32, max_len=span_s)
        self.bins = Grid(nb, max_len=span_s // self.bucket_s + 2)
        self.bin_tokens = Grid(nb, dtype=np.float64, max_len=span_s // self.bucket_s + 2)
        self.tokens = Grid(2, max_len=span_s // self.bucket_s + 2)

    def add(self, t_s, input_tokens, output_tokens, ttft_s, e2e_s, ok, replica) -> None:
        """Add one pool's slice of a chunk (arrays of equal length; optional ones may be None)."""
        sec = np.floor(t_s).astype(np.int64)
        bucket = np.floor_divide(sec, self.bucket_s)
        self.per_second.add(sec)
        b = np.searchsorted(np.asarray(self.edges), input_tokens, side="right")
        self.bins.add(bucket, b)
        self.bin_tokens.add(bucket, b, weights=(input_tokens + output_tokens).astype(float))
        both = np.concatenate([bucket, bucket])
        self.tokens.add(both, np.repeat([0, 1], len(bucket)),
                        weights=np.concatenate([input_tokens, output_tokens]).astype(float))
        self.input_hist.add(input_tokens)
        self.output_hist.add(output_tokens)
        for arr, hist in ((ttft_s, self.ttft_ms), (e2e_s, self.e2e_ms)):
            if arr is not None:
                ms = arr[np.isfinite(arr)] * 1000
                hist.add(np.rint(ms).astype(np.int64))
        if ok is not None:
            self.n_status += len(ok)
            self.n_errors += int((~ok).sum())
        if replica is not None:
            ids, counts = np.unique(replica, return_counts=True)
            for r, c in zip(ids.tolist(), counts.tolist(), strict=True):
                self.replicas[r] = self.replicas.get(r, 0) + c
        self.n += len(t_s)
        self.t_min = min(self.t_min, float(t_s.min()))
        self.t_max = max(self.t_max, float(t_s.max()))


@dataclass
class Tally:
    """The per-pool tallies of one audit's traces, plus what was read."""

    note: FleetNote
    bucket_s: int = 60
    edges: tuple[int, ...] = ROUTING_EDGES
    pools: list[PoolTally] = field(init=False)
    files: list[tuple[str, str, int]] = field(default_factory=list)  # (file, format, rows)
    has_ttft: bool = False
    has_e2e: bool = False
    has_status: bool = False
    has_replicas: bool = False

    def __post_init__(self):
        if not isinstance(self.bucket_s, int) or self.bucket_s < 1:
            raise InputError(f"bucket = {self.bucket_s!r} s: must be a whole number of "
                             "seconds >= 1")
        self.pools = [PoolTally(self.bucket_s, self.edges) for _ in self.note.pools]

    def add(self, chunk: Chunk, source: str = "trace") -> None:
        """Add a chunk of requests read from `source` (a file name, for error messages)."""
        self.has_ttft |= chunk.ttft_s is not None
        self.has_e2e |= chunk.e2e_s is not None
        self.has_status |= chunk.ok is not None
        self.has_replicas |= chunk.replica is not None
        for p in np.unique(chunk.pool).tolist():
            rows = chunk.pool == p if len(self.pools) > 1 else slice(None)

            def pick(a, rows=rows):
                return None if a is None else a[rows]

            try:
                self.pools[p].add(chunk.t_s[rows], chunk.input_tokens[rows],
                                  chunk.output_tokens[rows], pick(chunk.ttft_s),
                                  pick(chunk.e2e_s), pick(chunk.ok), pick(chunk.replica))
            except OverflowError:
                t = chunk.t_s[rows]
                seen = self.pools[p].t_min
                far = int(np.argmax(np.abs(t - (seen if math.isfinite(seen) else t[0]))))
                line = chunk.lines[rows][far]
                raise InputError(
                    f"trace {source} line {line}: the timestamps span more than "
                    f"{MAX_SPAN_DAYS} days; check the time unit (name the column "
                    "timestamp_s or timestamp_ms) and the file") from None

    @property
    def t_min(self) -> float:
        return min(p.t_min for p in self.pools)

    @property
    def t_max(self) -> float:
        return max(p.t_max for p in self.pools)

    @property
    def n(self) -> int:
        return sum(p.n for p in self.pools)


def tally_traces(note: FleetNote, files: Iterable[tuple[str | Path, str | None]],
                 bucket_s: int = 60, thresholds: Iterable[int] = (),
                 on_progress: Callable[[int], None] | None = None) -> Tally:
    """Read each (file, pool or None) in chunks into one Tally.

    `thresholds` are extra routing edges (input tokens); `on_progress(bytes)` is called with
    the bytes read since the last call (the command line hangs a progress bar on it).
    """
    tally = Tally(note, bucket_s, routing_edges(thresholds))
    for path, pool in files:
        path = Path(path)
        rows, fmt_name, done = 0, "no rows", 0
        for chunk in read_trace(path, note, pool):
            tally.add(chunk, path.name)
            rows += len(chunk.t_s)
            fmt_name = chunk.format_name
            if on_progress is not None:
                on_progress(chunk.bytes_read - done)
            done = chunk.bytes_read
        tally.files.append((path.name, fmt_name, rows))
    if tally.n == 0:
        raise InputError("the traces hold no requests")
    return tally
