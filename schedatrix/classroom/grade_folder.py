"""Grade a folder of student notebooks, each in a sandbox of its own, and print one table.

Layout: one subfolder per student, each holding that student's exercise notebooks under their
original names::

    submissions/
        alice/01_score.ipynb
        alice/02_run_set.ipynb
        bob/01_score.ipynb

For each notebook the grader, in this order:

1. reads it (a regular file, not a link, at most 20 MB) and parses it ("not a valid
   notebook" otherwise);
2. looks its name up in the package's registry ("unknown exercise" otherwise) and checks
   the template: every registered check cell present, unchanged, with its tags, in order,
   and the ``python3`` kernel (:func:`~schedatrix.classroom.exercises.template_problem`);
3. runs ``pytest --nbval-lax`` on a fresh copy in a sandbox (:mod:`.sandbox`) while serving
   the check cells from a checker in this process, through one socket
   (:mod:`.checker`, :mod:`.boundary`);
4. passes the notebook only if nbval passed *and* every registered check cell reached this
   checker and passed it. The checker's verdict is the one that counts: nothing that runs in
   the sandbox can write it.

It also notes, without failing anyone, a notebook whose code matches the instructor's
solution or names the library's own answer (:mod:`.copying`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import re
import selectors
import socket
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from .boundary import Channel
from .checker import Session, run_session
from .copying import library_calls, solution_copy
from .exercises import Exercise, exercise_of, template_problem
from .sandbox import KINDS, Limits, Sandbox, choose

__all__ = ["Submission", "Grade", "Run", "find_submissions", "read_notebook",
           "run_in_sandbox", "decide", "grade_notebook", "grade_folder", "format_table",
           "add_grade_parser"]

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
#: Check cells one notebook may run against the checker (a loop of checks is cut off).
MAX_SESSIONS = 16
_ANSI = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*[A-Za-z]")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning))\b:?")
_SUMMARY_BYTES = 64 * 1024


@dataclass(frozen=True)
class Submission:
    student: str
    exercise: str
    path: Path


@dataclass(frozen=True)
class Grade:
    student: str
    exercise: str
    passed: bool
    failure: str  # the first failing check's message ("" when passed)
    note: str = ""  # what the instructor may want to read (a copied solution, ...)


@dataclass
class Run:
    """What one sandboxed run left: the checker's sessions (trusted) and nbval's summary
    (written inside the sandbox, so it only ever explains a failure)."""

    sessions: list[Session] = field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    summary: dict = field(default_factory=dict)
    stderr: str = ""


def find_submissions(root: Path | str, exercise: str | None = None) -> list[Submission]:
    """Every ``root/<student>/<exercise>.ipynb``, sorted by student then exercise."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"DIR must be a folder of student folders, got {str(root)!r}")
    wanted = exercise[:-6] if exercise and exercise.endswith(".ipynb") else exercise
    found = []
    for student in sorted(p for p in root.iterdir()
                          if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")):
        for nb in sorted(student.glob("*.ipynb")):
            if wanted is None or nb.stem == wanted:
                found.append(Submission(student.name, nb.stem, nb))
    if not found:
        what = f" for exercise {wanted!r}" if wanted else ""
        raise InputError(
            f"DIR must hold <student>/<exercise>.ipynb notebooks{what}, found none in {str(root)!r}"
        )
    return found


def read_notebook(path: Path) -> tuple[bytes, str]:
    """(the file's bytes, "") or (b"", why it is not a valid notebook). Never follows a link."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if path.is_symlink():
            return b"", "not a valid notebook: a link, not a file"
        return b"", f"not a valid notebook: cannot read it ({exc.strerror})"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return b"", "not a valid notebook: not a regular file"
        if info.st_size > MAX_NOTEBOOK_BYTES:
            return b"", f"not a valid notebook: {info.st_size:,} bytes, over 20 MB"
        return handle.read(MAX_NOTEBOOK_BYTES + 1), ""


def _parse(data: bytes):
    """(notebook, "") or (None, why it is not a valid notebook)."""
    import nbformat  # lazy: the command line imports without the test extras

    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # JSON, encoding, schema: all the same to a learner
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return None, f"not a valid notebook: {first[:120]}"
    return nb, ""


# ----------------------------------------------------------------------------- one run


def _drain(stream, keep: list[bytes]) -> None:
    """Read a pipe to its end, keeping at most the first 64 kB."""
    size = 0
    while chunk := stream.read(8192):
        if size < _SUMMARY_BYTES:
            keep.append(chunk[: _SUMMARY_BYTES - size])
            size += len(chunk)
    stream.close()


def run_in_sandbox(data: bytes, exercise: Exercise, sandbox: Sandbox, limits: Limits,
                   slot: int = 0) -> Run:
    """Run ``pytest --nbval-lax`` on a copy of a notebook in ``sandbox`` while this process
    serves its check cells; returns what the checker saw and what nbval said."""
    import json

    run = Run()
    allowed = {c.name for c in exercise.checks}
    with tempfile.TemporaryDirectory(prefix="schedatrix-grade-") as tmp:
        os.chmod(tmp, 0o711)
        work = Path(tmp) / "work"
        work.mkdir()
        sock_dir = Path(tmp) / "checker"
        sock_dir.mkdir()
        os.chmod(sock_dir, 0o755)
        sock_path = sock_dir / "checker.sock"
        notebook = Path(tmp) / "notebook.ipynb"
        notebook.write_bytes(data)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(sock_path))
        os.chmod(sock_path, 0o666)
        server.listen(4)
        data_fd = os.open(notebook, os.O_RDONLY)
        summary_r, summary_w = os.pipe()
        with open(Path(tmp) / "stderr", "w+b") as err, contextlib.ExitStack() as stack:
            stack.callback(server.close)
            stack.callback(os.close, data_fd)
            launch = sandbox.launch(f"{exercise.name}.ipynb", data_fd, work, sock_path, limits,
                                    slot, summary_w)
            process = subprocess.Popen(launch.argv, env=launch.env, cwd=launch.cwd,
                                       pass_fds=launch.pass_fds, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=err,
                                       start_new_session=True)
            os.close(summary_w)
            kept: list[bytes] = []
            reader = threading.Thread(target=_drain, args=(os.fdopen(summary_r, "rb"), kept),
                                      daemon=True)
            reader.start()
            deadline = time.monotonic() + limits.notebook_timeout_s
            _serve(server, process, deadline, allowed, run)
            if process.poll() is None:
                run.timed_out = True
                _stop(process)
            run.exit_code = process.wait()
            reader.join(timeout=10)
            err.seek(0)
            run.stderr = err.read(_SUMMARY_BYTES).decode("utf-8", "replace")
        try:
            run.summary = json.loads(b"".join(kept).decode("utf-8", "replace") or "{}")
        except ValueError:
            run.summary = {}
        if not isinstance(run.summary, dict):
            run.summary = {}
    return run


def _serve(server: socket.socket, process: subprocess.Popen, deadline: float,
           allowed: set[str], run: Run) -> None:
    """Serve check cells until the sandboxed run ends or its time is up."""
    with selectors.DefaultSelector() as selector:
        selector.register(server, selectors.EVENT_READ)
        pidfd = None
        with contextlib.suppress(AttributeError, OSError):
            pidfd = os.pidfd_open(process.pid)
            selector.register(pidfd, selectors.EVENT_READ)
        try:
            while process.poll() is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                for key, _ in selector.select(timeout=min(left, 0.5 if pidfd is None else left)):
                    if key.fileobj is not server:
                        continue
                    conn, _ = server.accept()
                    with Channel.over_socket(conn) as channel:
                        if len(run.sessions) < MAX_SESSIONS:
                            run.sessions.append(run_session(channel, allowed, deadline))
        finally:
            if pidfd is not None:
                os.close(pidfd)


def _stop(process: subprocess.Popen) -> None:
    """End a sandboxed run and everything it started."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, 9)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


# ----------------------------------------------------------------------------- the verdict


def _explain(failure: dict, limits: Limits) -> str:
    """One line for a cell nbval failed, from its report (never pytest's internals)."""
    where = str(failure.get("where", "notebook"))[:40]
    if where.startswith("Cell ") and where[5:].isdigit():
        # nbval counts code cells from 0; a student counts what they see, from 1
        where = f"code cell {int(where[5:]) + 1} (counting code cells from the top)"
    text = _ANSI.sub("", str(failure.get("text", "")))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if any("Timeout of" in line and "exceeded" in line for line in lines):
        if any("Failed to interrupt kernel" in line for line in lines):
            return (f"{where}: timed out after {limits.cell_timeout_s} s (it could not be "
                    "interrupted, or the kernel stopped)")
        return f"{where}: timed out after {limits.cell_timeout_s} s"
    if any("Kernel dead" in line or "Kernel died" in line for line in lines):
        return f"{where}: the kernel stopped (the code ended it, or it ran out of memory)"
    if any("Cell outputs differ" in line for line in lines):
        return f"{where}: saved output differs from a fresh run (re-run all, save)"
    exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)
                  and "Traceback (most recent call last)" not in line
                  and not line.startswith(("NbCellError", "nbval."))]
    if exceptions:
        last = exceptions[-1].rstrip(":")
        if last.startswith("MemoryError"):
            return f"{where}: {last} (over the limit of {limits.memory_mb} MiB per process)"
        return f"{where}: {last[:300]}"
    return f"{where}: failed"


