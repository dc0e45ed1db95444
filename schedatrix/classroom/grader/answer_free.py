"""A copy of the package without one exercise's answers: what the grader's evaluation imports.

The grader calls a learner's functions in a fresh process (:mod:`.evaluation`) that imports this
copy, never the package itself. In it, each of the exercise's registered answers
(``module:function`` in :mod:`.exercises`) has its body replaced by a refusal that raises and
records the call (the few the package calls while it is imported, :data:`NEEDED_AT_IMPORT`,
keep their code, and the evaluation swaps them for the refusal as soon as the package is
imported, before any of the notebook's code runs), and the classroom wing is left out but
for the plain-data codec (:mod:`.boundary`) and the two scripts that run in a sandbox: no
check, no expected answer and no grader is in it, so no name, computed or not, reaches them.
Under bubblewrap the copy is mounted where the package is, hiding it; elsewhere the evaluation
puts the copy first on its import path (the package's own files stay readable there:
docs/grading.md says so).

Copies are made once per grader process and exercise, in a temporary folder only root (or the
grader) may write, and removed when the grader exits.
"""

from __future__ import annotations

import ast
import atexit
import importlib
import importlib.util
import inspect
import os
import py_compile
import shutil
import tempfile
import threading
from collections import defaultdict
from pathlib import Path

from ..checking.exercises import Exercise
from .sandbox import leftover_prefix, package_dir

__all__ = ["KEPT", "NEEDED_AT_IMPORT", "REFUSED_MODULE", "public_name", "stub_source", "build",
           "package_for", "release"]

#: The classroom modules a copy keeps, by their paths inside ``classroom/`` (the codec, the
#: scripts a sandbox runs and the packages that hold them); every other classroom module and
#: room is left out.
KEPT = ("__init__.py", "checking/__init__.py", "checking/boundary.py", "grader/__init__.py",
        "grader/nbval_run.py", "grader/evaluate_run.py")
#: Answers the package calls while it is imported (every :class:`~schedatrix.Plan` checks its
#: target): their code stays in the copy and :func:`swap` refuses them after the import.
NEEDED_AT_IMPORT = ("schedatrix.fleet.run_set:shape_target",)
#: The module (in the copy only) whose ``refused`` every stubbed answer raises.
REFUSED_MODULE = "_refused"
_STUB = "raise __import__('schedatrix._refused', fromlist=['refused']).refused({public!r})"
_REFUSED_SOURCE = '''"""A grading copy's stand-in for the answers to one exercise."""

import importlib

#: The answers called since the evaluation last cleared this list.
HITS: list[str] = []
#: (module, function, public name) of the answers :func:`swap` refuses after the import.
AFTER_IMPORT: list[tuple[str, str, str]] = {after_import!r}


def refused(public: str) -> RuntimeError:
    """Record a call to an answer and return the error it raises."""
    HITS.append(public)
    return RuntimeError(f"{{public}}() is the library's own answer to this exercise: "
                        "write it yourself")


def swap() -> None:
    """Give each answer the package needed while it was imported the refusal's code."""
    for module, qualname, public in AFTER_IMPORT:
        target = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        namespace: dict = {{}}
        source = ("def refused(*args, **kwargs):\\n"
                  f"    raise __import__('schedatrix._refused', fromlist=['refused'])"
                  f".refused({{public!r}})\\n")
        exec(compile(source, f"<refused: {{public}}>", "exec"), namespace)
        target.__code__ = namespace["refused"].__code__
'''


def public_name(answer: str) -> str:
    """How a message names an answer: ``schedatrix.score`` for ``schedatrix.fleet.score:score``."""
    return f"schedatrix.{answer.rpartition(':')[2]}"


def _definition(answer: str) -> tuple[Path, str]:
    """(the file that defines an answer, its qualified name there), from the package itself
    (a name re-exported elsewhere is found where it is defined)."""
    module_name, _, qualname = answer.partition(":")
    target = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if isinstance(target, property):  # a figure read as an attribute: its getter computes it
        target = target.fget
    func = inspect.unwrap(target)
    return Path(func.__code__.co_filename).resolve(), func.__qualname__


