"""A replica's paged KV cache: blocks of a fixed number of tokens, with an optional prefix cache.

Counts only (no block ids): a request holds ``ceil(tokens / block_tokens)`` blocks of its own,
minus the blocks of the prefix it shares with the cache. With prefix caching, a prompt's full
hash blocks (each ``hash_block_tokens`` tokens, e.g. Mooncake's 512) are kept after the
request is done, until their room is needed (least recently used first). A cached entry in use
by a running request is pinned; an unpinned one counts as free room, evicted on demand (into
the CPU tier, :mod:`.cpu_tier`, when the replica has one).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict

from ..numbers import check_int

__all__ = ["KVCache", "largest_batch"]


def largest_batch(capacity_tokens: int, prompt_tokens: int, output_tokens: int,
                  block_tokens: int = 16, max_batch: int = 256) -> int:
    """The most requests of ``prompt_tokens + output_tokens`` tokens that a cache of
    ``capacity_tokens`` holds at once at their full length: the whole blocks of the cache
    (``capacity_tokens // block_tokens``) over the blocks one request fills (``ceil(tokens /
    block_tokens)``), and never more than the scheduler's ``max_batch``. It is the batch that
    runs with no preemption when every request grows to its full length together."""
    capacity_tokens = check_int("capacity_tokens", capacity_tokens, 0, 10**15)
    prompt_tokens = check_int("prompt_tokens", prompt_tokens, 1, 10**9)
    output_tokens = check_int("output_tokens", output_tokens, 1, 10**9)
    block_tokens = check_int("block_tokens", block_tokens, 1, 4096)
    max_batch = check_int("max_batch", max_batch, 1, 1_000_000)
    per_request = -(-(prompt_tokens + output_tokens) // block_tokens)
    return min(max_batch, (capacity_tokens // block_tokens) // per_request)


class KVCache:
    """Block accounting of one scheduler (a replica, or one pipeline engine of a replica)."""

    def __init__(self, total_blocks: int, block_tokens: int, hash_block_tokens: int = 0,
                 cpu=None):
        self.total_blocks = int(total_blocks)
        self.block_tokens = int(block_tokens)
        self.hash_blocks = hash_block_tokens // block_tokens if hash_block_tokens else 0
        self.hash_block_tokens = int(hash_block_tokens)
        self.used = 0            # blocks held by requests (own blocks) and by cache entries
        self.evictable = 0       # blocks of unpinned cache entries (part of ``used``)
        self.entries: OrderedDict[int, int] = OrderedDict()  # hash -> pins; LRU first
        self.peak_used = 0
        self.hit_tokens = 0      # prompt tokens served from the cache (prefill saved)
        self.lookup_tokens = 0   # prompt tokens looked up
        self.cpu = cpu           # the CPU tier evicted entries go to (None: dropped)
        # the unpinned entries in ``entries``' order, found without scanning the pinned ones:
        # (when it was last touched, hash), pushed as an entry's pins fall to 0; an item whose
        # entry was touched again, pinned or evicted since is stale and skipped
        self._touched: dict[int, int] = {}
        self._clock = 0
        self._unpinned: list[tuple[int, int]] = []

    # -- room --------------------------------------------------------------------------------
    @property
    def available(self) -> int:
        """Blocks a request could get now: free ones plus unpinned cache entries."""
        return self.total_blocks - self.used + self.evictable

    def allocate(self, blocks: int) -> bool:
        """Take ``blocks`` blocks, evicting unpinned cache entries (LRU first) if needed."""
        if blocks <= 0:
            return True
        free = self.total_blocks - self.used
        if free < blocks:                    # short of free room (seldom): evict, LRU first
            if blocks > free + self.evictable:
                return False
            while free < blocks:
                h = self._oldest_unpinned()
                del self.entries[h]
                del self._touched[h]
                if self.cpu is not None:
                    self.cpu.keep(h)
                self.used -= self.hash_blocks
                self.evictable -= self.hash_blocks
                free += self.hash_blocks
        used = self.used = self.used + blocks
        if used - self.evictable > self.peak_used:
            self.peak_used = used - self.evictable
        return True

    def _oldest_unpinned(self) -> int:
        """The first entry nobody pins, least recently used first (there is one)."""
        heap, entries, touched = self._unpinned, self.entries, self._touched
        while True:
            stamp, h = heapq.heappop(heap)
            if entries.get(h) == 0 and touched[h] == stamp:
                return h

    def _touch(self, h: int) -> None:
        self._clock += 1
        self._touched[h] = self._clock

    def release(self, blocks: int) -> None:
        self.used -= blocks

    # -- prefix cache ------------------------------------------------------------------------
    def peek(self, hashes, prompt_tokens: int) -> tuple[int, int]:
        """(cached prefix hash blocks of a prompt, how many of them nobody pins), touching
        nothing: what :meth:`match` would pin."""
        if not self.hash_blocks or hashes is None:
            return 0, 0
        limit = min(len(hashes), (prompt_tokens - 1) // self.hash_block_tokens)
        hits = unpinned = 0
        entries = self.entries
        while hits < limit:
            pins = entries.get(int(hashes[hits]))
            if pins is None:
                break
            unpinned += pins == 0
            hits += 1
        return hits, unpinned

    def match(self, hashes, prompt_tokens: int) -> int:
        """Pin the longest cached prefix of ``hashes``; return how many hash blocks matched.

        At most ``(prompt_tokens - 1) // hash_block_tokens`` blocks match: the last prompt
        token is always computed (it yields the first output token).
        """
        if not self.hash_blocks or hashes is None:
            return 0
        limit = min(len(hashes), (prompt_tokens - 1) // self.hash_block_tokens)
        self.lookup_tokens += prompt_tokens
        hits = 0
        while hits < limit and int(hashes[hits]) in self.entries:
            hits += 1
        for h in hashes[:hits]:
            h = int(h)
            if self.entries[h] == 0:
                self.evictable -= self.hash_blocks
            self.entries[h] += 1
            self.entries.move_to_end(h)
            self._touch(h)
        self.hit_tokens += hits * self.hash_block_tokens
        return hits

    def insert(self, hashes, start: int, prompt_tokens: int) -> int:
        """After a prefill: turn the prompt's full hash blocks from ``start`` on into pinned
        cache entries (blocks move from the request's own to the cache). Returns how many
        hash blocks the request now pins in all (``start`` plus the new ones); a hash already
        cached stops the run (the rest stay the request's own)."""
        if not self.hash_blocks or hashes is None:
            return start
        full = min(len(hashes), prompt_tokens // self.hash_block_tokens)
        pinned = start
        for h in hashes[start:full]:
            h = int(h)
            if h in self.entries:
                break
            self.entries[h] = 1
            self._touch(h)
            pinned += 1
        return pinned

    def unpin(self, hashes, pinned: int) -> None:
        """A request leaves: its pinned entries become evictable when no one else pins them."""
        for h in hashes[:pinned]:
            h = int(h)
            pins = self.entries[h] - 1
            self.entries[h] = pins
            if pins == 0:
                self.evictable += self.hash_blocks
                heapq.heappush(self._unpinned, (self._touched[h], h))
        if len(self._unpinned) > 4 * len(self.entries) + 64:     # mostly stale: keep the rest
            self._unpinned = [(s, h) for s, h in self._unpinned
                              if self.entries.get(h) == 0 and self._touched[h] == s]
            heapq.heapify(self._unpinned)
