"""The simulator stepped live: requests submitted as they come, the clock advanced to now, each
request's tokens handed out as the model emits them.

:class:`Driver` holds one run of the plain reference simulator (:mod:`..sim.reference`: every
scheduler iteration of every replica) whose arrivals are not known ahead. ``submit(t, ...)``
runs the fleet up to instant ``t`` (events at ``t`` in the simulator's order: ends of
iterations and faults before the arrival, starts after it) and lets the request in;
``advance(t)`` runs every event due by ``t``. What happens to a request is told to a listener:
``token(i, t)`` for each output token as it leaves (its first is the TTFT), ``done(i, t)``,
``error(i, t, reason)`` (rejected at the door, or failed after its retries). The scheduling,
batching, preemption, routing, admission, faults and retries are the simulator's own; so
submitting a load's arrivals at their times gives the run ``simulate_reference`` gives
(tests/test_serving_emulate.py holds the two equal).

No clock here: the caller (the HTTP server, :mod:`.server`) maps wall time to the model's
seconds. Pure Python, no extra needed.
"""

from __future__ import annotations

import heapq
from array import array

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design, build
from ..cluster.faults import KINDS, Fault, Resilience, check_faults
from ..figures.record import GapRecord
from ..load.requests import DEFAULT_CLASS, Requests, SLOClass
from ..sim.events import ARRIVE, FAULT, Cluster
from ..sim.reference import StepEngine

__all__ = ["Driver", "Collector", "TOO_LONG"]

#: Rejections that are the request's own fault (HTTP 400), not the fleet's (503).
TOO_LONG = ("longer than the model's context", "needs more KV cache than a replica holds",
            "longer than max_batched_tokens with chunked prefill off")


class Collector:
    """A listener that keeps everything (for tests and scripts): token times per request,
    when each ended, and why the ones that did not complete ended."""

    def __init__(self):
        self.tokens: dict[int, list[float]] = {}
        self.done: dict[int, float] = {}
        self.errors: dict[int, tuple[float, str]] = {}

    def token(self, i: int, t: float) -> None:
        self.tokens.setdefault(i, []).append(t)

    def finished(self, i: int, t: float) -> None:
        self.done[i] = t

    def error(self, i: int, t: float, reason: str) -> None:
        self.errors[i] = (t, reason)


class _NoGaps(GapRecord):
    """The run's pooled gaps are not kept live (they would grow with every token)."""

    def add(self, *args) -> None:
        pass

    add_run = add

    def add_one(self, *args) -> None:
        pass


class _LiveEngine(StepEngine):
    def emit(self, i: int, t: float) -> None:
        super().emit(i, t)
        self.sim.catch_up(i, t)


class _LiveCluster(Cluster):
    """The fleet, telling its driver what becomes of each request."""

    def bind(self, driver: Driver) -> None:
        self.driver = driver
        #: With a client path, a token reaches the client its egress later (detokenized and
        #: streamed), as the simulators' runs count it; errors are told at once.
        self.egress_s = self.client.egress_s if self.client is not None else 0.0
        self.delivered = [0] * self.n
        self.gaps = _NoGaps(self.n_classes)

    def catch_up(self, i: int, t: float) -> None:
        """Hand out request i's tokens generated and not yet delivered (one, after an
        iteration; a split's first token leaves when its KV has moved)."""
        t += self.egress_s
        while self.delivered[i] < self.generated[i]:
            self.delivered[i] += 1
            self.driver.listener.token(i, t)

    def transferred(self, x, t: float) -> None:
        if self.epoch[x.eng.replica] == x.epoch:
            self.catch_up(x.i, t)
        super().transferred(x, t)

    def complete(self, i: int, t: float) -> None:
        self.catch_up(i, t)
        super().complete(i, t)
        self.driver.listener.finished(i, t + self.egress_s)

    def reject(self, i: int, t: float, reason: str) -> None:
        super().reject(i, t, reason)
        self.driver.listener.error(i, t, reason)

    def fail(self, i: int, t: float, reason: str) -> None:
        super().fail(i, t, reason)
        self.driver.listener.error(i, t, reason)


