"""What one replica can carry: the highest request rate it sustains within a latency objective
on a pool's own length mix (the audit asks this when a fleet note leaves capacity blank).

The search serves Poisson arrivals whose (input, output) lengths are drawn in pairs from the
pool's requests, on one replica of the model on ``gpus_per_replica`` GPUs (tensor parallel),
and halves the bracket between a rate that meets the objective and one that does not until
they are within ``rel_tol`` of each other. Each rate is judged on the same seed, so the answer
is reproducible; latency grows with the rate, so the bracket is sound up to the noise of one
run (``requests`` sets its length).
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
from ..load.workload import Load, generate
from ..perf.catalog import MODELS
from ..sim.simulate import simulate

__all__ = ["Capacity", "replica_capacity", "catalog_model", "catalog_gpu"]


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", " ", text.lower()).strip()


def catalog_model(name: str) -> str | None:
    """The catalog's model for a name as people write it ("Llama 3.1 70B",
    "meta-llama/Llama-3.1-8B-Instruct"), or None."""
    words = _words(name).replace("meta llama", "llama")
    for key in MODELS:
        family, version, size = key.split("-")        # llama, 3.1, 70b
        if re.search(rf"\b{family}\s*{re.escape(version)}\b.*\b{size}\b", words):
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


def _objective_value(run, metric: str, percentile: float) -> float:
    arr = run.arrival_s
    done = run.status == COMPLETED
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


def replica_capacity(model: str, gpu: str, gpus_per_replica: int, input_tokens, output_tokens,
                     metric: str = "ttft", percentile: float = 99.0, limit_s: float = 1.0,
                     inclusive: bool = False, requests: int = 3000, seed: int = 0,
                     rel_tol: float = 0.03, high_rps: float = 200.0) -> Capacity:
    """The highest request rate one replica sustains with ``metric`` p``percentile`` below
    ``limit_s`` (at most, with ``inclusive``), on paired lengths from the pool's requests.
    Raises InputError when the replica can't be built (a model that does not fit)."""
    design = Design(model=model, gpu=gpu, tp=gpus_per_replica, replicas=1)
    pairs = PairedLengths(np.asarray(input_tokens), np.asarray(output_tokens), "pool")
    tried = []

    def judge(rate: float) -> tuple[bool, float]:
        load = Load(rate_rps=rate, pairs=pairs)
        run = simulate(generate(load, seed, requests=requests), design)
        value = _objective_value(run, metric, percentile)
        ok = value <= limit_s if inclusive else value < limit_s
        tried.append((rate, value, ok))
        return ok, value

    low, low_value = 0.0, math.nan
    rate = 1.0
    ok, value = judge(rate)
    while ok and rate < high_rps:            # grow until a rate fails
        low, low_value = rate, value
        rate *= 2
        ok, value = judge(rate)
    if ok:
        return Capacity(rate, design, value, tuple(tried))
    high = rate
    if low == 0.0:                           # even 1 request/s fails: look below it
        rate = 1.0
        while not ok and rate > 1e-3:
            high = rate
            rate /= 4
            ok, value = judge(rate)
        if not ok:
            return Capacity(0.0, design, value, tuple(tried))
        low, low_value = rate, value
    while (high - low) / high > rel_tol:
        mid = math.sqrt(low * high)
        ok, value = judge(mid)
        if ok:
            low, low_value = mid, value
        else:
            high = mid
    return Capacity(low, design, low_value, tuple(tried))



