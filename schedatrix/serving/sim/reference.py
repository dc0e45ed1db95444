"""The plain reference simulator: every scheduler iteration of every replica, one at a time.

This is the readable statement of how a replica schedules (vLLM's continuous batching, as the
project models it). The fast simulator (:mod:`.engine`) must give the same figures; tests
compare them on the same arrivals. The fleet around the schedulers (routing, admission,
faults, retries, the prefill/decode link) is :mod:`.cluster`, shared by both.

**A scheduler** (a replica, or one pipeline engine of a replica) holds a waiting queue and a
running batch, both ordered by (class priority, arrival time). Whenever it is free and has
work it starts an iteration at time ``t``:

1. *Running requests*, in that order. A decoding request takes one token of the iteration's
   budget (``max_batched_tokens``) and, when its next token starts a new KV block, one block.
   A request still prefilling its prompt takes the next chunk: as many prompt tokens as the
   budget leaves after one token for every decoding request not yet served (with chunked
   prefill off a prompt is always admitted whole, so no chunk is left over). If the KV cache
   cannot give the blocks, the lowest request (the last in the order) is preempted: it gives
   up its KV (recompute: dropped; swap: copied to host memory over PCIe) and goes back to the
   waiting queue, keeping the tokens it generated; repeat until the blocks fit, or until the
   request itself was the one preempted.
2. *Waiting requests*, only if nobody was preempted in step 1: in order, while the batch holds
   fewer than ``max_batch`` requests and budget is left, admit the first one if its first
   chunk and the KV blocks for it fit (prefix-cache hits first: cached hash blocks are not
   computed again, nor the hash blocks after them that the CPU tier holds, copied back
   instead; a swapped request brings its KV back instead); stop at the first that does
   not fit, unless priority preemption is on and a running request of a lower class can be
   preempted (the lowest first, taken out of this iteration) to make room. A request that
   arrived with its KV (the decode side of a prefilll/decode split) decodes at once.
   With async scheduling a request that arrived while the previous iteration ran is not yet
   in the waiting queue (it waits in the inbox: :mod:`~..replica.scheduler`); under
   guaranteed no evict a request is admitted only when its whole KV fits beside the running
   requests' reservations. With LoRA adapters a request whose adapter has no slot is skipped
   (it keeps its place; those behind it may go first) and its adapter, once admitted, is
   loaded if not resident (:mod:`~..replica.lora_slots`).
3. The iteration's time is ``perf.iteration_s(prefill chunks, decoding requests, their
   summed context)`` (with async scheduling ``max(GPU, host) + serial``), plus the KV
   swapped in and out and copied back from the CPU tier over PCIe, plus the batched LoRA
   kernels over its tokens and distinct adapters and the adapters it loads, plus any wait or
   slowdown of a link its pipeline crosses.
   At its end every decoding request has one more token; a request whose prompt (plus, after a
   preemption, its earlier output) is now all in the cache emits a token (its first: TTFT); a
   request with all its output tokens is done and frees its KV.

**Speculating** (``perf.spec``, :mod:`~..replica.speculation`): a decoding request takes K + 1
tokens of the budget and the KV blocks of its K + 1 verified tokens; at the iteration's end it
gains one token plus the drafted tokens its verification accepted (drawn from its own stream,
no more than it still has to give), all leaving at once, and gives back the blocks past them.
"""

from __future__ import annotations

from ..cluster.layout import Layout
from ..cluster.policy import Policy
from ..figures.record import Run
from ..load.requests import Requests
from ..replica.knobs import SchedulerConfig
from ..replica.scheduler import SchedulerBase
from ..replica.speculation import kept_blocks, lookahead_blocks
from .events import END, START, Cluster

__all__ = ["simulate_reference", "StepEngine"]