def _slots(n: int, classes: tuple[SLOClass, ...], hashed: bool) -> Requests:
    """Room for n requests not known yet (their lengths are set as they arrive)."""
    one = np.ones(n, dtype=np.int64)
    return Requests(np.zeros(n), one, one.copy(), np.zeros(n, dtype=np.int16), classes,
                    synthetic=False, source="live",
                    hash_offsets=np.zeros(1, dtype=np.int64) if hashed else None,
                    hash_values=np.zeros(0, dtype=np.int64) if hashed else None)


class Driver:
    """One live run of ``design``. ``classes``: the SLO classes requests may name (priority
    orders the queues); ``prefix_block_tokens`` > 0 turns prefix caching on with blocks of that
    many tokens (a multiple of the design's KV block); ``faults`` are scheduled at their times
    (seconds from the start); ``listener`` is told of tokens, ends and errors."""

    def __init__(self, design: Design, listener=None, classes=(DEFAULT_CLASS,),
                 faults=(), resilience: Resilience | None = None, seed: int = 0,
                 prefix_block_tokens: int = 0, capacity: int = 4096):
        if not isinstance(design, Design):
            raise InputError(f"design must be a Design, got {design!r}")
        self.design = design
        self.listener = listener if listener is not None else Collector()
        self.classes = tuple(classes) or (DEFAULT_CLASS,)
        built = build(design, hash_block_tokens=prefix_block_tokens)
        self.built = built
        self.policy = design.policy(faults, resilience, seed)
        self.hashed = bool(prefix_block_tokens)
        self._hashes: dict[int, np.ndarray] = {}
        self.sim = self._cluster(capacity)
        self.sim.bind(self)
        self.sim.req.__dict__["hashes"] = self._hashes.get   # request i's block hashes
        self.used = 0
        self.now = 0.0
        self.faults: list[Fault] = list(self.sim.faults)
        for f in self.faults:
            self.sim.push(f.at_s, FAULT, ("start", f))

    def _cluster(self, n: int) -> _LiveCluster:
        b = self.built
        return _LiveCluster(_slots(n, self.classes, self.hashed), b.perf, b.config, b.layout,
                            self.policy, _LiveEngine, "reference")

    # -- the fleet's layout, for the server ----------------------------------------------------
    @property
    def replicas(self) -> int:
        return len(self.built.layout.replicas)

    @property
    def max_model_len(self) -> int:
        return self.built.config.max_model_len

    # -- time ----------------------------------------------------------------------------------
    def next_event_s(self) -> float:
        """When the next event is due (inf: nothing is)."""
        heap = self.sim.heap
        return heap[0][0] if heap else float("inf")

    def advance(self, t: float) -> None:
        """Run every event due at or before ``t``."""
        self._run_until(t, inclusive=True)
        self.now = max(self.now, t)

    def _run_until(self, t: float, inclusive: bool) -> None:
        sim = self.sim
        heap, pop, dispatch = sim.heap, heapq.heappop, sim.dispatch
        while heap and (heap[0][0] < t or (heap[0][0] == t and (inclusive or
                                                                 heap[0][1] < ARRIVE))):
            t_e, kind, _, what, version = pop(heap)
            dispatch(t_e, kind, what, version)

    def _check_time(self, t: float) -> float:
        t = float(t)
        if not t >= self.now:
            raise InputError(f"t must not go back: the fleet is at {self.now:g} s, got {t!r}")
        return t

    # -- requests ------------------------------------------------------------------------------
    def submit(self, t: float, prompt_tokens: int, output_tokens: int, class_id: int = 0,
               hashes=None) -> int:
        """A request arrives at ``t`` (seconds, not before the last ``submit``/``advance``);
        returns its index. ``hashes``: its prompt's prefix-block hashes (prefix caching on)."""
        t = self._check_time(t)
        for name, v in (("prompt_tokens", prompt_tokens), ("output_tokens", output_tokens)):
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise InputError(f"{name} must be a whole number of at least 1, got {v!r}")
        if not 0 <= class_id < len(self.classes):
            raise InputError(f"class_id must be 0 to {len(self.classes) - 1}, got {class_id!r}")
        self._run_until(t, inclusive=False)
        self.now = t
        if self.used == self.sim.n:
            self._grow()
        i = self.used
        self.used += 1
        sim = self.sim
        sim.inp[i], sim.out[i], sim.cls[i] = int(prompt_tokens), int(output_tokens), class_id
        if self.hashed and hashes is not None and len(hashes):
            self._hashes[i] = np.asarray(hashes, dtype=np.int64)
        sim.events += 1
        sim.arrive(i, t)
        return i

    def _grow(self) -> None:
        """Room for as many requests again: every per-request list and array of the fleet is
        lengthened with a new fleet's starting values."""
        sim, n = self.sim, self.sim.n
        fresh = self._cluster(n)
        fresh.bind(self)
        for name, value in vars(sim).items():
            if isinstance(value, list | array | bytearray) and len(value) == n:
                more = getattr(fresh, name, None)
                if isinstance(more, type(value)) and len(more) == n:
                    value.extend(more)
        sim.n = 2 * n

    # -- faults --------------------------------------------------------------------------------
    def inject(self, t: float, kind: str, target: int, seconds: float | None,
               slowdown: float | None = None) -> Fault:
        """A fault now (at ``t``): as a scheduled one (:mod:`..cluster.faults`), refused when
        its target does not exist or it overlaps a fault on the same replica."""
        t = self._check_time(t)
        if kind not in KINDS:
            raise InputError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        f = Fault(kind, int(target), t, None if seconds is None else float(seconds),
                  None if slowdown is None else float(slowdown))
        check_faults(tuple(self.faults) + (f,), self.built.layout)
        self._run_until(t, inclusive=False)
        self.now = t
        self.faults.append(f)
        self.sim.push(t, FAULT, ("start", f))
        return f

    @property
    def fault_log(self) -> list[dict]:
        return self.sim.fault_log

    # -- what the fleet holds now --------------------------------------------------------------
    def replica_state(self, r: int) -> dict:
        """Replica r now: requests running and waiting, KV blocks in use and in all, whether
        it serves (up and not draining)."""
        sim = self.sim
        engines = sim.engines[r]
        waiting = sum(e.waiting_count() for e in engines)
        unfinished = sum(e.unfinished() for e in engines)
        used = sum(e.cache.used - e.cache.evictable for e in engines)
        total = sum(e.cache.total_blocks for e in engines)
        return {"running": unfinished - waiting, "waiting": waiting, "kv_used_blocks": used,
                "kv_blocks": total, "up": bool(sim.up[r]) and not sim.draining[r]
                and not sim.gone[r]}

    def prefix_cache(self, r: int) -> tuple[int, int]:
        """Replica r's prefix cache so far, as vLLM V1 counts it: prompt tokens looked up
        (queries) and tokens found cached (hits); (0, 0) with prefix caching off."""
        engines = self.sim.engines[r]
        return (sum(e.lookup_tokens for e in engines), sum(e.hit_tokens for e in engines))

    def preemptions(self) -> int:
        return int(np.frombuffer(self.sim.preemptions, dtype=np.int64)[:self.used].sum())

    def request(self, i: int) -> dict:
        """What the fleet knows of request i (seconds; NaN where it has not happened)."""
        sim = self.sim
        return {"arrival_s": sim.arrival[i], "scheduled_s": sim.scheduled[i],
                "first_token_s": sim.first_token[i], "done_s": sim.done[i],
                "replica": int(sim.replica_of[i]), "preemptions": int(sim.preemptions[i]),
                "prompt_tokens": sim.inp[i], "output_tokens": sim.out[i],
                "class_id": sim.cls[i]}
