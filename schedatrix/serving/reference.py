"""The plain reference simulator: every scheduler iteration of every replica, one at a time.

This is the readable statement of how a replica schedules (vLLM's continuous batching, as the
project models it). The fast simulator (:mod:`.engine`) must give the same figures; tests
compare them on the same arrivals.

**A scheduler** (a replica, or one pipeline engine of a replica) holds a waiting queue and a
running batch, both ordered by (class priority, arrival time). Whenever it is free and has
work it starts an iteration at time ``t``:

1. *Running requests*, in that order. A decoding request takes one token of the iteration's
   budget (``max_batched_tokens``) and, when its next token starts a new KV block, one block.
   A request still prefilling its prompt takes the next chunk: as many prompt tokens as the
   budget leaves after one token for every decoding request not yet served (with chunked
   prefill off a prompt is always admitted whole, so no chunk is left over). If the KV cache
   cannot give the blocks, the lowest request (the last in the order) is preempted by
   recompute: it drops all its KV and goes back to the waiting queue, keeping the tokens it
   generated; repeat until the blocks fit, or until the request itself was the one dropped.
2. *Waiting requests*, only if nobody was preempted in this iteration: in order, while the
   batch holds fewer than ``max_batch`` requests and budget is left, admit the first one if
   its first chunk and the KV blocks for it fit (prefix-cache hits first: cached hash blocks
   are not computed again); stop at the first that does not fit. A request that arrived with
   its KV (the decode side of a prefill/decode split) decodes at once.
3. The iteration's time is ``perf.iteration_s(prefill chunks, decoding requests, their
   summed context)``. At its end every decoding request has one more token; a request whose
   prompt (plus, after a preemption, its earlier output) is now all in the cache emits a
   token (its first: TTFT); a request with all its output tokens is done and frees its KV.

**Arrivals** go round-robin over the replicas (over prefill replicas in a split); inside a
replica to the pipeline engine with the fewest unfinished requests. A request longer (prompt
plus output) than the model's context, or that could never fit one engine's KV cache, or
(chunked prefill off) one iteration's budget, is rejected at the door with that reason.
**A split**: when a prompt is done on a prefill replica, its KV cache moves over the link to
the next decode replica (round-robin);
the prefill replica's link sends one transfer at a time; the KV is freed on the prefill side
when the move ends, and the first token leaves then (TTFT includes the move). A request with
one output token needs no move. **Closed loop**: ``users`` requests start at 0; each end
(done or rejected) sends the next request ``think_s`` later.

At one instant, ends of iterations come first, then arrivals, then starts of iterations.
"""

from __future__ import annotations

import heapq

import numpy as np

from .kv_cache import KVCache
from .layout import Layout
from .record import COMPLETED, REJECTED, UNFINISHED, GapRecord, Run
from .replica import SchedulerConfig
from .requests import Requests

__all__ = ["simulate_reference"]


class _Req:
    def __init__(self, i, requests: Requests, prio):
        self.i = i
        self.inp = int(requests.input_tokens[i])
        self.out = int(requests.output_tokens[i])
        self.cls = int(requests.class_id[i])
        self.prio = prio
        self.hashes = requests.hashes(i)
        self.arrival = float("nan")
        self.computed = 0        # tokens whose KV is in the cache
        self.generated = 0       # output tokens emitted
        self.target = 0          # tokens to have in the cache before the next token
        self.own = 0             # own KV blocks
        self.pinned = 0          # prefix-cache hash blocks pinned
        self.decoding = False
        self.ready = False       # arrived with its KV (decode side of a split)
        self.tokens: list[float] = []   # times its output tokens left the server
        self.scheduled = float("nan")
        self.done = float("nan")
        self.status = UNFINISHED
        self.preemptions = 0
        self.replica = -1

    def key(self):
        return (self.prio, self.arrival, self.i)


