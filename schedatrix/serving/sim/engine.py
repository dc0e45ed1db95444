"""The fast simulator: its cost grows with requests, not with generated tokens.

It follows exactly the scheduling rules of the plain reference (:mod:`.reference`, whose
docstring states them), but while a batch of decoding requests does not change (no arrival
it could admit, no completion, no prompt to prefill, KV room enough), it advances the whole
stretch of decode iterations in one event. A decode iteration's time is affine in the batch's
summed context (``a + b * S``, :meth:`PerfModel.decode_line`), and the context grows by the
batch size every iteration, so the stretch's end time is a sum in closed form and its
inter-token gaps are one arithmetic progression (:class:`~.record.GapRecord`). Running
requests are kept as aggregates (count, summed context, completions in a heap, how many need a
new KV block at each phase of the block size), so an ordinary iteration costs O(1) for its
decoders.

An arrival in the middle of a stretch cuts it at the first iteration boundary at or after the
arrival, exactly where the reference would first see the new request; with async scheduling
the request waits in the inbox one iteration more, a pure decode like the stretch's others,
so the cut falls one boundary later (10.9 events a request became 9.0 on a default
design). With async scheduling a decode iteration takes ``max(floor, a + b * S)``
(:meth:`PerfModel.decode_floor`): a stretch starting below the floor runs at the floor until
the line would cross it, then
another stretch follows the line. A replica that speculates (:mod:`..replica.speculation`)
runs every iteration as its own event: each decoder gains the tokens its verification accepted,
a number drawn per sequence, so no stretch has a closed form and the cost grows with
iterations, as the reference's does; so does a replica serving LoRA adapters (each
iteration's kernels depend on the distinct adapters in its batch). The fleet around the
schedulers (routing, admission, faults, retries, the prefill/decode link) is
:mod:`.cluster`, shared with the reference.
"""

from __future__ import annotations

import heapq
import math
from bisect import insort
from heapq import heappush

from ..cluster.layout import Layout
from ..cluster.policy import Policy
from ..figures.record import Run
from ..load.requests import Requests
from ..perf.model import PerfModel
from ..replica.knobs import SchedulerConfig
from ..replica.scheduler import TIE_S, SchedulerBase
from ..replica.speculation import kept_blocks, lookahead_blocks
from .events import END, START, Cluster

__all__ = ["simulate_fast", "FastEngine"]


