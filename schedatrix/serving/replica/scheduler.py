"""What every scheduler keeps the same way, whichever simulator steps it: its KV cache across
crashes, the record of its KV use, tokens leaving, a request's blocks given back, the inbox of
an async scheduler and the reservations of a guaranteed-no-evict one.

**Async scheduling** (``cfg.async_scheduling``): the scheduler decides iteration n + 1 while
iteration n runs. A request that reaches a busy scheduler waits in its *inbox* until the
scheduling decision after the one in flight: at the start of an iteration, the inbox gives the
waiting queue every request that arrived at or before the start of the iteration that just
ended; one that arrived while iteration n ran first joins n + 2 (synchronously: n + 1). When
nothing else would run, the inbox gives everything at once (an idle scheduler schedules what
it has). A preempted request goes back to the waiting queue directly (the scheduler knows it).

**Guaranteed no evict** (``cfg.capacity``): a request is admitted only when the KV blocks of
its whole prompt and output fit beside those the running requests have reserved to their ends,
so no running request ever runs short of KV and none is preempted (TensorRT-LLM's default
capacity policy). The reservation is the request's full footprint (prefix-cache sharing only
makes the blocks really used fewer)."""

from __future__ import annotations

from .kv_cache import KVCache
from .lora_use import LoraUse
from .offload_use import OffloadUse

__all__ = ["SchedulerBase", "TIE_S"]

#: Seconds within which an arrival counts as at an iteration's start (async scheduling).
TIE_S = 1e-9


class SchedulerBase(OffloadUse, LoraUse):
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
        spec = getattr(self.perf, "spec", None)      # speculative decoding (..perf.spec_decode)
        self.spec_k = spec.tokens if spec is not None and spec.on else 0
        self.version = 0
        self.peak = 0.0
        self.hits_before = 0
        self.lookups_before = 0
        self.cache: KVCache | None = None
        self.offload_init()
        self.lora_init()
        self.reset()

    def reset(self) -> None:
        """An empty scheduler with an empty cache (at the start, and back from a crash);
        what the old cache did is kept in the totals."""
        if self.cache is not None:
            self.peak = self.peak_share()
            self.hits_before += self.cache.hit_tokens
            self.lookups_before += self.cache.lookup_tokens
        cfg = self.sim.cfg
        self.cache = KVCache(self.kv_blocks, cfg.block_tokens, cfg.hash_block_tokens,
                             self.new_tier())
        self.transferring: set[int] = set()   # prompts done here, their KV still moving away
        self.busy = False
        self.version += 1
        self.kv_noted = 0                      # KV blocks in use at the last note
        self.inbox: list[tuple[float, int]] = []   # (when it arrived, request): async only
        self.began = -1.0                      # when the iteration in flight (or last) began
        #                                        (-1: none since the scheduler was idle)
        self.reserved: dict[int, int] = {}     # guaranteed no evict: request -> its blocks
        self.reserved_blocks = 0
        self.slots = self.new_slots()          # LoRA adapters' slots (None: no LoRA)
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

    # -- async scheduling: the inbox ------------------------------------------------------------
    def to_inbox(self, i: int, t: float) -> bool:
        """An arrival at t: into the inbox (True) when the scheduler is async and an
        iteration of its busy spell has begun (one arriving as an idle scheduler wakes joins
        its first iteration)."""
        if self.sim.cfg.async_scheduling and self.busy and self.began >= 0:
            self.inbox.append((t, i))
            return True
        return False

    def take_inbox(self, t: float, idle: bool) -> None:
        """At an iteration's start at t: the inbox's requests the scheduler has seen by now
        (arrived by the start of the iteration that just ended) join the waiting queue; all of
        them when ``idle`` (nothing else would run)."""
        inbox = self.inbox
        if not inbox:
            return
        # within a nanosecond counts as by then: the two simulators sum an iteration's times
        # in different orders, and an arrival may tie with a start to the last bits
        cutoff = float("inf") if idle else self.began + TIE_S
        # the inbox is in arrival order (events run in time order): those seen by now are
        # its first ones
        k = 0
        for joined, i in inbox:
            if joined > cutoff:
                break
            self.enqueue(i, joined)
            k += 1
        if k:
            self.inbox = inbox[k:]

    def inbox_tokens(self) -> tuple[int, int]:
        """(prefill tokens, all tokens still to compute) of the inbox's requests."""
        pre_all = work = 0
        for _, i in self.inbox:
            pre, left = self.work_left(i)
            pre_all += pre
            work += pre + left
        return pre_all, work

    def work_left(self, i: int) -> tuple[int, int]:
        """(prompt tokens still to compute, output tokens still to generate) of request i:
        none of the prompt once it is ready, the part not kept in host memory once swapped,
        else its prompt and what it generated so far (a recompute)."""
        sim = self.sim
        left = sim.out[i] - sim.generated[i]
        if sim.ready[i]:
            return 0, left
        if sim.swapped[i]:
            return sim.inp[i] + sim.generated[i] - sim.computed[i], left
        return sim.inp[i] + sim.generated[i], left

    def enqueue(self, i: int, t: float) -> None:
        raise NotImplementedError

    # -- guaranteed no evict: reservations --------------------------------------------------------
    def footprint(self, i: int) -> int:
        """KV blocks request i holds at its end: its whole prompt and output."""
        sim = self.sim
        return -(-(sim.inp[i] + sim.out[i]) // sim.cfg.block_tokens)

    def reserve_fits(self, i: int) -> bool:
        """Whether request i may be admitted under the capacity policy."""
        if self.sim.cfg.capacity != "guaranteed-no-evict":
            return True
        return self.reserved_blocks + self.footprint(i) <= self.cache.total_blocks

    def reserve(self, i: int) -> None:
        if self.sim.cfg.capacity == "guaranteed-no-evict" and i not in self.reserved:
            blocks = self.reserved[i] = self.footprint(i)
            self.reserved_blocks += blocks

    def release_request(self, i: int) -> None:
        """Request i's KV blocks and pinned prefix entries go back to the cache."""
        if self.reserved:
            self.reserved_blocks -= self.reserved.pop(i, 0)
        if self.slots is not None:
            self.slots.release(i)
        sim, cache = self.sim, self.cache
        cache.used -= sim.own[i]          # cache.release, inline
        sim.own[i] = 0
        if sim.pinned[i]:
            cache.unpin(sim.req.hashes(i), sim.pinned[i])
            sim.pinned[i] = 0
        if self.transferring:
            self.transferring.discard(i)

    def spec_out(self, i: int, left: int) -> int:
        """Tokens request i's verification emits: one plus the drafted tokens it accepts,
        at most ``left`` (:mod:`.speculation`)."""
        got = 1 + self.sim.spec_draws.next(i)
        return got if got < left else left

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