class _Scheduler:
    def __init__(self, replica: int, role: str, kv_blocks: int, cfg: SchedulerConfig):
        self.replica = replica
        self.role = role
        self.cfg = cfg
        self.cache = KVCache(kv_blocks, cfg.block_tokens, cfg.hash_block_tokens)
        self.waiting: list[_Req] = []
        self.running: list[_Req] = []
        self.in_flight = None     # (end time, [(request, tokens)]) of the running iteration

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.cfg.block_tokens)

    def held(self, r: _Req) -> int:
        return r.own + r.pinned * self.cache.hash_blocks

    def start(self, t: float, perf, stats) -> None:
        cfg, cache = self.cfg, self.cache
        self.running.sort(key=_Req.key)
        self.waiting.sort(key=_Req.key)
        order = list(self.running)
        decs_left = sum(r.decoding for r in order)
        budget = cfg.max_batched_tokens
        batch: list[tuple[_Req, int]] = []
        preempted = False
        k = 0
        while k < len(order):
            r = order[k]
            if r.decoding:
                decs_left -= 1
                tokens = 1
                blocks = 1 if r.computed % cfg.block_tokens == 0 else 0
            else:
                tokens = max(0, min(r.target - r.computed, budget - decs_left))
                blocks = self.blocks_for(r.computed + tokens) - self.held(r) if tokens else 0
            dropped_self = False
            while blocks > cache.available:
                victim = order.pop()
                if victim is not r and victim.decoding:
                    decs_left -= 1
                self.preempt(victim, t, stats)
                preempted = True
                if victim is r:
                    dropped_self = True
                    break
            if dropped_self:
                break
            cache.allocate(blocks)
            r.own += blocks
            if tokens:
                batch.append((r, tokens))
            budget -= tokens
            k += 1
        if not preempted:
            while self.waiting and len(self.running) < cfg.max_batch and budget > 0:
                r = self.waiting[0]
                got = self.try_admit(r, t, budget)
                if got is None:
                    break
                self.waiting.pop(0)
                self.running.append(r)
                batch.append((r, got))
                budget -= got
        if not batch:
            self.in_flight = None
            return
        chunks = [(tok, r.computed) for r, tok in batch if not r.decoding]
        decs = [r for r, _ in batch if r.decoding]
        d = perf.iteration_s(chunks, len(decs), sum(r.computed + 1 for r in decs))
        self.in_flight = (t + d, batch)

    def try_admit(self, r: _Req, t: float, budget: int):
        """Admit r now if its first iteration fits; return the tokens it takes, else None."""
        cache = self.cache
        if r.ready:
            blocks = self.blocks_for(r.computed + 1)
            if blocks > cache.available:
                return None
            cache.allocate(blocks)
            r.own = blocks
            r.ready = False
            r.decoding = True
            return 1
        hits, unpinned = _lookup(cache, r)
        start = hits * cache.hash_block_tokens
        todo = r.inp + r.generated - start
        if self.cfg.chunked_prefill:
            tokens = min(todo, budget)
        elif todo > budget:
            return None
        else:
            tokens = todo
        blocks = self.blocks_for(start + tokens) - hits * cache.hash_blocks
        if blocks + unpinned * cache.hash_blocks > cache.available:
            return None
        r.pinned = cache.match(r.hashes, r.inp) if cache.hash_blocks else 0
        r.computed = start
        cache.allocate(blocks)
        r.own = blocks
        r.target = r.inp + r.generated
        if r.scheduled != r.scheduled:   # NaN: its first prefill starts now
            r.scheduled = t
        return tokens

    def preempt(self, r: _Req, t: float, stats) -> None:
        self.running.remove(r)
        self.free(r)
        r.computed = 0
        r.decoding = False
        r.preemptions += 1
        self.waiting.append(r)
        self.waiting.sort(key=_Req.key)

    def free(self, r: _Req) -> None:
        self.cache.release(r.own)
        r.own = 0
        if r.pinned:
            self.cache.unpin(r.hashes, r.pinned)
            r.pinned = 0


