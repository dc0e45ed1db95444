"""The exercise pipeline: student copies in ``exercises/`` generated from ``solutions/``.

A solution notebook is the single source. In its code cells, each region

    ### BEGIN SOLUTION
    ### HINT: one line the learner sees in the stub
    ...the answer...
    ### END SOLUTION

becomes, at the region's indentation, ``raise NotImplementedError("<hint>")`` (the hint line
is optional). Cells tagged ``solution`` are left out whole. Outputs and execution counts are
cleared and metadata normalised (cell metadata keeps only its tags, and check cells are marked
read-only for JupyterLab; the notebook keeps only the kernel), so regenerating is byte-stable
and ``--check`` can tell when ``exercises/`` is out of date. A solution must be a registered
exercise whose check cells match the registry (:mod:`.exercises`).

``--release DIR`` writes what a class receives: the exercises, the lessons (``notebooks/``),
``examples/`` (the package's example files) and the pages of ``docs/`` the lessons name (the
glossary and further reading each lesson links to), with a short README; never ``solutions/``.
Where the lessons and solutions sit in a git checkout, the release is refused while any of
their notebooks differ from the committed ones (JupyterLab's autosave writes a half-run lesson
while someone browses it), naming the files: a class gets what was committed and tested.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

from ...errors import InputError
from ...examples import write_examples
from ..checking.exercises import CHECK_TAG, EXERCISE_KEY, exercise_of, template_problem
from .curve import curve_table
from .extras import NOTEBOOKS, require

__all__ = [
    "BEGIN",
    "END",
    "HINT",
    "SOLUTION_TAG",
    "stub_source",
    "solution_lines",
    "release_notebook",
    "render",
    "make_exercises",
    "write_release",
    "uncommitted",
    "add_release_parser",
]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
HINT = "### HINT:"
#: Cells with this tag exist only in the solutions.
SOLUTION_TAG = "solution"
DEFAULT_HINT = "write this part, then run the check cell below"

_KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def stub_source(source: str, where: str = "cell") -> str:
    """A code cell's source with every solution region replaced by a stub that raises."""
    out: list[str] = []
    inside = False
    indent = ""
    hint = DEFAULT_HINT
    for number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise InputError(f"{where}, line {number}: {BEGIN} inside a solution region")
            inside, indent, hint = True, line[: len(line) - len(line.lstrip())], DEFAULT_HINT
        elif marker == END:
            if not inside:
                raise InputError(f"{where}, line {number}: {END} without {BEGIN}")
            out.append(f"{indent}# Your code here.")
            out.append(f"{indent}raise NotImplementedError({_quote(hint)})")
            inside = False
        elif inside:
            if marker.startswith(HINT):
                hint = marker[len(HINT):].strip() or DEFAULT_HINT
        else:
            out.append(line)
    if inside:
        raise InputError(f"{where}: {BEGIN} is never closed by {END}")
    return "\n".join(out)


def solution_lines(source: str) -> list[str]:
    """The stripped, non-blank lines inside solution regions (what must never leak)."""
    lines, inside = [], False
    for line in source.split("\n"):
        marker = line.strip()
        if marker == BEGIN:
            inside = True
        elif marker == END:
            inside = False
        elif inside and marker and not marker.startswith(HINT):
            lines.append(marker)
    return lines


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def release_notebook(nb, name: str = "notebook"):
    """The student copy of one solution notebook (a new ``NotebookNode``)."""
    import nbformat  # lazy: only these commands need it

    cells = []
    for index, cell in enumerate(nb.cells):
        tags = _tags(cell)
        if SOLUTION_TAG in tags:
            continue
        metadata = {"tags": tags} if tags else {}
        if CHECK_TAG in tags:  # JupyterLab keeps learners from editing or deleting it
            metadata.update(editable=False, deletable=False)
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(
                stub_source(cell.source, f"{name}, cell {index}"), metadata=metadata
            )
        elif cell.cell_type == "markdown":
            if BEGIN in cell.source:
                raise InputError(f"{name}, cell {index}: solution regions belong in code cells")
            new = nbformat.v4.new_markdown_cell(cell.source, metadata=metadata)
        else:
            new = nbformat.v4.new_raw_cell(cell.source, metadata=metadata)
        new["id"] = cell.get("id") or f"cell-{index}"
        cells.append(new)
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata = {"kernelspec": dict(_KERNELSPEC), "language_info": {"name": "python"}}
    exercise = exercise_of(name)
    if exercise is not None:  # tells the pytest plugin this is an exercise, not a lesson
        out.metadata[EXERCISE_KEY] = {"exercise": exercise.name}
    out.nbformat, out.nbformat_minor = 4, 5
    return out