def decide(exercise: Exercise, run: Run, limits: Limits) -> tuple[bool, str]:
    """(passed, first failure) from a run: the checker's sessions decide, nbval must agree."""
    if run.timed_out:
        return False, f"timed out after {limits.notebook_timeout_s} s (the whole notebook)"
    failures = run.summary.get("failures") if isinstance(run.summary, dict) else None
    failures = [f for f in failures or [] if isinstance(f, dict)]
    explained = [_explain(f, limits) for f in failures]
    timeouts = [e for e in explained if "timed out after" in e]
    if timeouts:
        return False, timeouts[0]
    for session in run.sessions:
        if not session.passed:
            return False, session.failure
    for check in exercise.checks:
        if not any(s.check == check.name for s in run.sessions):
            call = check.cell_source.splitlines()[-1]
            if explained:
                return False, explained[0]
            return False, (f"{check.name}: the check cell never reached the grader's checker "
                           f"(run `{call}` as it is, without redefining {check.name})")
    if run.exit_code != 0:
        if explained:
            return False, explained[0]
        return False, f"the notebook did not run to its end (exit status {run.exit_code})"
    return True, ""


def grade_notebook(data: bytes, exercise_name: str, sandbox: Sandbox, limits: Limits,
                   slot: int = 0, solutions: dict[str, list[str]] | None = None
                   ) -> tuple[bool, str, str]:
    """Grade one notebook's bytes as exercise ``exercise_name``: (passed, failure, note)."""
    exercise = exercise_of(exercise_name)
    if exercise is None:
        return False, f"unknown exercise {exercise_name!r}", ""
    nb, problem = _parse(data)
    if nb is None:
        return False, problem, ""
    problem = template_problem(nb, exercise)
    if problem:
        return False, problem, ""
    notes = [library_calls(nb, exercise),
             solution_copy(nb, (solutions or {}).get(exercise.name, []))]
    note = "; ".join(n for n in notes if n)
    run = run_in_sandbox(data, exercise, sandbox, limits, slot)
    passed, failure = decide(exercise, run, limits)
    return passed, failure, note


