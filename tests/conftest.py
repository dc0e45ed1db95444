"""Shared test helpers.

``run_in_process`` runs the command line in the test's own process: what ``schedatrix ARGS``
prints and the exit status it returns, without a Python start and a package import per case
(about 1.5 s each on a quiet 2-core machine, ten times that under load). An exception escaping
``main`` fails the test, as a traceback would fail a user. What only a real process shows (the
console script, the exit code the interpreter hands back, signals, threads alive at exit) keeps
its subprocess tests.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def run_in_process(*args: str, cwd: Path = ROOT) -> Done:
    """``schedatrix ARGS`` in this process, from ``cwd``: its exit status and what it printed."""
    from schedatrix.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:          # argparse's refusals exit through SystemExit
            code = e.code if isinstance(e.code, int) else 1
    return Done(code, out.getvalue(), err.getvalue())


@functools.cache
def dev_module():
    """The repository's dev.py, loaded as a module (it is a script, not on the path)."""
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
