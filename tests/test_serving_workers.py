"""Runs made on worker processes are the runs this process makes, and go to its memo."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.cluster.faults import parse_fault
from schedatrix.serving.load.requests import SLOClass
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.sim import memo
from schedatrix.serving.studies import acceptance
from schedatrix.serving.studies.accept import accept
from schedatrix.serving.studies.acceptance import evaluate

CHAT = SLOClass("chat", 1.0, priority=0, ttft_s=1.0, tpot_s=0.1)
LOAD = Load(rate_rps=6.0, input_len="lognormal:900,0.8", output_len="lognormal:150,0.7",
            classes=(CHAT,))
PAIR = Design(model="llama-3.1-8b", gpu="a100-80gb", replicas=2)


def _make(seed):
    return generate(LOAD, seed, requests=300)


def _same_runs(a, b):
    assert len(a.runs) == len(b.runs)
    for x, y in zip(a.runs, b.runs, strict=True):
        for f in dataclasses.fields(x):
            u, v = getattr(x, f.name), getattr(y, f.name)
            assert u == v or (u != u and v != v), f.name      # NaN equals NaN here
    assert a.kv_peak_share == b.kv_peak_share and a.reasons == b.reasons
    assert np.array_equal(a.series.ttft_p95, b.series.ttft_p95, equal_nan=True)


def test_workers_give_the_runs_one_process_gives(monkeypatch):
    with memo.off():
        monkeypatch.setenv(acceptance.WORKERS_ENV, "1")
        alone = evaluate(PAIR, _make, runs=4, seed=3)
        monkeypatch.setenv(acceptance.WORKERS_ENV, "3")
        pooled = evaluate(PAIR, _make, runs=4, seed=3)
    _same_runs(alone, pooled)


def test_faulted_runs_on_workers_match_too(monkeypatch):
    fault = (parse_fault("worker:0@10+5"),)
    with memo.off():
        monkeypatch.setenv(acceptance.WORKERS_ENV, "0")
        [alone] = accept([PAIR], _make, fault, 3, 0)
        monkeypatch.setenv(acceptance.WORKERS_ENV, "2")
        [pooled] = accept([PAIR], _make, fault, 3, 0)
    assert alone.with_faults == pooled.with_faults
    assert alone.fault_figures == pooled.fault_figures


def test_the_workers_runs_are_kept_here(monkeypatch):
    memo.clear()
    monkeypatch.setenv(acceptance.WORKERS_ENV, "2")
    first = evaluate(PAIR, _make, runs=3, seed=11)
    assert memo.stats()["runs"] >= 3
    hits = memo.stats()["hits"]
    again = evaluate(PAIR, _make, runs=3, seed=11)
    assert memo.stats()["hits"] == hits + 3
    _same_runs(first, again)
    memo.clear()


def test_who_decides_how_many_workers(monkeypatch):
    monkeypatch.delenv(acceptance.WORKERS_ENV, raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setattr(acceptance, "_cpus", lambda: 2)
    assert acceptance.workers() == 1                    # a 2-core machine: this process only
    monkeypatch.setattr(acceptance, "_cpus", lambda: 16)
    assert acceptance.workers() == acceptance.MAX_WORKERS
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    assert acceptance.workers() == 1                    # the suite keeps the cores busy
    monkeypatch.setenv(acceptance.WORKERS_ENV, "4")
    assert acceptance.workers() == 4
    monkeypatch.setenv(acceptance.WORKERS_ENV, "many")
    with pytest.raises(InputError, match="SCHEDATRIX_WORKERS: got 'many'"):
        acceptance.workers()


def test_a_job_the_workers_cannot_take_is_run_here(monkeypatch):
    monkeypatch.setenv(acceptance.WORKERS_ENV, "2")
    with memo.off():
        reqs = [_make(s) for s in (1, 2)]
        reqs[1].meta["unpicklable"] = lambda: None      # a lambda does not pickle
        runs = list(acceptance.simulate_all((r, PAIR, "fast", (), None) for r in reqs))
        monkeypatch.setenv(acceptance.WORKERS_ENV, "1")
        alone = list(acceptance.simulate_all((r, PAIR, "fast", (), None) for r in reqs))
    assert all(run.requests is r for run, r in zip(runs, reqs, strict=True))
    for a, b in zip(runs, alone, strict=True):
        assert np.array_equal(a.done_s, b.done_s, equal_nan=True)


@pytest.mark.parametrize("value", ["abc", "-3", "2.5"])
def test_the_command_line_refuses_a_bad_worker_count_before_any_work(monkeypatch, capsys, value):
    from schedatrix.cli import main
    monkeypatch.setenv("SCHEDATRIX_WORKERS", value)
    assert main(["serving", "run", "--requests", "10"]) == 2
    out, err = capsys.readouterr()
    assert not out and err.count("\n") == 1 and "SCHEDATRIX_WORKERS" in err and repr(value) in err
