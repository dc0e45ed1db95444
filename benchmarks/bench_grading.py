"""Grading a class: wall time and CPU per notebook of `schedatrix grade`, beside a reference.

Builds a class of N notebooks (default 100: the four exercises in turn; most right, some
wrong, some untouched), grades it as `schedatrix grade --jobs J` does (each notebook first in
the grader's own sandboxed evaluation, its checks run by this process, then, when that passes,
its own run under nbval in a sandbox), and prints the wall time, the CPU seconds per notebook
and the projection for the whole class. The reference, in the same run, is plain
`python -m pytest --nbval-lax` on each notebook, J at a time, with no sandbox and no checker,
on the first R notebooks (default 10). On the same R notebooks, one at a time, it measures the
CPU one notebook costs (this process's checks, and every process the two sandboxed runs
started), which gives the class's time on J idle cores.

    .venv/bin/python benchmarks/bench_grading.py [--notebooks 100] [--jobs 2] [--reference 10]

The machine may be shared: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from schedatrix.classroom.checking.exercises import exercise_of
from schedatrix.classroom.grader.evaluation import evaluate
from schedatrix.classroom.grader.grade_folder import grade_folder
from schedatrix.classroom.grader.grade_notebook import verdicts
from schedatrix.classroom.grader.nbval_sandbox import run_nbval
from schedatrix.classroom.grader.sandbox import Limits, choose
from schedatrix.classroom.grader.submissions import parse_notebook

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["01_score", "02_run_set", "03_eviction", "04_famous_months"]


def cpu_per_notebook(paths: list[Path], box) -> tuple[float, float, float]:
    """Mean CPU seconds one notebook costs, graded step by step as `grade_notebook` does:
    (this process's checks, the sandboxed evaluation, the sandboxed nbval run), each sandboxed
    run as it reports its own and its children's CPU (a sandbox's processes are not this
    process's children)."""
    mine = evaluation_s = nbval_s = 0.0
    limits = Limits()
    for path in paths:
        data = path.read_bytes()
        nb, _ = parse_notebook(data)
        exercise = exercise_of(path.stem)
        start = time.thread_time()
        evaluation = evaluate(nb, exercise, box, limits)
        evaluation_s += evaluation.cpu_s
        if evaluation.passed:
            run = run_nbval(data, exercise, box, limits, verdicts(evaluation))
            nbval_s += float(run.summary.get("cpu_s", 0.0))
        mine += time.thread_time() - start
    n = len(paths)
    return mine / n, evaluation_s / n, nbval_s / n


def build_class(folder: Path, count: int) -> list[Path]:
    """``count`` submissions: 70% solved, 20% wrong (one line changed), 10% untouched."""
    paths = []
    for i in range(count):
        name = NAMES[i % len(NAMES)]
        path = folder / f"student{i:03d}" / f"{name}.ipynb"
        path.parent.mkdir(parents=True)
        kind = i % 10
        if kind == 9:
            shutil.copy(ROOT / "exercises" / f"{name}.ipynb", path)
        else:
            nb = nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
                    if kind >= 7:  # a wrong answer: an off-by-one, a lost million, ...
                        cell.source = (cell.source.replace("/ 1_000_000", "")
                                       .replace(">= target_tok_s", "> target_tok_s")
                                       .replace("+ 1e-9", "")
                                       .replace('shape="steady"', 'shape="jumpy"'))
            nbformat.write(nb, path)
        paths.append(path)
    return paths


def reference(paths: list[Path], jobs: int, workdir: Path) -> float:
    """Plain `pytest --nbval-lax` per notebook, `jobs` at a time: wall seconds."""
    (workdir / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}

    def one(path: Path) -> int:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "--nbval-lax", "-q", "-p", "no:cacheprovider",
             "-c", str(workdir / "pytest.ini"), "--rootdir", str(path.parent), str(path)],
            cwd=path.parent, capture_output=True, env=env, check=False).returncode

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, paths))
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reference", type=int, default=10,
                        help="notebooks the reference grades (0: skip it)")
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()

    box = choose(args.sandbox)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"sandbox: {box.kind} ({box.describe()})")
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        folder = Path(tmp) / "submissions"
        paths = build_class(folder, args.notebooks)
        t0 = time.perf_counter()
        grades = grade_folder(folder, jobs=args.jobs, sandbox=box, limits=Limits(),
                              solutions=ROOT / "solutions")
        wall_s = time.perf_counter() - t0
        passed = sum(g.passed for g in grades)
        n = len(grades)
        print(f"schedatrix grade --jobs {args.jobs}: {n} notebooks in {wall_s:.1f} s "
              f"({wall_s / n:.2f} s each, {n / wall_s * 60:.1f} per minute, at this load); "
              f"{passed} pass, {n - passed} fail")
        if args.reference:
            sample = paths[: args.reference]
            mine, evaluation_s, nbval_s = cpu_per_notebook(sample, box)
            cpu_s = mine + evaluation_s + nbval_s
            print(f"  CPU per notebook (mean of {len(sample)}, one at a time): {cpu_s:.2f} s "
                  f"(checks here {mine:.2f} s, evaluation {evaluation_s:.2f} s, nbval run "
                  f"{nbval_s:.2f} s); a class of 100 on {args.jobs} idle cores: about "
                  f"{cpu_s * 100 / args.jobs / 60:.1f} min")
            ref_s = reference(sample, args.jobs, Path(tmp))
            each_s = ref_s / len(sample)
            print(f"reference, plain pytest --nbval-lax --jobs {args.jobs} (no sandbox, no "
                  f"checker): {len(sample)} notebooks in {ref_s:.1f} s ({each_s:.2f} s each); "
                  f"the reference takes {each_s / (wall_s / n):.2f}x as long per notebook")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
