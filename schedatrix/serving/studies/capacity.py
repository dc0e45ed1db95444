"""What a design can carry: the highest request rate at which it still meets its objective.

One search, :func:`highest_rate`, serves the load at a rate, judges the run, doubles the rate
until it fails (or halves it until it passes), then halves the bracket between a rate that
passes and one that does not until they are within ``rel_tol`` of each other. Each rate is
judged on the same seed, so the answer is reproducible; the figures worsen with the rate, so
the bracket is sound up to the noise of one run. Every rate is judged at steady state
(:mod:`.steady`: at least ``requests`` requests, lengthened until the arrivals span 20 mean
times in system, a warm-up and the drain cut from the judged requests). Two judges:

- :func:`goodput_capacity`: DistServe's goodput, the highest rate at which ``attainment`` of
  the arrived requests meet every SLO (TTFT and TPOT; rejected and failed requests miss), and
  that rate per GPU (``schedatrix serving capacity``, and a column of ``serving compare``);
- :func:`replica_capacity`: a percentile objective ("TTFT p99 < 1 s") on one replica and a
  pool's own length mix, which the audit asks when a fleet note leaves capacity blank.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design
from ..figures.record import COMPLETED
from ..load.lengths import PairedLengths
from ..load.scale import at_rate, mean_rate
from ..load.workload import Load
from ..perf.catalog import MODELS
from .steady import MIN_REQUESTS, check_requests, steady_run

__all__ = ["Capacity", "Goodput", "highest_rate", "goodput_capacity", "replica_capacity",
           "catalog_model", "catalog_gpu", "DEFAULT_ATTAINMENT", "MIN_REQUESTS"]

#: DistServe's usual target: 90% of requests within every SLO.
DEFAULT_ATTAINMENT = 0.9


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", " ", text.lower()).strip()


def catalog_model(name: str) -> str | None:
    """The catalog's model for a name as people write it ("Llama 3.1 70B",
    "meta-llama/Llama-3.1-8B-Instruct", "Mixtral 8x7B", "Qwen/Qwen3-30B-A3B"), or None: the
    parts of the catalog's name in order, its first two joined or apart."""
    words = _words(name).replace("meta llama", "llama")
    for key in MODELS:
        first, second, *rest = key.split("-")        # llama, 3.1, [70b]; mixtral, 8x7b
        pattern = rf"\b{first}\s*{re.escape(second)}\b" + "".join(
            rf".*\b{re.escape(part)}\b" for part in rest)
        if re.search(pattern, words):
            return key
    return None


def catalog_gpu(name: str) -> str | None:
    """The catalog's GPU for a name as people write it ("NVIDIA A100 80GB", "H100 SXM")."""
    words = _words(name)
    for pattern, key in ((r"\ba100\b", "a100-80gb"), (r"\bh100\b", "h100-80gb"),
                         (r"\bh200\b", "h200"), (r"\bl4\b", "l4")):
        if re.search(pattern, words):
            if key == "a100-80gb" and re.search(r"\b40\s*gb\b", words):
                return None                              # the 40 GB A100 isn't in the catalog
            return key
    return None


@dataclass(frozen=True)
class Capacity:
    """rate_rps : the highest rate found within the objective (0 if even the lowest fails)
    design : the replica simulated; figure : the objective's figure at that rate (seconds)
    tried : (rate, figure, met) for every rate the search ran"""

    rate_rps: float
    design: Design
    figure: float
    tried: tuple


def _objective_value(run, metric: str, percentile: float, judged=None) -> float:
    arr = run.arrival_s
    done = run.status == COMPLETED
    if judged is not None:
        run = _Judged(run, judged)
        arr, done = run.arrival_s, done[judged]
    if not done.any():
        return math.inf
    if metric == "ttft":
        values = (run.first_token_s - arr)[done]
    elif metric == "e2e":
        values = (run.done_s - arr)[done]
    else:
        raise InputError(f"objective metric must be ttft or e2e, got {metric!r}")
    failed = int((~done).sum())       # rejected requests count as missing the objective
    if failed:
        values = np.concatenate([values, np.full(failed, np.inf)])
    q = float(np.percentile(np.where(np.isfinite(values), values, 1e300), percentile))
    return math.inf if q >= 1e299 else q


def highest_rate(judge, high_rps: float = 200.0, rel_tol: float = 0.03,
                 low_rps: float = 1e-3) -> tuple[float, float, tuple]:
    """The highest rate (requests per second) ``judge(rate) -> (passes, figure)`` passes:
    ``(rate, its figure, every (rate, figure, passes) tried)``; 0 when even ``low_rps`` fails,
    ``high_rps`` (or above) when nothing up to it fails."""
    tried = []

    def run(rate):
        ok, value = judge(rate)
        tried.append((rate, value, ok))
        return ok, value

    low, low_value = 0.0, math.nan
    rate = 1.0
    ok, value = run(rate)
    while ok and rate < high_rps:            # grow until a rate fails
        low, low_value = rate, value
        rate *= 2
        ok, value = run(rate)
    if ok:
        return rate, value, tuple(tried)
    high = rate
    if low == 0.0:                           # even 1 request/s fails: look below it
        rate = 1.0
        while not ok and rate > low_rps:
            high = rate
            rate /= 4
            ok, value = run(rate)
        if not ok:
            return 0.0, value, tuple(tried)
        low, low_value = rate, value
    while (high - low) / high > rel_tol:
        mid = math.sqrt(low * high)
        ok, value = run(mid)
        if ok:
            low, low_value = mid, value
        else:
            high = mid
    return low, low_value, tuple(tried)


