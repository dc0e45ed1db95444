"""The README's command-line examples run from a clone, and say what they show."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_in_process

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


#: The subcommands whose README examples run on what a clone holds (serve runs a server; grade
#: needs a class's submissions). The serving examples replay the packaged hour (issue 19: they
#: named a trace a clone lacks).
FROM_A_CLONE = ("month", "presets", "odds", "examples", "audit", "drills", "serving")
#: ... but for these, which run a server or need one, or read what a bench of one wrote
#: (tests/test_serving_emulate.py, test_serving_bench.py, test_serving_measured.py and
#: test_serving_calibrate.py run them against a server, or on results, of their own)
NEEDS_A_SERVER = (["serving", "emulate"], ["serving", "bench"], ["serving", "measured"],
                  ["serving", "calibrate"])
#: The folder the README's `schedatrix examples` line writes, which its later commands read.
COPIED = "examples"


def _commands() -> list[list[str]]:
    """Every `$ .venv/bin/schedatrix ...` line of the README's console blocks (continuation
    lines joined) for the subcommands that run from a clone."""
    text = README.replace("\\\n", " ")
    out = []
    for line in re.findall(r"^\$ \.venv/bin/schedatrix (.+)$", text, flags=re.M):
        argv = shlex.split(line.split("  #")[0])
        if argv[0] in FROM_A_CLONE and argv[:2] not in NEEDS_A_SERVER:
            out.append(argv)
    return out


def _expected_status(argv: list[str]) -> int:
    """The exit status the README's comment gives the command ("# ...: exit status 1"), else
    0: a command that ends in a verdict of no exits 1."""
    text = README.replace("\\\n", " ")
    for line in re.findall(r"^\$ \.venv/bin/schedatrix (.+)$", text, flags=re.M):
        command, _, comment = line.partition("  #")
        if shlex.split(command) == argv:
            found = re.search(r"exit status (\d)", comment)
            return int(found.group(1)) if found else 0
    return 0


def test_the_readme_has_the_examples():
    names = [argv[0] for argv in _commands()]
    assert {"month", "presets", "odds", "audit", "serving"} <= set(names)
    # the examples are copied out first; every later command reads the copies
    assert names.index("examples") < names.index("audit")
    assert ["examples", COPIED] in _commands()
    traces = [argv[argv.index(a) + 1] for argv in _commands() for a in argv if a == "--trace"]
    assert traces and all(t.startswith(COPIED + "/") for t in traces), traces


@pytest.fixture(scope="module")
def copied(tmp_path_factory):
    """A folder of a user's own where the README's `schedatrix examples` line has run."""
    home = tmp_path_factory.mktemp("user")
    r = run_in_process("examples", COPIED, cwd=home)
    assert r.returncode == 0, r.stderr
    return home


@pytest.mark.slow
@pytest.mark.parametrize("argv", _commands(), ids=lambda a: " ".join(a)[:60])
def test_each_example_runs_from_a_clone(argv, tmp_path, copied):
    # run where the examples were copied (as a user would, clone or wheel); every report goes
    # into tmp_path, none into the clone
    expected = _expected_status(argv)
    argv = [str(tmp_path / a) if k and argv[k - 1] == "--out" else a
            for k, a in enumerate(argv)]
    if "--workers" in argv:
        # its worker processes start from a process of its own, not from a pytest worker's
        r = subprocess.run([sys.executable, "-m", "schedatrix", *argv], cwd=copied,
                           capture_output=True, text=True, timeout=600)
    else:
        # the command line's own code in this process (conftest: what only a process shows,
        # the console script and its exit status, is tested in test_cli)
        r = run_in_process(*argv, cwd=copied)
    assert r.returncode == expected, r.stderr
    if argv[:3] == ["month", "--preset", "bargain-shortfall"]:
        # the README's comment: the shortfall story's own figure
        assert round(json.loads(r.stdout)["delivered_tok_s"]) == 61_014


def test_no_example_names_a_file_a_clone_lacks():
    assert "code.csv conv.csv" not in README and "shared/spec" not in README
    named = r"(?<![\w/])(?:schedatrix/examples|schedatrix/data|docs)/[\w./-]+\.\w+"
    for path in re.findall(named, README):
        assert (ROOT / path).exists(), path
    # a command's file under the copied folder is one `schedatrix examples` writes
    from schedatrix import examples
    for argv in _commands():
        for a in argv:
            if a.startswith(COPIED + "/"):
                assert a.removeprefix(COPIED + "/") in examples.names(), a
