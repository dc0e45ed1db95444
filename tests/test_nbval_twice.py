"""The suite's second nbval pass (tests/nbval_twice.py): every notebook collected again, in a
fresh kernel, in the same session."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import isolated_pytest

ROOT = Path(__file__).resolve().parents[1]

#: A notebook whose one cell counts its runs in a file beside it: the stored output is what
#: the first run prints, so a second run in a fresh kernel prints something else.
COUNTER = """\
from pathlib import Path
f = Path("runs.txt")
n = int(f.read_text()) + 1 if f.exists() else 1
f.write_text(str(n))
print(n)"""


def _notebook(path: Path, source: str, stored: str) -> None:
    path.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": 1, "id": "c0", "metadata": {},
                   "source": source,
                   "outputs": [{"name": "stdout", "output_type": "stream", "text": stored}]}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                    "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5}))


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))


def test_each_notebook_is_collected_twice_under_its_own_name(tmp_path):
    _notebook(tmp_path / "steady.ipynb", "print(6 * 7)", "42\n")
    done = isolated_pytest(tmp_path, "--nbval", "--nbval-current-env", "-p",
                           "tests.nbval_twice", "--collect-only", "steady.ipynb", env=_env())
    assert done.returncode == 0, done.stdout + done.stderr
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert ids == ["steady.ipynb::Cell 0", "steady.ipynb[again]::Cell 0"], done.stdout


@pytest.mark.slow
def test_a_notebook_that_prints_something_else_the_second_time_fails_the_second_pass(tmp_path):
    _notebook(tmp_path / "counter.ipynb", COUNTER, "1\n")
    once = isolated_pytest(tmp_path, "--nbval", "--nbval-current-env", "counter.ipynb",
                           env=_env())
    assert once.returncode == 0, once.stdout + once.stderr     # one pass: it looks fine
    (tmp_path / "runs.txt").unlink()
    twice = isolated_pytest(tmp_path, "--nbval", "--nbval-current-env", "-p",
                            "tests.nbval_twice", "counter.ipynb", env=_env())
    assert twice.returncode == 1, twice.stdout + twice.stderr
    assert "1 failed, 1 passed" in twice.stdout, twice.stdout
    assert "FAILED counter.ipynb[again]::Cell 0" in twice.stdout, twice.stdout