class StepEngine(SchedulerBase):
    """One scheduler, stepped one iteration at a time over plain lists."""

    def clear(self) -> None:
        self.waiting: list[int] = []
        self.running: list[int] = []
        self.decoding: set[int] = set()
        self.target: dict[int, int] = {}
        self.batch: list = []
        self.swap_tokens = 0

    # -- plumbing ----------------------------------------------------------------------------
    def key(self, i: int):
        sim = self.sim
        return (sim.prio[sim.cls[i]], sim.arrival[i], i)

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.sim.cfg.block_tokens)

    def unfinished(self) -> int:
        return len(self.waiting) + len(self.running) + len(self.inbox)

    def waiting_count(self) -> int:
        return len(self.waiting) + len(self.inbox)

    def queued_prefill_tokens(self) -> int:
        sim = self.sim
        total = 0
        for i in self.waiting:
            if not sim.ready[i]:
                total += sim.inp[i] + sim.generated[i] - (sim.computed[i] if sim.swapped[i]
                                                          else 0)
        for i in self.running:
            if i not in self.decoding:
                total += self.target[i] - sim.computed[i]
        return total + (self.inbox_tokens()[0] if self.inbox else 0)

    def outstanding_tokens(self, t: float) -> int:
        sim = self.sim
        total = self.queued_prefill_tokens()
        for i in self.waiting + self.running + [j for _, j in self.inbox]:
            total += sim.out[i] - sim.generated[i]
        return total

    def prefix_hit_tokens(self, hashes, prompt_tokens: int, t: float) -> int:
        cache = self.cache
        if not cache.hash_blocks or hashes is None:
            return 0
        return cache.peek(hashes, prompt_tokens)[0] * cache.hash_block_tokens

    def add(self, i: int, t: float) -> None:
        if not self.to_inbox(i, t):
            self.enqueue(i, t)

    def enqueue(self, i: int, t: float) -> None:
        self.waiting.append(i)
        self.waiting.sort(key=self.key)
        if not self.busy:
            self.busy = True
            self.version += 1
            self.sim.push(t, START, self, self.version)

    def wake(self, t: float) -> None:
        if not self.busy and self.waiting:
            self.add_start(t)

    def add_start(self, t: float) -> None:
        self.busy = True
        self.version += 1
        self.sim.push(t, START, self, self.version)

    def cut(self, t: float, force: bool = False) -> None:
        pass   # every iteration is its own event here

    # -- an iteration ------------------------------------------------------------------------
    def step_start(self, t: float) -> None:
        sim, cfg, cache = self.sim, self.sim.cfg, self.cache
        if self.inbox:
            self.take_inbox(t, idle=False)
            if not self.running and not self.waiting:
                self.take_inbox(t, idle=True)
        self.running.sort(key=self.key)
        order = list(self.running)
        decs_left = sum(i in self.decoding for i in order)
        budget = cfg.max_batched_tokens
        k = self.spec_k          # drafted tokens a decoder verifies (0: no speculation)
        width = 1 + k            # budget tokens a decoder takes
        batch: list = []
        preempted = False
        n = 0
        while n < len(order):
            i = order[n]
            if i in self.decoding:
                decs_left -= 1
                tokens = 1
                blocks = lookahead_blocks(sim.computed[i], k, cfg.block_tokens) if k else (
                    1 if sim.computed[i] % cfg.block_tokens == 0 else 0)
            else:
                tokens = max(0, min(self.target[i] - sim.computed[i],
                                    budget - decs_left * width))
                blocks = self.blocks_for(sim.computed[i] + tokens) - self.held(i) if tokens \
                    else 0
            dropped_self = False
            while blocks > cache.available:
                victim = order.pop()
                if victim != i and victim in self.decoding:
                    decs_left -= 1
                self.preempt(victim, t)
                preempted = True
                if victim == i:
                    dropped_self = True
                    break
            if dropped_self:
                break
            cache.allocate(blocks)
            sim.own[i] += blocks
            if tokens:
                batch.append([i, tokens, i in self.decoding])
            budget -= width if i in self.decoding else tokens
            n += 1
        swap_in = 0
        skipped: list[int] = []      # waiting for a LoRA slot: passed over this iteration
        if not preempted:
            while self.waiting and budget > 0:
                i = self.waiting[0]
                room = len(self.running) < cfg.max_batch
                if room and self.slots is not None and self.lora_blocked(i):
                    skipped.append(self.waiting.pop(0))
                    continue
                got = self.try_admit(i, t, budget) if room else None
                if got is None:
                    if not (sim.policy.priority_preemption and self.running):
                        break
                    victim = max(self.running, key=self.key)
                    if self.key(victim)[0] <= self.key(i)[0]:
                        break
                    for m, entry in enumerate(batch):
                        if entry[0] == victim:
                            budget += width if entry[2] else entry[1]
                            del batch[m]
                            break
                    self.preempt(victim, t)
                    continue
                tokens, swapped = got
                swap_in += swapped
                self.waiting.pop(0)
                self.running.append(i)
                batch.append([i, tokens, i in self.decoding])
                budget -= width if i in self.decoding else tokens
            if skipped:
                self.waiting.extend(skipped)
                self.waiting.sort(key=self.key)
        if not batch:
            self.batch = []
            self.busy = False
            self.began = -1.0     # idle: the next arrival starts at once
            self.swap_tokens = 0
            sim.emptied(self.replica, t)
            return
        chunks = [(tok, sim.computed[i]) for i, tok, dec in batch if not dec]
        decs = [i for i, _, dec in batch if dec]
        d = self.perf.iteration_s(chunks, len(decs), sum(sim.computed[i] + 1 for i in decs))
        if sim.link:
            d += sim.iteration_extra(self.replica, t, sum(tok for _, tok, _ in batch))
        moved = swap_in + self.swap_tokens
        if moved:
            d += moved * self.kv_tok_bytes / (sim.policy.pcie_gb_s * 1e9)
            self.swap_tokens = 0
        if self.loading:
            d += self.take_load_s()
        if self.slots is not None:   # the batched LoRA kernels, and adapters loaded
            d += self.lora_step_s([e[0] for e in batch],
                                  sum(width if dec else tok for _, tok, dec in batch))
        self.batch = batch
        self.began = t
        self.version += 1
        sim.push(t + d, END, self, self.version)
        self.note_kv(t)

    def try_admit(self, i: int, t: float, budget: int):
        """Admit i now if its first iteration fits: (tokens it takes, tokens swapped in)."""
        if not self.reserve_fits(i):
            return None
        self.reserve(i)      # undone below when it does not fit
        got = self._try_admit(i, t, budget)
        if got is None:
            self.reserved_blocks -= self.reserved.pop(i, 0)
        elif self.slots is not None:
            self.lora_take(i)
        return got

    def _try_admit(self, i: int, t: float, budget: int):
        sim, cache = self.sim, self.cache
        if sim.ready[i]:
            blocks = self.blocks_for(sim.computed[i] + 1 + self.spec_k)
            if blocks > cache.available:
                return None
            cache.allocate(blocks)
            sim.own[i] = blocks
            sim.ready[i] = False
            self.decoding.add(i)
            return 1, 0
        if sim.swapped[i]:
            todo = sim.inp[i] + sim.generated[i] - sim.computed[i]
            tokens = min(todo, budget) if sim.cfg.chunked_prefill else todo
            if tokens > budget:
                return None
            blocks = self.blocks_for(sim.computed[i] + tokens)
            if blocks > cache.available:
                return None
            cache.allocate(blocks)
            sim.own[i] = blocks
            sim.swapped[i] = False
            self.target[i] = sim.inp[i] + sim.generated[i]
            return tokens, sim.computed[i]
        hits, unpinned = cache.peek(sim.req.hashes(i), sim.inp[i])
        loaded = self.cpu_peek(i, hits)     # blocks copied back from the CPU tier after them
        start = (hits + loaded) * cache.hash_block_tokens
        todo = sim.inp[i] + sim.generated[i] - start
        if sim.cfg.chunked_prefill:
            tokens = min(todo, budget)
        elif todo > budget:
            return None
        else:
            tokens = todo
        blocks = self.blocks_for(start + tokens) - hits * cache.hash_blocks
        if blocks + unpinned * cache.hash_blocks > cache.available:
            return None
        sim.pinned[i] = cache.match(sim.req.hashes(i), sim.inp[i]) if cache.hash_blocks else 0
        if loaded:
            self.cpu_load(i, hits, loaded)
        sim.computed[i] = start
        cache.allocate(blocks)
        sim.own[i] = blocks
        self.target[i] = sim.inp[i] + sim.generated[i]
        if sim.scheduled[i] != sim.scheduled[i]:   # NaN: its first prefill starts now
            sim.scheduled[i] = t
        return tokens, 0

    def preempt(self, i: int, t: float) -> None:
        sim = self.sim
        self.running.remove(i)
        self.decoding.discard(i)
        self.target.pop(i, None)
        self.release_request(i)
        if sim.policy.preemption == "swap" and sim.computed[i]:
            self.swap_tokens += sim.computed[i]
            sim.swapped[i] = True
        else:
            sim.computed[i] = 0
        sim.preemptions[i] += 1
        self.waiting.append(i)
        self.waiting.sort(key=self.key)

    def complete(self, i: int, t: float) -> None:
        self.running.remove(i)
        self.decoding.discard(i)
        self.release_request(i)
        self.sim.complete(i, t)

    def step_end(self, t: float) -> None:
        sim = self.sim
        batch, self.batch = self.batch, []
        sim.iterations += 1
        finishing = []
        k = self.spec_k
        for i, _, dec in batch:
            if dec:
                got = self.spec_out(i, sim.out[i] - sim.generated[i]) if k else 1
                if k:       # the lookahead past the accepted tokens goes back
                    back = kept_blocks(sim.computed[i], k, got, sim.cfg.block_tokens)
                    self.cache.release(back)
                    sim.own[i] -= back
                sim.computed[i] += got
                sim.generated[i] += got
                self.emit(i, t)      # a step's tokens leave together: one gap (one chunk)
                if got > 1:
                    self.emit_more(i, t, got - 1)
                if sim.generated[i] >= sim.out[i]:
                    finishing.append(i)
        for i, tokens, dec in batch:
            if dec:
                continue
            sim.computed[i] += tokens
            if sim.computed[i] < self.target[i]:
                continue
            del self.target[i]
            if self.cache.hash_blocks:
                pinned = self.cache.insert(sim.req.hashes(i), sim.pinned[i], sim.inp[i])
                sim.own[i] -= (pinned - sim.pinned[i]) * self.cache.hash_blocks
                sim.pinned[i] = pinned
            sim.generated[i] += 1
            if self.role == "prefill":
                self.running.remove(i)
                if sim.generated[i] >= sim.out[i]:
                    self.release_request(i)
                    self.emit(i, t)
                    sim.complete(i, t)
                else:
                    self.transferring.add(i)
                    sim.handoff(self, i, t)
                continue
            self.emit(i, t)
            if sim.generated[i] >= sim.out[i]:
                self.complete(i, t)
            else:
                self.decoding.add(i)
        for i in sorted(finishing):
            self.complete(i, t)
        self.note_kv(t)
        self.add_start(t)

    def emit_more(self, i: int, t: float, n: int) -> None:
        """n more tokens of request i leave at t with the one just emitted (speculation's
        accepted drafts): no gaps of their own; a run keeping token times keeps them."""

    def crash(self, t: float) -> list[int]:
        """Everything here is lost at t (the iteration in flight too); returns the requests."""
        return self.forget(sorted(self.waiting + self.running + [i for _, i in self.inbox]
                                  + sorted(self.transferring)), t)


