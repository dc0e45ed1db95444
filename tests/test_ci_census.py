"""tools/ci_census.py's own parts: the accounting records it reads and the kinds it sorts
processes into (the census itself runs CI, so it is not run here)."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("ci_census", ROOT / "tools" / "ci_census.py")
census = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(census)


def _record(pid: int, ppid: int, utime: int, stime: int, comm: bytes, version: int = 3):
    head = struct.pack("<BBHIIIIIIf", 0, version, 0, 0, 0, 0, pid, ppid, 0, 0.0)
    return head + struct.pack("<8H", utime, stime, 0, 0, 0, 0, 0, 0) + comm.ljust(16, b"\0")


def test_comp_t_is_a_mantissa_and_an_octal_exponent():
    assert census.comp_t(1234) == 1234
    assert census.comp_t((2 << 13) | 100) == 100 * 64      # exponent 2: times 8 squared
    assert census.comp_t(0x1FFF) == 8191


def test_records_give_pid_parent_cpu_and_name():
    data = _record(42, 7, 250, 50, b"python") + _record(43, 42, (1 << 13) | 5, 0, b"bwrap")
    assert census.records(data) == [
        {"pid": 42, "ppid": 7, "cpu": 3.0, "comm": "python"},
        {"pid": 43, "ppid": 42, "cpu": 0.4, "comm": "bwrap"}]


def test_a_record_of_another_version_is_refused():
    with pytest.raises(ValueError, match="version 2, expected 3"):
        census.records(_record(1, 0, 0, 0, b"x", version=2))


def test_kernels_are_sorted_by_who_started_them():
    commands = {1: "python -u -c import sys;exec(eval(sys.stdin.readline()))",
                2: "python -m ipykernel_launcher -f k.json",
                3: "python .venv/bin/jupyter-lab --no-browser",
                4: "python -m ipykernel_launcher -f k2.json",
                5: "bwrap --clearenv --setenv PATH x python nbval_run.py 01_score.ipynb",
                6: "python -m ipykernel_launcher -f k3.json"}
    parents = {2: 1, 3: 1, 4: 3, 5: 1, 6: 5, 7: 6}
    assert census.kind_of(2, commands, parents) == "notebook kernels under nbval (both passes)"
    assert census.kind_of(4, commands, parents) == "kernels in JupyterLab (browser tests)"
    assert census.kind_of(6, commands, parents) == "grading: a notebook's own run"
    # one the sampler never saw counts with its nearest known ancestor
    assert census.kind_of(7, commands, parents) == "grading: a notebook's own run"
    assert census.kind_of(8, commands, parents) == "short-lived"


def test_the_command_line_is_named_by_its_subcommand():
    assert census.cli_kind(".venv/bin/python -m schedatrix serving compare x.toml --out r") \
        == "command line: schedatrix serving compare"
    assert census.cli_kind("python -m schedatrix month --preset bargain-shortfall") \
        == "command line: schedatrix month"
    assert census.cli_kind("python -m schedatrix.classroom.checking.checker") is None


def test_descendants_follow_parents_only():
    assert census.descendants(1, {2: 1, 3: 2, 4: 9, 5: 4}) == {1, 2, 3}
