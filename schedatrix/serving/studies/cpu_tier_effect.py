"""What a CPU tier for the KV cache buys a shared-prefix load: the same questions served without
it and with it, the prefix hit shares by tier, the mean TTFT and the copies' seconds against the
prefill they saved (docs/serving-calibration.md, "A CPU tier for the KV cache")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cluster.deployment import Design
from ..figures.kv_tiers import KVTiers, kv_tiers
from ..figures.record import COMPLETED, Run
from ..load.prefixes import shared_prefix_load
from ..numbers import check_int, check_real
from ..sim.simulate import simulate

__all__ = ["TierEffect", "tier_effect", "mean_ttft_s", "lone_prompt_speedup"]


def mean_ttft_s(run: Run) -> float:
    """The mean time to first token of a run's completed requests, seconds."""
    done = run.status == COMPLETED
    return float(np.mean(run.first_token_s[done] - run.arrival_s[done]))


@dataclass(frozen=True)
class TierEffect:
    """One load on one design without the tier (``off``) and with ``gb`` GB of it (``on``);
    ``document_tokens`` of all documents against ``hbm_tokens``, the KV a replica holds."""

    design: str
    gb: float
    document_tokens: int
    hbm_tokens: int
    off: KVTiers
    on: KVTiers
    ttft_off_s: float
    ttft_on_s: float


def tier_effect(design: Design, gb: float, requests: int = 2000, rate_rps: float = 4.0,
                documents: int = 400, document_tokens: int = 3072, seed: int = 0) -> TierEffect:
    """Serve :func:`~..load.prefixes.shared_prefix_load` (``documents`` equally popular
    documents of ``document_tokens`` tokens, a question about one each) on ``design`` without a
    CPU tier and with ``gb`` GB of it."""
    gb = check_real("gb", gb, 0.0, 1e5, low_open=True)
    req = shared_prefix_load(requests, rate_rps, documents, document_tokens, seed=seed)
    base = design.with_(kv_offload_gb=0.0)
    off, on = simulate(req, base), simulate(req, base.with_(kv_offload_gb=gb))
    hbm = base.perf().kv_capacity_tokens(base.gpu_memory_share)
    return TierEffect(base.name, gb, documents * document_tokens, hbm, kv_tiers(off),
                      kv_tiers(on), mean_ttft_s(off), mean_ttft_s(on))


def lone_prompt_speedup(design: Design, prompt_tokens: int, block_tokens: int = 16) -> float:
    """How many times faster a lone prompt's first token is when all but its last block comes
    back from the CPU tier than when it is all computed, by the model's own terms: the prefill
    in chunks of the design's token budget, against the copy (bytes on one GPU over its PCIe
    rate) plus the last block's prefill over the copied context."""
    n = check_int("prompt_tokens", prompt_tokens, 2 * block_tokens, 10**6)
    perf, budget = design.perf(), design.token_budget()
    miss = sum(perf.iteration_s([(min(budget, n - c), c)], 0, 0) for c in range(0, n, budget))
    copied = n - block_tokens
    gb_s = design.with_(kv_offload_gb=1.0).kv_offload().h2d_gb_s
    hit = copied * perf.kv_bytes_per_token_per_gpu / (gb_s * 1e9) + perf.iteration_s(
        [(block_tokens, copied)], 0, 0)
    return miss / hit
