"""The fleet around the schedulers: events, the front door, routing, the prefill/decode link,
faults, retries and the run's record. Both simulators share it; they differ only in how a
scheduler advances (every iteration in :mod:`.reference`, stretches in :mod:`.engine`).

Events at one instant run in this order: ends of iterations, faults, arrivals (fresh, retried,
KV moves done), starts of iterations.
"""

from __future__ import annotations

import heapq
from array import array

import numpy as np

from ..cluster.admission import FrontDoor
from ..cluster.faults import check_faults
from ..cluster.layout import Layout
from ..cluster.policy import Policy
from ..cluster.routing import RoundRobin, make_router
from ..figures.record import COMPLETED, FAILED, REJECTED, UNFINISHED, GapRecord, Run
from ..load.requests import Requests
from ..replica.knobs import SchedulerConfig
from ..replica.lora import ADAPTER_META, draw_adapters
from ..replica.speculation import AcceptanceDraws

__all__ = ["Cluster", "END", "FAULT", "ARRIVE", "START"]

END, FAULT, ARRIVE, START = 0, 1, 2, 3   # event kinds, in the order they run at one instant
RETRIES_SPENT = "retries exhausted"
NO_REPLICA = "no replica up"


def _zeros(n: int) -> array:
    return array("q", bytes(8 * n))


def _floats(n: int) -> array:
    """n NaNs (times not reached yet)."""
    return array("d", [float("nan")]) * n


class _Transfer:
    __slots__ = ("eng", "i", "dest", "epoch", "tokens")

    def __init__(self, eng, i, dest, epoch, tokens):
        self.eng, self.i, self.dest, self.epoch, self.tokens = eng, i, dest, epoch, tokens


