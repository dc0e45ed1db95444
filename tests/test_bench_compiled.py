"""The compiled-core benchmarks (bench_compiled.py, bench_numba_probe.py) refuse bad input
in one line, exit 2, before they build or start anything (the measurements themselves need
Cython and a compiler, or numba, and minutes: they are run by hand)."""

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


def test_the_numba_probe_refuses_bad_input_and_a_missing_numba_in_one_line(capsys, monkeypatch):
    """benchmarks/bench_numba_probe.py (run by hand: numba is no dependency) refuses in one
    line, exit 2, before it starts anything."""
    from bench_numba_probe import main as probe

    assert probe(["--requests", "5"]) == 2
    monkeypatch.setitem(sys.modules, "numba", None)       # as if it were not installed
    assert probe([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["bench_numba_probe: --requests 5: allowed 100 to 100,000,000",
                   "bench_numba_probe: needs numba (pip install numba); schedatrix does not "
                   "depend on it"]