class _Judged:
    """The judged requests' columns of a run (what ``_objective_value`` reads)."""

    def __init__(self, run, judged):
        self.arrival_s = run.arrival_s[judged]
        self.first_token_s = run.first_token_s[judged]
        self.done_s = run.done_s[judged]


@dataclass(frozen=True)
class Goodput:
    """DistServe's goodput of a design on a load.

    max_rate_rps : the highest rate at which ``attainment`` of the requests meet every SLO
    rate_per_gpu : that rate over the design's GPUs
    attained : the share that met every SLO at that rate
    tried : (rate, share attained, passed) for every rate the search ran
    drift : whether the load's drift (bursts, a fitted profile, a trace) was kept
    requests : the requests served at the rate found (the steady-state length)"""

    max_rate_rps: float
    rate_per_gpu: float
    attainment: float
    attained: float
    design: Design
    tried: tuple
    drift: bool = True
    requests: int = 0


def goodput_capacity(design: Design, load: Load, attainment: float = DEFAULT_ATTAINMENT,
                     requests: int = 2000, seed: int = 0, rel_tol: float = 0.03,
                     high_rps: float = 1000.0, drift: bool = True) -> Goodput:
    """DistServe's goodput: the highest mean request rate at which at least ``attainment`` of
    the judged requests meet every SLO of their class (``load``'s classes carry the
    thresholds), each rate at steady state (:mod:`.steady`, from ``requests`` up). The load is
    scaled to each rate with its lengths and burstiness kept and, with ``drift``, its drift
    too (:func:`..load.scale.at_rate`: a trace time-compressed, a fitted profile's rate
    raised); ``drift=False`` drops it. Raises InputError when no class has an SLO, the load is
    a closed loop or tenants (no one rate to raise) or ``requests`` is too few."""
    if not 0 < attainment <= 1 or isinstance(attainment, bool):
        raise InputError(f"attainment: {attainment!r}; must be a share above 0 and at most 1 "
                         "(0.9: 90% of requests within every SLO)")
    if load.closed_loop is not None or load.tenants or (load.rate_rps is None
                                                        and load.trace is None):
        raise InputError("goodput: the load must be one open-loop stream at a rate, or a "
                         "trace (a closed loop or tenants of their own have no one rate to "
                         "raise); give --rate and lengths, or --trace")
    requests = check_requests(requests)
    mean_rate(load)
    if not any(c.ttft_s is not None or c.tpot_s is not None for c in load.classes):
        raise InputError("goodput: no SLO to meet; give --slo-ttft and/or --slo-tpot")
    from ..figures.metrics import met_slo
    lengths: dict[float, int] = {}

    def judge(rate: float) -> tuple[bool, float]:
        steady = steady_run(design, at_rate(load, rate, drift), seed, requests,
                            passes=lambda s: s.share(met_slo(s.run)) >= attainment)
        share = steady.share(met_slo(steady.run))
        lengths[rate] = steady.requests
        return share >= attainment, share

    rate, share, tried = highest_rate(judge, high_rps, rel_tol)
    return Goodput(rate, rate / design.gpus, attainment, share, design, tried, drift,
                   lengths.get(rate, 0))


def replica_capacity(model: str, gpu: str, gpus_per_replica: int, input_tokens, output_tokens,
                     metric: str = "ttft", percentile: float = 99.0, limit_s: float = 1.0,
                     inclusive: bool = False, requests: int = 3000, seed: int = 0,
                     rel_tol: float = 0.03, high_rps: float = 200.0,
                     bursts: tuple = ()) -> Capacity:
    """The highest request rate one replica sustains with ``metric`` p``percentile`` below
    ``limit_s`` (at most, with ``inclusive``), on Poisson arrivals whose (input, output) lengths
    are drawn in pairs from the pool's requests. ``bursts`` (a per-minute profile of
    :class:`~..load.arrivals.Burst`, multipliers of mean 1) keeps the pool's drift: each rate
    tried is the profile's mean, its shape kept, and a run serves the whole profile. Raises
    InputError when the replica can't be built (a model that does not fit). Each rate is judged
    at steady state (:mod:`.steady`, from ``requests`` up), on the requests past the warm-up
    cut."""
    design = Design(model=model, gpu=gpu, tp=gpus_per_replica, replicas=1)
    pairs = PairedLengths(np.asarray(input_tokens), np.asarray(output_tokens), "pool")
    requests = check_requests(requests, "requests")

    def value_of(steady) -> float:
        return _objective_value(steady.run, metric, percentile, steady.judged)

    def ok(value: float) -> bool:
        return value <= limit_s if inclusive else value < limit_s

    def judge(rate: float) -> tuple[bool, float]:
        steady = steady_run(design, Load(rate_rps=rate, pairs=pairs, bursts=tuple(bursts)),
                            seed, requests,
                            passes=lambda s: ok(value_of(s)))
        value = value_of(steady)
        return ok(value), value

    rate, value, tried = highest_rate(judge, high_rps, rel_tol)
    return Capacity(rate, design, value, tried)
