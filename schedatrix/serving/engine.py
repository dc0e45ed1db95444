"""The fast simulator: its cost grows with requests, not with generated tokens.

It follows exactly the scheduling rules of the plain reference (:mod:`.reference`, whose
docstring states them), but while a batch of decoding requests does not change (no arrival,
no completion, no prompt to prefill, KV room enough), it advances the whole stretch of decode
iterations in one event. A decode iteration's time is affine in the batch's summed context
(``a + b * S``, :meth:`PerfModel.decode_line`), and the context grows by the batch size every
iteration, so the stretch's end time is a sum in closed form and its inter-token gaps are one
arithmetic progression (:class:`~.record.GapRecord`). Running requests are kept as aggregates
(count, summed context, completions in a heap, how many need a new KV block at each phase of
the block size), so an ordinary iteration costs O(1) for its decoders.

An arrival in the middle of a stretch cuts it at the first iteration boundary at or after the
arrival, exactly where the reference would first see the new request.
"""

from __future__ import annotations

import heapq
import math
from array import array
from bisect import insort

import numpy as np

from .kv_cache import KVCache
from .layout import Layout
from .record import COMPLETED, REJECTED, UNFINISHED, GapRecord, Run
from .replica import SchedulerConfig
from .requests import Requests

__all__ = ["simulate_fast"]

_END, _ARRIVE, _START = 0, 1, 2   # event kinds, in the order they run at one instant