# ----------------------------------------------------------------------------- a class


def _solution_lines(folder: Path | None) -> dict[str, list[str]]:
    """The instructor's solution lines per exercise, from ``folder`` (for the copy note)."""
    if folder is None or not folder.is_dir():
        return {}
    import nbformat

    from .release import solution_lines

    found = {}
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        found[path.stem] = [line for cell in nb.cells if cell.cell_type == "code"
                            for line in solution_lines(cell.source)]
    return found


def grade_folder(root: Path | str, exercise: str | None = None, jobs: int = 1,
                 sandbox: Sandbox | str = "auto", limits: Limits | None = None,
                 solutions: Path | str | None = None, engine: str = "threads",
                 progress: Callable[[Grade], object] | None = None) -> list[Grade]:
    """Grade every submission under ``root``, ``jobs`` at once (``engine="ray"``: on a Ray
    cluster instead, one task per notebook); ``solutions`` is the instructor's solutions
    folder, used only to note copies."""
    subs = find_submissions(root, exercise)
    limits = limits or Limits()
    lines = _solution_lines(Path(solutions) if solutions else None)
    if engine == "ray":
        from .ray_engine import grade_on_ray

        kind = sandbox.kind if isinstance(sandbox, Sandbox) else sandbox
        return grade_on_ray(subs, kind, limits, lines)
    if engine != "threads":
        raise InputError(f"--engine must be threads or ray, got {engine!r}")
    box = sandbox if isinstance(sandbox, Sandbox) else choose(sandbox)
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(max(1, jobs)):
        slots.put(slot)

    def one(sub: Submission) -> Grade:
        data, problem = read_notebook(sub.path)
        if problem:
            grade = Grade(sub.student, sub.exercise, False, problem)
        else:
            slot = slots.get()
            try:
                passed, failure, note = grade_notebook(data, sub.exercise, box, limits, slot,
                                                       lines)
            finally:
                slots.put(slot)
            grade = Grade(sub.student, sub.exercise, passed, failure, note)
        if progress is not None:
            progress(grade)
        return grade

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, subs))


