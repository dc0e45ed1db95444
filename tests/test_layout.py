"""The house: one wing per system, and imports that only run downhill."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import schedatrix

PACKAGE = Path(schedatrix.__file__).parent
WINGS = ("fleet", "audit", "serving", "course", "classroom")

#: What each wing may import from the package besides itself ("top" = errors.py).
ALLOWED = {
    "fleet": {"top"},
    "audit": {"top", "fleet", "serving"},
    "serving": {"top", "fleet", "audit"},
    "course": {"top", "fleet", "audit", "serving"},
    "classroom": {"top", "fleet", "audit", "serving", "course"},
}
#: Top-level modules a wing may import (the command line wires wings, so none may import it).
TOP_SHARED = {"errors"}


def _modules(wing: str) -> list[Path]:
    return sorted((PACKAGE / wing).rglob("*.py"))


def _package_imports(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, dotted target inside schedatrix) for every import of the package in a module."""
    rel = path.relative_to(PACKAGE).with_suffix("").parts  # e.g. ("fleet", "engine")
    source = path.read_text() if source is None else source
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel[: len(rel) - node.level])
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target] if node.module else [".".join(base + [a.name]) for a in node.names]
            elif node.module and node.module.split(".")[0] == "schedatrix":
                names = [node.module.partition(".")[2]]
            else:
                continue
            found += [(node.lineno, n) for n in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.partition(".")[2]) for a in node.names
                      if a.name.split(".")[0] == "schedatrix"]
    return found


def test_the_package_has_its_wings_and_few_loose_modules():
    loose = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__", "__main__", "cli", "errors"]
    for wing in ("fleet", "audit", "course", "classroom"):
        assert (PACKAGE / wing / "__init__.py").exists(), wing


@pytest.mark.parametrize("wing", [w for w in WINGS if (PACKAGE / w).exists()])
def test_each_wing_says_in_a_line_what_it_is(wing):
    doc = ast.get_docstring(ast.parse((PACKAGE / wing / "__init__.py").read_text()))
    assert doc and len(doc.splitlines()[0]) > 20


@pytest.mark.parametrize("wing", [w for w in WINGS if (PACKAGE / w).exists()])
def test_imports_run_downhill(wing):
    bad = []
    for path in _modules(wing):
        for line, target in _package_imports(path):
            head = target.split(".")[0]
            if head in ("", wing):
                continue
            kind = "top" if head in TOP_SHARED else head
            if kind not in ALLOWED[wing]:
                bad.append(f"{path.relative_to(PACKAGE)}:{line} imports schedatrix.{target}")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_an_uphill_import():
    # the rule above must be able to fail: a fleet module importing the course is caught
    source = ("from ..course.plots import plot_pool\n"
              "from ..cli import main\n"
              "import schedatrix.course\n")
    targets = [t for _, t in _package_imports(PACKAGE / "fleet" / "probe.py", source)]
    assert targets == ["course.plots", "cli", "course"]


def test_public_names_stay_at_the_top():
    for name in ("score", "greedy_run_set", "evict_worst", "wrong_evictions", "simulate",
                 "simulate_many", "Plan", "preset", "Month", "InputError"):
        assert hasattr(schedatrix, name), name


def _classroom_imports() -> dict[str, set[str]]:
    """Each classroom module and the classroom modules it imports (anywhere in it)."""
    graph = {}
    for path in _modules("classroom"):
        name = path.relative_to(PACKAGE / "classroom").with_suffix("").as_posix()
        targets = set()
        for _, target in _package_imports(path):
            parts = target.split(".")
            if parts[0] == "classroom" and len(parts) > 1:
                targets.add(parts[1])
        graph[name] = targets - {name}
    return graph


def test_no_classroom_module_imports_one_that_imports_it_back():
    graph = _classroom_imports()
    circles = []

    def visit(name: str, path: list[str]) -> None:
        for target in sorted(graph.get(name, ())):
            if target in path:
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target in graph:
                visit(target, path + [target])

    for name in sorted(graph):
        visit(name, [name])
    assert not circles, "\n".join(sorted(set(circles)))
    assert "ray_engine" in graph["grade_folder"] and "grade_folder" not in graph["ray_engine"]
