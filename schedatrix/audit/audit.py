"""The audit: a tally of the traces and a few knobs in, a frozen record of figures out.

Reading (slow, once) and auditing (fast, any number of times) are separate, so the lesson's
widgets re-run :func:`run_audit` on one :class:`~.tally.Tally` without reading again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..fleet.constants import CONVERGENCE_FLOOR, HOUR_WINDOW_ERROR, UNMET_CAP
from ..traces.convert import MAX_TOKENS
from .capacity import CAPACITY_MODES, derive_capacity, drift_profile
from .needs import PoolSizing, size_pool
from .note import MAX_REPLICA_RPS, MIN_REPLICA_RPS, FleetNote, PoolConfig
from .routing import DEFAULT_ROUTE_BELOW, RoutingWhatIf, route
from .sparse import group
from .tally import LengthSample, Tally, row_of, tally_traces
from .window import DEFAULT_GAP_S, Window, make_window

__all__ = ["Settings", "Percentiles", "LatencyCheck", "ReplicaRate", "PoolAudit", "Audit",
           "run_audit", "audit_files", "DEFAULT_ROUTE_BELOW"]


@dataclass(frozen=True)
class Settings:
    """The audit's knobs. `replica_rps` overrides the note's per-replica capacity by pool id;
    `route_below` is the routing what-if's input-token threshold (None: no what-if);
    `route_from` / `route_to` default to the large and the small pool; `gap_s`: an empty
    stretch longer than this many seconds (and than a bucket) is a gap, left out of the
    window (:mod:`.window`); `capacity`: how a capacity the note left blank is filled,
    "simulate" (ask the serving simulator where it can answer, :mod:`.capacity`) or
    "assume" (the form's first-pass figure); `drift`: a simulated capacity keeps the pool's
    per-bucket rate swings (:func:`~.capacity.drift_profile`), or asks for one steady rate."""

    headroom: float = 0.10
    delay_buckets: int = 1
    replica_rps: dict[str, float] = field(default_factory=dict)
    route_below: int | None = DEFAULT_ROUTE_BELOW
    route_from: str | None = None
    route_to: str | None = None
    gap_s: int = DEFAULT_GAP_S
    capacity: str = "simulate"
    drift: bool = True

    def __post_init__(self):
        if not isinstance(self.drift, bool):
            raise InputError(f"drift = {self.drift!r}: must be true or false")
        if self.capacity not in CAPACITY_MODES:
            raise InputError(f"capacity = {self.capacity!r}: must be one of "
                             f"{', '.join(CAPACITY_MODES)}")
        if not (_is_number(self.headroom) and 0 <= self.headroom <= 10):
            raise InputError(f"headroom = {self.headroom!r}: must be a share from 0 to 10 "
                             "(0.10 = 10%)")
        if not _is_int(self.delay_buckets) or self.delay_buckets < 0:
            raise InputError(f"reaction delay = {self.delay_buckets!r} buckets: must be a "
                             "whole number >= 0")
        for pool, rps in self.replica_rps.items():
            if not (_is_number(rps) and MIN_REPLICA_RPS <= rps <= MAX_REPLICA_RPS):
                raise InputError(f"per-replica capacity for {pool} = {rps!r}: must be "
                                 f"requests/s from {MIN_REPLICA_RPS:g} to {MAX_REPLICA_RPS:,}")
        if self.route_below is not None and (not _is_int(self.route_below)
                                             or not 1 <= self.route_below <= MAX_TOKENS):
            raise InputError(f"routing threshold = {self.route_below!r}: must be a whole "
                             f"number of input tokens from 1 to {MAX_TOKENS:,}")
        if not _is_int(self.gap_s) or self.gap_s < 1:
            raise InputError(f"gap = {self.gap_s!r} s: must be a whole number of seconds >= 1")


def _is_int(x) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


def _is_number(x) -> bool:
    return (isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool)
            and math.isfinite(x))


@dataclass(frozen=True)
class Percentiles:
    """p50 / p90 / p95 / p99 of one quantity (nearest-rank, exact)."""

    p50: float
    p90: float
    p95: float
    p99: float


@dataclass(frozen=True)
class LatencyCheck:
    """A latency's percentiles (seconds) and, when the note states one, its objective."""

    metric: str
    p50_s: float
    p95_s: float
    p99_s: float
    objective: str | None = None
    measured_s: float | None = None
    met: bool | None = None


@dataclass(frozen=True)
class ReplicaRate:
    """One replica's request rate over the window, and its ratio to the pool's mean rate."""

    replica: str
    rps: float
    vs_mean: float


@dataclass(frozen=True)
class PoolAudit:
    """Every figure of one pool (see docs/audit.md for each one's definition)."""

    config: PoolConfig
    replica_rps: float
    replica_rps_assumed: bool
    replica_rps_source: str     # "note", "given" (a setting), "simulated" or "assumed"
    replica_rps_basis: str      # how it was found, in a sentence
    n_requests: int
    requests: np.ndarray
    tokens: np.ndarray
    mean_rps: float
    peak_rps: float
    mean_tok_s: float
    input_tokens: Percentiles
    output_tokens: Percentiles
    peak_to_average: float
    peak_to_average_1s: float
    dispersion_1s: float
    sizing: PoolSizing
    price_per_gpu_hour: float | None
    latency: tuple[LatencyCheck, ...]
    error_share: float | None
    unchecked_objectives: tuple[str, ...]
    replica_rates: tuple[ReplicaRate, ...]
    #: the pool's (input, output) length sample, for the placement's simulations
    lengths: LengthSample | None = None
    #: the pool's per-bucket rate profile its simulations keep (empty: one steady rate)
    rate_profile: tuple = ()

    def dollars(self, gpu_hours: float) -> float | None:
        """GPU-hours in dollars, when the note gives a price."""
        p = self.price_per_gpu_hour
        return None if p is None else gpu_hours * p

    def mtok_per_dollar(self, policy: str = "configured") -> float | None:
        """Million tokens served per dollar: served tokens / dollars / 1e6 (None unpriced)."""
        run = self.sizing.configured if policy == "configured" else self.sizing.policies[policy]
        d = self.dollars(run.gpu_hours)
        return None if not d else run.served_tokens / d / 1e6


@dataclass(frozen=True)
class Audit:
    """The whole audit: the window, each pool's figures, the routing what-if, the notes."""

    note: FleetNote
    settings: Settings
    bucket_s: int
    bucket_start_s: np.ndarray
    duration_s: np.ndarray
    t_start_s: float
    t_end_s: float
    files: tuple[tuple[str, str, int], ...]
    pools: tuple[PoolAudit, ...]
    routing: RoutingWhatIf | None
    notes: tuple[str, ...]
    window: Window | None = None
    warnings: tuple[str, ...] = ()

    @property
    def window_s(self) -> float:
        return float(self.duration_s.sum())

    @property
    def gpu_hours(self) -> float:
        """GPU-hours the configured fleet provisions over the window."""
        return sum(p.sizing.configured.gpu_hours for p in self.pools)

    @property
    def ideal_gpu_hours(self) -> float:
        return sum(p.sizing.ideal.gpu_hours for p in self.pools)

    @property
    def idle_gpu_hours(self) -> float:
        return sum(p.sizing.configured.idle_gpu_hours for p in self.pools)

    @property
    def convergence(self) -> float:
        """Ideal fleet GPU-hours / configured fleet GPU-hours (= ideal bill / real bill)."""
        return self.ideal_gpu_hours / self.gpu_hours if self.gpu_hours else 1.0

    @property
    def unmet_share(self) -> float:
        n = sum(p.n_requests for p in self.pools)
        served = sum(p.sizing.configured.served_share * p.n_requests for p in self.pools)
        return 1 - served / n if n else 0.0

    @property
    def capacity_ok(self) -> bool:
        return self.unmet_share <= UNMET_CAP and all(
            p.sizing.configured.capacity_ok for p in self.pools)

    @property
    def convergence_ok(self) -> bool:
        return self.convergence >= CONVERGENCE_FLOOR

    def pool(self, pool_id: str) -> PoolAudit:
        for p in self.pools:
            if p.config.pool_id == pool_id:
                return p
        raise KeyError(pool_id)


def _percentiles(hist) -> Percentiles:
    return Percentiles(*(hist.percentile(q) for q in (50, 90, 95, 99)))


def _when(t_s: float) -> str:
    """Epoch times as UTC, trace-relative ones as seconds."""
    if t_s >= 1e8:
        return datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"t = {t_s:,.0f} s"


def _duration(seconds: float) -> str:
    if seconds >= 2 * 86_400:
        return f"{seconds / 86_400:,.1f} days"
    return f"{seconds / 3600:,.1f} h" if seconds >= 3600 else f"{seconds:,.0f} s"


def _gap_notes(tally: Tally, window: Window, gap_s: int) -> list[str]:
    """Say what the window leaves out: the longest gaps, with the rows on either side."""
    if not window.gaps:
        return []

    def row(code: int) -> str:
        f, line = row_of(code)
        return f"{tally.files[f].name} line {line}" if f < len(tally.files) else f"line {line}"

    gaps = sorted(window.gaps, key=lambda g: (-g.seconds, g.before_s))
    shown = [f"from {_when(g.before_s)} ({row(g.before_code)}) to {_when(g.after_s)} "
             f"({row(g.after_code)}), {_duration(g.seconds)}" for g in gaps[:3]]
    head = ("The traces have a gap with no request in any pool" if len(gaps) == 1 else
            f"The traces have {len(gaps)} gaps with no request in any pool; the longest")
    return [f"{head}: " + "; ".join(shown) + f". The window leaves "
            f"{'it' if len(gaps) == 1 else 'them'} out (a gap is an empty stretch longer "
            f"than {max(gap_s, window.bucket_s):,} s; --gap), so the audit covers "
            f"{_duration(window.seconds)} of a {_duration(window.span_s)} span: check the "
            "traces' times."]


def _replica_rates(pt, mean_rps: float, window_s: float) -> tuple[tuple, bool]:
    """Each replica's rate, labelled by its id when every id is a whole number, else #1, #2,
    ... in the sorted order of the ids (an id that is not a number is never copied out)."""
    if not pt.replicas:
        return (), False
    ids = sorted(pt.replicas)
    numeric = all(r.isdigit() and len(r) <= 18 for r in ids)
    if numeric:
        ids = sorted(ids, key=int)
    mean_rep = mean_rps / len(ids)
    rates = tuple(ReplicaRate(r if numeric else f"#{k}", pt.replicas[r] / window_s,
                              (pt.replicas[r] / window_s) / mean_rep)
                  for k, r in enumerate(ids, start=1))
    return rates, not numeric


def _seconds(tally: Tally) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seconds that hold an arrival in any pool (sorted), and the first and the last row
    of each (row codes)."""
    items = [p.seconds.items() for p in tally.pools]
    keys = np.concatenate([k for k, _ in items])
    uniq, rows = group(keys, [], [np.concatenate([v[:, 1] for _, v in items]),
                                  np.concatenate([v[:, 2] for _, v in items])])
    return uniq, rows[:, 0], -rows[:, 1]


def _per_piece(pt, window: Window, nb: int, below: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """A pool's requests and tokens per piece of the window (of the input bins below `below`
    only, when given: the requests the routing what-if moves)."""
    keys, vals = pt.cells.items()
    if below is not None:
        short = keys % nb < below
        keys, vals = keys[short], vals[short]
    piece = window.piece_of(keys // nb)
    n = len(window.duration_s)
    return (np.bincount(piece, weights=vals[:, 0], minlength=n),
            np.bincount(piece, weights=vals[:, 1], minlength=n))


def run_audit(tally: Tally, settings: Settings | None = None) -> Audit:
    """Audit a tally with the given knobs (pure: reads nothing, prints nothing)."""
    settings = settings or Settings()
    note, bucket_s = tally.note, tally.bucket_s
    for pool_id in settings.replica_rps:
        try:
            note.pool(pool_id)
        except KeyError:
            raise InputError(f"per-replica capacity given for pool {pool_id!r}; pools: "
                             f"{', '.join(p.pool_id for p in note.pools)}") from None
    if tally.n == 0:
        raise InputError("the traces hold no requests")
    seconds, first_rows, last_rows = _seconds(tally)
    window = make_window(seconds, first_rows, last_rows, bucket_s, settings.gap_s,
                         settings.delay_buckets)
    duration = window.duration_s
    window_s = float(window.seconds)
    notes: list[str] = list(tally.warnings) + _gap_notes(tally, window, settings.gap_s)
    if note.beyond_first_pass:
        notes.append("Beyond the standard first pass (" + "; ".join(note.beyond_first_pass)
                     + "): the audit ran for every pool, but a targeted audit should review "
                     "this configuration.")
    below = None
    if settings.route_below is not None:
        if settings.route_below not in tally.edges:
            raise InputError(
                f"routing threshold = {settings.route_below} input tokens: the tally can split "
                f"at {', '.join(map(str, tally.edges))} (give it before reading)")
        below = tally.edges.index(settings.route_below) + 1  # bins 0..below-1: input < it
    nb = len(tally.edges) + 1

    pools, raw, relabelled = [], {}, False
    for cfg, pt in zip(note.pools, tally.pools, strict=True):
        requests, tokens = _per_piece(pt, window, nb)
        profile = drift_profile(pt, bucket_s, tally.t_min, tally.t_max) if settings.drift \
            else ()
        rps, source, basis = _capacity(note, cfg, pt, settings, profile)
        assumed = source == "assumed"
        if assumed:
            notes.append(f"Per-replica capacity of pool {cfg.pool_id} was left blank: the "
                         f"audit assumed the first-pass {rps:g} requests/s per replica "
                         f"({cfg.role or 'unknown'}-model pool), as "
                         f"{basis.split(': ', 1)[-1]}; refine it with the owner.")
        elif source == "simulated":
            notes.append(f"Per-replica capacity of pool {cfg.pool_id} was left blank: the "
                         f"serving simulator found {rps:.3g} requests/s per replica "
                         f"({basis.split(': ', 1)[-1]}); check it against the pool's own "
                         "measurements.")
        sizing = size_pool(cfg, requests, tokens, duration, settings.headroom,
                           settings.delay_buckets, rps, window.delayed)
        per_s = pt.seconds.items()[1][:, 0]
        rate = sizing.rate_rps
        mean_rps = pt.n / window_s
        n_sq = int(np.dot(per_s, per_s)) if len(per_s) else 0
        w = int(window.seconds)
        latency, unchecked = [], []
        for metric, hist, has in (("ttft", pt.ttft_ms, tally.has_ttft),
                                  ("e2e", pt.e2e_ms, tally.has_e2e)):
            objs = [o for o in cfg.objectives if o.metric == metric]
            if not has or hist.n == 0:
                unchecked += [f"{o.text} (the trace has no {metric.upper()} column)"
                              for o in objs]
                continue
            p50, p95, p99 = (hist.percentile(q) / 1000 for q in (50, 95, 99))
            if not objs:
                latency.append(LatencyCheck(metric, p50, p95, p99))
            for o in objs:
                measured = hist.percentile(o.percentile) / 1000
                latency.append(LatencyCheck(metric, p50, p95, p99, o.text, measured,
                                            o.met(measured)))
        error_share = pt.n_errors / pt.n_status if pt.n_status else None
        for o in cfg.objectives:
            if o.metric == "error_rate" and error_share is None:
                unchecked.append(f"{o.text} (the trace has no status column)")
        reps, renamed = _replica_rates(pt, mean_rps, window_s)
        relabelled |= renamed
        pools.append(PoolAudit(
            config=cfg, replica_rps=rps, replica_rps_assumed=assumed,
            replica_rps_source=source, replica_rps_basis=basis, n_requests=pt.n,
            requests=requests, tokens=tokens, mean_rps=mean_rps,
            peak_rps=float(rate.max()) if len(rate) else 0.0,
            mean_tok_s=float(tokens.sum() / window_s),
            input_tokens=_percentiles(pt.input_hist), output_tokens=_percentiles(pt.output_hist),
            peak_to_average=float(rate.max() / mean_rps) if mean_rps else 0.0,
            # per-second counts over the window's seconds (zeros included): the peak over
            # the mean, and the variance over the mean, (W sum c^2 - N^2) / (W N), exactly
            peak_to_average_1s=float(int(per_s.max()) * w / pt.n) if pt.n else 0.0,
            dispersion_1s=float((w * n_sq - pt.n ** 2) / (w * pt.n)) if pt.n else 0.0,
            sizing=sizing, price_per_gpu_hour=note.price_per_gpu_hour,
            latency=tuple(latency), error_share=error_share, unchecked_objectives=tuple(unchecked),
            replica_rates=reps, lengths=pt.lengths, rate_profile=profile,
        ))
        raw[cfg.pool_id] = (requests, tokens)

    if any(p.replica_rates for p in pools):
        hours = window_s / 3600
        notes.append(
            f"Per-replica rates are read over a {hours:.2g}-hour window: a one-hour trace reads "
            f"a replica up to {HOUR_WINDOW_ERROR:.0%} off (over this window, up to "
            f"{HOUR_WINDOW_ERROR / math.sqrt(max(hours, 1e-9)):.0%}), so no eviction call is "
            "safe from this trace alone.")
    if relabelled:
        notes.append("Replica ids that are not all whole numbers are not copied out of the "
                     "trace: replicas are numbered #1, #2, ... in the sorted order of their ids.")

    what_if = None
    if settings.route_below is not None:
        src = _route_pool(note, settings.route_from, "large", "route_from")
        dst = _route_pool(note, settings.route_to, "small", "route_to")
        if src is None or dst is None or src is dst:
            notes.append("No routing what-if: the note has no single large-model and small-model "
                         "pool (name them with --route-from and --route-to).")
        else:
            by_id = {p.config.pool_id: p for p in pools}
            sr, st = raw[src.pool_id]
            dr, dt = raw[dst.pool_id]
            moved, moved_tok = _per_piece(tally.pools[note.pools.index(src)], window, nb, below)
            what_if = route(
                settings.route_below, source=src, source_requests=sr, source_tokens=st,
                moved_requests=moved, moved_tokens=moved_tok,
                source_before=by_id[src.pool_id].sizing, target=dst,
                target_requests=dr, target_tokens=dt, target_before=by_id[dst.pool_id].sizing,
                duration_s=duration, headroom=settings.headroom,
                delay_buckets=settings.delay_buckets,
                replica_rps={p.config.pool_id: p.replica_rps for p in pools},
                delayed=window.delayed)
    files = tuple((f.name, f.format_name, f.rows) for f in tally.files)
    warnings = tuple(tally.warnings) + tuple(_gap_notes(tally, window, settings.gap_s))
    return Audit(note=note, settings=settings, bucket_s=bucket_s, bucket_start_s=window.start_s,
                 duration_s=duration, t_start_s=tally.t_min, t_end_s=tally.t_max,
                 files=files, pools=tuple(pools), routing=what_if,
                 notes=tuple(notes), window=window, warnings=warnings)


def _capacity(note: FleetNote, cfg: PoolConfig, pt, settings: Settings, profile: tuple = ()
              ) -> tuple[float, str, str]:
    """(requests/s per replica, its source, how it was found) for one pool."""
    override = settings.replica_rps.get(cfg.pool_id)
    if override is not None:
        return float(override), "given", "given in the audit's settings"
    if not cfg.replica_rps_assumed:
        return cfg.replica_rps, "note", "from the note"
    if settings.capacity == "simulate":
        answer = derive_capacity(note, cfg, pt.lengths, profile=profile)
        if answer.rps is not None:
            return answer.rps, "simulated", answer.basis
        return cfg.replica_rps, "assumed", answer.basis
    return cfg.replica_rps, "assumed", "assumed (first pass): the audit was told to assume"


def _route_pool(note: FleetNote, name: str | None, role: str, flag: str) -> PoolConfig | None:
    if name is None:
        return note.pool_by_role(role)
    try:
        return note.pool(name)
    except KeyError:
        raise InputError(f"{flag} = {name!r}: no such pool; pools: "
                         f"{', '.join(p.pool_id for p in note.pools)}") from None


def audit_files(note: FleetNote, files: Iterable[tuple[str | Path, str | None]],
                settings: Settings | None = None, bucket_s: int = 60,
                on_progress: Callable[[int], None] | None = None,
                run: Callable | None = None, engine: str = "arrow") -> Audit:
    """Read the traces (each a (path, pool or None) pair) and audit them in one call
    (`on_progress`, `run` and `engine`: see :func:`~.tally.tally_traces`)."""
    settings = settings or Settings()
    extra = [settings.route_below] if settings.route_below is not None else []
    tally = tally_traces(note, files, bucket_s, extra, on_progress, run, engine)
    return run_audit(tally, settings)
