"""Every ``--out`` a command offers writes what its help says (issue 35: ``serving capacity
--out`` was accepted and ignored; ``serving measured --out`` too, and ``serving emulate``
took an ``--out`` it hid). The commands are found by walking the command line's own parser,
so a new ``--out`` without a case here fails the first test."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from conftest import run_in_process

from schedatrix.cli import build_parser

#: A small scenario: one class with SLOs, two designs, a short load.
SCENARIO = """
classes = [{name = "chat", ttft_s = 1.0, tpot_s = 0.1}]
designs = [{replicas = 1}, {replicas = 2}]
acceptance = {runs = 1}
[load]
rate = 4
requests = 200
input_len = "uniform:100-900"
output_len = "uniform:10-120"
"""
GRID = """
[load]
rate = 4
requests = 120
input_len = "uniform:100-900"
output_len = "uniform:10-120"
[[classes]]
name = "chat"
ttft_s = 0.4
tpot_s = 0.05
[grid]
seeds = [3]
[grid.design]
replicas = [1, 2]
"""
#: One request a client measured, in serving bench's own format (its requests.json).
RESULT = {"index": 0, "class_id": 0, "state": "ok", "prompt_tokens": 300, "max_tokens": 20,
          "output_tokens": 20, "sent_s": 0.0, "ttft_s": 0.08, "itl_s": [0.012] * 19,
          "error": ""}
FLEET = ("examples/fleet-note.toml", "examples/audit_hour_code.csv.gz",
         "examples/audit_hour_conv.csv.gz", "--pool-of", "audit_hour_code.csv.gz=large",
         "--pool-of", "audit_hour_conv.csv.gz=small")
LOAD = ("--model", "llama-3.2-3b", "--gpu", "h100-80gb", "--rate", "2", "--input-len", "512",
        "--output-len", "64", "--slo-ttft", "0.5", "--slo-tpot", "0.05")

#: Each command that offers --out, and the arguments (before --out) it runs on here.
CASES = {
    "audit": FLEET + ("--quiet",),
    "serving run": LOAD + ("--requests", "300", "--quiet"),
    "serving compare": ("scenario.toml", "--no-capacity", "--quiet"),
    "serving accept": ("scenario.toml", "--fault", "worker:0@20+10", "--quiet"),
    "serving capacity": LOAD + ("--requests", "1000", "--quiet"),
    "serving sweep": ("grid.toml", "--workers", "1", "--quiet"),
    "serving measured": ("results", "--rate", "2", "--requests", "1", "--input-len", "300",
                         "--output-len", "20"),
    "serving calibrate": None,   # --out is the calibration file: tests/test_serving_calibrate.py
    "serving bench": None,   # needs an endpoint: tests/test_serving_bench.py (below, its files)
}
#: What a command's --out writes that its help names by kind only.
KINDS = {"PNG": ".png"}


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command words, parser) of every command the command line has."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


def _offers_out():
    """Each command whose help shows --out: its parser and the --out help."""
    found = {}
    for command, parser in _leaves(build_parser()):
        for a in parser._actions:
            if "--out" in a.option_strings and a.help != argparse.SUPPRESS:
                found[command] = (parser, a.help)
    return found


def promised(command: str) -> tuple[set[str], set[str]]:
    """The file names and the kinds (suffixes) of files the help says --out writes: the flag's
    own help, or where that names none, the command's description (audit's)."""
    parser, text = _offers_out()[command]
    names = set(re.findall(r"[\w-]+\.(?:md|json|csv|parquet|png)\b", text))
    if not names:
        text = parser.description or ""
        names = set(re.findall(r"[\w-]+\.(?:md|json|csv|parquet|png)\b", text))
    kinds = {suffix for word, suffix in KINDS.items() if word in text}
    return names, kinds


def test_every_command_offering_out_has_a_case_here():
    assert set(_offers_out()) == set(CASES)


@pytest.mark.parametrize("argv, flag", [
    (["serving", "emulate", "--port", "0"], ["--rate", "3"]),
    (["serving", "emulate", "--port", "0"], ["--json"]),
    (["serving", "bench", "http://127.0.0.1:9"], ["--reference"]),
    (["serving", "bench", "http://127.0.0.1:9"], ["--max-runs", "3"]),
    (["serving", "measured", "results"], ["--runs", "3"]),
])
def test_a_flag_a_command_cannot_honour_is_refused_not_ignored(argv, flag):
    done = run_in_process(*argv, *flag)
    line, = done.stderr.strip().splitlines()
    assert done.returncode == 2 and line.startswith(f"schedatrix: error: {flag[0]}: "), line
    parser = dict(_leaves(build_parser()))[" ".join(argv[:2])]
    assert flag[0] not in parser.format_usage()                   # and not in its help


def test_a_command_that_cannot_write_a_report_does_not_take_out():
    done = run_in_process("serving", "emulate", "--port", "0", "--out", "somewhere")
    assert done.returncode == 2 and "--out: serving emulate" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    for argv in (["month"], ["odds"], ["serving", "plan", "p.toml"], ["serving", "fit", "t.csv"],
                 ["serving", "isolation"]):
        done = run_in_process(*argv, "--out", "x")   # an unknown flag, said in one line
        assert done.returncode == 2 and "unrecognized arguments: --out x" in done.stderr, argv


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c, argv in CASES.items() if argv is not None])
def test_out_writes_what_the_help_says(command, tmp_path):
    run_in_process("examples", "examples", cwd=tmp_path)
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    (tmp_path / "grid.toml").write_text(GRID)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "requests.json").write_text(json.dumps([[RESULT]]))
    names, kinds = promised(command)
    assert names, f"{command}'s help names no file its --out writes"
    out = tmp_path / "report"
    done = run_in_process(*command.split(), *CASES[command], "--out", str(out), cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr      # 1: a verdict of no, still reported
    written = {p.name for p in out.iterdir()}
    from schedatrix.serving.sweeps.sweep_report import parquet_available
    if "sweep.parquet" in names and not parquet_available():   # "(with pyarrow)"
        names.discard("sweep.parquet")
    assert names <= written, (command, sorted(names - written))
    for suffix in kinds:
        assert any(n.endswith(suffix) for n in written), (command, suffix, written)
    for name in written:
        assert (out / name).stat().st_size > 0, name
        if name.endswith(".json"):
            json.loads((out / name).read_text())
        if name.endswith(".png"):
            assert (out / name).read_bytes()[:4] == b"\x89PNG", name


def test_bench_s_help_names_what_its_own_test_reads():
    """bench needs a live endpoint: tests/test_serving_bench.py runs it with --out and reads
    report.md and result.json there; its help promises those and PNG plots."""
    names, kinds = promised("serving bench")
    assert {"report.md", "result.json"} == names and kinds == {".png"}
    text = (Path(__file__).parent / "test_serving_bench.py").read_text()
    assert '(out / "report.md")' in text and '(out / "result.json")' in text


def test_measured_s_out_holds_the_table_and_the_json(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "requests.json").write_text(json.dumps([[RESULT]]))
    argv = ("serving", "measured", str(tmp_path / "results"), *CASES["serving measured"][1:])
    done = run_in_process(*argv, "--out", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "r" / "report.md").read_text()
    table = done.stdout.split("\nreport: ")[0]
    assert table.strip() and table.strip() in report
    as_json = json.loads(run_in_process(*argv, "--json").stdout)
    assert json.loads((tmp_path / "r" / "result.json").read_text()) == as_json
