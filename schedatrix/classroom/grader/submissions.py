"""What a class handed in: finding the notebooks, reading each one safely, showing names plainly.

Layout: one folder per student, each holding that student's exercise notebooks under their
original names (``submissions/alice/01_score.ipynb``). A submission is read only if it is a
regular file: its kind is checked before it is opened (a named pipe, a device, a socket or a
link is refused unopened), it is opened without following links and without waiting (so a pipe
swapped in at the last moment cannot hold the grader), and checked again once open. Everything
a student named or wrote that the grader shows (folder names, messages) goes through
:func:`printable` first, so no newline or terminal escape reaches the instructor's table.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError

__all__ = ["MAX_NOTEBOOK_BYTES", "Submission", "find_submissions", "read_notebook",
           "parse_notebook", "printable", "writable_by_others"]

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))


@dataclass(frozen=True)
class Submission:
    """One row of the class: a notebook to grade, or (``problem``) why a student's folder or
    a file in it is not one, refused in its own row."""

    student: str
    exercise: str
    path: Path
    problem: str = ""


def printable(text: str) -> str:
    """``text`` with every character that is not printable (newlines, tabs, terminal escapes,
    direction overrides) written as its escape, ``\\n``, ``\\x1b``, ``\\u202e``."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def find_submissions(root: Path | str, exercise: str | None = None) -> list[Submission]:
    """Every ``root/<student>/<exercise>.ipynb``, sorted by student then exercise, and a row
    refusing, in one line, whatever else stands where a student's work should: a student
    "folder" that is a link or not a folder, a notebook inside a subfolder, a student folder
    with no notebook (with ``exercise``: without that one). Names starting with a dot
    (``.ipynb_checkpoints``) are not read."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"DIR must be a folder of student folders, got {str(root)!r}")
    wanted = exercise[:-6] if exercise and exercise.endswith(".ipynb") else exercise
    found: list[Submission] = []
    notebooks = 0
    for student in sorted(p for p in root.iterdir() if not p.name.startswith(".")):
        if student.is_symlink() or not student.is_dir():
            kind = "a link" if student.is_symlink() else _kind(os.lstat(student).st_mode)
            found.append(Submission(student.name, "-", student,
                                    f"not graded: {kind}, not a student's folder (hand in "
                                    "<student>/<exercise>.ipynb, a real folder)"))
            continue
        mine = [nb for nb in sorted(student.glob("*.ipynb"))
                if wanted is None or nb.stem == wanted]
        found += [Submission(student.name, nb.stem, nb) for nb in mine]
        notebooks += len(mine)
        nested = sorted(
            nb for nb in student.rglob("*.ipynb") if nb.parent != student
            and not any(part.startswith(".") for part in nb.relative_to(student).parts)
            and (wanted is None or nb.stem == wanted))
        for nb in nested:
            where = nb.relative_to(student)
            found.append(Submission(student.name, str(where.with_suffix("")), nb,
                                    f"not graded: a notebook in a subfolder, {where.parent}/ "
                                    f"(hand in {printable(student.name)}/{nb.name})"))
        if not mine and not nested:
            what = f"no {wanted}.ipynb" if wanted else "no notebook"
            found.append(Submission(student.name, wanted or "-", student,
                                    f"not graded: {what} handed in (hand in "
                                    f"<student>/<exercise>.ipynb)"))
    if not notebooks:
        what = f" for exercise {wanted!r}" if wanted else ""
        raise InputError(
            f"DIR must hold <student>/<exercise>.ipynb notebooks{what}, found none in "
            f"{printable(str(root))!r}"
        )
    return found


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a link"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "not a regular file"


def read_notebook(path: Path) -> tuple[bytes, str]:
    """(the file's bytes, "") or (b"", why it is not a valid notebook).

    Never follows a link, never opens what is not a regular file, never waits."""
    try:
        before = os.lstat(path)
    except OSError as exc:
        return b"", f"not a valid notebook: cannot read it ({exc.strerror})"
    if not stat.S_ISREG(before.st_mode):
        return b"", f"not a valid notebook: {_kind(before.st_mode)}, not a file"
    if before.st_size > MAX_NOTEBOOK_BYTES:
        return b"", f"not a valid notebook: {before.st_size:,} bytes, over 20 MB"
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if os.path.islink(path):
            return b"", "not a valid notebook: a link, not a file"
        return b"", f"not a valid notebook: cannot read it ({exc.strerror})"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (before.st_dev,
                                                                              before.st_ino):
            return b"", "not a valid notebook: it changed while it was being read"
        data = handle.read(MAX_NOTEBOOK_BYTES + 1)
    if len(data) > MAX_NOTEBOOK_BYTES:
        return b"", "not a valid notebook: over 20 MB"
    return data, ""


def parse_notebook(data: bytes):
    """(notebook, "") or (None, why it is not a valid notebook)."""
    import nbformat  # lazy: the command line imports without the test extras

    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # JSON, encoding, schema: all the same to a learner
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return None, f"not a valid notebook: {first[:120]}"
    return nb, ""


def writable_by_others(root: Path, subs: list[Submission]) -> Path | None:
    """The first of the class folder, a student's folder or a notebook that every user may
    write (so a sandbox's uid could), or ``None``."""
    paths = [root, *sorted({s.path.parent for s in subs}), *(s.path for s in subs)]
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if mode & stat.S_IWOTH and not (stat.S_ISDIR(mode) and mode & stat.S_ISVTX):
            return path
    return None
