"""Steady state: how long a run must be before a capacity, a plan or a headroom is read off it,
and which of its requests are judged.

A queue that starts empty flatters the first requests, and one that builds slowly does not
show it in a short run: 400 requests at 8 req/s last 50 s, while a request of 300 output
tokens stays 15 s. So every rate a capacity search or the planner judges runs under one rule:

1. **Length.** At least :data:`MIN_REQUESTS` requests (fewer are refused), and the arrivals
   must span at least :data:`SETTLE_TIMES` times the mean time a request spends in the system
   at that rate (arrival to its end, measured on the run itself; a rejected request ends at its
   arrival). A run too short is lengthened to the count that rule asks for (x1.25) and run
   again, on the same seed (a longer run starts with the same arrivals), until it holds or
   reaches :data:`MAX_REQUESTS`. A run that already misses the objective is not lengthened
   (a longer one only lets the queue grow). A load that drifts (bursts, a fitted per-minute
   profile, a trace) runs its whole profile once (``load.scale.profile_s``), and more only if
   the rule asks.
2. **Cut.** The judged requests are those arriving after the warm-up, the first
   ``min(WARMUP_SHARE x span, WARMUP_TIMES x mean time in system)`` seconds, and before the
   drain, the last mean time in system of the arrivals (the last requests see no one behind
   them).

``settled`` says whether the length rule held; a run that never settles (a queue that grows
without end) is judged as it is at :data:`MAX_REQUESTS`, where it misses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design
from ..figures.record import Run
from ..load.scale import profile_s
from ..load.workload import Load, generate
from ..sim.simulate import simulate

__all__ = ["SteadyRun", "steady_run", "check_requests", "MIN_REQUESTS", "MAX_REQUESTS",
           "SETTLE_TIMES", "WARMUP_SHARE", "WARMUP_TIMES"]

#: The fewest requests a judged run may have.
MIN_REQUESTS = 1000
#: The most a run is lengthened to.
MAX_REQUESTS = 100_000
#: The arrivals span at least this many mean times in system.
SETTLE_TIMES = 20
#: The warm-up cut: this share of the span, or this many mean times in system, the smaller.
WARMUP_SHARE, WARMUP_TIMES = 0.1, 5


def check_requests(requests, name: str = "--requests") -> int:
    """``requests`` if it is an integer from MIN_REQUESTS to MAX_REQUESTS, else InputError."""
    if isinstance(requests, bool) or not isinstance(requests, int | np.integer) or not (
            MIN_REQUESTS <= requests <= MAX_REQUESTS):
        raise InputError(f"{name} {requests!r}: a steady-state run needs at least "
                         f"{MIN_REQUESTS:,} requests (at most {MAX_REQUESTS:,}); queues do not "
                         "settle in fewer")
    return int(requests)


@dataclass(frozen=True, eq=False)
class SteadyRun:
    """run : the simulated run; judged : per request, whether it is judged (the cut)
    requests : the requests it served; mean_in_system_s : mean time a request stayed
    settled : whether the arrivals span SETTLE_TIMES x mean_in_system_s"""

    run: Run
    judged: np.ndarray
    requests: int
    mean_in_system_s: float
    settled: bool

    def share(self, ok: np.ndarray) -> float:
        """The share of the judged requests for which ``ok`` holds."""
        return float(ok[self.judged].mean()) if self.judged.any() else 0.0


def _measure(run: Run) -> tuple[float, float, float, float]:
    """(first arrival, last arrival, mean time in system, span) of a run."""
    arr = run.arrival_s
    end = np.where(np.isnan(run.done_s), arr, run.done_s)
    t0, t1 = float(arr.min()), float(arr.max())
    return t0, t1, float(np.mean(end - arr)), t1 - t0


def _cut(run: Run, t0: float, t1: float, w: float) -> np.ndarray:
    span = t1 - t0
    warm = min(WARMUP_SHARE * span, WARMUP_TIMES * w)
    judged = (run.arrival_s >= t0 + warm) & (run.arrival_s <= t1 - w)
    if not judged.any():                 # too short to cut: judge every request
        judged = np.ones(len(run.arrival_s), bool)
    return judged


def steady_run(design: Design, load: Load, seed: int = 0, requests: int = MIN_REQUESTS,
               passes=None) -> SteadyRun:
    """A run of ``load`` on ``design`` long enough to read (see the module docstring), from
    ``requests`` requests up. ``passes(steady_run) -> bool``: when given and a run fails it,
    the run is not lengthened."""
    n = check_requests(requests, "requests")
    whole = profile_s(load)
    while True:
        if load.trace is not None:
            reqs = generate(load, seed)          # the whole trace, once
        elif whole is not None:
            reqs = generate(load, seed, duration_s=whole)
            if len(reqs) < n:
                reqs = generate(load, seed, requests=n)
        else:
            reqs = generate(load, seed, requests=n)
        run = simulate(reqs, design)
        t0, t1, w, span = _measure(run)
        settled = span >= SETTLE_TIMES * w
        out = SteadyRun(run, _cut(run, t0, t1, w), len(reqs), w, settled)
        if settled or load.trace is not None or len(reqs) >= MAX_REQUESTS:
            return out
        if passes is not None and not passes(out):
            return out
        need = len(reqs) * SETTLE_TIMES * w / max(span, 1e-9) * 1.25
        n = min(MAX_REQUESTS, max(len(reqs) + 1, math.ceil(need)))
