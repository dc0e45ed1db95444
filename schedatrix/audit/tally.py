"""Stream traces into per-pool counters whose memory grows with the requests, never the span.

Per pool the tally keeps (:class:`~.sparse.Counts`, only the keys that occur):
- requests per second that holds any (for burstiness, the window and its gaps), with the first
  and the last row of each second (file and line, to name the rows around a gap);
- requests and tokens per time bucket and input-length bin (``bucket_s`` seconds, aligned to
  multiples of ``bucket_s`` from time 0, so minutes fall on the minute; the bins' edges are the
  routing thresholds the what-if can use);
- exact integer histograms of input and output tokens and of latencies in milliseconds
  (:class:`~.histogram.IntHistogram`, bounded by their caps), status counts, and requests per
  replica id;
- a sample of (input, output) token pairs, the same whatever the chunks, files or merge order
  (the ``SAMPLE_PAIRS`` rows whose hashed row code is least): the length mix the serving
  simulator serves when the audit derives a replica's capacity (:mod:`.capacity`).

Memory: about 40 bytes per distinct second and per distinct (bucket, bin), at most one of each
per request, plus the histograms (8 bytes per token count up to 2**20, per latency millisecond
up to 600,000): whatever the span, the bucket or the trace's gaps.

Time bases (docs/audit.md): files whose times count from the trace's start (relative: Mooncake,
BurstGPT, small numbers) are placed so that their time 0 is the first arrival of the files with
epoch times; with no such file, time 0 stays 0. Tallies of separate files merge exactly
(integer counts), in any order: the cluster runs tally each file on its own.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..traces.convert import MAX_TOKENS, Chunk
from ..traces.reader import TraceReader, peek_trace
from .histogram import IntHistogram
from .note import FleetNote
from .sparse import Counts, group

__all__ = ["Tally", "PoolTally", "TraceFile", "ROUTING_EDGES", "routing_edges",
           "tally_traces", "tally_file", "plan_files", "LATENCY_CAP_MS", "MAX_BUCKET_S",
           "row_code", "row_of", "SAMPLE_PAIRS", "LengthSample"]

#: Input-token edges the routing what-if can split at (a 1-1.5-2-3-5-7 series, 10 to 1e6).
ROUTING_EDGES = tuple(int(m * 10**k) for k in range(1, 6) for m in (1, 1.5, 2, 3, 5, 7)) + (
    1_000_000,)
#: Latencies at or above this many milliseconds share the histograms' top bin.
LATENCY_CAP_MS = 600_000
#: The longest bucket, in seconds (366 days).
MAX_BUCKET_S = 366 * 86_400
_LINE_BITS = 40
#: The (input, output) pairs each pool's sample keeps.
SAMPLE_PAIRS = 2000


def row_code(file_index: int, lines: np.ndarray) -> np.ndarray:
    """One int64 per row naming its file (by index) and line: the least is the first row."""
    return (np.int64(file_index) << _LINE_BITS) | lines.astype(np.int64)


def row_of(code: int) -> tuple[int, int]:
    """(file index, line) of a row code."""
    return code >> _LINE_BITS, code & ((1 << _LINE_BITS) - 1)


def routing_edges(extra: Iterable[int] = ()) -> tuple[int, ...]:
    """The standard edges plus the given thresholds, sorted and unique."""
    extra = [int(x) for x in extra]
    for x in extra:
        if not 1 <= x <= MAX_TOKENS:
            raise InputError(f"routing threshold = {x} input tokens: must be from 1 to "
                             f"{MAX_TOKENS:,}")
    return tuple(sorted(set(ROUTING_EDGES) | set(extra)))


def _mix(codes: np.ndarray) -> np.ndarray:
    """splitmix64 of each row code: a bijection on 64 bits, so distinct rows never tie."""
    z = codes.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@dataclass
class LengthSample:
    """A bottom-k sample of one pool's (input, output) token pairs: the ``SAMPLE_PAIRS`` rows
    whose hashed row code is least. The hash, not the order of reading, picks the rows, so the
    sample is the same whatever the chunks, the files' tallies or the order they merge in."""

    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    input_tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    output_tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def add(self, keys: np.ndarray, input_tokens: np.ndarray, output_tokens: np.ndarray) -> None:
        """Offer rows (their hashed codes and lengths); keep the least ``SAMPLE_PAIRS``."""
        keys = np.concatenate([self.keys, keys])
        inp = np.concatenate([self.input_tokens, np.asarray(input_tokens, np.int64)])
        out = np.concatenate([self.output_tokens, np.asarray(output_tokens, np.int64)])
        if len(keys) > SAMPLE_PAIRS:
            keep = np.argpartition(keys, SAMPLE_PAIRS - 1)[:SAMPLE_PAIRS]
            keys, inp, out = keys[keep], inp[keep], out[keep]
        order = np.argsort(keys, kind="stable")
        self.keys, self.input_tokens, self.output_tokens = keys[order], inp[order], out[order]

    def merge(self, other: LengthSample) -> None:
        self.add(other.keys, other.input_tokens, other.output_tokens)

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class PoolTally:
    """Everything the audit keeps of one pool's requests (see the module docstring).

    ``seconds``: key = second, columns (requests, first row code, -last row code); ``cells``:
    key = bucket x
    (len(edges) + 1) + input bin, columns (requests, input + output tokens).
    """

    bucket_s: int
    edges: tuple[int, ...]
    seconds: Counts = field(default_factory=lambda: Counts(1, 2))
    cells: Counts = field(default_factory=lambda: Counts(2))
    input_hist: IntHistogram = field(default_factory=IntHistogram)
    output_hist: IntHistogram = field(default_factory=IntHistogram)
    ttft_ms: IntHistogram = field(default_factory=lambda: IntHistogram(LATENCY_CAP_MS))
    e2e_ms: IntHistogram = field(default_factory=lambda: IntHistogram(LATENCY_CAP_MS))
    n_status: int = 0
    n_errors: int = 0
    replicas: dict[str, int] = field(default_factory=dict)
    lengths: LengthSample = field(default_factory=LengthSample)
    n: int = 0

    @property
    def n_bins(self) -> int:
        return len(self.edges) + 1

    def merge(self, other: PoolTally) -> None:
        """Add another tally of the same pool (same bucket and edges)."""
        self.seconds.merge(other.seconds)
        self.cells.merge(other.cells)
        for mine, theirs in ((self.input_hist, other.input_hist),
                             (self.output_hist, other.output_hist),
                             (self.ttft_ms, other.ttft_ms), (self.e2e_ms, other.e2e_ms)):
            mine.merge(theirs)
        self.n_status += other.n_status
        self.n_errors += other.n_errors
        self.lengths.merge(other.lengths)
        for r, c in other.replicas.items():
            self.replicas[r] = self.replicas.get(r, 0) + c
        self.n += other.n


