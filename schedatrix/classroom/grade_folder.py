"""Grade a folder of student notebooks with nbval, and print one table row per notebook.

Layout: one subfolder per student, each holding that student's exercise notebooks under their
original names::

    submissions/
        alice/01_score.ipynb
        alice/02_run_set.ipynb
        bob/01_score.ipynb

Each notebook is graded by ``pytest --nbval-lax`` itself, in its own process (so the verdict
is exactly what ``pytest --nbval-lax alice/01_score.ipynb`` says), and the first failing cell
is read back from pytest's JUnit report: the exception's last line (for a check cell, the
grader's ``AssertionError`` naming the input, or the stub's ``NotImplementedError``).

One extra rule on top of nbval, when the exercise templates are known (``--exercises``): every
check cell of the template must still be in the student's notebook, unchanged. A student who
deletes or edits a check cell fails with "check cell changed or removed".
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["Submission", "Grade", "find_submissions", "check_cells", "grade_notebook",
           "grade_folder", "format_table", "add_grade_parser"]

CHECK_TAG = "nbval-check-output"
_ANSI = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*[A-Za-z]")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning))\b:?")


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


def find_submissions(root: Path | str, exercise: str | None = None) -> list[Submission]:
    """Every ``root/<student>/<exercise>.ipynb``, sorted by student then exercise."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"DIR must be a folder of student folders, got {str(root)!r}")
    wanted = exercise[:-6] if exercise and exercise.endswith(".ipynb") else exercise
    found = []
    for student in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for nb in sorted(student.glob("*.ipynb")):
            if wanted is None or nb.stem == wanted:
                found.append(Submission(student.name, nb.stem, nb))
    if not found:
        what = f" for exercise {wanted!r}" if wanted else ""
        raise InputError(
            f"DIR must hold <student>/<exercise>.ipynb notebooks{what}, found none in {str(root)!r}"
        )
    return found


def check_cells(nb) -> list[str]:
    """The sources of a notebook's check cells (code cells tagged ``nbval-check-output``)."""
    return [c.source.strip() for c in nb.cells
            if c.cell_type == "code" and CHECK_TAG in c.get("metadata", {}).get("tags", [])]


def _tampered(path: Path, template: Path | None) -> str:
    import nbformat  # lazy: only these commands need it

    if template is None or not template.exists():
        return ""
    try:
        student = check_cells(nbformat.read(path, as_version=4))
    except Exception:  # unreadable: nbval will say so
        return ""
    for source in check_cells(nbformat.read(template, as_version=4)):
        if source not in student:
            first = source.splitlines()[-1] if source else ""
            return f"check cell changed or removed: keep `{first}` as it was"
    return ""


def _first_failure(report: Path) -> tuple[bool, str]:
    """(passed, first failure's message) from a pytest JUnit XML report."""
    try:
        tree = ET.parse(report)
    except (ET.ParseError, OSError) as exc:
        return False, f"could not read pytest's report: {exc}"
    cases = tree.getroot().iter("testcase")
    ran = 0
    for case in cases:
        ran += 1
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None:
            continue
        text = _ANSI.sub("", problem.text or problem.get("message", ""))
        where = case.get("name", "")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if any("Cell outputs differ" in line for line in lines):
            return False, f"{where}: saved output differs from a fresh run (re-run all, save)"
        exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)
                      and "Traceback (most recent call last)" not in line]
        if exceptions:
            return False, f"{where}: {exceptions[-1]}"
        return False, f"{where}: {lines[0] if lines else 'failed'}"
    if ran == 0:
        return False, "no cells ran (is it a valid notebook?)"
    return True, ""


def grade_notebook(path: Path | str, template: Path | str | None = None,
                   timeout: int = 300) -> tuple[bool, str]:
    """Grade one notebook with ``pytest --nbval-lax``: (passed, first failing check)."""
    path = Path(path).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        ini = Path(tmp) / "pytest.ini"
        ini.write_text("[pytest]\n", encoding="utf-8")
        command = [sys.executable, "-m", "pytest", "--nbval-lax", str(path), "-q",
                   "-p", "no:cacheprovider", "-c", str(ini), "--rootdir", str(path.parent),
                   f"--nbval-cell-timeout={timeout}", f"--junitxml={report}"]
        env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
        try:
            subprocess.run(command, cwd=path.parent, capture_output=True, text=True,
                           timeout=timeout * 4, env=env, check=False)
        except subprocess.TimeoutExpired:
            return False, f"timed out after {timeout * 4} s"
        passed, failure = _first_failure(report)
    if passed:
        tampered = _tampered(path, Path(template) if template else None)
        if tampered:
            return False, tampered
    return passed, failure


def grade_folder(root: Path | str, exercise: str | None = None,
                 exercises: Path | str | None = None, jobs: int = 1) -> list[Grade]:
    """Grade every submission under ``root``; ``exercises`` is the folder of templates."""
    subs = find_submissions(root, exercise)
    templates = Path(exercises) if exercises else None

    def one(sub: Submission) -> Grade:
        template = templates / f"{sub.exercise}.ipynb" if templates else None
        passed, failure = grade_notebook(sub.path, template)
        return Grade(sub.student, sub.exercise, passed, failure)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, subs))


def format_table(grades: list[Grade], width: int = 0) -> str:
    """A plain-text table: student, exercise, pass/FAIL, first failing check.

    Rows longer than ``width`` characters are cut (0: never).
    """
    rows = [("student", "exercise", "result", "first failing check")]
    for g in grades:
        rows.append((g.student, g.exercise, "pass" if g.passed else "FAIL", g.failure))
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


def _run(args) -> int:
    if args.jobs < 1:
        raise InputError(f"--jobs must be a whole number >= 1, got {args.jobs!r}")
    exercises = args.exercises
    if exercises is None and Path("exercises").is_dir():
        exercises = "exercises"
    grades = grade_folder(args.dir, args.exercise, exercises, args.jobs)
    print(format_table(grades, width=args.width))
    return 0 if all(g.passed for g in grades) else 1


def add_grade_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``grade DIR``: grade every student's notebooks with nbval and print a table."""
    p = subparsers.add_parser(
        "grade",
        help="grade a folder of student notebooks (DIR/<student>/<exercise>.ipynb)",
        description="Run each DIR/<student>/<exercise>.ipynb with pytest --nbval-lax and "
        "print a table: student, exercise, pass/FAIL, first failing check. Exit 1 if any "
        "notebook fails.",
    )
    p.add_argument("dir", help="folder with one subfolder per student")
    p.add_argument("--exercise", help="grade only this exercise (e.g. 01_score)")
    p.add_argument("--exercises", default=None,
                   help="folder of exercise templates whose check cells must be kept "
                   "(default: ./exercises if it exists)")
    p.add_argument("--jobs", type=int, default=1, help="notebooks graded at once (default 1)")
    p.add_argument("--width", type=int, default=0,
                   help="cut rows to this many characters (default 0: never)")
    p.set_defaults(func=_run)
    return p
