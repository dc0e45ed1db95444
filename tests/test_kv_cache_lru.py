"""The prefix cache evicts the least recently used unpinned entry, found without a scan."""

from __future__ import annotations

import numpy as np

from schedatrix.serving.replica.kv_cache import KVCache


class _Tier:
    """A CPU tier that only records what is evicted into it, in order."""

    def __init__(self):
        self.kept = []

    def keep(self, h):
        self.kept.append(h)


def _scan_order(cache: KVCache) -> list[int]:
    """What the cache must evict next: its unpinned entries in their LRU order."""
    return [h for h, pins in cache.entries.items() if pins == 0]


def test_evictions_follow_the_lru_order_of_the_unpinned_entries():
    rng = np.random.default_rng(7)
    for trial in range(20):
        tier = _Tier()
        cache = KVCache(total_blocks=400, block_tokens=16, hash_block_tokens=64, cpu=tier)
        holders = []                     # (hashes, pinned, own blocks) of running requests
        evictions = 0
        for _ in range(600):
            if holders and rng.random() < 0.45:         # a request leaves
                hashes, pinned, own = holders.pop(int(rng.integers(len(holders))))
                cache.unpin(hashes, pinned)
                cache.release(own)
                continue
            doc = int(rng.integers(30))                  # a prompt: a document's blocks
            hashes = np.arange(doc * 100, doc * 100 + int(rng.integers(1, 6)))
            prompt = (len(hashes) + 1) * 64
            hits = cache.match(hashes, prompt)
            own = (len(hashes) - hits) * cache.hash_blocks + int(rng.integers(1, 20))
            expect = _scan_order(cache)
            before = len(tier.kept)
            if not cache.allocate(own):
                cache.unpin(hashes, hits)
                continue
            evicted = tier.kept[before:]
            assert evicted == expect[:len(evicted)], trial
            evictions += len(evicted)
            pinned = cache.insert(hashes, hits, prompt)   # blocks of its own become entries
            holders.append((hashes, pinned, own - (pinned - hits) * cache.hash_blocks))
        assert evictions > 100           # the cache was full often enough to test the order
        assert all(pins >= 0 for pins in cache.entries.values())