def simulate_reference(requests: Requests, perf, cfg: SchedulerConfig, layout: Layout,
                       keep_tokens: bool = False) -> Run:
    """Run ``requests`` through ``layout`` one iteration at a time (see the module's rules).

    With ``keep_tokens`` the run's ``token_times`` attribute holds every request's token times.
    """
    prios = [c.priority for c in requests.classes]
    reqs = [_Req(i, requests, prios[int(requests.class_id[i])]) for i in range(len(requests))]
    scheds = [[_Scheduler(ri, plan.role, plan.kv_blocks, cfg) for _ in range(plan.engines)]
              for ri, plan in enumerate(layout.replicas)]
    flat = [s for group in scheds for s in group]
    gaps = GapRecord(len(requests.classes))
    reasons: dict = {}
    entry = "prefill" if layout.split else "mixed"
    rr = {"mixed": 0, "prefill": 0, "decode": 0}
    link_free = [0.0] * len(layout.replicas)
    stats = {"iterations": 0, "link_busy": 0.0}
    arrivals: list = []   # heap of (time, seq, request, transfer: (from scheduler, to replica))
    seq = [0]

    def push(t, r, transfer=None):
        seq[0] += 1
        heapq.heappush(arrivals, (t, seq[0], r, transfer))

    closed = requests.closed_loop
    next_closed = [0]
    if closed is None:
        for r in reqs:
            push(float(requests.arrival_s[r.i]), r)
    else:
        for r in reqs[:closed.users]:
            push(0.0, r)
        next_closed[0] = min(closed.users, len(reqs))

    def ended(r: _Req, t: float) -> None:
        if closed is not None and next_closed[0] < len(reqs):
            push(t + closed.think_s, reqs[next_closed[0]])
            next_closed[0] += 1

    def route(role: str) -> int:
        members = layout.of_role(role)
        k = rr[role]
        rr[role] = k + 1
        return members[k % len(members)]

    def enqueue(replica: int, r: _Req) -> None:
        group = scheds[replica]
        s = min(group, key=lambda s: len(s.waiting) + len(s.running))
        s.waiting.append(r)

    def emit(r: _Req, t: float) -> None:
        if r.tokens:
            gaps.add_one(t - r.tokens[-1], r.cls)
        r.tokens.append(t)
        r.generated += 1

    def complete(s: _Scheduler, r: _Req, t: float) -> None:
        s.running.remove(r)
        s.free(r)
        r.status = COMPLETED
        r.done = t
        ended(r, t)

    def finish(s: _Scheduler, t: float) -> None:
        _, batch = s.in_flight
        s.in_flight = None
        stats["iterations"] += 1
        finishing = []
        for r, _ in batch:
            if r.decoding:
                r.computed += 1
                emit(r, t)
                if r.generated >= r.out:
                    finishing.append(r)
        for r, tokens in batch:
            if r.decoding:
                continue
            r.computed += tokens
            if r.computed < r.target:
                continue
            if s.cache.hash_blocks:
                pinned = s.cache.insert(r.hashes, r.pinned, r.inp)
                r.own -= (pinned - r.pinned) * s.cache.hash_blocks
                r.pinned = pinned
            if s.role == "prefill":
                r.generated += 1
                s.running.remove(r)
                if r.out == 1:
                    s.free(r)
                    r.tokens.append(t)
                    r.status, r.done = COMPLETED, t
                    ended(r, t)
                else:
                    d = route("decode")
                    begin = max(t, link_free[s.replica])
                    dur = perf.kv_transfer_s(r.inp, layout.same_node(s.replica, d))
                    link_free[s.replica] = begin + dur
                    stats["link_busy"] += dur
                    push(begin + dur, r, (s, d))
                continue
            emit(r, t)
            if r.generated >= r.out:
                complete(s, r, t)
            else:
                r.decoding = True
        for r in sorted(finishing, key=lambda r: r.i):
            complete(s, r, t)

    kv_t: list[float] = []
    kv_delta: list[int] = []
    noted = {id(s): 0 for s in flat}

    def note_kv(s: _Scheduler, t: float) -> None:
        used = s.cache.used - s.cache.evictable
        if used != noted[id(s)]:
            kv_t.append(t)
            kv_delta.append(used - noted[id(s)])
            noted[id(s)] = used

    while True:
        busy = [s for s in flat if s.in_flight is not None]
        t_end = min((s.in_flight[0] for s in busy), default=float("inf"))
        t_arr = arrivals[0][0] if arrivals else float("inf")
        t = min(t_end, t_arr)
        if t == float("inf"):
            break
        for s in busy:
            if s.in_flight[0] == t:
                finish(s, t)
                note_kv(s, t)
        while arrivals and arrivals[0][0] == t:
            _, _, r, transfer = heapq.heappop(arrivals)
            if transfer is not None:
                src, dest = transfer
                src.free(r)
                note_kv(src, t)
                r.tokens.append(t)   # the first token leaves when the KV has moved
                r.decoding = False
                r.ready = True
                r.computed = r.inp
                enqueue(dest, r)
                continue
            r.arrival = t
            need = -(-(r.inp + r.out) // cfg.block_tokens)
            room = min(layout.replicas[x].kv_blocks for x in layout.of_role(entry))
            if layout.split:
                room = min(room, min(layout.replicas[x].kv_blocks
                                     for x in layout.of_role("decode")))
            reason = None
            if r.inp + r.out > cfg.max_model_len:
                reason = "longer than the model's context"
            elif need > room:
                reason = "needs more KV cache than a replica holds"
            elif not cfg.chunked_prefill and r.inp + r.out > cfg.max_batched_tokens:
                reason = "longer than max_batched_tokens with chunked prefill off"
            if reason:
                r.status = REJECTED
                reasons[(reason, r.cls)] = reasons.get((reason, r.cls), 0) + 1
                ended(r, t)
                continue
            r.replica = route(entry)
            enqueue(r.replica, r)
        for s in flat:
            if s.in_flight is None and (s.waiting or s.running):
                s.start(t, perf, stats)
                note_kv(s, t)

    run = Run(
        requests=requests,
        status=np.array([r.status for r in reqs], dtype=np.int8),
        arrival_s=np.array([r.arrival for r in reqs], dtype=float),
        scheduled_s=np.array([r.scheduled for r in reqs], dtype=float),
        first_token_s=np.array([r.tokens[0] if r.tokens else np.nan for r in reqs]),
        done_s=np.array([r.done for r in reqs], dtype=float),
        preemptions=np.array([r.preemptions for r in reqs], dtype=np.int64),
        replica=np.array([r.replica for r in reqs], dtype=np.int64),
        gaps=gaps,
        reasons=reasons,
        kv_samples=(np.array(kv_t, dtype=float), np.array(kv_delta, dtype=np.int64),
                    sum(s.cache.total_blocks for s in flat)),
        kv_peak_share=max((s.cache.peak_used / s.cache.total_blocks for s in flat
                           if s.cache.total_blocks), default=0.0),
        iterations=stats["iterations"],
        prefix_hit_tokens=sum(s.cache.hit_tokens for s in flat),
        prefix_lookup_tokens=sum(s.cache.lookup_tokens for s in flat),
        link_busy_s=stats["link_busy"],
        implementation="reference",
    )
    if keep_tokens:
        run.token_times = [list(r.tokens) for r in reqs]
    return run


def _lookup(cache: KVCache, r: _Req) -> tuple[int, int]:
    """(cached prefix hash blocks of r, how many of them nobody pins), touching nothing."""
    if not cache.hash_blocks or r.hashes is None:
        return 0, 0
    limit = min(len(r.hashes), (r.inp - 1) // cache.hash_block_tokens)
    hits = unpinned = 0
    while hits < limit and int(r.hashes[hits]) in cache.entries:
        unpinned += cache.entries[int(r.hashes[hits])] == 0
        hits += 1
    return hits, unpinned
