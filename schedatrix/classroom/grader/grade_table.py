"""The instructor's table of a graded class: one row per notebook, nothing a student can forge.

Every cell of a row is :func:`~.submissions.printable` (a newline or a terminal escape in a
folder name or an exception message shows as ``\\n`` or ``\\x1b``, never as a new row or a
cleared screen), and a notebook graded without a sandbox says so on its own row.
"""

from __future__ import annotations

from .grade_notebook import Grade
from .submissions import printable

__all__ = ["NO_SANDBOX", "format_table"]

#: What a row graded under ``--sandbox none`` begins its last column with.
NO_SANDBOX = "[NO SANDBOX]"


def format_table(grades: list[Grade], width: int = 0) -> str:
    """A plain-text table: student, exercise, pass/FAIL, first failing check (or a note).

    Rows longer than ``width`` characters are cut (0: never).
    """
    rows = [("student", "exercise", "result", "first failing check (or note)")]
    for g in grades:
        text = g.failure if not g.passed else (f"note: {g.note}" if g.note else "")
        if not g.passed and g.note:
            text += f" (note: {g.note})"
        if g.sandbox == "none":
            text = f"{NO_SANDBOX} {text}".rstrip()
        rows.append(tuple(printable(c) for c in (g.student, g.exercise,
                                                  "pass" if g.passed else "FAIL", text)))
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
    seeds = sorted({g.seed for g in grades if g.seed is not None})
    drawn = f" (drawn cases: seed {', '.join(map(str, seeds))})" if seeds else ""
    lines.append(f"{passed} of {len(grades)} notebooks pass{drawn}")
    return "\n".join(lines)