def render(nb) -> str:
    """A notebook as the exact text written to disk (nbformat's JSON, one final newline)."""
    import nbformat  # lazy: only these commands need it

    return nbformat.writes(nb).rstrip("\n") + "\n"


def make_exercises(solutions: Path | str = "solutions", exercises: Path | str = "exercises",
                   check: bool = False) -> list[Path]:
    """Write ``exercises/X.ipynb`` for each ``solutions/X.ipynb``; return what changed.

    With ``check=True`` nothing is written: the return value lists the exercises that are
    missing, differ from what would be generated, or have no solution any more.
    """
    import nbformat  # lazy: only these commands need it

    src, dst = Path(solutions), Path(exercises)
    if not src.is_dir():
        raise InputError(f"--solutions must be a folder of notebooks, got {str(src)!r}")
    sources = sorted(src.glob("*.ipynb"))
    if not sources:
        raise InputError(f"--solutions must hold at least one .ipynb, got none in {str(src)!r}")
    changed: list[Path] = []
    for path in sources:
        nb = nbformat.read(path, as_version=4)
        _registered(nb, path)
        text = render(release_notebook(nb, path.name))
        target = dst / path.name
        old = target.read_text(encoding="utf-8") if target.exists() else None
        if old != text:
            changed.append(target)
            if not check:
                dst.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
    if dst.is_dir():
        names = {p.name for p in sources}
        changed += [p for p in sorted(dst.glob("*.ipynb")) if p.name not in names]
    return changed


def _registered(nb, path: Path) -> None:
    """Refuse a solution that is not a registered exercise or whose check cells differ."""
    exercise = exercise_of(path.stem)
    where = "schedatrix/classroom/checking/exercises.py"
    if exercise is None:
        raise InputError(f"{path} is not a registered exercise: add {path.stem!r} to {where}")
    problem = template_problem(nb, exercise)
    if problem:
        raise InputError(f"{path}: {problem} (its check cells are registered in {where})")


_STUDENT_README = """# Your schedatrix course

- `notebooks/`: the lessons. Start with `00_walkthrough.ipynb`.
- `docs/`: the glossary, the further reading and the pages the lessons name.
- `exercises/`: your exercises. Replace each `raise NotImplementedError(...)` with your code,
  then run the check cell under it: it tries your function on many cases and tells you which
  input gave what. The check cells are read-only: a changed check cell fails the grade.

Install the course once (Python 3.11 or newer), from the package your instructor gave you:

    python3 -m venv .venv
    .venv/bin/pip install "schedatrix[course,test]"   # or the wheel file you were given
    .venv/bin/jupyter lab --ServerApp.root_dir=. notebooks/00_walkthrough.ipynb

(run from this folder: JupyterLab's file browser then holds `notebooks/`, `exercises/` and
`examples/`, with the walkthrough open first).

Check an exercise yourself after running all its cells and saving it:

    .venv/bin/pytest --nbval-lax exercises/01_score.ipynb

Hand in the saved notebooks under their own names (`01_score.ipynb`, ...). Your instructor
grades each one in a sandbox with `schedatrix grade`.

## The serving exercises, easiest first

Each follows a lesson; do the lesson first. The times are estimates.

"""


def uncommitted(*folders: Path | str) -> list[str]:
    """The notebooks under ``folders`` that differ from git's committed versions (changed,
    or not committed at all), as git names them; [] where the folders are not in a git
    checkout (a release built from a folder of one's own) or git is not installed."""
    found: list[str] = []
    for folder in folders:
        folder = Path(folder)
        try:
            r = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--",
                                "."], cwd=folder, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return []
        if r.returncode != 0:           # not a git checkout
            continue
        for line in r.stdout.splitlines():
            name = line[3:].strip().strip('"')
            if name.endswith(".ipynb") and ".ipynb_checkpoints" not in name:
                found.append(name)
    return sorted(set(found))