@dataclass(frozen=True)
class TraceFile:
    """One file the tally read: its name, format, rows, time base and where its times lie
    (seconds, after placing a relative file: `offset_s` was added to its times)."""

    name: str
    format_name: str
    rows: int
    relative: bool = False
    offset_s: float = 0.0
    t_min_s: float = math.inf
    t_max_s: float = -math.inf


@dataclass
class Tally:
    """The per-pool tallies of one audit's traces, the files read and their warnings."""

    note: FleetNote
    bucket_s: int = 60
    edges: tuple[int, ...] = ROUTING_EDGES
    pools: list[PoolTally] = field(init=False)
    files: list[TraceFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    has_ttft: bool = False
    has_e2e: bool = False
    has_status: bool = False
    has_replicas: bool = False
    t_min: float = math.inf    # the first and the last arrival, seconds
    t_max: float = -math.inf

    def __post_init__(self):
        self._lut = None
        if (not isinstance(self.bucket_s, int) or isinstance(self.bucket_s, bool)
                or not 1 <= self.bucket_s <= MAX_BUCKET_S):
            raise InputError(f"bucket = {self.bucket_s!r} s: must be a whole number of "
                             f"seconds from 1 to {MAX_BUCKET_S:,} (366 days)")
        self.pools = [PoolTally(self.bucket_s, self.edges) for _ in self.note.pools]

    def add(self, chunk: Chunk, file_index: int = 0, offset_s: float = 0.0) -> None:
        """Add a chunk of requests read from file number `file_index`, its times moved by
        `offset_s` seconds (a relative file's placement).

        Every count is made for all pools at once: the pool is the last digit of each key
        (key x n_pools + pool), so a chunk costs a few passes whatever the number of pools."""
        n = len(chunk.t_s)
        if n == 0:
            return
        self.has_ttft |= chunk.ttft_s is not None
        self.has_e2e |= chunk.e2e_s is not None
        self.has_status |= chunk.ok is not None
        self.has_replicas |= chunk.replica is not None
        n_pools, nb = len(self.pools), len(self.edges) + 1
        pool = chunk.pool.astype(np.int64)
        t = chunk.t_s + offset_s if offset_s else chunk.t_s
        codes = row_code(file_index, chunk.lines)
        sec = t.astype(np.int64)   # times are >= 0: truncation is the floor
        # codes grow with the row, so a second's first and last rows are its least and
        # greatest codes: what a merge across chunks and files keeps
        self._split("seconds", *group(sec * n_pools + pool if n_pools > 1 else sec, [None],
                                      [codes], [codes]))
        cell = (sec // self.bucket_s) * nb + self._bins(chunk.input_tokens)
        if n_pools > 1:
            cell = cell * n_pools + pool
        self._split("cells", *group(cell, [None, chunk.input_tokens + chunk.output_tokens],
                                    max_sum=2 * MAX_TOKENS))
        for values, name in ((chunk.input_tokens, "input_hist"),
                             (chunk.output_tokens, "output_hist")):
            self._histogram(name, values, pool)
        for arr, name in ((chunk.ttft_s, "ttft_ms"), (chunk.e2e_s, "e2e_ms")):
            if arr is not None:
                given = np.isfinite(arr)
                ms = np.rint(arr[given] * 1000).astype(np.int64)
                self._histogram(name, ms, pool[given])
        per_pool = np.bincount(pool, minlength=n_pools)
        errors = (np.bincount(pool, weights=~chunk.ok, minlength=n_pools).astype(np.int64)
                  .tolist() if chunk.ok is not None else None)
        if chunk.replica is not None:
            k = len(chunk.replica.names)
            by_pool = np.bincount(pool * k + chunk.replica.codes,
                                  minlength=n_pools * k).reshape(n_pools, k).tolist()
        self.t_min = min(self.t_min, float(t.min()))
        self.t_max = max(self.t_max, float(t.max()))
        self._sample(codes, chunk, pool)
        for p, pt in enumerate(self.pools):
            if not per_pool[p]:
                continue
            pt.n += int(per_pool[p])
            if errors is not None:
                pt.n_status += int(per_pool[p])
                pt.n_errors += errors[p]
            if chunk.replica is not None:
                for name, c in zip(chunk.replica.names, by_pool[p], strict=True):
                    if c:
                        pt.replicas[name] = pt.replicas.get(name, 0) + c

    def _sample(self, codes: np.ndarray, chunk: Chunk, pool: np.ndarray) -> None:
        """Offer each pool's rows of a chunk to its length sample (only rows whose hash could
        enter it: below the sample's current largest key once it is full)."""
        keys = _mix(codes)
        for p, pt in enumerate(self.pools):
            mine = pool == p if len(self.pools) > 1 else slice(None)
            k = keys[mine]
            if len(pt.lengths) >= SAMPLE_PAIRS:
                low = k < pt.lengths.keys[-1]
                if not low.any():
                    continue
                pt.lengths.add(k[low], chunk.input_tokens[mine][low],
                               chunk.output_tokens[mine][low])
            elif len(k):
                pt.lengths.add(k, chunk.input_tokens[mine], chunk.output_tokens[mine])

    def _bins(self, input_tokens: np.ndarray) -> np.ndarray:
        """Each request's input-length bin (a lookup table up to the last edge)."""
        last = self.edges[-1]
        if last > 1 << 22:
            return np.searchsorted(np.asarray(self.edges), input_tokens, side="right")
        if self._lut is None:
            self._lut = np.searchsorted(np.asarray(self.edges), np.arange(last + 1),
                                        side="right").astype(np.int8)
        return self._lut[np.minimum(input_tokens, last)]

    def _split(self, name: str, keys: np.ndarray, values: np.ndarray) -> None:
        """Hand grouped keys (key x n_pools + pool) to each pool's counter."""
        n_pools = len(self.pools)
        if n_pools == 1:
            getattr(self.pools[0], name).add(keys, values)
            return
        owner = keys % n_pools
        for p, pt in enumerate(self.pools):
            mine = owner == p
            if mine.any():
                getattr(pt, name).add(keys[mine] // n_pools, values[mine])

    def _histogram(self, name: str, values: np.ndarray, pool: np.ndarray) -> None:
        """Add integer values to each pool's histogram (values at or above its cap share the
        top bin): one bincount of pool x (largest + 1) + value."""
        if len(values) == 0:
            return
        cap = getattr(self.pools[0], name).cap
        top = int(values.max())
        v = values if top < cap else np.minimum(values, cap)
        width = min(top, cap) + 1
        keys = pool * width + v if len(self.pools) > 1 else v
        counts = np.bincount(keys, minlength=len(self.pools) * width)
        for pt, row in zip(self.pools, counts.reshape(len(self.pools), width), strict=True):
            if row.any():
                getattr(pt, name).add_counts(row)

    def merge(self, other: Tally) -> None:
        """Add another tally of the same note, bucket and edges (its files follow ours)."""
        if (other.bucket_s, other.edges) != (self.bucket_s, self.edges):
            raise ValueError("tallies with different buckets or edges don't merge")
        for mine, theirs in zip(self.pools, other.pools, strict=True):
            mine.merge(theirs)
        self.files += other.files
        self.warnings += other.warnings
        self.has_ttft |= other.has_ttft
        self.has_e2e |= other.has_e2e
        self.has_status |= other.has_status
        self.has_replicas |= other.has_replicas
        self.t_min = min(self.t_min, other.t_min)
        self.t_max = max(self.t_max, other.t_max)

    def __getstate__(self):
        return {**self.__dict__, "_lut": None}   # the lookup table is remade when needed


    @property
    def n(self) -> int:
        return sum(p.n for p in self.pools)


@dataclass(frozen=True)
class FileJob:
    """One file to tally: its path, pool (or None), index in the audit's list, time base."""

    path: str
    pool: str | None
    index: int
    relative: bool


def tally_file(note: FleetNote, job: FileJob, bucket_s: int, edges: tuple[int, ...],
               offset_s: float = 0.0, on_progress: Callable[[int], None] | None = None,
               engine: str = "arrow") -> Tally:
    """Tally one file into a Tally of its own (its rows' codes carry `job.index`);
    `on_progress(rows)` is called after each chunk with the rows it held."""
    tally = Tally(note, bucket_s, edges)
    rows, lo, hi = 0, math.inf, -math.inf
    with TraceReader(job.path, note, job.pool, engine=engine) as reader:  # closed on an error
        for chunk in reader:
            tally.add(chunk, job.index, offset_s)
            rows += len(chunk.t_s)
            if len(chunk.t_s):
                lo = min(lo, float(chunk.t_s.min()) + offset_s)
                hi = max(hi, float(chunk.t_s.max()) + offset_s)
            if on_progress is not None:
                on_progress(len(chunk.t_s))
    tally.files.append(TraceFile(reader.source, reader.format_name, rows, reader.relative,
                                 offset_s, lo, hi))
    tally.warnings += reader.warnings
    return tally


def plan_files(note: FleetNote, files: Iterable[tuple[str | Path, str | None]]
               ) -> list[FileJob]:
    """Check the list of traces (no file twice) and read each one's header and first row for
    its time base: the jobs, in the order given."""
    jobs, seen = [], {}
    for i, (path, pool) in enumerate(files):
        path = Path(path)
        try:
            st = os.stat(path)
            ident = (st.st_dev, st.st_ino)
        except OSError:
            ident = None  # the reader says why it can't be read
        if ident is not None and ident in seen:
            raise InputError(f"trace {path} is given twice (also as {seen[ident]}): its "
                             "requests would be counted twice")
        if ident is not None:
            seen[ident] = path
        info = peek_trace(path, note, pool)
        jobs.append(FileJob(str(path), pool, i, info.relative))
    return jobs


def _when(t_s: float) -> str:
    return datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def tally_traces(note: FleetNote, files: Iterable[tuple[str | Path, str | None]],
                 bucket_s: int = 60, thresholds: Iterable[int] = (),
                 on_progress: Callable[[int], None] | None = None,
                 run: Callable | None = None, engine: str = "arrow") -> Tally:
    """Read each (file, pool or None) into one Tally.

    `thresholds` are extra routing edges (input tokens); `on_progress(rows)` is called with
    the rows read since the last call (the command line hangs a progress bar on it). Files
    with epoch times are read first; relative ones are then placed at their first arrival.
    `run(note, jobs, bucket_s, edges, offset_s)`, when given, tallies a list of jobs elsewhere
    (a cluster, see :mod:`.cluster`) and returns their tallies in order. `engine`: see
    :class:`~.trace.TraceReader`.
    """
    edges = routing_edges(thresholds)
    Tally(note, bucket_s, edges)  # checks the bucket before any reading
    jobs = plan_files(note, files)

    def tally_all(group_jobs: list[FileJob], offset_s: float) -> list[Tally]:
        if run is not None:
            return run(note, group_jobs, bucket_s, edges, offset_s) if group_jobs else []
        return [tally_file(note, j, bucket_s, edges, offset_s, on_progress, engine)
                for j in group_jobs]

    absolute = [j for j in jobs if not j.relative]
    relative = [j for j in jobs if j.relative]
    parts = dict(zip((j.index for j in absolute), tally_all(absolute, 0.0), strict=True))
    offset = 0.0
    if absolute and relative:
        starts = [p.t_min for p in parts.values() if math.isfinite(p.t_min)]
        offset = min(starts) if starts else 0.0
    parts.update(zip((j.index for j in relative), tally_all(relative, offset), strict=True))
    tally = Tally(note, bucket_s, edges)
    for i in sorted(parts):
        tally.merge(parts[i])
    if absolute and relative and offset:
        names = ", ".join(f.name for f in tally.files if f.relative)
        tally.warnings.append(
            f"time bases: the times of {names} count from the trace's start; they are placed "
            f"so that time 0 is the first arrival of the traces with epoch times, "
            f"{_when(offset)} (docs/audit.md: time bases)")
    if tally.n == 0:
        raise InputError("the traces hold no requests")
    return tally