class _Sim:
    """Everything one run shares: requests' state, the event heap, the router."""

    def __init__(self, requests: Requests, perf, cfg: SchedulerConfig, layout: Layout):
        self.req = requests
        self.perf = perf
        self.cfg = cfg
        self.layout = layout
        n = len(requests)
        self.n = n
        self.inp = requests.input_tokens.tolist()
        self.out = requests.output_tokens.tolist()
        self.cls = requests.class_id.tolist()
        self.prio = [c.priority for c in requests.classes]
        self.n_classes = len(requests.classes)
        nan = float("nan")
        self.arrival = [nan] * n
        self.scheduled = [nan] * n
        self.first_token = [nan] * n
        self.done = [nan] * n
        self.status = [UNFINISHED] * n
        self.preemptions = [0] * n
        self.replica_of = [-1] * n
        self.computed = [0] * n      # tokens in the KV cache (kept up to date off-engine)
        self.generated = [0] * n
        self.pinned = [0] * n        # prefix-cache hash blocks pinned
        self.own = [0] * n           # own KV blocks held
        self.preempted_at = [nan] * n
        self.ready = [False] * n     # arrived with its KV (decode side of a split)
        self.reasons: dict = {}
        self.gaps = GapRecord(self.n_classes)
        self.kv_t = array("d")           # KV use over time: (time, change in blocks in use)
        self.kv_delta = array("q")
        self.heap: list = []
        self.seq = 0
        self.events = 0
        self.iterations = 0
        self.link_free = [0.0] * len(layout.replicas)
        self.link_busy = 0.0
        self.rr = {"mixed": 0, "prefill": 0, "decode": 0}
        self.engines: list[list[_Engine]] = []
        for r, plan in enumerate(layout.replicas):
            self.engines.append([_Engine(self, r, plan.role, plan.kv_blocks)
                                 for _ in range(plan.engines)])
        self.entry_role = "prefill" if layout.split else "mixed"
        self.members = {role: layout.of_role(role) for role in ("mixed", "prefill", "decode")}
        room = min(layout.replicas[r].kv_blocks for r in self.members[self.entry_role])
        if layout.split:
            room = min(room, min(layout.replicas[r].kv_blocks for r in self.members["decode"]))
        self.room_blocks = room
        self.closed = requests.closed_loop
        self.next_closed = 0
        self.lines: dict[int, tuple[float, float]] = {}   # decode_line by batch size
        self.arr_list: list = []     # open-loop arrivals, in order, and the next one's index
        self.nxt = 0

    def quiet_until_after(self, t: float) -> bool:
        """True when no event is due at instant t (nothing must run before a start at t)."""
        if self.nxt < len(self.arr_list) and self.arr_list[self.nxt] <= t:
            return False
        return not self.heap or self.heap[0][0] > t

    # -- events ------------------------------------------------------------------------------
    def push(self, t: float, kind: int, what, version: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, what, version))

    def run(self) -> None:
        if self.closed is None:
            arr = self.req.arrival_s.tolist()   # open loop: arrivals in order, beside the heap
        else:
            arr = []
            first = min(self.closed.users, self.n)
            for i in range(first):
                self.push(0.0, _ARRIVE, i)
            self.next_closed = first
        heap, n_arr = self.heap, len(arr)
        self.arr_list = arr
        while heap or self.nxt < n_arr:
            nxt = self.nxt
            if nxt < n_arr and (not heap or arr[nxt] < heap[0][0] or
                                (arr[nxt] == heap[0][0] and heap[0][1] > _END)):
                self.events += 1
                self.nxt = nxt + 1
                self.arrive(nxt, arr[nxt])
                continue
            t, kind, _, what, version = heapq.heappop(heap)
            self.events += 1
            if kind == _ARRIVE:
                if isinstance(what, _Transfer):
                    self.transferred(what, t)
                else:
                    self.arrive(what, t)
            elif version == what.version:
                if kind == _END:
                    what.step_end(t)
                else:
                    what.step_start(t)

    # -- requests entering and leaving -----------------------------------------------------
    def arrive(self, i: int, t: float) -> None:
        self.arrival[i] = t
        if self.inp[i] + self.out[i] > self.cfg.max_model_len:
            self.reject(i, t, "longer than the model's context")
            return
        need = -(-(self.inp[i] + self.out[i]) // self.cfg.block_tokens)
        if need > self.room_blocks:
            self.reject(i, t, "needs more KV cache than a replica holds")
            return
        if not self.cfg.chunked_prefill and self.inp[i] + self.out[i] > \
                self.cfg.max_batched_tokens:
            self.reject(i, t, "longer than max_batched_tokens with chunked prefill off")
            return
        r = self.route(self.entry_role)
        self.replica_of[i] = r
        self.enqueue(r, i, t)

    def route(self, role: str) -> int:
        """Round-robin over the replicas of a role."""
        replicas = self.members[role]
        k = self.rr[role]
        self.rr[role] = k + 1
        return replicas[k % len(replicas)]

    def enqueue(self, r: int, i: int, t: float) -> None:
        engines = self.engines[r]
        eng = engines[0] if len(engines) == 1 else min(engines, key=_Engine.unfinished)
        eng.add(i, t)

    def reject(self, i: int, t: float, reason: str) -> None:
        self.status[i] = REJECTED
        key = (reason, self.cls[i])
        self.reasons[key] = self.reasons.get(key, 0) + 1
        self.after_end(i, t)

    def complete(self, i: int, t: float) -> None:
        self.status[i] = COMPLETED
        self.done[i] = t
        self.after_end(i, t)

    def after_end(self, i: int, t: float) -> None:
        if self.closed is not None and self.next_closed < self.n:
            self.push(t + self.closed.think_s, _ARRIVE, self.next_closed)
            self.next_closed += 1

    def handoff(self, eng: _Engine, i: int, t: float) -> None:
        """A prompt is done on a prefill replica: its KV moves to a decode replica."""
        d = self.route("decode")
        src = eng.replica
        start = max(t, self.link_free[src])
        dur = self.perf.kv_transfer_s(self.inp[i], self.layout.same_node(src, d))
        self.link_free[src] = start + dur
        self.link_busy += dur
        self.push(start + dur, _ARRIVE, _Transfer(eng, i, d))

    def transferred(self, x: _Transfer, t: float) -> None:
        i = x.i
        x.eng.release_request(i)
        x.eng.sample(t)
        x.eng.wake(t)
        self.first_token[i] = t
        self.replica_of[i] = x.dest if self.replica_of[i] < 0 else self.replica_of[i]
        if self.generated[i] >= self.out[i]:
            self.complete(i, t)
            return
        self.ready[i] = True
        self.enqueue(x.dest, i, t)


class _Transfer:
    __slots__ = ("eng", "i", "dest")

    def __init__(self, eng, i, dest):
        self.eng, self.i, self.dest = eng, i, dest


class _Engine:
    """One scheduler: a replica, or one pipeline engine of a replica."""

    def __init__(self, sim: _Sim, replica: int, role: str, kv_blocks: int):
        cfg = sim.cfg
        self.sim = sim
        self.replica = replica
        self.role = role
        self.B = cfg.block_tokens
        self.cache = KVCache(kv_blocks, cfg.block_tokens, cfg.hash_block_tokens)
        self.waiting: list = []          # heap of (priority, arrival, i)
        self.running: dict = {}          # i -> key (priority, arrival, i): all running
        self.prefilling: list = []       # sorted keys of running requests still prefilling
        self.target: dict[int, int] = {}  # tokens to have in cache before the next sample
        # decoders as aggregates: at step counter g the request had c tokens cached and
        # gen generated; it gains one of each per step.
        self.dec: dict[int, tuple[int, int, int]] = {}
        self.dec_base = 0                # sum of (c - g) over decoders
        self.mod = [0] * self.B          # decoders by (c - g) mod B
        self.done_heap: list = []        # (step counter at which it ends, i)
        self.cls_count = [0] * sim.n_classes
        self.G = 0                       # iterations this engine has run
        self.busy = False
        self.version = 0
        self.plan = None                 # the iteration or stretch in flight
        self.kv_noted = 0                # KV blocks in use at the last sample

    def unfinished(self) -> int:
        return len(self.waiting) + len(self.running)

    # -- arrivals ----------------------------------------------------------------------------
    def add(self, i: int, t: float) -> None:
        sim = self.sim
        heapq.heappush(self.waiting, (sim.prio[sim.cls[i]], sim.arrival[i], i))
        if not self.busy:
            self.busy = True
            self.version += 1
            sim.push(t, _START, self, self.version)
        elif self.plan is not None and self.plan[0] == "stretch":
            self.cut(t)

    def wake(self, t: float) -> None:
        if not self.busy and self.waiting:
            self.busy = True
            self.version += 1
            self.sim.push(t, _START, self, self.version)

    # -- decoders as aggregates -----------------------------------------------------------
    def dec_add(self, i: int) -> None:
        sim = self.sim
        c, gen = sim.computed[i], sim.generated[i]
        self.dec[i] = (self.G, c, gen)
        self.dec_base += c - self.G
        self.mod[(c - self.G) % self.B] += 1
        heapq.heappush(self.done_heap, (self.G + sim.out[i] - gen - 1, i))
        self.cls_count[sim.cls[i]] += 1

    def dec_remove(self, i: int) -> None:
        """Take a decoder out of the aggregates, writing its current state back."""
        sim = self.sim
        g, c, gen = self.dec.pop(i)
        sim.computed[i] = c + self.G - g
        sim.generated[i] = gen + self.G - g
        self.dec_base -= c - g
        self.mod[(c - g) % self.B] -= 1
        self.cls_count[sim.cls[i]] -= 1
        sim.own[i] = -(-sim.computed[i] // self.B) - sim.pinned[i] * self.cache.hash_blocks
        # its entry in done_heap is dropped lazily (see done_top)

    def held(self, i: int) -> int:
        return self.sim.own[i] + self.sim.pinned[i] * self.cache.hash_blocks

    # -- one iteration or a stretch --------------------------------------------------------
    def step_start(self, t: float) -> None:
        sim, cfg, cache, B = self.sim, self.sim.cfg, self.cache, self.B
        n = len(self.dec)
        need_dec = self.mod[(-self.G) % B] if n else 0
        budget = cfg.max_batched_tokens - n
        chunks = []
        need = need_dec
        for key in self.prefilling:
            i = key[2]
            c = min(self.target[i] - sim.computed[i], budget)
            if c <= 0:
                chunks.append((i, 0, 0))
                continue
            blocks = -(-(sim.computed[i] + c) // B) - self.held(i)
            chunks.append((i, c, blocks))
            budget -= c
            need += blocks
        available = cache.total_blocks - cache.used + cache.evictable
        if need > available:
            self.step_exact(t)
            return
        if not self.prefilling and n:
            ends = self.done_top() - self.G + 1
            horizon = self.blocks_horizon(available, ends)
            if self.waiting and cache.hash_blocks and len(self.running) < cfg.max_batch:
                # evicting cached prefixes can change what the queue's head needs: stretch
                # only while the decoders' new blocks come from free room
                horizon = self.blocks_horizon(cache.total_blocks - cache.used, horizon)
            if horizon and not self.admissible(available - need_dec, budget):
                self.start_stretch(t, n, horizon)
                return
        cache.allocate(need)
        for i, _, blocks in chunks:
            sim.own[i] += blocks
        chunks = [(i, c) for i, c, _ in chunks if c > 0]
        new_dec: list[int] = []
        self.admit(t, budget, chunks, new_dec)
        self.launch(t, chunks, new_dec)

    def admissible(self, available: int, budget: int) -> bool:
        """Would the waiting queue's head be admitted now? (no side effects)"""
        if not self.waiting or len(self.running) >= self.sim.cfg.max_batch or budget <= 0:
            return False
        tokens, _, room = self.first_chunk(self.waiting[0][2], budget)
        return tokens is not None and room <= available

    def first_chunk(self, i: int, budget: int):
        """(tokens, blocks, room) of request i's first iteration here: tokens None if the
        budget can't take it; ``room`` = the KV room it needs (its blocks, plus the cached
        prefix entries it would pin that now count as free)."""
        sim, cache, B = self.sim, self.cache, self.B
        if sim.ready[i]:   # arrived with its KV: decodes at once
            blocks = -(-(sim.computed[i] + 1) // B)
            return 1, blocks, blocks
        target = sim.inp[i] + sim.generated[i]
        hits, unpinned = _peek_hits(cache, sim.req.hashes(i), sim.inp[i])
        start = hits * cache.hash_block_tokens
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
        """Admit waiting requests in (class, arrival) order while they fit."""
        sim, cfg, cache = self.sim, self.sim.cfg, self.cache
        while self.waiting and len(self.running) < cfg.max_batch and budget > 0:
            prio, arr, i = self.waiting[0]
            tokens, blocks, room = self.first_chunk(i, budget)
            if tokens is None or room > cache.available:
                break
            heapq.heappop(self.waiting)
            key = (prio, arr, i)
            self.running[i] = key
            if sim.ready[i]:
                sim.ready[i] = False
                cache.allocate(blocks)
                sim.own[i] = blocks
                self.dec_add(i)
                new_dec.append(i)
            else:
                hits = cache.match(sim.req.hashes(i), sim.inp[i]) if cache.hash_blocks else 0
                sim.pinned[i] = hits
                sim.computed[i] = hits * cache.hash_block_tokens
                cache.allocate(blocks)
                sim.own[i] = blocks
                self.target[i] = sim.inp[i] + sim.generated[i]
                insort(self.prefilling, key)
                chunks.append((i, tokens))
                if sim.scheduled[i] != sim.scheduled[i]:   # NaN: first time
                    sim.scheduled[i] = t
            budget -= tokens
        return budget

    def step_exact(self, t: float) -> None:
        """An iteration short of KV room: walk the running requests in (class, arrival)
        order, preempting the lowest (last) until each fits, as the reference does."""
        sim, cfg, cache, B = self.sim, self.sim.cfg, self.cache, self.B
        order = sorted(self.running.values())
        decs_left = len(self.dec)
        budget = cfg.max_batched_tokens
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
                tokens, blocks = 1, (1 if (c + self.G - g) % B == 0 else 0)
            else:
                tokens = max(0, min(self.target[i] - sim.computed[i], budget - decs_left))
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
                budget -= tokens
                k += 1
                continue
            break   # the request itself was preempted: everything after it is gone too
        new_dec: list[int] = []
        if not preempted:
            self.admit(t, budget, chunks, new_dec)
        self.launch(t, chunks, new_dec)

    def preempt(self, i: int, t: float) -> None:
        """Recompute preemption: the request loses its KV and waits again, first in line."""
        sim = self.sim
        if i in self.dec:
            self.dec_remove(i)
        else:
            self.prefilling.remove(next(k for k in self.prefilling if k[2] == i))
            del self.target[i]
        del self.running[i]
        self.release_request(i)
        sim.computed[i] = 0
        sim.preemptions[i] += 1
        sim.preempted_at[i] = t
        heapq.heappush(self.waiting, (sim.prio[sim.cls[i]], sim.arrival[i], i))

    def release_request(self, i: int) -> None:
        sim, cache = self.sim, self.cache
        cache.release(sim.own[i])
        sim.own[i] = 0
        if sim.pinned[i]:
            cache.unpin(sim.req.hashes(i), sim.pinned[i])
            sim.pinned[i] = 0

    def launch(self, t: float, chunks: list, new_dec: list) -> None:
        """Start one iteration of the prefill chunks and every decoder."""
        sim = self.sim
        n = len(self.dec)
        if not chunks and not n:
            self.busy = False
            self.plan = None
            return
        ctx = self.dec_base + n * (self.G + 1)
        pre = [(c, sim.computed[i]) for i, c in chunks]
        d = sim.perf.iteration_s(pre, n, ctx)
        self.plan = ("step", t, chunks, new_dec)
        self.version += 1
        sim.push(t + d, _END, self, self.version)
        self.sample(t)

    def start_stretch(self, t: float, n: int, horizon: int) -> None:
        """Plan ``horizon`` pure-decode iterations from t (up to the first completion, or as
        many as the KV room allows)."""
        k = horizon
        sim = self.sim
        line = sim.lines.get(n)
        if line is None:
            line = sim.lines[n] = sim.perf.decode_line(n)
        a, b = line
        s0 = self.dec_base + n * (self.G + 1)
        self.plan = ["stretch", t, k, a, b, s0, n]
        self.version += 1
        sim.push(t + k * a + b * (k * s0 + n * k * (k - 1) / 2), _END, self, self.version)

    def done_top(self) -> int:
        """The step counter at which the next decoder ends (dropping stale heap entries)."""
        heap = self.done_heap
        while True:
            g_done, i = heap[0]
            if i in self.dec and self.ends_at(i) == g_done:
                return g_done
            heapq.heappop(heap)

    def ends_at(self, i: int) -> int:
        g, _, gen = self.dec[i]
        return g + self.sim.out[i] - gen - 1

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

    def cut(self, t: float) -> None:
        """An arrival at t inside a stretch: end it at the first boundary at or after t."""
        _, t0, k, a, b, s0, n = self.plan
        if t <= t0 or len(self.running) >= self.sim.cfg.max_batch:
            return   # a full batch admits nobody until someone ends: the stretch stands
        kk = _first_boundary_at_or_after(t - t0, a, b, s0, n)
        if kk < k:
            self.plan[2] = kk
            self.version += 1
            self.sim.push(_stretch_end(t0, kk, a, b, s0, n), _END, self, self.version)

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
        sim = self.sim
        plan = self.plan
        if plan[0] == "stretch":
            _, t0, k, a, b, s0, n = plan
            self.cache.allocate(self.need_over(k))
            gaps = sim.gaps
            gaps.first.append(a + b * s0)
            gaps.step.append(b * n)
            gaps.count.append(k)
            gaps.weights.extend(self.cls_count)
            self.G += k
            sim.iterations += k
        else:
            _, t0, chunks, new_dec = plan
            d = t - t0
            weights = list(self.cls_count)
            for i in new_dec:
                weights[sim.cls[i]] -= 1
                sim.gaps.add_one(t - sim.first_token[i], sim.cls[i])
            sim.gaps.add(d, 0.0, 1, weights)
            self.G += 1
            sim.iterations += 1
            for i, c in chunks:
                sim.computed[i] += c
                if sim.computed[i] >= self.target[i]:
                    self.prompt_done(i, t)
        heap = self.done_heap
        if heap and heap[0][0] < self.G:
            self.finish_decoders(t)
        used = self.cache.used - self.cache.evictable
        if used != self.kv_noted:
            self.sample(t)
        self.plan = None
        self.version += 1
        if sim.quiet_until_after(t):
            sim.events += 1
            self.step_start(t)     # nothing else happens at t: start the next one at once
        else:
            sim.push(t, _START, self, self.version)

    def prompt_done(self, i: int, t: float) -> None:
        sim = self.sim
        self.prefilling.remove((sim.prio[sim.cls[i]], sim.arrival[i], i))
        del self.target[i]
        if self.cache.hash_blocks:
            pinned = self.cache.insert(sim.req.hashes(i), sim.pinned[i], sim.inp[i])
            sim.own[i] -= (pinned - sim.pinned[i]) * self.cache.hash_blocks
            sim.pinned[i] = pinned
        sim.generated[i] += 1
        if sim.generated[i] == 1:
            if self.role != "prefill":
                sim.first_token[i] = t
        else:
            sim.gaps.add_one(t - sim.preempted_at[i], sim.cls[i])
        if self.role == "prefill":
            del self.running[i]
            if sim.out[i] == 1:
                self.release_request(i)
                sim.first_token[i] = t
                sim.complete(i, t)
            else:
                sim.handoff(self, i, t)
            return
        if sim.generated[i] >= sim.out[i]:
            del self.running[i]
            self.release_request(i)
            sim.complete(i, t)
            return
        self.dec_add(i)

    def finish_decoders(self, t: float) -> None:
        sim = self.sim
        heap = self.done_heap
        while heap and heap[0][0] < self.G:
            g_done, i = heapq.heappop(heap)
            if i not in self.dec or self.ends_at(i) != g_done:
                continue   # a stale entry: the request left (or was preempted) before
            self.dec_remove(i)
            del self.running[i]
            self.release_request(i)
            sim.complete(i, t)

    def sample(self, t: float) -> None:
        """Note the engine's KV blocks in use (held by requests) when they changed."""
        used = self.cache.used - self.cache.evictable
        if used != self.kv_noted:
            self.sim.kv_t.append(t)
            self.sim.kv_delta.append(used - self.kv_noted)
            self.kv_noted = used


def _peek_hits(cache: KVCache, hashes, prompt_tokens: int) -> tuple[int, int]:
    """(cached prefix hash blocks, how many of them nobody pins) without touching the cache."""
    if not cache.hash_blocks or hashes is None:
        return 0, 0
    limit = min(len(hashes), (prompt_tokens - 1) // cache.hash_block_tokens)
    hits = unpinned = 0
    while hits < limit:
        pins = cache.entries.get(int(hashes[hits]))
        if pins is None:
            break
        unpinned += pins == 0
        hits += 1
    return hits, unpinned


def _stretch_end(t0: float, k: int, a: float, b: float, s0: float, n: int) -> float:
    """Time after k decode iterations whose j-th takes a + b * (s0 + n * j)."""
    return t0 + k * a + b * (k * s0 + n * k * (k - 1) / 2)


def _first_boundary_at_or_after(dt: float, a: float, b: float, s0: float, n: int) -> int:
    """The least k >= 1 with (sum of the first k iteration times) >= dt."""
    qa, qb = b * n / 2, a + b * s0 - b * n / 2
    if qa > 0:
        k = (-qb + math.sqrt(qb * qb + 4 * qa * dt)) / (2 * qa)
    else:
        k = dt / qb
    k = max(1, math.ceil(k))
    while k > 1 and _stretch_end(0.0, k - 1, a, b, s0, n) >= dt:
        k -= 1
    while _stretch_end(0.0, k, a, b, s0, n) < dt:
        k += 1
    return k


def simulate_fast(requests: Requests, perf, cfg: SchedulerConfig, layout: Layout) -> Run:
    """Run ``requests`` through the deployment described by ``layout`` (the fast way)."""
    sim = _Sim(requests, perf, cfg, layout)
    sim.run()
    return _record(sim, "fast")


def _record(sim: _Sim, implementation: str) -> Run:
    engines = [e for es in sim.engines for e in es]
    peak = max((e.cache.peak_used / e.cache.total_blocks for e in engines
                if e.cache.total_blocks), default=0.0)
    return Run(
        requests=sim.req,
        status=np.array(sim.status, dtype=np.int8),
        arrival_s=np.array(sim.arrival, dtype=float),
        scheduled_s=np.array(sim.scheduled, dtype=float),
        first_token_s=np.array(sim.first_token, dtype=float),
        done_s=np.array(sim.done, dtype=float),
        preemptions=np.array(sim.preemptions, dtype=np.int64),
        replica=np.array(sim.replica_of, dtype=np.int64),
        gaps=sim.gaps,
        reasons=dict(sim.reasons),
        kv_peak_share=peak,
        kv_samples=(np.frombuffer(sim.kv_t, dtype=float).copy(),
                    np.frombuffer(sim.kv_delta, dtype=np.int64).copy(),
                    sum(e.cache.total_blocks for e in engines)),
        iterations=sim.iterations,
        events=sim.events,
        prefix_hit_tokens=sum(e.cache.hit_tokens for e in engines),
        prefix_lookup_tokens=sum(e.cache.lookup_tokens for e in engines),
        link_busy_s=sim.link_busy,
        implementation=implementation,
    )


__all__ += ["COMPLETED", "REJECTED"]
