"""The house: one wing per system, and imports that only run downhill."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import schedatrix

PACKAGE = Path(schedatrix.__file__).parent
WINGS = ("fleet", "traces", "audit", "serving", "course", "classroom")

#: What each wing may import from the package besides itself ("top" = errors.py). The trace
#: readers sit below both the audit and the simulator; the serving wing imports nothing of the
#: audit.
ALLOWED = {
    "fleet": {"top"},
    "traces": {"top"},
    "audit": {"top", "fleet", "traces", "serving"},
    "serving": {"top", "fleet", "traces"},
    "course": {"top", "fleet", "traces", "audit", "serving"},
    "classroom": {"top", "fleet", "traces", "audit", "serving", "course"},
}
#: Each wing that lives in rooms: its rooms, lowest first (a room imports only rooms before it,
#: and the wing's loose modules named ``below``), and its loose modules. A loose module that is
#: neither below the rooms nor ``__init__`` sits on top of them all (``cli``, ``grading``).
ROOMED = {
    "serving": {"rooms": ("load", "perf", "published", "replica", "cluster", "figures", "sim",
                          "intake", "validation", "studies", "scenarios", "reports", "sweeps",
                          "live"),
                "loose": {"__init__", "numbers", "cli"}, "below": {"numbers"}},
    "course": {"rooms": ("figures", "drills", "apps"),
               "loose": {"__init__", "live", "progress"}, "below": {"live", "progress"}},
    "classroom": {"rooms": ("checking", "releases", "grader"),
                  "loose": {"__init__", "grading"}, "below": set()},
}
SERVING_ROOMS = ROOMED["serving"]["rooms"]
#: No package folder holds more modules than this (a newcomer can see a folder's parts).
MAX_MODULES = 24
#: ... and no room of a wing in rooms (nor the harness's, the course's and the classroom's
#: loose modules) more than this.
MAX_ROOM_MODULES = 16
#: Top-level modules a wing may import: the error type, the packaged example files and the
#: width printed text keeps to (the command line wires wings, so none may import it).
TOP_SHARED = {"errors", "examples", "text"}


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
    assert loose == ["__init__", "__main__", "cli", "errors", "text"]
    for wing in WINGS:
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


def _graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (dotted inside schedatrix; a package is its
    ``__init__``, named by the package)."""
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        names[path] = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    known = set(names.values())
    graph = {}
    for path, name in names.items():
        targets = set()
        for _, target in _package_imports(path):
            while target and target not in known:  # "fleet.month.simulate" -> "fleet.month"
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_one_that_imports_it_back():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_sees_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_package_folder_holds_too_many_modules():
    for folder in [PACKAGE, *(p for p in PACKAGE.rglob("*") if (p / "__init__.py").exists())]:
        modules = [p for p in folder.glob("*.py") if p.stem != "__init__"]
        assert len(modules) <= MAX_MODULES, f"{folder.relative_to(PACKAGE.parent)}: {len(modules)}"


def _rooms_problems(wing: str) -> list[str]:
    """Every import of a room of ``wing`` that runs uphill (to a later room, or to a loose
    module on top)."""
    spec = ROOMED[wing]
    rooms = spec["rooms"]
    bad = []
    for room in rooms:
        below = set(rooms[: rooms.index(room) + 1]) | spec["below"]
        for path in sorted((PACKAGE / wing / room).rglob("*.py")):
            for line, target in _package_imports(path):
                parts = target.split(".")
                if parts[0] != wing or len(parts) < 2:
                    continue
                if parts[1] not in below:
                    bad.append(f"{path.relative_to(PACKAGE)}:{line} imports schedatrix.{target}")
    for name in spec["below"]:
        for line, target in _package_imports(PACKAGE / wing / f"{name}.py"):
            parts = target.split(".")
            if parts[0] == wing and len(parts) > 1 and parts[1] in rooms:
                bad.append(f"{wing}/{name}.py:{line} imports schedatrix.{target}")
    return bad


@pytest.mark.parametrize("wing", sorted(ROOMED))
def test_each_wing_in_rooms_has_its_rooms_and_few_loose_modules(wing):
    spec = ROOMED[wing]
    folder = PACKAGE / wing
    assert {p.stem for p in folder.glob("*.py")} == spec["loose"]
    assert {p.name for p in folder.iterdir() if (p / "__init__.py").exists()} == \
        set(spec["rooms"])
    for room in spec["rooms"]:
        n = len([p for p in (folder / room).glob("*.py") if p.stem != "__init__"])
        assert 0 < n <= MAX_ROOM_MODULES, f"{wing}/{room}: {n} modules"


@pytest.mark.parametrize("wing", sorted(ROOMED))
def test_each_wing_in_rooms_imports_downhill(wing):
    bad = _rooms_problems(wing)
    assert not bad, "\n".join(bad)


def test_the_room_checker_sees_an_uphill_import(tmp_path, monkeypatch):
    # a figures module of the course importing an app must be caught
    probe = PACKAGE / "course" / "figures" / "plots.py"
    source = probe.read_text() + "\nfrom ..apps.walkthrough import Walkthrough\n"
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text",
                        lambda self, *a, **k: source if self == probe else real(self, *a, **k))
    bad = _rooms_problems("course")
    assert any("course/figures/plots.py" in b and "course.apps.walkthrough" in b for b in bad)


@pytest.mark.parametrize("wing", sorted(ROOMED))
def test_each_room_says_what_it_is(wing):
    for room in ROOMED[wing]["rooms"]:
        doc = ast.get_docstring(ast.parse((PACKAGE / wing / room / "__init__.py").read_text()))
        assert doc and len(doc.splitlines()[0]) > 20, f"{wing}/{room}"


def test_the_top_level_holds_only_what_the_readme_layout_lists():
    """Every tracked entry at the repository's top is in the README's layout table (a generated
    report folder tracked by mistake fails here)."""
    import re
    import subprocess

    root = PACKAGE.parent
    readme = (root / "README.md").read_text()
    table = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    listed = {m.strip("/") for m in re.findall(r"`([^`]+)`", table)}
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout: " + tracked.stderr.strip()[:80])
    top = {line.split("/")[0] for line in tracked.stdout.splitlines()}
    hidden = {t for t in top if t.startswith(".") and t != ".ci"}
    missing = sorted(t for t in top - hidden
                     if not any(p == t or p.startswith(t + "/") for p in listed))
    assert missing == []


def test_the_grader_and_its_ray_engine_import_one_way():
    graph = _graph()
    assert "classroom.grader.ray_engine" in graph["classroom.grader.grade_folder"]
    assert "classroom.grader.grade_folder" not in graph["classroom.grader.ray_engine"]


def test_pyarrow_loads_only_with_a_trace_reader():
    """The simulator, its command line and the serving lessons' app start without pyarrow
    (0.15 CPU-s a process here); the trace readers still load it, through the same names."""
    import subprocess
    import sys
    code = ("import sys\n"
            "import schedatrix.course.apps.serving_app, schedatrix.serving.cli\n"
            "import schedatrix.serving.sweeps.sweep, schedatrix.traces\n"
            "assert 'pyarrow' not in sys.modules, 'pyarrow loaded early'\n"
            "from schedatrix.traces import read_trace\n"
            "from schedatrix.serving.load.replay import replay\n"
            "assert read_trace.__module__ == 'schedatrix.traces.reader'\n"
            "assert 'pyarrow' in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
