"""What the app benchmarks share: turning an app's knobs one at a time and timing each redraw,
the two apps' knob sequences, percentiles, a printed line per figure and the machine's load.

``bench_walkthrough.py`` and ``bench_serving_app.py`` each time one app beside the other (a
reference for how busy the machine is: on a shared machine both move together); both import
what they share from here, and neither imports the other.
"""

from __future__ import annotations

import itertools
import os
import statistics
import time

# One value sequence per knob: each change moves one knob to its next value.
WALKTHROUGH_MOVES = {
    "cards": [16, 20, 24, 12, 32],
    "card_class": ["b-stock", "bargain", "flagship"],
    "demand": [60_000, 75_000, 90_000, 45_000],
    "headroom": [10, 20, 5, 30],
    "shape": ["jumpy", "lazy", "steady"],
    "window": ["hour", "week", "day"],
    "evict": [20, 40, 10, 30],
    "seed": [1, 2, 3, 119_649],
}


def turn_knobs(app, moves: dict, changes: int, check=None) -> list[float]:
    """Seconds from setting one knob of ``app`` (its ``knobs`` and ``updates``) to its
    readouts redrawn, ``changes`` times, the knobs in turn through ``moves``' values;
    ``check(app)`` after each change."""
    cycles = {name: itertools.cycle(values) for name, values in moves.items()}
    names = itertools.cycle(moves)
    times = []
    while len(times) < changes:
        name = next(names)
        value = next(cycles[name])
        if app.knobs[name].value == value:
            value = next(cycles[name])
        before = app.updates
        start = time.perf_counter()
        app.knobs[name].value = value  # the observer runs update(): readouts and plots
        times.append(time.perf_counter() - start)
        assert app.updates == before + 1, f"{name} -> {value} did not update once"
        if check is not None:
            check(app)
    return times


def walkthrough_latency(changes: int) -> list[float]:
    """The fleet walkthrough: one knob change -> its readout and plots redrawn."""
    from schedatrix.course.apps.walkthrough import Walkthrough

    return turn_knobs(Walkthrough(), WALKTHROUGH_MOVES, changes)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# One value sequence per knob of a one-replica design: each change moves one knob.
SERVING_MOVES = {
    "rate": [5.0, 6.0, 3.0, 7.0, 4.5],
    "burstiness": [0.5, 1.0, 0.25, 2.0],
    "lengths": ["random", "hour"],
    "gpu": ["h100-80gb", "h200", "a100-80gb"],
    "model": ["llama-3.2-3b", "llama-2-7b", "llama-3.1-8b"],
    "tp": [2, 1],
    "max_batch": [32, 8, 256, 64],
    "max_batched_tokens": [2048, 512, 8192],
    "ttft_slo": [0.5, 2.0, 1.0],
    "tpot_slo": [0.05, 0.2, 0.1],
    "seed": [1, 2, 3, 0],
}


def serving_latency(changes: int) -> list[float]:
    """The serving app, one replica: a knob change -> figures and plot. The knobs come back
    to values they had: with the memo of runs on, those redraws would skip the simulation; it is
    off, so every change is timed as a first visit."""
    from schedatrix.course.apps.serving_app import ServingApp
    from schedatrix.serving.sim import memo

    def one_replica_run(app) -> None:
        assert app.outcome is not None and app.setting().replicas == 1, app.error

    with memo.off():
        return turn_knobs(ServingApp(), SERVING_MOVES, changes, one_replica_run)


def line(label: str, times: list[float], target_ms: float | None = None) -> str:
    """One printed figure: median, 90th percentile and maximum in ms, and the target's verdict
    when there is one."""
    ms = [t * 1000 for t in times]
    median = statistics.median(ms)
    verdict = ("" if target_ms is None else
               f" (target median < {target_ms:g} ms: {'met' if median < target_ms else 'MISSED'})")
    return (f"{label}, {len(ms)} changes: median {median:.1f} ms, p90 "
            f"{percentile(ms, 0.9):.1f} ms, max {max(ms):.1f} ms{verdict}")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min; {os.cpu_count()} cores)"
