"""A load at another mean rate, its drift kept: what "how much more of this traffic fits" asks.

- an open-loop stream (``rate_rps``) takes the new rate; its ``bursts`` (a fitted twin's
  per-minute profile, ``fit.py``) stay where they are on the clock, so each minute's rate is
  the new mean times that minute's multiplier: the profile's rate is raised, its shape kept;
- a trace replay is time-compressed: ``speed`` = the new rate over the trace's own mean rate
  (its requests over its span), so every burst and swing of the trace comes with it, faster.

``drift=False`` drops what drifts, for comparison with today's drift-free load: a stream
loses its bursts (one rate, its burstiness kept); a trace becomes its fitted twin (mean rate,
burstiness within the profile and paired lengths) without the per-minute profile.

``profile_s(load)`` is how long a run must last to serve the whole drift once: the last
burst's end, a trace's span at its speed, or None for a load that does not drift.
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache
from pathlib import Path

from ...errors import InputError
from .workload import Load

__all__ = ["mean_rate", "at_rate", "drifts", "profile_s", "without_drift"]


@lru_cache(maxsize=32)
def _trace_figures(path: str) -> tuple[int, float]:
    """(requests, span in seconds at speed 1: first to last arrival) of a trace."""
    from .replay import replay
    t = replay(path).arrival_s
    return len(t), float(t[-1] - t[0])


def _trace_rate(path) -> float:
    n, span = _trace_figures(str(Path(path).resolve()))
    if n < 2 or span <= 0:
        raise InputError(f"trace {Path(path).name}: {n} request(s) over {span:g} s; a trace "
                         "needs two arrivals apart in time to have a rate to scale")
    return n / span


def mean_rate(load: Load) -> float:
    """The load's mean rate, requests/s: ``rate_rps``, or a trace's requests over its span
    times its speed."""
    if load.trace is not None:
        return _trace_rate(load.trace) * load.speed
    if load.rate_rps is None or load.closed_loop is not None or load.tenants:
        raise InputError("load: a closed loop or tenants of their own have no one rate to "
                         "raise; give --rate (or --trace) and lengths")
    return float(load.rate_rps)


def drifts(load: Load) -> bool:
    """Whether the load's rate moves over time (bursts, or a trace's own arrivals)."""
    return load.trace is not None or bool(load.bursts)


def profile_s(load: Load) -> float | None:
    """Seconds a run must last to serve the load's whole drift once (None: no drift)."""
    if load.trace is not None:
        n, span = _trace_figures(str(Path(load.trace).resolve()))
        return span / load.speed
    if load.bursts:
        return max(b.end_s for b in load.bursts)
    return None


def without_drift(load: Load) -> Load:
    """The load without its drift (see the module docstring)."""
    if load.trace is not None:
        from .fit import fit
        from .replay import replay
        twin = fit(replay(load.trace, load.speed)).load
        return dataclasses.replace(twin, bursts=(), classes=load.classes)
    return dataclasses.replace(load, bursts=())


def at_rate(load: Load, rate_rps: float, drift: bool = True) -> Load:
    """``load`` at a mean of ``rate_rps`` requests/s (see the module docstring)."""
    if not (isinstance(rate_rps, int | float) and math.isfinite(rate_rps) and rate_rps > 0):
        raise InputError(f"rate {rate_rps!r}: must be a finite number of requests/s > 0")
    if not drift:
        load = without_drift(load)
    if load.trace is not None:
        speed = rate_rps / _trace_rate(load.trace)
        if not 1e-6 <= speed <= 1e6:
            raise InputError(f"rate {rate_rps:g} req/s: the trace would play x{speed:g} "
                             "faster; allowed: x1e-06 to x1e+06")
        return dataclasses.replace(load, speed=speed)
    mean_rate(load)                                   # refuses a closed loop or tenants
    return dataclasses.replace(load, rate_rps=float(rate_rps))
