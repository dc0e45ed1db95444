"""Time the serving app: knob change -> one replica's figures and plot, redrawn.

    .venv/bin/python benchmarks/bench_serving_app.py              # serving app + reference
    .venv/bin/python benchmarks/bench_serving_app.py --changes 60

Builds the serving app (no browser: the time is the kernel side: generate the load, serve it
on one replica, the figures, the verdict and the PNG of each request's TTFT and TPOT), then
turns a different knob each time, ``--changes`` times, and prints the median and the 90th
percentile. Target: median under 150 ms. In the same run it times the fleet walkthrough's
knobs the same way (both from ``knob_timing.py``), a reference for how busy the machine is: on a
shared machine both move together. It also times lesson 11's fault timeline (a knob -> the
plan and the timeline picture; the run itself waits for a button). ``--seeds`` also times the
heavy button (5 seeds x 1,000 requests), which is not a knob's redraw.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from knob_timing import line, serving_latency, walkthrough_latency  # noqa: E402

#: Each redraw's target: median under this.
TARGET_MS = 150

def fault_timeline_latency(changes: int) -> list[float]:
    """Lesson 11's fault timeline: a knob (when, how long, which replica) -> plan and picture
    redrawn (no simulation: the run waits for its button)."""
    from schedatrix.course.apps.fault_app import FaultApp

    app = FaultApp()
    moves = itertools.cycle([("at_s", v) for v in (60, 90, 150, 200)] +
                            [("down_s", v) for v in (10, 60, 30)] +
                            [("target", v) for v in (1, 2, 0)])
    times = []
    while len(times) < changes:
        name, value = next(moves)
        if app.knobs[name].value == value:
            continue
        before = app.redraws
        start = time.perf_counter()
        app.knobs[name].value = value
        times.append(time.perf_counter() - start)
        assert app.redraws == before + 1
    return times


def seeds_latency(presses: int) -> list[float]:
    from schedatrix.course.apps.serving_app import ServingApp
    from schedatrix.serving.sim import memo

    app = ServingApp()
    times = []
    with memo.off():
        for k in range(presses):
            app.knobs["seed"].value = k
            start = time.perf_counter()
            app.run_seeds()
            times.append(time.perf_counter() - start)
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=40, help="knob changes to time")
    parser.add_argument("--seeds", action="store_true", help="also time the seeds button")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")  # the apps render PNGs themselves; no window, no notebook here
    print(line("serving app, one replica: knob change -> figures + plot",
               serving_latency(args.changes), TARGET_MS))
    print(line("reference: the fleet walkthrough, knob change -> readout + plots",
               walkthrough_latency(args.changes)))
    print(line("fault timeline (lesson 11), knob change -> plan + timeline picture",
               fault_timeline_latency(args.changes), TARGET_MS))
    if args.seeds:
        times = seeds_latency(3)
        print(f"serving app, seeds button (5 seeds x 1,000 requests), 3 presses: median "
              f"{statistics.median(times):.2f} s (heavy: behind a button, with progress)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
