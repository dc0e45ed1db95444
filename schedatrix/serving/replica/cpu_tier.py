"""The CPU tier of the KV cache (vLLM's KV offloading connector, LMCache's local CPU backend):
prefix-cache hash blocks evicted from HBM are kept in host memory, least recently used dropped
first, and a prompt whose prefix continues there copies those blocks back over PCIe instead of
computing them again.

Counts only, like :mod:`.kv_cache`. A block evicted from HBM enters the tier (or is touched, if
a copy is there); a block copied back stays in the tier too (host memory keeps its copy) and is
touched. The copy back is charged in full to the iteration that admits the request, with no
overlap: LMCache's default retrieve blocks the forward pass; vLLM's native connector loads
asynchronously (the request waits, others run), so the charge is an upper bound on what others
pay and about what the request itself waits (docs/serving-calibration.md).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from ...errors import InputError
from ..numbers import check_real

__all__ = ["KVOffload", "CPUTier", "MAX_OFFLOAD_GB"]

#: The largest CPU tier a replica may have, GB (a few servers' host memory).
MAX_OFFLOAD_GB = 100_000.0


@dataclass(frozen=True)
class KVOffload:
    """A replica's CPU tier: ``gb`` GB (10**9 bytes) of host memory over all its GPUs (vLLM's
    ``kv_offloading_size`` sums it over the TP ranks), each GPU copying its share of a block
    back at ``h2d_gb_s`` GB/s (:mod:`..perf.pcie`)."""

    gb: float
    h2d_gb_s: float

    def __post_init__(self):
        check_real("kv_offload_gb", self.gb, 0.0, MAX_OFFLOAD_GB, low_open=True)
        check_real("h2d_gb_s", self.h2d_gb_s, 0.0, 10_000.0, low_open=True)

    def blocks(self, kv_bytes_per_token_per_gpu: float, gpus: int, engines: int,
               hash_block_tokens: int) -> int:
        """Hash blocks one scheduler's tier holds: the replica's bytes over a token's bytes on
        all its GPUs, shared by its ``engines`` schedulers as the HBM cache is."""
        if not hash_block_tokens or kv_bytes_per_token_per_gpu <= 0:
            return 0
        tokens = int(self.gb * 1e9 / gpus // kv_bytes_per_token_per_gpu) // engines
        return tokens // hash_block_tokens


class CPUTier:
    """One scheduler's CPU tier: an LRU of hash blocks, ``capacity`` of them at most."""

    def __init__(self, capacity: int, hash_block_tokens: int):
        if capacity < 0:
            raise InputError(f"capacity must be 0 or more hash blocks, got {capacity}")
        self.capacity = int(capacity)
        self.hash_block_tokens = int(hash_block_tokens)
        self.blocks: OrderedDict[int, None] = OrderedDict()   # LRU first
        self.hit_tokens = 0       # prompt tokens copied back instead of computed

    def keep(self, h: int) -> None:
        """A block evicted from HBM: into the tier (most recent), the oldest out when full."""
        if not self.capacity:
            return
        blocks = self.blocks
        if h in blocks:
            blocks.move_to_end(h)
            return
        blocks[h] = None
        if len(blocks) > self.capacity:
            blocks.popitem(last=False)

    def peek(self, hashes, prompt_tokens: int, start: int) -> int:
        """Hash blocks of a prompt the tier holds right after its first ``start`` (those in HBM),
        in a row, touching nothing; the last prompt token is always computed."""
        if hashes is None or not self.blocks:
            return 0
        limit = min(len(hashes), (prompt_tokens - 1) // self.hash_block_tokens)
        k = start
        while k < limit and int(hashes[k]) in self.blocks:
            k += 1
        return k - start

    def load(self, hashes, start: int, count: int) -> int:
        """Copy ``count`` blocks back from ``start`` on: touch them; returns their tokens."""
        for h in hashes[start:start + count]:
            self.blocks.move_to_end(int(h))
        tokens = count * self.hash_block_tokens
        self.hit_tokens += tokens
        return tokens