def format_table(grades: list[Grade], width: int = 0) -> str:
    """A plain-text table: student, exercise, pass/FAIL, first failing check (or a note).

    Rows longer than ``width`` characters are cut (0: never).
    """
    rows = [("student", "exercise", "result", "first failing check (or note)")]
    for g in grades:
        text = g.failure if not g.passed else (f"note: {g.note}" if g.note else "")
        if not g.passed and g.note:
            text += f" (note: {g.note})"
        rows.append((g.student, g.exercise, "pass" if g.passed else "FAIL", text))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines = []
    for r in rows:
        line = f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:<6}  {r[3]}".rstrip()
        if width and len(line) > width:
            line = line[: width - 3] + "..."
        lines.append(line)
    longest = max(len(line) for line in lines)
    lines.insert(1, "-" * (min(width, longest) if width else longest))
    passed = sum(g.passed for g in grades)
    lines.append(f"{passed} of {len(grades)} notebooks pass")
    return "\n".join(lines)


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


def _run(args) -> int:
    if args.jobs < 1:
        raise InputError(f"--jobs must be a whole number >= 1, got {args.jobs!r}")
    limits = Limits(cell_timeout_s=args.cell_timeout, notebook_timeout_s=args.timeout,
                    memory_mb=args.memory_mb)
    solutions = args.solutions
    if solutions is None and Path("solutions").is_dir():
        solutions = "solutions"
    if args.engine == "ray":
        box: Sandbox | str = args.sandbox
        print(f"sandbox: chosen on each Ray worker ({args.sandbox}); limits: "
              f"{limits.describe()}", flush=True)
    else:
        box = choose(args.sandbox)
        print(f"sandbox: {box.describe()}; limits: {limits.describe()}", flush=True)
    grades = grade_folder(args.dir, args.exercise, args.jobs, box, limits, solutions,
                          args.engine)
    print(format_table(grades, width=args.width))
    return 0 if all(g.passed for g in grades) else 1


def add_grade_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``grade DIR``: grade every student's notebooks in sandboxes and print a table."""
    p = subparsers.add_parser(
        "grade",
        help="grade a folder of student notebooks (DIR/<student>/<exercise>.ipynb)",
        description="Run each DIR/<student>/<exercise>.ipynb with pytest --nbval-lax in a "
        "sandbox of its own while this process checks its check cells, and print a table: "
        "student, exercise, pass/FAIL, first failing check. Exit 1 if any notebook fails.",
    )
    p.add_argument("dir", help="folder with one subfolder per student")
    p.add_argument("--exercise", help="grade only this exercise (e.g. 01_score)")
    p.add_argument("--jobs", type=int, default=1, help="notebooks graded at once (default 1)")
    p.add_argument("--sandbox", choices=("auto", *KINDS), default="auto",
                   help="where each notebook runs (default auto: the strongest that works "
                   "here; see docs/grading.md)")
    p.add_argument("--cell-timeout", type=_positive("--cell-timeout"), default=60,
                   metavar="S", help="seconds one cell may run (default 60)")
    p.add_argument("--timeout", type=_positive("--timeout", 5), default=300, metavar="S",
                   help="seconds one notebook may run (default 300)")
    p.add_argument("--memory-mb", type=_positive("--memory-mb", 512), default=2048,
                   metavar="MB", help="address space per process, MiB (default 2048)")
    p.add_argument("--solutions", default=None,
                   help="the instructor's solutions, to note copies (default ./solutions "
                   "if it exists)")
    p.add_argument("--engine", choices=("threads", "ray"), default="threads",
                   help="threads on this machine (default), or ray: one task per notebook "
                   "on a Ray cluster")
    p.add_argument("--width", type=int, default=0,
                   help="cut rows to this many characters (default 0: never)")
    p.set_defaults(func=_run)
    return p
