"""benchmarks/bench_compiled.py refuses bad input in one line, exit 2, before it builds anything
(the measurement itself needs Cython and a compiler, and minutes: it is run by hand)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_compiled import HOT, ROOT, main  # noqa: E402


def test_bad_input_is_refused_in_one_line(capsys):
    assert main(["--requests", "10"]) == 2
    assert main(["--repeat", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["bench_compiled: --requests 10: allowed 1,000 to 1,000,000",
                   "bench_compiled: --repeat 0: allowed 1 to 10"]


def test_the_modules_it_compiles_are_the_engines():
    assert all((ROOT / "schedatrix" / f).is_file() for f in HOT)
