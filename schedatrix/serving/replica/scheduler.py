"""What every scheduler keeps the same way, whichever simulator steps it: its KV cache across
crashes, the record of its KV use, tokens leaving, a request's blocks given back."""

from __future__ import annotations

from .kv_cache import KVCache

__all__ = ["SchedulerBase"]


class SchedulerBase:
    """Bookkeeping shared by the reference's and the fast simulator's schedulers; each adds
    its own queues in ``clear()`` and its own way of stepping."""

    def __init__(self, sim, replica: int, role: str, kv_blocks: int):
        self.sim = sim
        self.replica = replica
        self.role = role
        self.kv_blocks = kv_blocks
        self.perf = sim.perfs[role]                 # this side's performance model
        self.lines = sim.lines[role]                # its decode lines, by batch size
        self.kv_tok_bytes = getattr(self.perf, "kv_bytes_per_token_per_gpu", 0)
        self.version = 0
        self.peak = 0.0
        self.hits_before = 0
        self.lookups_before = 0
        self.cache: KVCache | None = None
        self.reset()

    def reset(self) -> None:
        """An empty scheduler with an empty cache (at the start, and back from a crash);
        what the old cache did is kept in the totals."""
        if self.cache is not None:
            self.peak = self.peak_share()
            self.hits_before += self.cache.hit_tokens
            self.lookups_before += self.cache.lookup_tokens
        cfg = self.sim.cfg
        self.cache = KVCache(self.kv_blocks, cfg.block_tokens, cfg.hash_block_tokens)
        self.transferring: set[int] = set()   # prompts done here, their KV still moving away
        self.busy = False
        self.version += 1
        self.kv_noted = 0                      # KV blocks in use at the last note
        self.clear()

    def clear(self) -> None:
        raise NotImplementedError

    def peak_share(self) -> float:
        c = self.cache
        return max(self.peak, c.peak_used / c.total_blocks if c.total_blocks else 0.0)

    @property
    def hit_tokens(self) -> int:
        return self.hits_before + self.cache.hit_tokens

    @property
    def lookup_tokens(self) -> int:
        return self.lookups_before + self.cache.lookup_tokens

    def held(self, i: int) -> int:
        """KV blocks request i holds here: its own and its pinned prefix entries."""
        return self.sim.own[i] + self.sim.pinned[i] * self.cache.hash_blocks

    def note_kv(self, t: float) -> None:
        """Note the blocks in use (held by requests) when they changed; changes at one
        instant share a note."""
        used = self.cache.used - self.cache.evictable
        if used != self.kv_noted:
            sim = self.sim
            if sim.kv_last_t == t:
                sim.kv_delta[-1] += used - self.kv_noted
            else:
                sim.kv_t.append(t)
                sim.kv_delta.append(used - self.kv_noted)
                sim.kv_last_t = t
            self.kv_noted = used

    def release_request(self, i: int) -> None:
        """Request i's KV blocks and pinned prefix entries go back to the cache."""
        sim, cache = self.sim, self.cache
        cache.release(sim.own[i])
        sim.own[i] = 0
        if sim.pinned[i]:
            cache.unpin(sim.req.hashes(i), sim.pinned[i])
            sim.pinned[i] = 0
        self.transferring.discard(i)

    def emit(self, i: int, t: float) -> None:
        """A token leaves: its first (TTFT), or one whose gap since the last is recorded."""
        sim = self.sim
        if sim.first_token[i] != sim.first_token[i]:
            sim.first_token[i] = t
        else:
            sim.gaps.add_one(t - sim.last_token[i], sim.cls[i])
        sim.last_token[i] = t

    def forget(self, lost: list[int], t: float) -> list[int]:
        """A crash: the lost requests hold nothing here any more; the KV in use drops to 0."""
        sim = self.sim
        for i in lost:
            sim.own[i] = 0
            sim.pinned[i] = 0
        if self.kv_noted:
            self.cache.used = self.cache.evictable = 0
            self.note_kv(t)
        self.reset()
        return lost