class _Retry:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _Entry:
    """A request reaching the scheduler's side after the front end and tokenization."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _View:
    """A replica as a router sees it."""

    __slots__ = ("index", "engines")

    def __init__(self, index, engines):
        self.index, self.engines = index, engines

    def target(self):
        es = self.engines
        return es[0] if len(es) == 1 else min(es, key=lambda e: e.unfinished())

    def outstanding_tokens(self, t):
        es = self.engines       # one engine but for pipelines: asked on every arrival
        return es[0].outstanding_tokens(t) if len(es) == 1 else \
            sum(e.outstanding_tokens(t) for e in es)

    def prefix_hit_tokens(self, hashes, prompt_tokens, t):
        return self.target().prefix_hit_tokens(hashes, prompt_tokens, t)

    def waiting_count(self):
        return sum(e.waiting_count() for e in self.engines)

    def queued_prefill_tokens(self):
        return sum(e.queued_prefill_tokens() for e in self.engines)


class _RequestView:
    __slots__ = ("prompt_tokens", "hashes", "session")


class Cluster:
    """One run: ``engine_cls`` is the scheduler (fast or reference); ``router``, when given,
    replaces the policy's router by name (any object with ``choose(request, replicas, t)``).
    ``perf`` is the performance model of every replica, or a mapping from a replica's role
    (``mixed``, ``prefill``, ``decode``) to its own (a split whose two sides differ)."""

    # what the schedulers read at every event, in slots (faster than this large a dict); the
    # per-request lists and the rest stay in the instance's dict (a live run grows them)
    __slots__ = ("heap", "seq", "events", "iterations", "next_arrival_s", "link", "gaps",
                 "kv_last_t", "kv_t", "kv_delta", "client", "cfg", "door", "entry_views",
                 "engines", "up", "router", "closed", "__dict__")

    def __init__(self, requests: Requests, perf, cfg: SchedulerConfig, layout: Layout,
                 policy: Policy | None, engine_cls, implementation: str, router=None):
        policy = policy or Policy()
        self.perfs = (dict(perf) if isinstance(perf, dict)
                      else {role: perf for role in ("mixed", "prefill", "decode")})
        self.entry_role = "prefill" if layout.split else "mixed"
        perf = self.perf = self.perfs[self.entry_role]   # the side requests enter
        self.lines: dict[str, dict] = {role: {} for role in self.perfs}
        self.req, self.cfg, self.layout, self.policy = requests, cfg, layout, policy
        self.implementation = implementation
        n = self.n = len(requests)
        # per request: what the schedulers read most in lists (read fastest), the rest in
        # typed arrays (8 bytes or 1 a request, no Python object each)
        self.inp = requests.input_tokens.tolist()
        self.out = requests.output_tokens.tolist()
        self.cls = requests.class_id.tolist()
        self.prio = [c.priority for c in requests.classes]
        self.n_classes = len(requests.classes)
        nan = float("nan")
        self.arrival = [nan] * n         # read by every queue's ordering
        path = getattr(policy, "client_path", None)
        self.client = None if path is None or path.off else path   # the client's side
        self.sent = [nan] * n            # when the client sent it (with a client path)
        self.scheduled = _floats(n)
        self.first_token = [nan] * n     # read at every token by the reference
        self.last_token = [nan] * n      # when its latest token left (for the next gap)
        self.done = _floats(n)
        self.status = array("b", bytes([UNFINISHED])) * n
        self.preemptions = _zeros(n)
        self.attempts = _zeros(n)        # times lost in a crash
        self.replica_of = array("q", [-1]) * n
        self.computed = [0] * n          # tokens in the KV cache (kept up to date off-engine)
        self.generated = [0] * n
        self.pinned = [0] * n            # prefix-cache hash blocks pinned
        self.own = [0] * n               # own KV blocks held
        self.ready = bytearray(n)        # arrived with its KV (decode side of a split)
        self.swapped = bytearray(n)      # its KV is in host memory
        self.session = array("q", [-1]) * n
        self.reasons: dict = {}
        self.has_hashes = requests.hash_offsets is not None
        self.gaps = GapRecord(self.n_classes)
        self.kv_t = array("d")           # KV use over time: (time, change in blocks in use)
        self.kv_delta = array("q")
        self.kv_last_t = float("nan")    # the time of the last KV note (NaN: none yet)
        self.heap: list = []
        self.seq = 0
        self.events = 0
        self.iterations = 0
        self.retried = 0
        self.link_free = [0.0] * len(layout.replicas)
        self.link_busy = 0.0
        spec = next((p.spec for p in self.perfs.values() if getattr(p, "spec", None)), None)
        self.spec_draws = (AcceptanceDraws(policy.seed, spec.accept, spec.tokens)
                           if spec is not None and spec.on else None)
        # the LoRA adapter each request uses (..replica.lora): its load's, its class's, or drawn
        self.adapter = (draw_adapters(n, cfg.lora, policy.seed, requests.meta.get(ADAPTER_META),
                                      requests.class_id) if cfg.lora is not None else None)
        self.engines = [[engine_cls(self, r, plan.role, plan.kv_blocks)
                         for _ in range(plan.engines)]
                        for r, plan in enumerate(layout.replicas)]
        self.views = [_View(r, es) for r, es in enumerate(self.engines)]
        self.members = {role: layout.of_role(role) for role in ("mixed", "prefill", "decode")}
        room = min(layout.replicas[r].kv_blocks for r in self.members[self.entry_role])
        if layout.split:
            room = min(room, min(layout.replicas[r].kv_blocks for r in self.members["decode"]))
        self.room_blocks = room
        self.router = make_router(policy.router, policy.seed) if router is None else router
        self.entry_views: list | None = None   # the entry replicas routable now
        self.decode_rr = 0
        full = perf.iteration_s([(cfg.max_batched_tokens, 0)], 0, 0)
        self.door = (FrontDoor(policy.admission, requests.classes,
                               cfg.max_batched_tokens / full)
                     if policy.admission.active else None)
        # replica health: up (serving), noticed down (the router skips it), draining, gone
        nr = len(layout.replicas)
        self.up = [True] * nr
        self.noticed = [False] * nr
        self.draining = [False] * nr
        self.drain_down: list = [None] * nr
        self.drain_entry: dict = {}
        self.gone = [False] * nr
        self.notice_at = [0.0] * nr
        self.epoch = [0] * nr            # crashes so far: a KV move from an older epoch is lost
        self.link: dict[int, tuple[float, float | None]] = {}   # node -> (until, slowdown)
        # seconds a replica's restart takes (engine start, weights on its side's GPUs, ...)
        self.restart_s = [policy.resilience.restart.total_s(
            getattr(self.perfs[plan.role], "weights_bytes_per_gpu", 0.0))
            for plan in layout.replicas]
        self.faults = check_faults(policy.faults, layout)
        self.fault_log: list[dict] = []
        self.closed = requests.closed_loop
        self.next_closed = 0
        self.nxt = 0                     # open-loop arrivals taken (after the run), and the
        #                                  next one's time
        self.next_arrival_s = float("inf")

    # -- events ------------------------------------------------------------------------------
    def push(self, t: float, kind: int, what, version: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, what, version))

    def quiet_until_after(self, t: float) -> bool:
        """True when no event is due at instant t (nothing must run before a start at t)."""
        return self.next_arrival_s > t and (not self.heap or self.heap[0][0] > t)

    def run(self) -> Run:
        if self.closed is None:
            # open loop: arrivals in order, beside the heap
            arr = array("d", np.ascontiguousarray(self.req.arrival_s, dtype=float).tobytes())
        else:
            arr = array("d")
            first = min(self.closed.users, self.n)
            for i, at in enumerate(self.closed.first_sends_s(first)):
                self.session[i] = i
                self.push(at, ARRIVE, i)
            self.next_closed = first
        for f in self.faults:
            self.push(f.at_s, FAULT, ("start", f))
        heap, n_arr, pop, arrive = self.heap, len(arr), heapq.heappop, self.arrive
        dispatch = self.dispatch
        inf = float("inf")
        nxt = events = 0        # arrivals taken, events run here (added at the end)
        a = self.next_arrival_s = arr[0] if n_arr else inf   # the next open-loop arrival
        while True:
            if heap:
                top = heap[0]
                # the arrival first unless an event of an earlier kind is due at its time
                take = a < top[0] or (a == top[0] and top[1] >= ARRIVE and nxt < n_arr)
            elif nxt < n_arr:
                take = True
            else:
                break
            if take:
                events += 1
                nxt += 1
                i, t = nxt - 1, a
                a = self.next_arrival_s = arr[nxt] if nxt < n_arr else inf
                arrive(i, t)
                continue
            t, kind, _, what, version = pop(heap)
            if kind == END:          # dispatch's commonest cases, inline
                events += 1
                if version == what.version:
                    what.step_end(t)
            elif kind == START:
                events += 1
                if version == what.version:
                    what.step_start(t)
            elif type(what) is _Entry:   # ARRIVE, past the client's path
                events += 1
                self.enter(what.i, t)
            else:
                dispatch(t, kind, what, version)
        self.nxt = nxt
        self.events += events
        return self.record()

    def dispatch(self, t: float, kind: int, what, version: int) -> None:
        """Run one event taken off the heap (:meth:`run`'s loop; a live driver steps the
        fleet with it, :mod:`schedatrix.serving.live.driver`)."""
        self.events += 1
        if kind == ARRIVE:
            if type(what) is int:
                self.arrive(what, t)
            elif type(what) is _Entry:
                self.enter(what.i, t)
            elif type(what) is _Retry:
                self.retry(what.i, t)
            else:
                self.transferred(what, t)
        elif kind == FAULT:
            self.fault_event(what, t)
        elif version == what.version:
            if kind == END:
                what.step_end(t)
            else:
                what.step_start(t)

    # -- the front door ------------------------------------------------------------------------
    def arrive(self, i: int, t: float) -> None:
        """The client sends request i at t; with a client path it reaches the scheduler's
        side after the front end and the prompt's tokenization."""
        client = self.client
        if client is not None:
            self.sent[i] = t
            seq = self.seq = self.seq + 1       # self.push, inline
            heapq.heappush(self.heap, (t + client.ingress_s(self.inp[i]), ARRIVE, seq,
                                       _Entry(i), 0))
            return
        self.enter(i, t)

    def enter(self, i: int, t: float) -> None:
        self.arrival[i] = t
        inp, out, cfg = self.inp[i], self.out[i], self.cfg
        if inp + out > cfg.max_model_len:
            self.reject(i, t, "longer than the model's context")
            return
        if -(-(inp + out) // cfg.block_tokens) > self.room_blocks:
            self.reject(i, t, "needs more KV cache than a replica holds")
            return
        if not cfg.chunked_prefill and inp + out > cfg.max_batched_tokens:
            self.reject(i, t, "longer than max_batched_tokens with chunked prefill off")
            return
        door = self.door
        if door is not None:
            reason = door.at_door(self.cls[i], t)
            if reason:
                self.reject(i, t, reason)
                return
        r = self.route(i, t)
        if r is None:
            self.lost(i, t, None)
            return
        if door is not None:
            view = self.views[r]
            reason = door.at_replica(self.cls[i], view.waiting_count(),
                                     view.queued_prefill_tokens(), inp)
            if reason:
                self.reject(i, t, reason)
                return
        if self.replica_of[i] < 0:
            self.replica_of[i] = r
        self.send(i, r, t)

    def route(self, i: int, t: float) -> int | None:
        """The entry replica for request i (None when no replica takes requests)."""
        members = self.entry_views
        if members is None:      # health changed since the last look
            members = self.entry_views = [self.views[r] for r in self.members[self.entry_role]
                                          if self.routable(r)]
        if not members:
            return None
        if len(members) == 1:
            return members[0].index
        router = self.router
        if type(router) is RoundRobin:      # RoundRobin.choose, inline: it reads no request
            k = router.turn
            router.turn = k + 1
            return members[k % len(members)].index
        rv = _RequestView()
        rv.prompt_tokens = self.inp[i]
        rv.hashes = self.req.hashes(i) if self.has_hashes else None
        rv.session = self.session[i]
        return self.router.choose(rv, members, t)

    def routable(self, r: int) -> bool:
        return not (self.noticed[r] or self.draining[r] or self.gone[r])

    def send(self, i: int, r: int, t: float) -> None:
        if not self.up[r]:                 # crashed, not noticed yet: the request is lost
            self.lost(i, t, r)
            return
        es = self.engines[r]
        (es[0] if len(es) == 1 else self.views[r].target()).add(i, t)

    def retry(self, i: int, t: float) -> None:
        """A lost request tries again (no admission checks: it was admitted once)."""
        self.retried += 1
        r = self.route(i, t)
        if r is None:
            self.lost(i, t, None)
            return
        self.send(i, r, t)

    def lost(self, i: int, t: float, r: int | None) -> None:
        """Request i lost its place (a crash, or nowhere to go): retry, or fail."""
        self.computed[i] = 0
        self.ready[i] = False
        self.swapped[i] = False
        self.attempts[i] += 1
        if self.attempts[i] > self.policy.resilience.retry_budget:
            self.fail(i, t, RETRIES_SPENT)
            return
        res = self.policy.resilience
        when = max(t, self.notice_at[r]) if r is not None else t
        self.push(when + res.backoff_s * 2 ** (self.attempts[i] - 1), ARRIVE, _Retry(i))

    def reject(self, i: int, t: float, reason: str) -> None:
        self.status[i] = REJECTED
        self._count(reason, i)
        self.after_end(i, t)

    def fail(self, i: int, t: float, reason: str) -> None:
        self.status[i] = FAILED
        self._count(reason, i)
        self.after_end(i, t)

    def _count(self, reason: str, i: int) -> None:
        key = (reason, self.cls[i])
        self.reasons[key] = self.reasons.get(key, 0) + 1

    def complete(self, i: int, t: float) -> None:
        self.status[i] = COMPLETED
        self.done[i] = t
        if self.closed is not None:
            self.after_end(i, t)

    def after_end(self, i: int, t: float) -> None:
        if self.closed is not None and self.next_closed < self.n:
            nxt = self.next_closed
            self.session[nxt] = self.session[i]
            back = t + (self.client.egress_s if self.client is not None else 0.0)
            self.push(back + self.closed.think_s, ARRIVE, nxt)
            self.next_closed += 1

    def emptied(self, replica: int, t: float) -> None:
        """An engine of ``replica`` has nothing left: a draining replica may leave now."""
        if self.draining[replica] and all(e.unfinished() == 0 and not e.busy and
                                          not e.transferring for e in self.engines[replica]):
            self.leave(replica, t)

    # -- the prefill/decode link ---------------------------------------------------------------
    def handoff(self, eng, i: int, t: float) -> None:
        """A prompt is done on a prefill replica: its KV moves to a decode replica."""
        members = [r for r in self.members["decode"] if self.routable(r)]
        if not members:
            eng.release_request(i)
            eng.note_kv(t)
            self.lost(i, t, None)
            return
        d = members[self.decode_rr % len(members)]
        self.decode_rr += 1
        src = eng.replica
        tokens = self.computed[i]
        same = self.layout.same_node(src, d)
        start = max(t, self.link_free[src])
        dur = self.perf.kv_transfer_s(tokens, same) if self.perfs["decode"] is self.perf else \
            self.perf.kv_transfer_s(tokens, same, to=self.perfs["decode"])
        if not same:
            start, dur = self.over_links(src, d, start, dur)
        self.link_free[src] = start + dur
        self.link_busy += dur
        self.push(start + dur, ARRIVE, _Transfer(eng, i, d, self.epoch[src], tokens))

    def over_links(self, a: int, b: int, start: float, dur: float) -> tuple[float, float]:
        """A move between nodes during a link fault: wait for a link that is down, or take
        ``slowdown`` times as long."""
        for node in set(self.layout.replicas[a].nodes) | set(self.layout.replicas[b].nodes):
            state = self.link.get(node)
            if state is None or start >= state[0]:
                continue
            until, slow = state
            if slow is None:
                start = until
            else:
                dur *= slow
        return start, dur

    def transferred(self, x: _Transfer, t: float) -> None:
        i, src = x.i, x.eng.replica
        if self.epoch[src] != x.epoch:        # the prefill replica crashed: the KV is gone
            return                            # (the crash already retried the request)
        x.eng.release_request(i)
        x.eng.note_kv(t)
        x.eng.wake(t)
        self.emptied(src, t)
        if self.first_token[i] != self.first_token[i]:
            self.first_token[i] = t
        self.last_token[i] = t
        if self.generated[i] >= self.out[i]:
            self.complete(i, t)
            return
        if not self.up[x.dest]:
            self.lost(i, t, x.dest)
            return
        self.computed[i] = x.tokens
        self.ready[i] = True
        self.views[x.dest].target().add(i, t)

    # -- time an iteration loses to a link fault ----------------------------------------------
    def iteration_extra(self, replica: int, t: float, tokens: int) -> float:
        """Seconds added to an iteration of ``replica`` starting at t: its pipeline's sends
        across a node whose link is down (wait for it) or slow."""
        if not self.link:
            return 0.0
        nodes = self.layout.replicas[replica].nodes
        if len(nodes) < 2:
            return 0.0
        extra = 0.0
        for node in nodes:
            state = self.link.get(node)
            if state is None or t >= state[0]:
                continue
            until, slow = state
            if slow is None:
                extra = max(extra, until - t)
            else:
                cross = getattr(self.perfs[self.layout.replicas[replica].role],
                                "cross_node_send_s", None)
                extra = max(extra, (slow - 1) * cross(tokens) if cross else 0.0)
        return extra

    def link_down_for(self, replica: int, t: float) -> bool:
        """A link that ``replica``'s pipeline crosses is down at t."""
        nodes = self.layout.replicas[replica].nodes
        return len(nodes) > 1 and any(
            self.link.get(n) is not None and self.link[n][1] is None and t < self.link[n][0]
            for n in nodes)

    # -- faults ------------------------------------------------------------------------------
    def fault_event(self, what, t: float) -> None:
        self.entry_views = None
        kind = what[0]
        if kind == "start":
            f = what[1]
            entry = {"fault": f.text(), "kind": f.kind, "at_s": f.at_s, "until_s": None,
                     "replicas": []}
            self.fault_log.append(entry)
            if f.kind == "worker":
                entry["replicas"] = [f.target]
                entry["until_s"] = self.crash(f.target, t, f.down_s)
            elif f.kind == "node":
                for r, plan in enumerate(self.layout.replicas):
                    if f.target in plan.nodes:
                        entry["replicas"].append(r)
                        entry["until_s"] = self.crash(r, t, f.down_s)
            elif f.kind == "link":
                entry["until_s"] = t + f.down_s
                entry["replicas"] = [r for r, plan in enumerate(self.layout.replicas)
                                     if f.target in plan.nodes]
                self.link[f.target] = (t + f.down_s, f.slowdown)
                self.push(t + f.down_s, FAULT, ("link-up", f.target, t + f.down_s))
                self.relink(t)
            else:
                entry["replicas"] = [f.target]
                self.draining[f.target] = True
                self.drain_down[f.target] = f.down_s
                self.drain_entry[f.target] = entry
                self.emptied(f.target, t)
        elif kind == "notice":
            r, epoch = what[1], what[2]
            if self.epoch[r] == epoch and not self.up[r]:
                self.noticed[r] = True
        elif kind == "back":
            r = what[1]
            self.up[r] = True
            self.noticed[r] = False
            self.draining[r] = False
            for e in self.engines[r]:
                e.reset()
        elif kind == "link-up":
            node, until = what[1], what[2]
            if self.link.get(node, (None,))[0] == until:
                del self.link[node]
                self.relink(t)

    def relink(self, t: float) -> None:
        """A link changed: stretches of the replicas it touches end at their next boundary."""
        for r in range(len(self.layout.replicas)):
            if len(self.layout.replicas[r].nodes) > 1:
                for e in self.engines[r]:
                    e.cut(t, force=True)

    def crash(self, r: int, t: float, down_s: float) -> float:
        """Replica r crashes: everything on it is lost and retried once the crash is noticed.
        Returns when it is back."""
        self.up[r] = False
        self.epoch[r] += 1
        self.notice_at[r] = t + self.policy.resilience.health_check_s
        lost = []
        for e in self.engines[r]:
            lost += e.crash(t)
        for i in lost:
            self.lost(i, t, r)
        self.push(self.notice_at[r], FAULT, ("notice", r, self.epoch[r]))
        back = t + down_s + self.restart_s[r]
        self.push(back, FAULT, ("back", r))
        return back

    def leave(self, r: int, t: float) -> None:
        """A drained replica leaves: for good, or to restart."""
        self.entry_views = None
        self.draining[r] = False
        down = self.drain_down[r]
        entry = self.drain_entry.pop(r, None)
        if entry is not None:
            entry["left_s"] = t
        if down is None:
            self.gone[r] = True
            return
        self.up[r] = False
        self.noticed[r] = True
        self.epoch[r] += 1
        back = t + down + self.restart_s[r]
        if entry is not None:
            entry["until_s"] = back
        self.push(back, FAULT, ("back", r))

    # -- the record --------------------------------------------------------------------------
    def record(self) -> Run:
        engines = [e for es in self.engines for e in es]
        peak = max((e.peak_share() for e in engines), default=0.0)
        status = np.frombuffer(self.status, dtype=np.int8)
        arrival = np.array(self.arrival, dtype=float)
        first = np.array(self.first_token, dtype=float)
        done = np.frombuffer(self.done, dtype=float)
        if self.client is not None:   # times as the client sees them
            sent = np.array(self.sent, dtype=float)
            arrival = np.where(np.isnan(sent), arrival, sent)
            first = first + self.client.egress_s          # NaN stays NaN
            done = np.where(status == COMPLETED, done + self.client.egress_s, done)
        run = Run(
            requests=self.req,
            status=status,
            arrival_s=arrival,
            scheduled_s=np.frombuffer(self.scheduled, dtype=float),
            first_token_s=first,
            done_s=done,
            preemptions=np.frombuffer(self.preemptions, dtype=np.int64),
            replica=np.frombuffer(self.replica_of, dtype=np.int64),
            gaps=self.gaps,
            reasons=dict(self.reasons),
            kv_peak_share=peak,
            kv_samples=(np.frombuffer(self.kv_t, dtype=float).copy(),
                        np.frombuffer(self.kv_delta, dtype=np.int64).copy(),
                        sum(e.cache.total_blocks for e in engines)),
            iterations=self.iterations,
            events=self.events,
            prefix_hit_tokens=sum(e.hit_tokens for e in engines),
            prefix_lookup_tokens=sum(e.lookup_tokens for e in engines),
            prefix_cpu_hit_tokens=sum(e.cpu_hit_tokens for e in engines),
            kv_load_s=sum(e.load_s for e in engines),
            kv_load_saved_s=sum(e.saved_s for e in engines),
            lora_loads=tuple(int(sum(e.lora_loads[k] for e in engines)) for k in range(3)),
            lora_load_s=sum(e.lora_load_s for e in engines),
            lora_kernel_s=sum(e.lora_kernel_s for e in engines),
            lora_skips=sum(e.lora_skips for e in engines),
            link_busy_s=self.link_busy,
            implementation=self.implementation,
            user=(np.frombuffer(self.session, dtype=np.int64).copy()
                  if self.closed is not None else None),
        )
        run.retries = np.frombuffer(self.attempts, dtype=np.int64)
        run.retried = self.retried
        run.fault_log = list(self.fault_log)
        return run