class FastEngine(SchedulerBase):
    """One scheduler: a replica, or one pipeline engine of a replica."""

    # every attribute in a slot (read at each event: faster than an instance dict this large)
    __slots__ = (
        "B", "G", "async_on", "began", "busy", "cache", "cls_count", "cpu_hits_before", "dec",
        "dec_base", "dec_left", "decode_s", "done_heap", "floor_of", "head_chunk",
        "hits_before", "inbox", "iteration_s", "kv_blocks", "kv_noted", "kv_tok_bytes",
        "lines", "load_s", "loading", "lookups_before", "lora_cpu_s", "lora_disk_s",
        "lora_kernel_s", "lora_kernels", "lora_load_s", "lora_loading", "lora_loads_before",
        "lora_skips", "max_batch", "max_tokens", "mod", "peak", "perf", "plain", "plan",
        "prefilling", "priority", "replica", "reserved", "reserved_blocks", "reserving", "role",
        "running", "saved_s", "sim", "slots", "spec_k", "swap", "swap_out", "target",
        "transferring", "version", "wait_prefill", "wait_work", "waiting", "work")

    def __init__(self, sim: Cluster, replica: int, role: str, kv_blocks: int):
        cfg = sim.cfg
        self.B = cfg.block_tokens
        self.max_tokens = cfg.max_batched_tokens
        self.max_batch = cfg.max_batch
        self.async_on = cfg.async_scheduling
        self.reserving = cfg.capacity == "guaranteed-no-evict"   # reservations (scheduler)
        self.swap = sim.policy.preemption == "swap"
        self.priority = sim.policy.priority_preemption
        super().__init__(sim, replica, role, kv_blocks)
        floor = getattr(self.perf, "decode_floor", None)
        self.floor_of = floor
        # the perf model's iteration time without its input checks (the engine's batches are
        # well formed), where the model is the calibrated one and not a subclass overriding it
        perf = self.perf
        kind = type(perf)
        exact = kind.iteration_s is PerfModel.iteration_s and \
            kind._iteration_s is PerfModel._iteration_s and \
            "iteration_s" not in getattr(perf, "__dict__", {})
        self.iteration_s = perf._iteration_s if exact else perf.iteration_s
        self.decode_s = perf._decode_s if exact else lambda n, ctx: perf.iteration_s([], n, ctx)

    def clear(self) -> None:
        self.waiting: list = []          # heap of (priority, arrival, i)
        self.running: dict = {}          # i -> key (priority, arrival, i): all running
        self.prefilling: list = []       # sorted keys of running requests still prefilling
        self.target: dict[int, int] = {}  # tokens to have in cache before the next sample
        # decoders as aggregates: at step counter g the request had c tokens cached and
        # gen generated; it gains one of each per step.
        self.dec: dict[int, tuple[int, int, int]] = {}
        self.dec_base = 0                # sum of (c - g) over decoders
        self.dec_left = 0                # sum of (out - gen + g): output tokens still to come
        self.mod = [0] * self.B          # decoders by (c - g) mod B
        self.done_heap: list = []        # (step counter at which it ends, i, its entry)
        self.cls_count = [0] * self.sim.n_classes
        self.work: dict[int, tuple[int, int]] = {}   # waiting i -> (all tokens, prefill)
        self.wait_work = 0
        self.wait_prefill = 0
        self.G = 0                       # iterations this engine has run
        self.plan = None                 # the iteration or stretch in flight
        self.swap_out = 0                # tokens swapped out this iteration
        self.head_chunk = None           # (i, budget, first_chunk) found by admissible()
        # stretches of pure decode are possible (no speculation, no LoRA: those step singly)
        self.plain = not self.spec_k and self.slots is None

    # -- what a router sees ----------------------------------------------------------------
    def unfinished(self) -> int:
        return len(self.waiting) + len(self.running) + len(self.inbox)

    def waiting_count(self) -> int:
        return len(self.waiting) + len(self.inbox)

    def queued_prefill_tokens(self) -> int:
        sim = self.sim
        return self.wait_prefill + sum(self.target[k[2]] - sim.computed[k[2]]
                                       for k in self.prefilling) + (
            self.inbox_tokens()[0] if self.inbox else 0)

    def outstanding_tokens(self, t: float) -> int:
        sim = self.sim
        pre = sum(self.target[k[2]] - sim.computed[k[2]] + sim.out[k[2]] - sim.generated[k[2]]
                  for k in self.prefilling)
        steps = self.G + (self.done_in_stretch(t) if self.plan and self.plan[0] == "stretch"
                          else 0)
        return self.wait_work + pre + self.dec_left - len(self.dec) * steps + (
            self.inbox_tokens()[1] if self.inbox else 0)

    def prefix_hit_tokens(self, hashes, prompt_tokens: int, t: float) -> int:
        cache = self.cache
        if not cache.hash_blocks or hashes is None:
            return 0
        self.sync_blocks(t)
        return cache.peek(hashes, prompt_tokens)[0] * cache.hash_block_tokens

    def done_in_stretch(self, t: float) -> int:
        """Iterations of the stretch in flight that ended at or before t."""
        _, t0, k, a, b, s0, n, _ = self.plan
        if t <= t0:
            return 0
        kk = _first_boundary_at_or_after(t - t0, a, b, s0, n)
        return kk if t0 + _sum_s(kk, a, b, s0, n) <= t else kk - 1

    def sync_blocks(self, t: float) -> None:
        """Take now the KV blocks of every iteration of the stretch that has started by t (the
        reference takes them at each start), so the cache looks as it does there."""
        plan = self.plan
        if plan is None or plan[0] != "stretch":
            return
        started = min(self.done_in_stretch(t) + 1, plan[2])
        if started > plan[7]:
            self.cache.allocate(self.need_over(started) - self.need_over(plan[7]))
            plan[7] = started

    # -- arrivals ----------------------------------------------------------------------------
    def add(self, i: int, t: float) -> None:
        if self.busy and self.began >= 0 and self.async_on:   # self.to_inbox(i, t), inline
            self.inbox.append((t, i))
            plan = self.plan
            if plan is not None and plan[0] == "stretch":
                self.cut(t, seen_late=not self.sim.link)
            return
        self.enqueue(i, t)

    def enqueue(self, i: int, t: float) -> None:
        sim = self.sim
        heapq.heappush(self.waiting, (sim.prio[sim.cls[i]], sim.arrival[i], i))
        pre, left = self.work_left(i)
        self.work[i] = (pre + left, pre)
        self.wait_work += pre + left
        self.wait_prefill += pre
        if not self.busy:
            self.busy = True
            self.version += 1
            sim.push(t, START, self, self.version)
        elif self.plan is not None and self.plan[0] == "stretch":
            self.cut(t)

    def wake(self, t: float) -> None:
        if not self.busy and self.waiting:
            self.busy = True
            self.version += 1
            self.sim.push(t, START, self, self.version)

    def pop_waiting(self) -> tuple:
        key = heapq.heappop(self.waiting)
        w, p = self.work.pop(key[2])
        self.wait_work -= w
        self.wait_prefill -= p
        return key

    # -- decoders as aggregates -----------------------------------------------------------
    def dec_add(self, i: int) -> None:
        sim, G = self.sim, self.G
        c, gen, out = sim.computed[i], sim.generated[i], sim.out[i]
        entry = self.dec[i] = (G, c, gen)
        self.dec_base += c - G
        self.dec_left += out - gen + G
        self.mod[(c - G) % self.B] += 1
        heapq.heappush(self.done_heap, (G + out - gen - 1, i, entry))
        self.cls_count[sim.cls[i]] += 1

    def dec_remove(self, i: int) -> None:
        """Take a decoder out of the aggregates, writing its current state back."""
        sim = self.sim
        g, c, gen = self.dec.pop(i)
        steps = self.G - g
        computed = sim.computed[i] = c + steps
        sim.generated[i] = gen + steps
        self.dec_base -= c - g
        self.dec_left -= sim.out[i] - gen + g
        self.mod[(c - g) % self.B] -= 1
        self.cls_count[sim.cls[i]] -= 1
        sim.own[i] = -(-computed // self.B) - sim.pinned[i] * self.cache.hash_blocks
        # its entry in done_heap is dropped lazily (see done_top)

    # -- one iteration or a stretch --------------------------------------------------------
    def step_start(self, t: float) -> None:
        """Start what comes next at t: a stretch of decode iterations when nothing can change
        the batch before it ends, else one iteration (:meth:`step_exact` when short of KV)."""
        sim, cache = self.sim, self.cache
        inbox = self.inbox
        if inbox:
            if inbox[0][0] <= self.began + TIE_S:   # some seen by now (take_inbox's test)
                self.take_inbox(t, idle=False)
            if not self.running and not self.waiting:
                self.take_inbox(t, idle=True)
        dec = self.dec
        n = len(dec)
        k_spec = self.spec_k
        if k_spec:       # each decoder verifies K + 1 tokens: their KV, their budget
            need_dec = self.spec_need()
            budget = self.max_tokens - n * (1 + k_spec)
        else:
            need_dec = self.mod[-self.G % self.B] if n else 0
            budget = self.max_tokens - n
        if self.prefilling:
            chunks, need, budget = self.plan_chunks(budget, need_dec)
        else:
            chunks, need = None, need_dec
        available = cache.total_blocks - cache.used + cache.evictable
        if need > available:
            self.step_exact(t)
            return
        waiting = self.waiting
        if n and not chunks and self.plain and not self.inbox and not (
                waiting and self.admissible(available - need_dec, budget)) and not (
                sim.link and self.link_down(t)):
            heap = self.done_heap
            g_done, i, entry = heap[0]
            if dec.get(i) is not entry:   # a stale entry on top
                g_done = self.done_top()
            G = self.G
            ends = g_done - G + 1
            # enough room for every decoder's blocks up to the first end (most often)
            B = self.B
            horizon = ends if n * (ends // B + 1) <= available else \
                self.blocks_horizon(available, ends)
            if waiting and cache.hash_blocks and len(self.running) < self.max_batch:
                # evicting cached prefixes can change what the queue's head needs: stretch
                # only while the decoders' new blocks come from free room
                horizon = self.blocks_horizon(cache.total_blocks - cache.used, horizon)
            if horizon:      # a stretch of ``horizon`` pure-decode iterations from t
                k = horizon
                line = self.lines.get(n)
                if line is None:
                    floor = self.floor_of
                    line = self.lines[n] = (*self.perf.decode_line(n),
                                            floor(n) if floor else 0.0)
                a, b, floor = line
                s0 = self.dec_base + n * (G + 1)
                if a + b * s0 < floor:   # async: at the host's floor until the line crosses
                    if b * n > 0:
                        k = min(k, _below_floor(floor - a - b * s0, b * n))
                    a, b = floor, 0.0
                if sim.link:
                    a += sim.iteration_extra(self.replica, t, n)
                self.plan = ["stretch", t, k, a, b, s0, n, 0]  # last: iterations with blocks
                version = self.version = self.version + 1
                seq = sim.seq = sim.seq + 1             # sim.push, inline
                heappush(sim.heap, (t + k * a + b * (k * s0 + n * k * (k - 1) / 2),
                                    END, seq, self, version))
                return
        if need:
            cache.allocate(need)
        if chunks:
            own = sim.own
            for i, _, blocks in chunks:
                own[i] += blocks
            chunks = [(i, c) for i, c, _ in chunks if c > 0]
        else:
            chunks = []
        new_dec: list[int] = []
        swap_in = self.admit(t, budget, chunks, new_dec) if waiting and budget > 0 else 0
        self.launch(t, chunks, new_dec, swap_in)

    def plan_chunks(self, budget: int, need: int) -> tuple[list, int, int]:
        """The next chunk of every running request still prefilling, in (class, arrival)
        order: ``[(i, tokens, new blocks)]``, the blocks needed in all (``need`` plus
        theirs) and the budget left."""
        sim, B = self.sim, self.B
        computed, target = sim.computed, self.target
        chunks = []
        for key in self.prefilling:
            i = key[2]
            c = min(target[i] - computed[i], budget)
            if c <= 0:
                chunks.append((i, 0, 0))
                continue
            blocks = -(-(computed[i] + c) // B) - self.held(i)
            chunks.append((i, c, blocks))
            budget -= c
            need += blocks
        return chunks, need, budget

    def link_down(self, t: float) -> bool:
        """A link this replica's pipeline crosses is down (iterations wait: no stretches)."""
        return bool(self.sim.link) and self.sim.link_down_for(self.replica, t)

    def admissible(self, available: int, budget: int) -> bool:
        """Would the waiting queue's head be admitted now? (no side effects)"""
        if not self.waiting or budget <= 0:
            return False
        head = self.waiting[0]
        if len(self.running) < self.sim.cfg.max_batch:
            first = self.first_chunk(head[2], budget)
            if not self.cache.hash_blocks:   # no prefix lookups: admit may reuse it
                self.head_chunk = (head[2], budget, first)
            if first[0] is not None and first[2] <= available and (
                    not self.reserving or self.reserve_fits(head[2])):
                return True
        # a higher class would preempt a lower one to get in
        return self.priority and bool(self.running) and \
            max(self.running.values())[0] > head[0]

    def first_chunk(self, i: int, budget: int):
        """(tokens, blocks, room) of request i's first iteration here: tokens None if the
        budget can't take it; ``room`` = the KV room it needs (its blocks, plus the cached
        prefix entries it would pin that now count as free)."""
        sim, cache, B = self.sim, self.cache, self.B
        if sim.ready[i]:   # arrived with its KV: decodes at once (K + 1 tokens speculating)
            blocks = -(-(sim.computed[i] + 1 + self.spec_k) // B)
            return 1, blocks, blocks
        target = sim.inp[i] + sim.generated[i]
        if sim.swapped[i]:  # its KV comes back from host memory: no prefix lookup
            todo = target - sim.computed[i]
            tokens = min(todo, budget) if sim.cfg.chunked_prefill else todo
            if tokens > budget:
                return None, 0, 0
            blocks = -(-(sim.computed[i] + tokens) // B)
            return tokens, blocks, blocks
        if cache.hash_blocks:
            hits, unpinned = cache.peek(sim.req.hashes(i), sim.inp[i])
            start = (hits + self.cpu_peek(i, hits)) * cache.hash_block_tokens
        else:
            hits = unpinned = start = 0
        todo = target - start
        if sim.cfg.chunked_prefill:
            tokens = min(todo, budget)
        elif todo > budget:
            return None, 0, 0
        else:
            tokens = todo
        blocks = -(-(start + tokens) // B) - hits * cache.hash_blocks
        # pinning the matched entries takes them out of the evictable room
        return tokens, blocks, blocks + unpinned * cache.hash_blocks

    def admit(self, t: float, budget: int, chunks: list, new_dec: list) -> int:
        """Admit waiting requests in (class, arrival) order while they fit (a higher class
        preempting lower ones with priority preemption on). Returns tokens swapped in."""
        sim, cfg, cache = self.sim, self.sim.cfg, self.cache
        swap_in = 0
        skipped: list = []           # waiting for a LoRA slot: passed over this iteration
        while self.waiting and budget > 0:
            prio, arr, i = self.waiting[0]
            fits = len(self.running) < cfg.max_batch
            if fits and self.slots is not None and self.lora_blocked(i):
                skipped.append(heapq.heappop(self.waiting))
                continue
            if fits:
                head = self.head_chunk
                if head is not None and head[0] == i and head[1] == budget:
                    tokens, blocks, room = head[2]    # as admissible() found it just now
                else:
                    tokens, blocks, room = self.first_chunk(i, budget)
                fits = tokens is not None and \
                    room <= cache.total_blocks - cache.used + cache.evictable and \
                    (not self.reserving or self.reserve_fits(i))
            if not fits:
                if not self.priority or not self.running:
                    break
                victim = max(self.running.values())
                if victim[0] <= prio:
                    break
                budget += self.unschedule(victim[2], t, chunks)
                continue
            key = self.pop_waiting()
            self.running[i] = key
            if self.reserving:
                self.reserve(i)
            if self.slots is not None:
                self.lora_take(i)
            if sim.ready[i]:
                sim.ready[i] = False
                cache.allocate(blocks)
                sim.own[i] = blocks
                self.dec_add(i)
                new_dec.append(i)
                budget -= self.spec_k     # its drafted tokens' share of the budget
            elif sim.swapped[i]:
                sim.swapped[i] = False
                swap_in += sim.computed[i]
                cache.allocate(blocks)
                sim.own[i] = blocks
                self.target[i] = sim.inp[i] + sim.generated[i]
                insort(self.prefilling, key)
                chunks.append((i, tokens))
            else:
                if cache.hash_blocks or cache.cpu is not None:
                    hits = cache.match(sim.req.hashes(i), sim.inp[i]) if cache.hash_blocks \
                        else 0
                    sim.pinned[i] = hits
                    loaded = self.cpu_peek(i, hits)
                    if loaded:
                        self.cpu_load(i, hits, loaded)
                    sim.computed[i] = (hits + loaded) * cache.hash_block_tokens
                else:        # no prefix cache, no CPU tier: nothing pinned, nothing cached
                    sim.pinned[i] = sim.computed[i] = 0
                cache.allocate(blocks)
                sim.own[i] = blocks
                self.target[i] = sim.inp[i] + sim.generated[i]
                insort(self.prefilling, key)
                chunks.append((i, tokens))
                if sim.scheduled[i] != sim.scheduled[i]:   # NaN: first time
                    sim.scheduled[i] = t
            budget -= tokens
        for key in skipped:
            heapq.heappush(self.waiting, key)
        self.head_chunk = None
        return swap_in

    def unschedule(self, i: int, t: float, chunks: list) -> int:
        """Priority preemption during admission: take i out of this iteration (its tokens
        and this iteration's blocks back) and preempt it. Returns the budget it frees."""
        if i in self.dec:
            g, c, _ = self.dec[i]
            extra = self.step_blocks(c + self.G - g)    # its blocks for this step
            self.preempt(i, t)
            self.cache.release(extra)
            return 1 + self.spec_k
        for k, (j, c) in enumerate(chunks):
            if j == i:
                del chunks[k]
                self.preempt(i, t)
                return c
        self.preempt(i, t)
        return 0

    def step_exact(self, t: float) -> None:
        """An iteration short of KV room: walk the running requests in (class, arrival)
        order, preempting the lowest (last) until each fits, as the reference does."""
        sim, cfg, cache, B = self.sim, self.sim.cfg, self.cache, self.B
        order = sorted(self.running.values())
        decs_left = len(self.dec)
        budget = cfg.max_batched_tokens
        width = 1 + self.spec_k
        chunks: list = []
        preempted = False
        k = 0
        while k < len(order):
            key = order[k]
            i = key[2]
            is_dec = i in self.dec
            if is_dec:
                decs_left -= 1
                g, c, _ = self.dec[i]
                tokens, blocks = 1, self.step_blocks(c + self.G - g)
            else:
                tokens = max(0, min(self.target[i] - sim.computed[i],
                                    budget - decs_left * width))
                blocks = -(-(sim.computed[i] + tokens) // B) - self.held(i) if tokens else 0
            while blocks > cache.available:
                victim = order.pop()
                if victim != key and victim[2] in self.dec:
                    decs_left -= 1
                self.preempt(victim[2], t)
                preempted = True
                if victim == key:
                    break
            else:
                cache.allocate(blocks)
                if not is_dec and tokens:
                    sim.own[i] += blocks
                    chunks.append((i, tokens))
                budget -= width if is_dec else tokens
                k += 1
                continue
            break   # the request itself was preempted: everything after it is gone too
        new_dec: list[int] = []
        swap_in = 0
        if not preempted:
            swap_in = self.admit(t, budget, chunks, new_dec)
        self.launch(t, chunks, new_dec, swap_in)

    def preempt(self, i: int, t: float) -> None:
        """Preemption: the request gives up its KV (recompute: dropped; swap: copied to host
        memory) and waits again, first in line."""
        sim = self.sim
        if i in self.dec:
            self.dec_remove(i)
            sim.last_token[i] = t
        else:
            self.prefilling.remove(self.running[i])
            del self.target[i]
        del self.running[i]
        self.release_request(i)
        if self.swap and sim.computed[i]:
            self.swap_out += sim.computed[i]
            sim.swapped[i] = True
        else:
            sim.computed[i] = 0
        sim.preemptions[i] += 1
        self.add(i, t)

    def swap_s(self, tokens: int) -> float:
        sim = self.sim
        return tokens * self.kv_tok_bytes / (sim.policy.pcie_gb_s * 1e9) if tokens else 0.0

    def launch(self, t: float, chunks: list, new_dec: list, swap_in: int = 0) -> None:
        """Start one iteration of the prefill chunks and every decoder."""
        sim = self.sim
        n = len(self.dec)
        if not chunks and not n:
            self.busy = False
            self.began = -1.0     # idle: the next arrival starts at once
            self.plan = None
            self.swap_out = 0
            sim.emptied(self.replica, t)
            return
        ctx = self.dec_base + n * (self.G + 1)
        if chunks:
            computed = sim.computed
            d = self.iteration_s([(c, computed[i]) for i, c in chunks], n, ctx)
        else:
            d = self.decode_s(n, ctx)
        if sim.link:
            d += sim.iteration_extra(self.replica, t, sum(c for _, c in chunks) + n)
        if swap_in or self.swap_out:
            d += self.swap_s(swap_in + self.swap_out)
            self.swap_out = 0
        if self.loading:
            d += self.take_load_s()
        if self.slots is not None:   # the batched LoRA kernels, and adapters loaded
            d += self.lora_step_s([i for i, _ in chunks] + list(self.dec),
                                  sum(c for _, c in chunks) + n * (1 + self.spec_k))
        self.plan = ("step", t, chunks, new_dec)
        self.began = t
        version = self.version = self.version + 1
        seq = sim.seq = sim.seq + 1             # sim.push, inline
        heappush(sim.heap, (t + d, END, seq, self, version))
        cache = self.cache
        if cache.used - cache.evictable != self.kv_noted:
            self.note_kv(t)

    # -- speculative decoding (..replica.speculation) ----------------------------------------
    def step_blocks(self, computed: int) -> int:
        """New KV blocks a decoder with ``computed`` tokens cached takes for this step."""
        if self.spec_k:
            return lookahead_blocks(computed, self.spec_k, self.B)
        return 1 if computed % self.B == 0 else 0

    def spec_need(self) -> int:
        """KV blocks the decoders' verifications take this step (each decoder's own)."""
        G, k, B = self.G, self.spec_k, self.B
        return sum(lookahead_blocks(c + G - g, k, B) for g, c, _ in self.dec.values())

    def spec_accepted(self) -> None:
        """After a verification (the step counter already past it): each decoder's accepted
        drafted tokens join it (its aggregates rewritten; they left with the step's token, in
        its one gap), the lookahead past them goes back."""
        sim, G, k, B = self.sim, self.G, self.spec_k, self.B
        out = sim.out
        back = 0
        for i, (g, c, gen) in list(self.dec.items()):
            steps = G - g
            before = c + steps - 1                       # cached at the step's start
            got = self.spec_out(i, out[i] - (gen + steps - 1))
            back += kept_blocks(before, k, got, B)
            if got > 1:
                self.dec_remove(i)
                sim.computed[i] += got - 1
                sim.generated[i] += got - 1
                self.dec_add(i)
        self.cache.release(back)

    def done_top(self) -> int:
        """The step counter at which the next decoder ends (dropping stale heap entries)."""
        heap, dec = self.done_heap, self.dec
        while True:
            g_done, i, entry = heap[0]
            if dec.get(i) is entry:      # not a stale entry of a request that left
                return g_done
            heapq.heappop(heap)

    def blocks_horizon(self, available: int, cap: int) -> int:
        """How many decode iterations from now fit in ``available`` KV blocks, at most
        ``cap`` (a cheap bound answers when the cap fits with room)."""
        n, B, G = len(self.dec), self.B, self.G
        if n * (cap // B + 1) <= available:
            return cap
        periods = available // n          # B iterations take one block of every decoder
        left = available - periods * n
        j = periods * B
        for s in range(B):
            need = self.mod[(-(G + j + s)) % B]
            if need > left:
                return min(j + s, cap)
            left -= need
        raise AssertionError("a period of B iterations needs n blocks")  # pragma: no cover

    def cut(self, t: float, force: bool = False, seen_late: bool = False) -> None:
        """An arrival (or a link change, ``force``) at t inside a stretch: end it at the first
        boundary at or after t. ``seen_late``: an arrival into the inbox of an async scheduler,
        which first sees it at the start of the iteration after the one that began before it
        (:meth:`take_inbox`): the stretch goes on through that one more iteration, a pure
        decode like the others, rather than ending for a step that could change nothing."""
        plan = self.plan
        if plan is None or plan[0] != "stretch":
            return
        _, t0, k, a, b, s0, n, _ = plan
        if t <= t0:
            return
        if not force and not self.priority and len(self.running) >= self.max_batch:
            return   # a full batch admits nobody until someone ends: the stretch stands
        kk = _first_boundary_at_or_after(t - t0, a, b, s0, n)
        if seen_late and kk < k and t0 + _sum_s(kk - 1, a, b, s0, n) + TIE_S < t:
            kk += 1  # not seen at boundary kk (its iteration began before t): at kk + 1
        if kk < k:
            plan[2] = kk
            self.version += 1
            self.sim.push(t0 + _sum_s(kk, a, b, s0, n), END, self, self.version)

    def need_over(self, k: int) -> int:
        """KV blocks the decoders take over the next k iterations."""
        n, B = len(self.dec), self.B
        periods, rest = divmod(k, B)
        if not rest:
            return periods * n
        # the phases -(G + j) mod B for j < rest: a window ending at -G mod B, going down
        top = (-self.G) % B
        low = top - rest + 1
        mod = self.mod
        part = sum(mod[low:top + 1]) if low >= 0 else sum(mod[:top + 1]) + sum(mod[B + low:])
        return periods * n + part

    # -- ends --------------------------------------------------------------------------------
    def step_end(self, t: float) -> None:
        """The iteration or stretch in flight ends at t: tokens out, prompts and requests
        done; then the next starts (at once when nothing else is due at t)."""
        sim, cache, plan = self.sim, self.cache, self.plan
        gaps = sim.gaps
        if plan[0] == "stretch":     # its KV blocks taken, its gaps one progression
            _, t0, k, a, b, s0, n, taken = plan
            blocks = self.need_over(k) - (self.need_over(taken) if taken else 0)
            if blocks:
                cache.allocate(blocks)
            gaps.add_run(a + b * s0, b * n, k, self.cls_count)
            G = self.G = self.G + k
            sim.iterations += k
            self.began = t0 + _sum_s(k - 1, a, b, s0, n)   # its last iteration's start
        else:                        # one iteration: every decoder's gap, prompts done
            _, t0, chunks, new_dec = plan
            weights = self.cls_count
            if new_dec:      # their gaps run from their last token (a KV move) instead
                weights = list(weights)
                cls, last_token = sim.cls, sim.last_token
                for i in new_dec:
                    weights[cls[i]] -= 1
                    gaps.add_one(t - last_token[i], cls[i])
                gaps.add(t - t0, 0.0, 1, weights)
            elif self.dec:   # weights, one per decoder, not all 0
                gaps.add_run(t - t0, 0.0, 1, weights)
            G = self.G = self.G + 1
            sim.iterations += 1
            if self.spec_k and self.dec:
                self.spec_accepted()
            if chunks:
                computed, target = sim.computed, self.target
                for i, c in chunks:
                    computed[i] += c
                    if computed[i] >= target[i]:
                        self.prompt_done(i, t)
        heap = self.done_heap
        if heap and heap[0][0] < G:
            self.finish_decoders(t)
        if cache.used - cache.evictable != self.kv_noted:
            self.note_kv(t)
        self.plan = None
        version = self.version = self.version + 1
        events = sim.heap
        if sim.next_arrival_s > t and (not events or events[0][0] > t):
            sim.events += 1        # nothing else is due at t (sim.quiet_until_after, inline):
            self.step_start(t)     # start the next one at once
        else:
            sim.seq += 1           # sim.push, inline
            heappush(events, (t, START, sim.seq, self, version))

    def prompt_done(self, i: int, t: float) -> None:
        sim = self.sim
        key = self.running[i]
        self.prefilling.remove(key)
        del self.target[i]
        if self.cache.hash_blocks:
            pinned = self.cache.insert(sim.req.hashes(i), sim.pinned[i], sim.inp[i])
            sim.own[i] -= (pinned - sim.pinned[i]) * self.cache.hash_blocks
            sim.pinned[i] = pinned
        sim.generated[i] += 1
        if self.role == "prefill":
            del self.running[i]
            if sim.out[i] == 1 or sim.generated[i] >= sim.out[i]:
                self.release_request(i)
                self.emit(i, t)
                sim.complete(i, t)
            else:
                self.transferring.add(i)
                sim.handoff(self, i, t)
            return
        self.emit(i, t)
        if sim.generated[i] >= sim.out[i]:
            del self.running[i]
            self.release_request(i)
            sim.complete(i, t)
            return
        self.dec_add(i)

    def finish_decoders(self, t: float) -> None:
        sim = self.sim
        heap, dec, running, G = self.done_heap, self.dec, self.running, self.G
        last_token = sim.last_token
        while heap and heap[0][0] < G:
            _, i, entry = heapq.heappop(heap)
            if dec.get(i) is not entry:
                continue   # a stale entry: the request left (or was preempted) before
            self.dec_remove(i)
            last_token[i] = t
            del running[i]
            self.release_request(i)
            sim.complete(i, t)

    # -- a crash -----------------------------------------------------------------------------
    def crash(self, t: float) -> list[int]:
        """Everything here is lost at t: the iterations that ended count, the one in flight
        does not. Returns the requests to retry; the engine is empty afterwards."""
        sim = self.sim
        plan = self.plan
        last = t
        if plan is not None and plan[0] == "stretch":
            # the iterations begun by t took their blocks at their starts in the reference,
            # the one in flight too: the KV peak counts them before the cache is lost
            self.sync_blocks(t)
            _, t0, k, a, b, s0, n, _ = plan
            done = self.done_in_stretch(t)
            if done:
                sim.gaps.add(a + b * s0, b * n, done, self.cls_count)
                self.G += done
                sim.iterations += done
            last = t0 + _sum_s(done, a, b, s0, n)
        elif plan is not None:
            last = plan[1]
        lost = [key[2] for key in self.waiting] + [i for _, i in self.inbox]
        for i in list(self.running):
            if i in self.dec:
                self.dec_remove(i)
                sim.last_token[i] = last
            lost.append(i)
        lost += sorted(self.transferring)
        return self.forget(sorted(lost), t)


def _below_floor(gap: float, slope: float) -> int:
    """Iterations j = 0, 1, ... whose line stays below the floor: the least k >= 1 with
    ``k * slope >= gap`` (the line at the j-th is ``floor - gap + j * slope``)."""
    k = max(1, math.ceil(gap / slope))
    while k > 1 and (k - 1) * slope >= gap:
        k -= 1
    while k * slope < gap:
        k += 1
    return k


def _sum_s(k: int, a: float, b: float, s0: float, n: int) -> float:
    """Seconds of k decode iterations whose j-th takes a + b * (s0 + n * j)."""
    return k * a + b * (k * s0 + n * k * (k - 1) / 2)


def _first_boundary_at_or_after(dt: float, a: float, b: float, s0: float, n: int) -> int:
    """The least k >= 1 with (sum of the first k iteration times) >= dt (the sums computed
    exactly as :func:`_sum_s` does, inline: this runs once an arrival)."""
    qa, qb = b * n / 2, a + b * s0 - b * n / 2
    if qa > 0:
        k = (-qb + math.sqrt(qb * qb + 4 * qa * dt)) / (2 * qa)
    else:
        k = dt / qb
    k = max(1, math.ceil(k))
    while k > 1:
        j = k - 1
        if j * a + b * (j * s0 + n * j * (j - 1) / 2) < dt:
            break
        k = j
    while k * a + b * (k * s0 + n * k * (k - 1) / 2) < dt:
        k += 1
    return k


def simulate_fast(requests: Requests, perf, cfg: SchedulerConfig, layout: Layout,
                  policy: Policy | None = None, router=None) -> Run:
    """Run ``requests`` through the deployment described by ``layout`` (the fast way);
    ``router`` replaces the policy's router (see :mod:`~schedatrix.serving.cluster.routing`)."""
    return Cluster(requests, perf, cfg, layout, policy, FastEngine, "fast", router).run()
