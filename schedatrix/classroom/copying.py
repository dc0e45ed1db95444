"""Notes for the instructor: code that names the library's answer, or matches the solution.

Neither fails a notebook by itself (a check that calls the library's answer already fails,
see :func:`~schedatrix.classroom.boundary.refused_answers`); both say where to look.
"""

from __future__ import annotations

import ast

from .exercises import Exercise

__all__ = ["code_cells", "library_calls", "solution_copy"]


def code_cells(nb, exercise: Exercise) -> list[str]:
    """The learner's code: every code cell's source except the registered check cells."""
    checks = {c.cell_source for c in exercise.checks}
    sources = []
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if source.strip() not in checks:
            sources.append(source)
    return sources


def _parse(source: str) -> ast.AST | None:
    """A cell as Python, IPython's ``%magic`` and ``!shell`` lines left out."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def library_calls(nb, exercise: Exercise) -> str:
    """Which of the exercise's library answers the learner's code names (``""``: none).

    Counts ``from schedatrix... import score``, and ``sx.score`` / ``schedatrix.fleet.score.score``
    where ``sx`` was imported from the package: the ways to reach an answer without its name
    spelt out in a string.
    """
    answers = {a.rpartition(":")[2] for c in exercise.checks for a in c.answers}
    named: set[str] = set()
    for source in code_cells(nb, exercise):
        tree = _parse(source)
        if tree is None:
            continue
        aliases: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases |= {(a.asname or a.name).split(".")[0] for a in node.names
                            if a.name.split(".")[0] == "schedatrix"}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("schedatrix"):
                named |= {a.name for a in node.names if a.name in answers}
                aliases |= {a.asname or a.name for a in node.names
                            if a.name not in answers}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in answers:
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in aliases:
                    named.add(node.attr)
    if not named:
        return ""
    return "names the library's own " + ", ".join(f"schedatrix.{n}" for n in sorted(named))


def solution_copy(nb, solution: list[str], share: float = 0.8) -> str:
    """A note when at least ``share`` of the solution's lines (two at least) appear verbatim
    in the learner's code (``""`` otherwise)."""
    wanted = [line for line in solution if line]
    if len(wanted) < 2:
        return ""
    mine = set()
    for source in nb.cells:
        if source.get("cell_type") == "code":
            text = source.get("source", "")
            text = "".join(text) if isinstance(text, list) else text
            mine |= {line.strip() for line in text.split("\n")}
    same = sum(line in mine for line in wanted)
    if same >= share * len(wanted):
        return f"same code as the instructor's solution ({same} of {len(wanted)} lines)"
    return ""