def _find(tree: ast.AST, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    def walk(node: ast.AST, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                if name == qualname:
                    return child
                found = walk(child, f"{name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                found = walk(child, f"{prefix}{child.name}.")
            else:
                found = walk(child, prefix)
            if found is not None:
                return found
        return None

    return walk(tree, "")


def stub_source(source: str, qualnames: dict[str, str]) -> str:
    """``source`` with the body of each function ``qualnames`` names (qualified name -> public
    name) replaced by a raise of the refusal; signatures and decorators stay."""
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    tree = ast.parse(source)
    spans = []
    for qualname, public in qualnames.items():
        node = _find(tree, qualname)
        if node is None:
            raise LookupError(f"no function {qualname} to stub")
        first, last = node.body[0], node.body[-1]
        start = starts[first.lineno - 1] + first.col_offset
        end = starts[last.end_lineno - 1] + last.end_col_offset
        spans.append((start, end, _STUB.format(public=public).encode()))
    for start, end, stub in sorted(spans, reverse=True):
        data = data[:start] + stub + data[end:]
    out = data.decode()
    ast.parse(out)  # still Python
    return out


def build(exercise: Exercise, root: Path) -> Path:
    """Write the copy for ``exercise`` into ``root`` (a new folder); return its package folder
    (``root/schedatrix``)."""
    source = package_dir()
    target = root / "schedatrix"
    classroom = source / "classroom"
    kept = {classroom / name for name in KEPT}
    kept_rooms = {path.parent for path in kept}

    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        if here in kept_rooms:
            return {n for n in names if n != "__pycache__" and here / n not in kept
                    and here / n not in kept_rooms}
        if here.name == "__pycache__" and here.parent in kept_rooms:
            stems = {p.stem for p in kept if p.parent == here.parent}
            return {n for n in names if n.split(".")[0] not in stems}
        return {n for n in names if n == ".ipynb_checkpoints"}

    shutil.copytree(source, target, ignore=ignore)
    by_file: dict[Path, dict[str, str]] = defaultdict(dict)
    after_import = []
    for check in exercise.checks:
        for answer in check.answers:
            if answer in NEEDED_AT_IMPORT:
                module, _, qualname = answer.partition(":")
                after_import.append((module, qualname, public_name(answer)))
                continue
            path, qualname = _definition(answer)
            by_file[path][qualname] = public_name(answer)
    changed = []
    for path, qualnames in by_file.items():
        copy = target / path.relative_to(source)
        if copy.exists():  # an answer in a left-out classroom module is gone already
            copy.write_text(stub_source(path.read_text(encoding="utf-8"), qualnames),
                            encoding="utf-8")
            changed.append(copy)
    refused = target / f"{REFUSED_MODULE}.py"
    refused.write_text(_REFUSED_SOURCE.format(after_import=sorted(set(after_import))),
                       encoding="utf-8")
    changed.append(refused)
    for path in changed:  # no stale bytecode of the answers: compile what was changed, afresh
        cached = Path(importlib.util.cache_from_source(str(path)))
        for old in cached.parent.glob(f"{path.stem}.*.pyc"):
            old.unlink()
        py_compile.compile(str(path), cfile=str(cached), doraise=True)
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    return target


_lock = threading.Lock()
_built: dict[str, Path] = {}
_root: list[Path] = []


def package_for(exercise: Exercise) -> Path:
    """The copy for ``exercise``, made on first use in this process (its package folder)."""
    with _lock:
        if exercise.name not in _built:
            if not _root:
                root = Path(tempfile.mkdtemp(prefix=leftover_prefix("answer-free")))
                os.chmod(root, 0o755)
                atexit.register(shutil.rmtree, root, True)
                _root.append(root)
            folder = _root[0] / exercise.name
            _built[exercise.name] = build(exercise, folder)
        return _built[exercise.name]


def release() -> None:
    """Remove this process's copies now (a Ray worker, which Ray ends without running its
    exit handlers, releases them after each notebook); the next :func:`package_for` makes
    them again."""
    with _lock:
        for root in _root:
            shutil.rmtree(root, ignore_errors=True)
        _root.clear()
        _built.clear()
