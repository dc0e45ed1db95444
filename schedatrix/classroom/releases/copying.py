"""Notes for the instructor: code that names the library's answer, or matches the solution.

Neither fails a notebook by itself (under the grader the library's answers are not there to
call: the check fails on its own, see :mod:`~schedatrix.classroom.grader.answer_free`); both say
where to look.
"""

from __future__ import annotations

import ast

from ..checking.exercises import Exercise

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
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _imports(nodes, answers: dict[str, str]) -> tuple[set[str], dict[str, str]]:
    """(names bound to the package or its modules and objects, names bound to an answer ->
    its public name) by the imports among ``nodes``."""
    aliases: set[str] = set()
    bound: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            aliases |= {(a.asname or a.name).split(".")[0] for a in node.names
                        if a.name.split(".")[0] == "schedatrix"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("schedatrix"):
            for a in node.names:
                if a.name in answers:
                    bound[a.asname or a.name] = answers[a.name]
                else:
                    aliases.add(a.asname or a.name)
    return aliases, bound


def _top_level(trees: list[ast.AST]) -> dict[str, list[ast.AST]]:
    """What each top-level name of the notebook is bound to: function and class definitions,
    and the values assigned to it (``score_card = lambda ...``, ``f = sx.score``)."""
    found: dict[str, list[ast.AST]] = {}
    for tree in trees:
        for node in getattr(tree, "body", []):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, []).append(node.value)
    return found


def _local_names(code: ast.AST) -> set[str]:
    """The names a function (or lambda, or class) binds for itself: what it uses under those
    names is its own, not the notebook's top level."""
    if not isinstance(code, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return set()
    names: set[str] = set()
    if not isinstance(code, ast.ClassDef):
        a = code.args
        names |= {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                  if x is not None}
    declared: set[str] = set()
    for node in ast.walk(code):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node is not code:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared |= set(node.names)
    return names - declared


def library_calls(nb, exercise: Exercise) -> str:
    """Which of the exercise's library answers the graded functions name (``""``: none).

    Only the code the check calls counts: the functions the check cells hand over, and the
    notebook's own functions and classes they use, followed by name. In that code it counts
    an imported answer (``from schedatrix... import score``, at the top or inside the
    function) and ``sx.score`` / ``schedatrix.fleet.score.score`` where ``sx`` came from the
    package: the ways to reach an answer without its name spelt out in a string. The
    template's own code around the functions (a closing comparison with the library, say) is
    not the learner's answer and is not counted.
    """
    answers: dict[str, str] = {}
    for check in exercise.checks:
        for answer in check.answers:
            answers[answer.rpartition(":")[2].rpartition(".")[2]] = \
                f"schedatrix.{answer.rpartition(':')[2]}"
    trees = [t for t in (_parse(s) for s in code_cells(nb, exercise)) if t is not None]
    top_aliases, top_bound = _imports((n for t in trees for n in getattr(t, "body", [])),
                                      answers)
    bound_to = _top_level(trees)
    todo = [f for c in exercise.checks for f in c.functions]
    seen: set[str] = set()
    named: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for code in bound_to.get(name, []):
            inner = list(ast.walk(code))
            aliases, bound = _imports(inner, answers)
            named |= set(bound.values())
            own = _local_names(code)
            aliases |= top_aliases - own
            bound = {**{k: v for k, v in top_bound.items() if k not in own}, **bound}
            for node in inner:
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    if node.id in bound:
                        named.add(bound[node.id])
                    elif node.id in bound_to and node.id not in own:
                        todo.append(node.id)
                elif isinstance(node, ast.Attribute) and node.attr in answers:
                    root = node.value
                    while isinstance(root, ast.Attribute):
                        root = root.value
                    if isinstance(root, ast.Name) and root.id in aliases:
                        named.add(answers[node.attr])
    if not named:
        return ""
    return "names the library's own " + ", ".join(sorted(named))


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
