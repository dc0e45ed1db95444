"""Grade a folder of student notebooks, each in a sandbox of its own, and print one table.

Layout: one subfolder per student, each holding that student's exercise notebooks under their
original names::

    submissions/
        alice/01_score.ipynb
        alice/02_run_set.ipynb
        bob/01_score.ipynb

Every submission is read (:mod:`.submissions`: a regular file, not a link, at most 20 MB)
before any student's code runs, so each notebook is graded from its own private copy of what
was handed in, whatever another notebook does to the files later. Then each one is graded as
:mod:`.grade_notebook` says, ``jobs`` at once (or on a Ray cluster), and the table printed
(:mod:`.grade_table`). A class is graded only in a real sandbox (:func:`.sandbox.choose`), or
with ``--sandbox none`` by name, which every row of the table then shows.
"""

from __future__ import annotations

import argparse
import os
import queue
import secrets
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ...errors import InputError
from ...serving.sweeps import ray_start
from ..releases.extras import GRADING, require
from .grade_notebook import Grade, grade_notebook
from .grade_table import format_table
from .ray_engine import NO_ADDRESS, grade_on_ray
from .sandbox import KINDS, Limits, Sandbox, allow_runs, choose, end_all, sweep_leftovers
from .submissions import Submission, find_submissions, printable, read_notebook, writable_by_others

__all__ = ["Grade", "grade_folder", "format_table", "read_class", "add_grade_parser"]


def read_class(subs: list[Submission]) -> list[tuple[Submission, bytes, str]]:
    """Every submission's bytes (or why it is not a notebook), read before anything runs."""
    return [(sub, b"", sub.problem) if sub.problem else (sub, *read_notebook(sub.path))
            for sub in subs]


def _solution_lines(folder: Path | None) -> dict[str, list[str]]:
    """The instructor's solution lines per exercise, from ``folder`` (for the copy note)."""
    if folder is None or not folder.is_dir():
        return {}
    import nbformat

    from ..releases.release import solution_lines

    found = {}
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        found[path.stem] = [line for cell in nb.cells if cell.cell_type == "code"
                            for line in solution_lines(cell.source)]
    return found


#: The largest seed of the drawn cases (``--seed``).
MAX_SEED = 2**31 - 1


def draw_seed() -> int:
    """A fresh seed for one grading run's drawn cases (from the system's randomness: no
    student can know it in advance)."""
    return secrets.randbelow(MAX_SEED) + 1


def grade_folder(root: Path | str, exercise: str | None = None, jobs: int = 1,
                 sandbox: Sandbox | str = "auto", limits: Limits | None = None,
                 solutions: Path | str | None = None, engine: str = "threads",
                 progress: Callable[[Grade], object] | None = None,
                 seed: int | None = None, address: str | None = None) -> list[Grade]:
    """Grade every submission under ``root``, ``jobs`` at once (``engine="ray"``: on a Ray
    cluster instead, one task per notebook); ``solutions`` is the instructor's solutions
    folder, used only to note copies. ``seed`` draws every check's cases beside the visible
    ones (default: a fresh one, :func:`draw_seed`); each grade records it, so the same seed
    grades the class again on the same cases. ``address``: the Ray cluster (``engine="ray"``).
    """
    if engine not in ("threads", "ray"):
        raise InputError(f"--engine must be threads or ray, got {engine!r}")
    if seed is None:
        seed = draw_seed()
    if isinstance(seed, bool) or not isinstance(seed, int) or not 1 <= seed <= MAX_SEED:
        raise InputError(f"--seed must be a whole number from 1 to {MAX_SEED:,}, got {seed!r}")
    subs = find_submissions(root, exercise)
    limits = limits or Limits()
    sweep_leftovers()  # what a grader killed outright left in the temporary folder
    if engine == "threads":
        box = sandbox if isinstance(sandbox, Sandbox) else choose(sandbox)
        if box.kind == "setuid":
            open_to_all = writable_by_others(Path(root), [s for s in subs if not s.problem])
            if open_to_all is not None:
                raise InputError(
                    f"--sandbox setuid: {printable(str(open_to_all))!r} is writable by every "
                    f"user, so one student's code could change it: chmod -R o-w "
                    f"{printable(str(root))!r} first")
    lines = _solution_lines(Path(solutions) if solutions else None)
    handed_in = read_class(subs)  # every notebook's bytes, before any student's code runs
    if engine == "ray":
        kind = sandbox.kind if isinstance(sandbox, Sandbox) else sandbox
        return grade_on_ray(handed_in, kind, limits, lines, seed, address)
    allow_runs()    # an earlier grading of this process told to stop leaves no mark
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(max(1, jobs)):
        slots.put(slot)

    def one(item: tuple[Submission, bytes, str]) -> Grade:
        sub, data, problem = item
        if problem:
            grade = Grade(sub.student, sub.exercise, False, problem)
        else:
            slot = slots.get()
            try:
                passed, failure, note = grade_notebook(data, sub.exercise, box, limits, slot,
                                                       lines, seed)
            finally:
                slots.put(slot)
            grade = Grade(sub.student, sub.exercise, passed, failure, note, box.kind, seed)
        if progress is not None:
            progress(grade)
        return grade

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        try:
            return list(pool.map(one, handed_in))
        except BaseException:    # told to stop: the notebooks not begun are never begun
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _positive(name: str, low: int = 1):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise InputError(f"{name} must be a whole number >= {low}, got {text!r}") from None
        if value < low:
            raise InputError(f"{name} must be a whole number >= {low}, got {value}")
        return value
    return parse


