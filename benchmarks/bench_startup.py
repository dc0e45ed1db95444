"""How long a process takes to start: the command line and a lesson's imports, beside the bare
interpreter and numpy in the same run (the suite starts hundreds of such processes; a learner
waits for each command and each kernel).

    .venv/bin/python benchmarks/bench_startup.py [--repeat 5]

Each figure is the median wall time of ``--repeat`` fresh processes, with their CPU time.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lesson_imports(name: str) -> str:
    """Every one-line import of a lesson's code cells, in order."""
    nb = json.loads(next((ROOT / "notebooks").glob(f"{name}_*.ipynb")).read_text())
    lines = [line for cell in nb["cells"] if cell["cell_type"] == "code"
             for line in "".join(cell["source"]).splitlines()
             if re.match(r"(import |from \S+ import )", line) and "(" not in line]
    return "\n".join(lines)


def timed(argv: list[str], repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    if repeat < 1:
        parser.error(f"--repeat {repeat}: must be at least 1")
    py = sys.executable
    cases = [("python -c pass (reference)", [py, "-c", "pass"]),
             ("python -c 'import numpy' (reference)", [py, "-c", "import numpy"]),
             ("schedatrix --help", [py, "-m", "schedatrix", "--help"]),
             ("schedatrix month --json", [py, "-m", "schedatrix", "month", "--json"]),
             ("schedatrix serving run --help", [py, "-m", "schedatrix", "serving", "run",
                                                "--help"])]
    cases += [(f"lesson {n}'s imports", [py, "-c", lesson_imports(n)])
              for n in ("00", "07", "09", "12")]
    print(f"{'process':40} {'wall s':>7} {'CPU s':>7}   (median of {repeat})")
    for label, argv in cases:
        wall, cpu = timed(argv, repeat)
        print(f"{label:40} {wall:7.2f} {cpu:7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
