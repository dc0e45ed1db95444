"""Time the serving lessons, each in a fresh kernel, beside an earlier revision in the same run.

    .venv/bin/python benchmarks/bench_lessons.py                      # lessons 07-15
    .venv/bin/python benchmarks/bench_lessons.py 09 12                # the lessons named
    .venv/bin/python benchmarks/bench_lessons.py --baseline main 09   # before and after
    .venv/bin/python benchmarks/bench_lessons.py --nbval --baseline main   # nbval passes

Each lesson runs with nbclient from its own folder and is never written back. Per lesson it
prints the wall seconds, the kernel's CPU seconds (a last cell, added here and never stored,
prints ``time.process_time()``), the three slowest cells, every cell over 10 s and the load
average. ``--baseline REV`` checks REV out in a temporary worktree and runs the same lessons
from it (its notebooks, its library on PYTHONPATH), each right before this tree's, so that
before and after share the machine and the hour; the two are printed side by side.
``--nbval`` times one nbval pass of each lesson instead (``pytest --nbval
--nbval-current-env``, the stored outputs compared), and says whether it passed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVING = [f"{n:02d}" for n in range(7, 16)]
SLOW_CELL_S = 10.0
CPU_MARK = "__bench_lessons_cpu_s__="


@dataclass(frozen=True)
class Timing:
    lesson: str
    wall_s: float
    cpu_s: float | None
    cells: tuple[tuple[int, str, float], ...]     # (index, first line, seconds)
    status: int = 0                               # nbval: pytest's exit status


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cores)"


def _refuse(message: str) -> None:
    """Bad input: one line on stderr, exit status 2."""
    print(f"bench_lessons: {message}", file=sys.stderr)
    raise SystemExit(2)


def lesson_name(given: str) -> str:
    """A lesson's number from ``7``, ``07`` or a path (``notebooks/07_serving_load.ipynb``)."""
    name = Path(given).name.split("_")[0].removesuffix(".ipynb")
    return f"{int(name):02d}" if name.isdigit() else name


def lesson_path(root: Path, lesson: str) -> Path:
    found = sorted((root / "notebooks").glob(f"{lesson}_*.ipynb"))
    if not found:
        _refuse(f"lesson: got {lesson!r}; no notebooks/{lesson}_*.ipynb in {root}")
    return found[0]


def _seconds(cell) -> float | None:
    stamps = cell.get("metadata", {}).get("execution", {})
    start, end = stamps.get("iopub.execute_input"), stamps.get("shell.execute_reply")
    if not start or not end:
        return None
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def run_lesson(root: Path, lesson: str, timeout_s: int, profile: str | None = None,
               memo_max: int = 0, env: dict | None = None) -> Timing:
    """Execute one lesson from ``root`` in a fresh kernel whose PYTHONPATH is ``root``; with
    ``profile`` (a file path) the kernel's cProfile statistics and the memo's are written
    there (pstats format; the memo's as ``profile + '.memo'``); ``memo_max`` (when not 0)
    bounds the memo at that many requests instead of its own bound; ``env``: more variables
    for the kernel."""
    import nbformat
    from nbclient import NotebookClient

    path = lesson_path(root, lesson)
    nb = nbformat.read(path, as_version=4)
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    if memo_max:
        nb.cells.insert(0, nbformat.v4.new_code_cell(
            f"from schedatrix.serving.sim import memo as _m; _m.MAX_REQUESTS = {memo_max}"))
        code_cells = [i + 1 for i in code_cells]
    if profile:
        nb.cells.insert(0, nbformat.v4.new_code_cell(
            "import cProfile as _cp; _bench_pr = _cp.Profile(); _bench_pr.enable()"))
        nb.cells.append(nbformat.v4.new_code_cell(
            f"_bench_pr.disable(); _bench_pr.dump_stats({profile!r})\n"
            "from schedatrix.serving.sim import memo as _m\n"
            f"open({profile + '.memo'!r}, 'w').write(repr(_m.stats()))"))
        code_cells = [i + 1 for i in code_cells]
    nb.cells.append(nbformat.v4.new_code_cell(
        f"import time as _t; print('{CPU_MARK}' + repr(_t.process_time()))"))
    env = {"PYTHONPATH": str(root), **(env or {})}
    env_was = {k: os.environ.get(k) for k in env}
    os.environ.update(env)                        # the kernel inherits them when it starts
    try:
        client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                                record_timing=True,
                                resources={"metadata": {"path": str(path.parent)}})
        start = time.perf_counter()
        client.execute()
        wall_s = time.perf_counter() - start
    finally:
        for k, v in env_was.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    cpu_s = None
    for out in nb.cells[-1].get("outputs", []):
        text = out.get("text", "")
        if CPU_MARK in text:
            cpu_s = float(text.split(CPU_MARK)[1].split()[0])
    cells = []
    for i in code_cells:
        s = _seconds(nb.cells[i])
        if s is not None:
            first = (nb.cells[i].source.strip().splitlines() or [""])[0][:60]
            cells.append((i, first, s))
    return Timing(path.stem, wall_s, cpu_s, tuple(cells))


