"""Time the walkthrough: knob change -> updated readout and redrawn plots, beside the serving app.

    .venv/bin/python benchmarks/bench_walkthrough.py            # the knob latency
    .venv/bin/python benchmarks/bench_walkthrough.py --nbval    # plus the whole nbval suite

Builds the app (no browser: the time is the kernel side, simulate + readout + PNG render of
the month figure), then turns a different knob each time, ``--changes`` times, and prints the
median and 90th percentile. Target: median under 100 ms. In the same run it times the serving
app's knobs the same way (``bench_serving_app.py``), a reference for how busy the machine is:
on a shared machine both move together; the load average is printed before and after. With
``--nbval`` it also times ``pytest --nbval notebooks solutions`` (the folders that exist).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 100

# One value sequence per knob: each change moves one knob to its next value.
MOVES = {
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


def knob_latency(changes: int) -> list[float]:
    from schedatrix.course.walkthrough import Walkthrough

    return turn_knobs(Walkthrough(), MOVES, changes)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def nbval_suite() -> tuple[float, int]:
    folders = [str(ROOT / d) for d in ("notebooks", "solutions") if (ROOT / d).is_dir()
               and any((ROOT / d).glob("*.ipynb"))]
    start = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "--nbval", "-p",
                            "no:cacheprovider", *folders], cwd=ROOT)
    return time.perf_counter() - start, code


def line(label: str, times: list[float], target_ms: float | None = None) -> str:
    ms = [t * 1000 for t in times]
    median = statistics.median(ms)
    verdict = ("" if target_ms is None else
               f" (target median < {target_ms:g} ms: {'met' if median < target_ms else 'MISSED'})")
    return (f"{label}, {len(ms)} changes: median {median:.1f} ms, p90 "
            f"{percentile(ms, 0.9):.1f} ms, max {max(ms):.1f} ms{verdict}")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min; {os.cpu_count()} cores)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=50, help="knob changes to time")
    parser.add_argument("--nbval", action="store_true", help="also time the nbval suite")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")  # the apps render PNGs themselves; no window, no notebook here
    from bench_serving_app import knob_latency as serving_latency

    print(load_average())
    print(line("the fleet walkthrough: knob change -> readout + plots",
               knob_latency(args.changes), TARGET_MS))
    print(line("reference: the serving app, one replica: knob change -> figures + plot",
               serving_latency(args.changes)))
    print(load_average())
    if args.nbval:
        seconds, code = nbval_suite()
        print(f"nbval suite (notebooks, solutions): {seconds:.1f} s, pytest exit {code}")
        return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
