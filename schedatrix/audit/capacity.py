"""Per-replica capacity the note left blank, asked of the serving simulator.

When a pool's ``replica_capacity`` is blank, its model and the fleet's GPU are in the
simulator's catalog (:mod:`schedatrix.serving.perf.catalog`), the pool states a latency objective
("TTFT p99 < 1 s", "E2E p95 < 8 s") and the trace gave the pool some requests, the audit asks
:func:`schedatrix.serving.studies.capacity.replica_capacity` for the highest request rate one
replica (the pool's GPUs per replica, tensor parallel) sustains within every latency objective, on
Poisson arrivals whose (input, output) lengths are drawn in pairs from the pool's sample
(:class:`~.tally.LengthSample`). Otherwise it keeps the form's first-pass assumption and says
why. Either way the report says which capacities were simulated and which assumed.

The arrivals keep the pool's drift (the audit's ``drift``, on by default): the rate of each whole
time bucket of the trace over the pool's mean (:func:`drift_profile`) multiplies the rate tried in
that bucket, so a capacity is the mean rate at which the pool's own swings, scaled, still meet
the objective; ``drift=False`` (``schedatrix audit --no-drift``) asks for one steady rate, as
before, for comparison. A trace shorter than two whole buckets has no profile to keep; one longer
than :data:`MAX_PROFILE_BUCKETS` buckets keeps its busiest stretch of that many.

The simulations take seconds, and the lesson's widgets re-run the audit at every knob turn, so
answers are remembered by (model, GPU, GPUs per replica, objectives, the sample's bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InputError
from .note import FleetNote, PoolConfig
from .tally import LengthSample

__all__ = ["CapacityAnswer", "derive_capacity", "drift_profile", "CAPACITY_MODES",
           "SIMULATED_REQUESTS"]

#: How the audit fills a blank per-replica capacity: ask the simulator, or assume.
CAPACITY_MODES = ("simulate", "assume")
#: Requests each simulated rate serves (the search's noise falls as this grows).
SIMULATED_REQUESTS = 2000


@dataclass(frozen=True)
class CapacityAnswer:
    """rps : the capacity to use (None: keep the first-pass assumption)
    source : "simulated" or "assumed"; basis : one sentence saying how it was found or why not
    tried : (rate, objective figure in seconds, met) for every rate the search ran"""

    rps: float | None
    source: str
    basis: str
    tried: tuple = ()


#: At most this many buckets of the pool's profile are simulated: a longer trace keeps its
#: busiest stretch of this many whole buckets (an hour of minutes), the one that sets capacity.
MAX_PROFILE_BUCKETS = 60


def drift_profile(pool, bucket_s: int, t_min: float, t_max: float) -> tuple:
    """The pool's per-bucket rate profile: ``(start_s, end_s, multiplier)`` for each whole time
    bucket inside [t_min, t_max] (from the tally's requests per bucket, ``pool.cells``), the
    first bucket starting at 0 s, multipliers of mean 1. A trace of more than
    :data:`MAX_PROFILE_BUCKETS` whole buckets keeps its busiest stretch of that many (found on
    the buckets that hold requests, so a span of years costs no more than its requests).
    Empty when fewer than two whole buckets hold the trace or the pool has no request in
    them."""
    if not (math.isfinite(t_min) and math.isfinite(t_max)):
        return ()
    first, last = math.ceil(t_min / bucket_s), math.floor(t_max / bucket_s)   # [first, last)
    if last - first < 2:
        return ()
    keys, values = pool.cells.items()
    bucket = keys // pool.n_bins
    inside = (bucket >= first) & (bucket < last)
    held, at = np.unique(bucket[inside], return_inverse=True)
    counts = np.bincount(at, weights=values[inside, 0], minlength=len(held))
    if not len(held) or counts.sum() <= 0:
        return ()
    size = min(last - first, MAX_PROFILE_BUCKETS)
    if last - first > size:     # the busiest stretch of `size` buckets, starting at a held one
        starts = np.minimum(held, last - size)
        cum = np.concatenate([[0.0], np.cumsum(counts)])
        totals = cum[np.searchsorted(held, starts + size)] - cum[np.searchsorted(held, starts)]
        first = int(starts[int(np.argmax(totals))])
    dense = np.zeros(size)
    keep = (held >= first) & (held < first + size)
    dense[held[keep] - first] = counts[keep]
    mean = dense.mean()
    if mean <= 0:
        return ()
    return tuple((float(k * bucket_s), float((k + 1) * bucket_s), float(c / mean))
                 for k, c in enumerate(dense))


def derive_capacity(note: FleetNote, cfg: PoolConfig, sample: LengthSample,
                    gpus_per_replica: int | None = None, profile: tuple = ()) -> CapacityAnswer:
    """The simulator's answer for one pool with a blank capacity (see the module docstring),
    for replicas of ``gpus_per_replica`` GPUs (default: the pool's), on arrivals that follow
    ``profile`` (:func:`drift_profile`; empty: one steady rate)."""
    from ..serving.studies.capacity import catalog_gpu, catalog_model

    if len(cfg.models) != 1:
        return _assumed(f"the pool serves {len(cfg.models)} models")
    model = catalog_model(cfg.models[0])
    if model is None:
        return _assumed(f"the simulator's catalog has no model {cfg.models[0]!r}")
    gpu = catalog_gpu(note.gpu_type)
    if gpu is None:
        return _assumed(f"the simulator's catalog has no GPU {note.gpu_type!r}")
    objectives = tuple((o.metric, o.percentile, o.limit, o.inclusive, o.text)
                       for o in cfg.objectives if o.metric in ("ttft", "e2e"))
    if not objectives:
        return _assumed("the note states no TTFT or E2E objective to hold a replica to")
    if len(sample) == 0:
        return _assumed("the traces hold no requests of this pool")
    inp = np.ascontiguousarray(sample.input_tokens, np.int64)
    out = np.ascontiguousarray(sample.output_tokens, np.int64)
    return _simulated(model, gpu, gpus_per_replica or cfg.gpus_per_replica, objectives,
                      inp.tobytes(), out.tobytes(), tuple(profile))


def _bucket_words(profile: tuple) -> str:
    seconds = profile[0][1] - profile[0][0]
    return "minute" if seconds == 60 else "hour" if seconds == 3600 else f"{seconds:g} s"


def _assumed(why: str) -> CapacityAnswer:
    return CapacityAnswer(None, "assumed", f"assumed (first pass): {why}")


@lru_cache(maxsize=64)
def _simulated(model: str, gpu: str, tp: int, objectives: tuple, inp_bytes: bytes,
               out_bytes: bytes, profile: tuple = ()) -> CapacityAnswer:
    from ..serving.load.arrivals import Burst
    from ..serving.studies.capacity import replica_capacity

    inp = np.frombuffer(inp_bytes, np.int64)
    out = np.maximum(np.frombuffer(out_bytes, np.int64), 1)   # a request yields >= 1 token
    inp = np.maximum(inp, 1)
    best, tried, binding = None, [], None
    for metric, pct, limit, inclusive, text in objectives:
        try:
            cap = replica_capacity(model, gpu, tp, inp, out, metric, pct, limit, inclusive,
                                   requests=SIMULATED_REQUESTS,
                                   bursts=tuple(Burst(*b) for b in profile))
        except InputError as err:
            return _assumed(f"one replica of {model} on {tp} x {gpu} can't be built: {err}")
        tried += cap.tried
        if best is None or cap.rate_rps < best:
            best, binding = cap.rate_rps, text
    where = (f"one replica of {model} on {tp} x {gpu}, serving {len(inp):,} of the pool's "
             "(input, output) pairs" + (f" at its own per-{_bucket_words(profile)} rate swings"
                                        if profile else " at one steady rate"))
    if not best:
        return CapacityAnswer(None, "assumed", f"assumed (first pass): the simulator's {where} "
                              f"misses {binding} even at the lowest rate tried", tuple(tried))
    return CapacityAnswer(best, "simulated", f"simulated: {where}, within {binding}",
                          tuple(tried))