#: A page of ``docs/`` as a lesson names it: a link (``../docs/glossary.md``) or in its prose.
DOC_PAGE = re.compile(r"(?<![\w/.-])(?:\.\./)?docs/([\w-]+\.md)\b")


def named_docs(folder: Path) -> set[str]:
    """The ``docs/`` pages the notebooks in ``folder`` name (file names)."""
    return {m for path in folder.glob("*.ipynb")
            for m in DOC_PAGE.findall(path.read_text(encoding="utf-8"))}


def write_release(target: Path | str, solutions: Path | str = "solutions",
                  notebooks: Path | str = "notebooks",
                  examples: Path | str | None = None) -> list[Path]:
    """Write what a class receives into ``target`` (a new or empty folder); return the files.

    ``target/exercises`` is generated from ``solutions`` (which is never copied),
    ``target/notebooks`` and ``target/examples`` are copies (the package's own example files
    unless ``examples`` names a folder), ``target/docs`` holds the pages of the ``docs/``
    beside the lessons that the released notebooks name, and a README tells students
    how to work and check.
    """
    out = Path(target)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"--release must name a new or empty folder, got {str(out)!r}")
    lessons = Path(notebooks)
    if not lessons.is_dir():
        raise InputError(f"--notebooks must be the folder of lessons, got {str(lessons)!r}")
    dirty = uncommitted(lessons, solutions) if Path(solutions).is_dir() else []
    if dirty:
        raise InputError(f"--release: {len(dirty)} notebook(s) differ from git: "
                         f"{', '.join(dirty[:6])}{' ...' if len(dirty) > 6 else ''}; a class "
                         "gets the committed lessons: commit them, or restore them with "
                         "git checkout -- FILE")
    make_exercises(solutions, out / "exercises")
    shutil.copytree(lessons, out / "notebooks",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    if examples is None:
        write_examples(out / "examples")
    elif Path(examples).is_dir():
        shutil.copytree(examples, out / "examples")
    docs = lessons.resolve().parent / "docs"
    for name in sorted(named_docs(out / "notebooks") | named_docs(out / "exercises")):
        if (docs / name).is_file():
            (out / "docs").mkdir(exist_ok=True)
            shutil.copyfile(docs / name, out / "docs" / name)
    (out / "README.md").write_text(_STUDENT_README + curve_table() + "\n", encoding="utf-8")
    return sorted(p for p in out.rglob("*") if p.is_file())


def _run(args) -> int:
    require("make-exercises", NOTEBOOKS)
    if args.release:
        if args.check:
            raise InputError("--check and --release do not go together")
        files = write_release(args.release, args.solutions, args.notebooks)
        print(f"wrote {len(files)} files to {args.release}: exercises/, notebooks/, "
              "examples/, docs/, README.md (no solutions): hand out this folder, not the "
              "repository")
        return 0
    changed = make_exercises(args.solutions, args.exercises, check=args.check)
    if args.check:
        if changed:
            for path in changed:
                print(f"out of date: {path}")
            print("run: schedatrix make-exercises")
            return 1
        print(f"{args.exercises} is up to date with {args.solutions}")
        return 0
    stale = [p for p in changed if not (Path(args.solutions) / p.name).exists()]
    for path in changed:
        if path in stale:
            print(f"no solution for {path} (left in place; delete it by hand)")
        else:
            print(f"wrote {path}")
    if not changed:
        print(f"{args.exercises} was already up to date")
    return 0


def add_release_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``make-exercises``: generate (or with ``--check``, verify) the student copies."""
    p = subparsers.add_parser(
        "make-exercises",
        help="generate exercises/ from solutions/ (solution regions become stubs)",
        description="Generate the student notebooks in exercises/ from solutions/: every "
        f"'{BEGIN}' ... '{END}' region becomes a stub raising NotImplementedError, outputs "
        "are cleared. --check writes nothing and exits 1 when exercises/ is out of date.",
    )
    p.add_argument("--solutions", default="solutions", help="folder of solution notebooks")
    p.add_argument("--exercises", default="exercises", help="folder to write the exercises to")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if exercises/ differs from what would be made")
    p.add_argument("--release", metavar="DIR", default=None,
                   help="write what a class receives into DIR (a new folder): exercises, "
                   "lessons, examples and a README; never the solutions")
    p.add_argument("--notebooks", default="notebooks",
                   help="folder of lessons to release (default notebooks)")
    p.set_defaults(func=_run)
    return p
