"""The replay of a multi-LoRA row (:mod:`..published.lora_rows`): the row's load drawn as its
benchmark drew it, run on the base model and with the row's adapters; the figure is the ratio
of the two throughputs."""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design, build
from ..figures.record import COMPLETED
from ..load.requests import Requests
from ..perf.host import VLLM_HOST, HostCosts
from ..published.lora_rows import LoraPublished
from ..replica.lora import ADAPTER_META
from ..sim.engine import simulate_fast

__all__ = ["is_lora", "replay_lora", "slora_load", "lora_design"]


def is_lora(row) -> bool:
    """Whether ``row`` is a multi-LoRA row (replayed here)."""
    return isinstance(row, LoraPublished)


def slora_load(row: LoraPublished, adapters: bool = True) -> Requests:
    """The requests S-LoRA's benchmark sends for ``row`` (its benchmarks/trace.py
    ``generate_requests``, with NumPy's legacy generator seeded as it seeds it): arrivals
    gamma-spaced at ``rate_rps`` (Poisson: cv 1), lengths uniform on ``length_range``, each
    request's adapter ``int(power(1) * N)`` (uniform over the N adapters). The draws come in
    the same order whatever N, so the base model's run (``adapters`` False) gets the same
    arrivals and lengths, with no adapter."""
    rs = np.random.RandomState(row.seed)
    total = int(row.rate_rps * row.duration_s)
    chosen = (rs.power(1.0, total) * max(row.adapters, 1)).astype(np.int64)
    low, high = row.length_range
    inp = rs.randint(low, high, total).astype(np.int64)
    out = rs.randint(low, high, total).astype(np.int64)
    arrival = np.cumsum(rs.gamma(1.0, 1.0 / row.rate_rps, total))
    meta = {ADAPTER_META: chosen} if adapters else {}
    return Requests(arrival, inp, out, np.zeros(total, np.int16), meta=meta,
                    source="S-LoRA's synthetic workload")


def lora_design(row: LoraPublished, adapters: int) -> Design:
    """The row's design with ``adapters`` adapters (0: the base model alone): one slot per
    adapter and every adapter in host memory, as S-LoRA holds them."""
    lora = dict(lora_adapters=adapters, lora_rank=row.rank, max_loras=adapters,
                max_cpu_loras=adapters, lora_targets=row.targets) if adapters else {}
    return Design(model=row.model, gpu=row.gpu, tp=row.tp, engine=row.engine,
                  cuda_graphs=row.cuda_graphs, dtype=row.dtype, client_path="none", **lora)


def _throughput(row: LoraPublished, adapters: bool, host: HostCosts) -> float:
    """Requests per second of the row's load with its adapters (or on the base model alone):
    completed requests over the time from the benchmark's start to the last response, as
    S-LoRA reports it."""
    requests = slora_load(row, adapters)
    design = lora_design(row, row.adapters if adapters else 0)
    built = build(design)
    perf = design.perf(host=host)
    run = simulate_fast(requests, perf, built.config, built.layout, design.policy())
    if not (run.status == COMPLETED).all():
        raise InputError(f"validation row {row.id}: not every request completed")
    return len(requests) / float(np.max(run.done_s))


def replay_lora(row: LoraPublished, host: HostCosts = VLLM_HOST) -> float:
    """The model's ratio for ``row``: its load's throughput with the row's adapters over the
    same load's on the base model, on the row's design with vLLM's host costs ``host``."""
    if row.kind != "lora_ratio":
        raise InputError(f"validation row {row.id}: kind {row.kind!r}; allowed: lora_ratio")
    return _throughput(row, True, host) / _throughput(row, False, host)