def nbval_pass(root: Path, lesson: str, env: dict | None = None) -> Timing:
    """One nbval pass of a lesson from ``root`` (its library on PYTHONPATH): wall seconds, the
    CPU seconds of pytest and its kernel together, and pytest's exit status (0: every stored
    output matched)."""
    import resource

    path = lesson_path(root, lesson)
    env = {**os.environ, "PYTHONPATH": str(root), **(env or {})}
    used = lambda: (lambda r: r.ru_utime + r.ru_stime)(  # noqa: E731
        resource.getrusage(resource.RUSAGE_CHILDREN))
    start, cpu = time.perf_counter(), used()
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "--nbval", "--nbval-current-env", str(path)], cwd=root, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return Timing(path.stem, time.perf_counter() - start, used() - cpu, (), code)


def report(t: Timing, label: str = "") -> list[str]:
    cpu = f"{t.cpu_s:.1f}" if t.cpu_s is not None else "?"
    lines = [f"{label}{t.lesson}: {t.wall_s:.1f} s wall, kernel CPU {cpu} s"]
    for i, first, s in sorted(t.cells, key=lambda c: -c[2])[:3]:
        lines.append(f"    cell {i:>3}  {s:6.1f} s  {first}")
    over = [c for c in t.cells if c[2] > SLOW_CELL_S]
    lines.append(f"    cells over {SLOW_CELL_S:.0f} s: "
                 + (", ".join(f"{i} ({s:.1f} s)" for i, _, s in over) or "none"))
    return lines


def profile_lines(path: str, top: int) -> list[str]:
    """The ``top`` library functions by cumulative seconds, and the memo's stats."""
    import pstats

    stats = pstats.Stats(path).stats
    rows = [(ct, nc, f"{Path(file).parent.name}/{Path(file).name}:{line} {name}")
            for (file, line, name), (cc, nc, tt, ct, callers) in stats.items()
            if "schedatrix" in file]
    lines = [f"    {ct:7.1f} s {nc:>7} calls  {where}"
             for ct, nc, where in sorted(rows, reverse=True)[:top]]
    memo_file = Path(path + ".memo")
    if memo_file.exists():
        lines.append(f"    memo: {memo_file.read_text()}")
    return lines


def _check_rev(rev: str) -> None:
    ok = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                         f"{rev}^{{commit}}"], capture_output=True)
    if ok.returncode != 0:
        _refuse(f"--baseline: got {rev!r}, not a git revision of {ROOT} (allowed: a branch, a "
                "tag or a commit)")


def _baseline_tree(rev: str, into: Path) -> Path:
    tree = into / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                   check=True, capture_output=True)
    return tree