def simulate_reference(requests: Requests, perf, cfg: SchedulerConfig, layout: Layout,
                       policy: Policy | None = None, keep_tokens: bool = False,
                       router=None) -> Run:
    """Run ``requests`` through ``layout`` one iteration at a time (see the module's rules).

    With ``keep_tokens`` the run's ``token_times`` attribute holds every request's token times;
    ``router`` replaces the policy's router (see :mod:`~schedatrix.serving.cluster.routing`).
    """
    sim = Cluster(requests, perf, cfg, layout, policy, StepEngine, "reference", router)
    times: list[list[float]] = [[] for _ in range(len(requests))]
    if keep_tokens:
        emit = StepEngine.emit

        def keeping(self, i, t):
            times[i].append(t)
            emit(self, i, t)

        def keeping_more(self, i, t, n):
            times[i].extend([t] * n)

        sim.engines = [[_with_emit(e, keeping, keeping_more) for e in es]
                       for es in sim.engines]
    run = sim.run()
    if keep_tokens:
        for i in range(len(requests)):   # a first token after a KV move leaves at the move
            if sim.first_token[i] == sim.first_token[i] and (
                    not times[i] or times[i][0] > sim.first_token[i]):
                times[i].insert(0, sim.first_token[i])
        if sim.client is not None:     # as the client receives them, like the run's times
            egress = sim.client.egress_s
            times = [[t + egress for t in ts] for ts in times]
        run.token_times = times
    return run


def _with_emit(engine: StepEngine, emit, emit_more) -> StepEngine:
    engine.emit = emit.__get__(engine)
    engine.emit_more = emit_more.__get__(engine)
    return engine
