"""Shared test helpers.

``run_in_process`` runs the command line in the test's own process: what ``schedatrix ARGS``
prints and the exit status it returns, without a Python start and a package import per case
(about 1.5 s each on a quiet 2-core machine, ten times that under load). An exception escaping
``main`` fails the test, as a traceback would fail a user. What only a real process shows (the
console script, the exit code the interpreter hands back, signals, threads alive at exit) keeps
its subprocess tests. ``isolated_pytest`` runs pytest in a folder of its own, free of this
repository's pytest settings.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_runs_from_an_earlier_test():
    """Each test starts with the memo of serving runs empty: a run an earlier test made in
    this worker (before a monkeypatch, say) is not handed to the next one."""
    memo = sys.modules.get("schedatrix.serving.sim.memo")
    if memo is not None:
        memo.clear()


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


def isolated_pytest_start(cwd: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """``python -m pytest -q ARGS`` started in ``cwd`` with an empty ``pytest.ini`` of its own
    there (so this repository's settings and rootdir stay out), output piped as text."""
    ini = cwd / "pytest.ini"
    ini.write_text("[pytest]\n")
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ini),
         "--rootdir", str(cwd), *map(str, args)],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(proc: subprocess.Popen, timeout: float = 600) -> subprocess.CompletedProcess:
    """What a started process printed and returned (killed past ``timeout`` seconds)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def isolated_pytest(cwd: Path, *args: str, env: dict | None = None,
                    timeout: float = 600) -> subprocess.CompletedProcess:
    """:func:`isolated_pytest_start`, waited for: output captured."""
    return finished(isolated_pytest_start(cwd, *args, env=env), timeout)