def _nbval_table(lessons: list[str], base: Path | None, rev: str | None,
                 env: dict, base_env: dict) -> int:
    status = lambda t: "passed" if t.status == 0 else f"FAILED ({t.status})"  # noqa: E731
    worst = 0
    rows = []
    for n in lessons:
        before = nbval_pass(base, n, base_env) if base else None
        after = nbval_pass(ROOT, n, env)
        worst = max(worst, after.status)
        line = f"{after.lesson:<24}"
        if before:
            line += f"[{rev}] {before.wall_s:5.1f} s, {before.cpu_s:5.1f} CPU s {status(before)} | "
        line += f"this tree {after.wall_s:5.1f} s, {after.cpu_s:5.1f} CPU s {status(after)}"
        if before:
            line += f" | CPU ratio {after.cpu_s / before.cpu_s:.2f}"
        print(line, flush=True)
        print(f"    {load_average()}", flush=True)
        rows.append((before, after))
    if base:
        tb, ta = sum(b.wall_s for b, _ in rows), sum(a.wall_s for _, a in rows)
        cb, ca = sum(b.cpu_s for b, _ in rows), sum(a.cpu_s for _, a in rows)
        print(f"{'all':<24}[{rev}] {tb:5.1f} s, {cb:5.1f} CPU s | this tree {ta:5.1f} s, "
              f"{ca:5.1f} CPU s | CPU ratio {ca / cb:.2f}")
    return worst


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers (default 07 to 15)")
    parser.add_argument("--baseline", metavar="REV", help="also run the lessons from REV")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds a cell may take")
    parser.add_argument("--profile", type=int, metavar="N", default=0,
                        help="profile this tree's runs: print the N costliest functions of "
                             "the library (cumulative) and the memo's hits")
    parser.add_argument("--nbval", action="store_true",
                        help="time one nbval pass of each lesson instead")
    parser.add_argument("--workers", metavar="N",
                        help="this tree's runs: SCHEDATRIX_WORKERS=N (the baseline's: 1)")
    parser.add_argument("--memo-max", type=int, metavar="REQUESTS", default=0,
                        help="this tree's runs: the memo holds up to REQUESTS requests")
    args = parser.parse_args(argv)
    lessons = [lesson_name(n) for n in args.lessons] or SERVING
    for n in lessons:
        lesson_path(ROOT, n)
    if args.baseline:
        _check_rev(args.baseline)

    env = {"SCHEDATRIX_WORKERS": args.workers} if args.workers else {}
    base_env = {"SCHEDATRIX_WORKERS": "1"} if args.workers else {}
    print(load_average())
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_lessons_") as tmp:
        base = _baseline_tree(args.baseline, Path(tmp)) if args.baseline else None
        try:
            if args.nbval:
                return _nbval_table(lessons, base, args.baseline, env, base_env)
            for n in lessons:
                before = run_lesson(base, n, args.timeout, env=base_env) if base else None
                if before:
                    print("\n".join(report(before, f"[{args.baseline}] ")), flush=True)
                prof = str(Path(tmp) / f"{n}.prof") if args.profile else None
                after = run_lesson(ROOT, n, args.timeout, prof, args.memo_max, env)
                print("\n".join(report(after, "[this tree] " if base else "")), flush=True)
                if prof:
                    print("\n".join(profile_lines(prof, args.profile)), flush=True)
                print(f"    {load_average()}", flush=True)
                rows.append((n, before, after))
        finally:
            if base:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(base)], capture_output=True)
    if base:
        print(f"\n{'lesson':<28}{'before s':>10}{'after s':>10}{'ratio':>8}"
              f"{'CPU before':>12}{'CPU after':>11}")
        for _n, b, a in rows:
            cpu = lambda t: f"{t.cpu_s:.1f}" if t.cpu_s is not None else "?"  # noqa: E731
            print(f"{a.lesson:<28}{b.wall_s:>10.1f}{a.wall_s:>10.1f}{a.wall_s / b.wall_s:>8.2f}"
                  f"{cpu(b):>12}{cpu(a):>11}")
        tb, ta = sum(r[1].wall_s for r in rows), sum(r[2].wall_s for r in rows)
        print(f"{'all':<28}{tb:>10.1f}{ta:>10.1f}{ta / tb:>8.2f}")
    print(load_average())
    return 0


if __name__ == "__main__":
    sys.exit(main())