def _stop_on_signals() -> dict:
    """On SIGTERM or SIGHUP, end every sandboxed run and exit as an interrupt does, so every
    temporary folder (answer-free copies, run folders) is removed on the way out; returns the
    handlers it replaced (:func:`_restore`)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def stop(signum, _frame):
        end_all()
        sys.exit(128 + signum)

    return {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGHUP)}


def _restore(handlers: dict) -> None:
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


def _run(args) -> int:
    if not 1 <= args.jobs <= 1_024:
        raise InputError(f"--jobs must be a whole number from 1 to 1024, got {args.jobs!r}")
    require("grade", GRADING)
    if args.engine != "ray" and args.address is not None:
        raise InputError("--address names a Ray cluster: use it with --engine ray")
    limits = Limits(cell_timeout_s=args.cell_timeout, notebook_timeout_s=args.timeout,
                    memory_mb=args.memory_mb)
    solutions = args.solutions
    if solutions is None and Path("solutions").is_dir():
        solutions = "solutions"
    if args.engine == "ray":
        address = args.address or os.environ.get("RAY_ADDRESS") or None
        if address is None:
            raise InputError(NO_ADDRESS)
        # before anything is printed or read: an address where nothing answers, in one line
        ray_start.reach(address, f"--engine ray --address {address}" if args.address
                        else f"--engine ray (RAY_ADDRESS={address})")
        box: Sandbox | str = args.sandbox
        print(f"sandbox: chosen on each Ray worker ({args.sandbox}); limits: "
              f"{limits.describe()}", flush=True)
    else:
        box = choose(args.sandbox)
        print(f"sandbox: {box.describe()}; limits: {limits.describe()}", flush=True)
    seed = args.seed if args.seed is not None else draw_seed()
    print(f"drawn cases: seed {seed} (grade again with --seed {seed} to draw the same cases)",
          flush=True)
    handlers = _stop_on_signals()
    try:
        grades = grade_folder(args.dir, args.exercise, args.jobs, box, limits, solutions,
                              args.engine, seed=seed, address=args.address)
    except KeyboardInterrupt:
        end_all()
        raise
    finally:
        _restore(handlers)
    print(format_table(grades, width=args.width))
    return 0 if all(g.passed for g in grades) else 1


def add_grade_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``grade DIR``: grade every student's notebooks in sandboxes and print a table."""
    p = subparsers.add_parser(
        "grade",
        help="grade a folder of student notebooks (DIR/<student>/<exercise>.ipynb)",
        description="Grade each DIR/<student>/<exercise>.ipynb in a sandbox of its own: this "
        "process calls the notebook's functions in a fresh sandboxed run without the library's "
        "answers and compares every answer itself, then runs the notebook with pytest "
        "--nbval-lax; print a table: student, exercise, pass/FAIL, first failing check. Exit 1 "
        "if any notebook fails.",
    )
    p.add_argument("dir", help="folder with one subfolder per student")
    p.add_argument("--exercise", help="grade only this exercise (e.g. 01_score)")
    p.add_argument("--jobs", type=int, default=1, help="notebooks graded at once (default 1)")
    p.add_argument("--sandbox", choices=("auto", *KINDS), default="auto",
                   help="where each notebook runs (default auto: bubblewrap, else setuid as "
                   "root; it stops when neither runs here; none grades without a sandbox, "
                   "which every row then says; see docs/grading.md)")
    p.add_argument("--cell-timeout", type=_positive("--cell-timeout"), default=60,
                   metavar="S", help="seconds one cell (or one check) may run (default 60)")
    p.add_argument("--timeout", type=_positive("--timeout", 5), default=300, metavar="S",
                   help="seconds one notebook may take to grade, all of it (default 300)")
    p.add_argument("--memory-mb", type=_positive("--memory-mb", 512), default=2048,
                   metavar="MB", help="memory one notebook may hold, MiB, all its processes "
                   "together (a cgroup where the machine offers one, else a watchdog; "
                   "docs/grading.md), and each process's address space (default 2048)")
    p.add_argument("--solutions", default=None,
                   help="the instructor's solutions, to note copies (default ./solutions "
                   "if it exists)")
    p.add_argument("--engine", choices=("threads", "ray"), default="threads",
                   help="threads on this machine (default), or ray: one task per notebook "
                   "on a Ray cluster")
    p.add_argument("--seed", type=_positive("--seed"), default=None,
                   help="the seed of the cases each check draws beside the ones the exercise "
                   "shows (default: a fresh one, printed; the same seed grades on the same "
                   "cases)")
    p.add_argument("--address", default=None, metavar="HOST:PORT",
                   help="with --engine ray: the Ray cluster to grade on (default: "
                   "RAY_ADDRESS; 'local' starts one on this machine)")
    p.add_argument("--width", type=int, default=0,
                   help="cut rows to this many characters (default 0: never)")
    p.set_defaults(func=_run)
    return p
