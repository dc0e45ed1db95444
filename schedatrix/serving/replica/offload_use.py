"""How a scheduler uses its CPU tier (:mod:`.cpu_tier`), the same way in both simulators: the
tier's size by the replica's KV bytes, a prompt's blocks found there, the copy's seconds charged
to the iteration that admits it, and what the run counts (tokens copied back, seconds copying,
the seconds of prefill the copies saved)."""

from __future__ import annotations

from .cpu_tier import CPUTier

__all__ = ["OffloadUse"]


class OffloadUse:
    """Mixed into :class:`~.scheduler.SchedulerBase` (which sets ``sim``, ``perf``,
    ``replica``, ``kv_tok_bytes`` and ``cache``)."""

    def offload_init(self) -> None:
        self.cpu_hits_before = 0
        self.load_s = 0.0          # seconds of iterations spent copying blocks back
        self.saved_s = 0.0         # seconds the copied tokens' prefill would have taken
        self.loading = 0           # tokens copied back in the iteration being built

    def new_tier(self) -> CPUTier | None:
        """A fresh CPU tier for this scheduler (None when the replica has none)."""
        cfg = self.sim.cfg
        off = cfg.kv_offload
        if off is None or not cfg.hash_block_tokens:
            return None
        if self.cache is not None and self.cache.cpu is not None:
            self.cpu_hits_before += self.cache.cpu.hit_tokens
        plan = self.sim.layout.replicas[self.replica]
        blocks = off.blocks(self.kv_tok_bytes, getattr(self.perf, "gpus", 1), plan.engines,
                            cfg.hash_block_tokens)
        return CPUTier(blocks, cfg.hash_block_tokens)

    @property
    def cpu_hit_tokens(self) -> int:
        cpu = self.cache.cpu
        return self.cpu_hits_before + (cpu.hit_tokens if cpu is not None else 0)

    def cpu_peek(self, i: int, hits: int) -> int:
        """Hash blocks of request i's prompt the CPU tier holds after its ``hits`` in HBM."""
        cpu = self.cache.cpu
        if cpu is None:
            return 0
        return cpu.peek(self.sim.req.hashes(i), self.sim.inp[i], hits)

    def cpu_load(self, i: int, hits: int, count: int) -> None:
        """Request i is admitted with ``count`` blocks copied back after its ``hits`` in HBM:
        their tokens join this iteration's copy; the prefill they save is counted."""
        tokens = self.cache.cpu.load(self.sim.req.hashes(i), hits, count)
        self.loading += tokens
        self.saved_s += self.perf.iteration_s(
            [(tokens, hits * self.cache.hash_block_tokens)], 0, 0)

    def take_load_s(self) -> float:
        """Seconds this iteration spends copying its blocks back (each GPU its share, over its
        own PCIe link, not overlapped), and the copy is done."""
        tokens, self.loading = self.loading, 0
        s = tokens * self.kv_tok_bytes / (self.sim.cfg.kv_offload.h2d_gb_s * 1e9)
        self.load_s += s
        return s
