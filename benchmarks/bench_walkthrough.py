"""Time the walkthrough: knob change -> updated readout and redrawn plots, beside the serving app.

    .venv/bin/python benchmarks/bench_walkthrough.py            # the knob latency
    .venv/bin/python benchmarks/bench_walkthrough.py --nbval    # plus the whole nbval suite

Builds the app (no browser: the time is the kernel side, simulate + readout + PNG render of
the month figure), then turns a different knob each time, ``--changes`` times, and prints the
median and 90th percentile. Target: median under 50 ms. In the same run it times the serving
app's knobs the same way (both from ``knob_timing.py``), a reference for how busy the machine is:
on a shared machine both move together; the load average is printed before and after. With
``--nbval`` it also times ``pytest --nbval notebooks solutions`` (the folders that exist).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from knob_timing import line, load_average, serving_latency, walkthrough_latency  # noqa: E402

TARGET_MS = 50

def nbval_suite() -> tuple[float, int]:
    folders = [str(ROOT / d) for d in ("notebooks", "solutions") if (ROOT / d).is_dir()
               and any((ROOT / d).glob("*.ipynb"))]
    start = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "--nbval", "-p",
                            "no:cacheprovider", *folders], cwd=ROOT)
    return time.perf_counter() - start, code


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=50, help="knob changes to time")
    parser.add_argument("--nbval", action="store_true", help="also time the nbval suite")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")  # the apps render PNGs themselves; no window, no notebook here

    print(load_average())
    print(line("the fleet walkthrough: knob change -> readout + plots",
               walkthrough_latency(args.changes), TARGET_MS))
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
