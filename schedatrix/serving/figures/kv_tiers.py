"""Where a run's prefix hits came from, by tier of the KV cache (HBM, the CPU tier), and what the
CPU tier's copies cost against the prefill they saved."""

from __future__ import annotations

from dataclasses import dataclass

from .record import Run

__all__ = ["KVTiers", "kv_tiers"]


@dataclass(frozen=True)
class KVTiers:
    """hbm_hit_share, cpu_hit_share : prompt tokens looked up that HBM's prefix cache held, and
        that the CPU tier held after them (0 to 1; their sum is the prefix hit share)
    load_s : seconds the copies back over PCIe added to iterations, summed over schedulers
    recompute_saved_s : seconds the copied tokens' prefill would have taken (each alone in an
        iteration)"""

    hbm_hit_share: float
    cpu_hit_share: float
    load_s: float
    recompute_saved_s: float

    @property
    def hit_share(self) -> float:
        return self.hbm_hit_share + self.cpu_hit_share


def kv_tiers(run: Run) -> KVTiers:
    """The per-tier figures of ``run`` (all 0 when nothing was looked up)."""
    looked = run.prefix_lookup_tokens
    return KVTiers(run.prefix_hit_tokens / looked if looked else 0.0,
                   run.prefix_cpu_hit_tokens / looked if looked else 0.0,
                   run.kv_load_s, run.kv_load_saved_s)
