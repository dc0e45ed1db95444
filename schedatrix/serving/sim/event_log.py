"""A run as the request event log a server writes: arrivals, every output token, rejections.

The figures of :mod:`~schedatrix.serving.figures.metrics` are what a serving benchmark computes from
such a log; the log lets a learner compute them by hand and compare. Each event is a tuple
``(time_s, request_id, kind)``, ``kind`` one of :data:`EVENT_KINDS`: ``"arrival"`` (at the
front door), ``"token"`` (an output token leaving the server; the first is the request's first
token, the last its end) and ``"rejected"`` (turned away at the door, at its arrival). Events
are in time order; at equal times, by request, an arrival first.
"""

from __future__ import annotations

from ...errors import InputError
from ..cluster.deployment import Design, build
from ..figures.record import COMPLETED, REJECTED, Run
from ..load.requests import Requests
from .reference import simulate_reference

__all__ = ["EVENT_KINDS", "event_log", "logged_run"]

EVENT_KINDS = ("arrival", "token", "rejected")
_ORDER = {kind: k for k, kind in enumerate(EVENT_KINDS)}


def logged_run(requests: Requests, design: Design) -> Run:
    """Serve ``requests`` on ``design`` with the plain reference simulator, keeping every
    token's time (``run.token_times``) so that :func:`event_log` can write the log."""
    built = build(design)
    policy = design.policy((), None, int(requests.meta.get("seed", 0)))
    return simulate_reference(requests, built.perf, built.config, built.layout, policy,
                              keep_tokens=True)


def event_log(run: Run) -> list[tuple[float, int, str]]:
    """The run's request event log. Needs a run that kept its token times
    (:func:`logged_run`) in which every request completed or was rejected."""
    times = getattr(run, "token_times", None)
    if times is None:
        raise InputError("run: its token times were not kept; serve it with logged_run")
    events = []
    for i, status in enumerate(run.status.tolist()):
        arrival = float(run.arrival_s[i])
        events.append((arrival, i, "arrival"))
        if status == REJECTED:
            events.append((arrival, i, "rejected"))
        elif status == COMPLETED:
            events += [(float(t), i, "token") for t in times[i]]
        else:
            raise InputError(f"run: request {i} neither completed nor was rejected (status "
                             f"{status}); the log holds finished runs only")
    events.sort(key=lambda e: (e[0], e[1], _ORDER[e[2]]))
    return events
