"""Replicas needed per bucket, what the configured capacity provides, and the three policies.

Arrays are per time bucket: ``requests`` (count), ``tokens`` (input + output) and
``duration_s`` (the seconds of the bucket inside the trace window; edge buckets are partial).
A policy is a replica count per bucket; its bill is its GPU-hours (times the price, if any).

- needed = ceil(rate x (1 + headroom) / per-replica capacity), rate in requests/s;
- served = min(requests, replicas x capacity x duration): demand above it is unmet;
- idle GPU-hours = GPU-hours x (1 - served rate / (replicas x capacity)), the course's idle
  bill: warm capacity that moved no requests;
- convergence = ideal GPU-hours / policy GPU-hours (the ideal sizes every bucket).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..fleet.constants import CONVERGENCE_FLOOR, UNMET_CAP
from .note import PoolConfig

__all__ = ["replicas_needed", "autoscaled", "Policy", "PoolSizing", "size_pool",
           "POLICY_NAMES"]

#: The three run-set policies of the course, applied to a pool, and what they run.
POLICY_NAMES = {
    "max_warm": "keep the maximum warm",
    "average": "size to average + headroom",
    "ideal": "size every bucket (ideal)",
}


def replicas_needed(rate_rps, replica_rps: float, headroom: float) -> np.ndarray:
    """ceil(rate x (1 + headroom) / replica_rps) per bucket (a relative 1e-9 is forgiven so
    that float error never adds a replica: 5 x 1.2 / 6 needs exactly 1)."""
    x = np.asarray(rate_rps, dtype=float) * (1 + headroom) / replica_rps
    return np.ceil(x * (1 - 1e-9) - 1e-12).clip(min=0).astype(np.int64)


def autoscaled(needed: np.ndarray, lo: int, hi: int, delay_buckets: int) -> np.ndarray:
    """An autoscaler within [lo, hi] that follows need `delay_buckets` late: bucket b runs
    clip(needed[b - delay]); the first `delay` buckets run clip(needed[0]) (it starts sized)."""
    delay_buckets = min(delay_buckets, len(needed))
    if delay_buckets > 0 and len(needed):
        needed = np.concatenate([np.full(delay_buckets, needed[0]), needed])[: len(needed)]
    return np.clip(needed, lo, hi)


@dataclass(frozen=True)
class Policy:
    """One replica plan for one pool over the window, and its figures."""

    name: str
    replicas: np.ndarray
    gpu_hours: float
    served_share: float
    unmet_share: float
    idle_gpu_hours: float
    served_tokens: float
    convergence: float

    @property
    def capacity_ok(self) -> bool:
        return self.unmet_share <= UNMET_CAP

    @property
    def convergence_ok(self) -> bool:
        return self.convergence >= CONVERGENCE_FLOOR


@dataclass(frozen=True)
class PoolSizing:
    """A pool's needs per bucket and the configured fleet and the three policies against them."""

    rate_rps: np.ndarray
    needed: np.ndarray
    needed_gpu_hours: float
    configured: Policy
    policies: dict[str, Policy]

    @property
    def ideal(self) -> Policy:
        return self.policies["ideal"]


def _run(name, replicas, requests, tokens, duration_s, cfg: PoolConfig) -> Policy:
    cap = replicas * cfg.replica_rps * duration_s
    served = np.minimum(requests, cap)
    total = requests.sum()
    gpu_h = replicas * cfg.gpus_per_replica * duration_s / 3600
    busy = np.divide(served, cap, out=np.zeros_like(cap, dtype=float), where=cap > 0)
    share = served.sum() / total if total else 1.0
    tok = np.divide(tokens * served, requests, out=np.zeros_like(served, dtype=float),
                    where=requests > 0)
    return Policy(name, replicas, float(gpu_h.sum()), float(share), float(1 - share),
                  float((gpu_h * (1 - busy)).sum()), float(tok.sum()), float("nan"))


def size_pool(cfg: PoolConfig, requests: np.ndarray, tokens: np.ndarray,
              duration_s: np.ndarray, headroom: float = 0.10, delay_buckets: int = 1,
              replica_rps: float | None = None, delayed: np.ndarray | None = None
              ) -> PoolSizing:
    """Size one pool bucket by bucket (or piece by piece: a piece is a bucket or a run of
    empty buckets, see :mod:`.window`). `replica_rps` overrides the note's capacity.

    The configured fleet runs its fixed count, or follows need within [min, max] with the
    delay: `delayed[i]` is the piece whose need piece i follows (default: the bucket
    `delay_buckets` earlier, the first bucket's need before that). The policies may run 1 to
    max replicas (the pool's deployment ceiling): keep max warm; a constant count sized to the
    window's average rate plus headroom; the ideal sizes every bucket to its need.
    """
    if replica_rps is not None:
        cfg = replace(cfg, replica_rps=float(replica_rps))
    requests = np.asarray(requests, dtype=float)
    duration_s = np.asarray(duration_s, dtype=float)
    rate = np.divide(requests, duration_s, out=np.zeros_like(requests), where=duration_s > 0)
    needed = replicas_needed(rate, cfg.replica_rps, headroom)
    hi = cfg.max_replicas

    def constant(count: int) -> np.ndarray:  # one value for every piece, in no memory
        return np.broadcast_to(np.int64(count), needed.shape)

    if cfg.scaling == "fixed":
        conf = constant(hi)
    elif delayed is not None:
        conf = np.clip(needed[delayed], cfg.min_replicas, hi)
    else:
        conf = autoscaled(needed, cfg.min_replicas, hi, delay_buckets)
    mean_rate = requests.sum() / duration_s.sum() if duration_s.sum() else 0.0
    avg = int(np.clip(replicas_needed([mean_rate], cfg.replica_rps, headroom)[0], 1, hi))
    ideal = _run("ideal", np.clip(needed, 1, hi), requests, tokens, duration_s, cfg)

    def converged(p: Policy) -> Policy:
        c = ideal.gpu_hours / p.gpu_hours if p.gpu_hours else 1.0
        return Policy(p.name, p.replicas, p.gpu_hours, p.served_share, p.unmet_share,
                      p.idle_gpu_hours, p.served_tokens, c)

    policies = {k: converged(_run(k, constant(v), requests, tokens, duration_s, cfg))
                for k, v in (("max_warm", hi), ("average", avg))}
    policies["ideal"] = converged(ideal)
    configured = converged(_run("configured", conf, requests, tokens, duration_s, cfg))
    needed_gpu_h = float((needed * cfg.gpus_per_replica * duration_s / 3600).sum())
    return PoolSizing(rate, needed, needed_gpu_h, configured, policies)
