"""Sweeps: the grid file, tasks seeded by (load, seed) alone, the same table in one process, in
local processes and on a local Ray instance, the Pareto front, the files and the command line."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import warnings

import pytest

from schedatrix.cli import main
from schedatrix.errors import InputError
from schedatrix.serving.scenarios.grid import Task, grid_from_dict, load_grid
from schedatrix.serving.sweeps.sweep import pareto_front, ray_available, run_sweep, run_tasks
from schedatrix.serving.sweeps.sweep_report import (
    csv_text,
    parquet_available,
    sweep_json,
    write_sweep,
)

#: A tiny grid: 2 designs x 2 loads x 2 seeds = 8 runs of 120 requests.
TINY = """
[load]
requests = 120
input_len = "uniform:100-900"
output_len = "uniform:10-120"

[[classes]]
name = "chat"
share = 0.75
ttft_s = 0.4
tpot_s = 0.05

[[classes]]
name = "batch"
share = 0.25
priority = 1

[grid]
seeds = [3, 4]

[grid.design]
replicas = [1, 2]

[grid.load]
rate = [3, 12]
"""


def _grid_file(tmp_path, text=TINY, name="grid.toml"):
    f = tmp_path / name
    f.write_text(text)
    return f


def _run(*args, capsys):
    code = main(["serving", "sweep", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


# -- the grid --------------------------------------------------------------------------------

def test_grid_is_the_product_of_designs_loads_and_seeds_in_task_order(tmp_path):
    g = load_grid(_grid_file(tmp_path))
    assert g.designs == ("1 x TP1", "2 x TP1") and g.loads == ("rate=3", "rate=12")
    assert g.seeds == (3, 4) and len(g.tasks) == 8
    assert [(t.load, t.seed, t.design) for t in g.tasks[:3]] == [
        ("rate=3", 3, "1 x TP1"), ("rate=3", 3, "2 x TP1"), ("rate=3", 4, "1 x TP1")]
    assert [t.index for t in g.tasks] == list(range(8))
    assert g.tasks[0].scenario["load"]["rate"] == 3
    assert g.describe() == "2 designs x 2 loads x 2 seeds = 8 runs"


def test_grid_names_swept_knobs_the_label_does_not_show_and_skips_what_cannot_hold_a_model():
    g = grid_from_dict({"load": {"rate": 2, "requests": 10},
                        "grid": {"seeds": 2, "design": {"model": ["llama-3.1-8b",
                                                                  "llama-3.1-70b"],
                                                        "tp": [1, 4]}}})
    assert g.seeds == (0, 1)
    assert g.designs == ("1 x TP1 [model=llama-3.1-8b]", "1 x TP4 [model=llama-3.1-8b]",
                         "1 x TP4 [model=llama-3.1-70b]")
    assert len(g.skipped) == 1
    name, reason = g.skipped[0]
    assert name == "[model=llama-3.1-70b, tp=1]" and "does not fit" in reason
    named = grid_from_dict({"load": {"rate": 2, "requests": 10},
                            "designs": [{"name": "split", "prefill_replicas": 1,
                                         "decode_replicas": 1}],
                            "grid": {"design": {"gpu": ["a100-80gb", "h100-80gb"]}}})
    assert named.designs == ("split [gpu=a100-80gb]", "split [gpu=h100-80gb]")
    routed = grid_from_dict({"load": {"rate": 2, "requests": 10}, "defaults": {"replicas": 2},
                             "grid": {"design": {"router": ["round-robin", "least-work"]}}})
    assert routed.designs == ("2 x TP1", "2 x TP1, least-work router")


def test_a_replayed_trace_runs_once_whatever_the_seeds(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,input_tokens,output_tokens\n" + "".join(
        f"2024-09-02T14:00:{k:02d}Z,{100 + k},{5 + k}\n" for k in range(20)))
    g = grid_from_dict({"load": {"trace": "t.csv"}, "grid": {
        "seeds": [0, 1, 2], "design": {"replicas": [1, 2]},
        "load": {"speed": [1.0, 2.0]}}}, base=tmp_path)
    assert [(t.load, t.seed) for t in g.tasks] == [("speed=1.0", 0)] * 2 + [("speed=2.0", 0)] * 2
    sweep = run_sweep(g)
    assert [r["synthetic"] for r in sweep.rows] == [False, False, True, True]
    assert all(r["arrived"] == 20 for r in sweep.rows)


BAD_GRIDS = [
    ("[grid.design]\ngpus = [1]", ["[grid.design]", "'gpus'", "allowed"]),
    ("[grid.design]\nreplicas = 2", ["[grid.design] replicas", "non-empty list"]),
    ("[grid.design]\nreplicas = []", ["[grid.design] replicas", "non-empty list"]),
    ("[grid.design]\nreplicas = [1, 1]", ["replicas lists 1 twice"]),
    ("[grid.design]\ngpu = ['a100-80gb', 'b200']", ["[grid.design] gpu = 'b200'", "allowed"]),
    ("[grid.design]\ntp = [1, 16]", ["[grid.design] tp = 16", "from 1 to 8"]),
    ("[grid.design]\nreplicas = [1, -2]", ["[grid.design] replicas=-2", "replicas"]),
    ("[grid.load]\nrate = [2, -1]", ["[grid.load] rate=-1", "rate"]),
    ("[grid.load]\nbursts = [1]", ["[grid.load]", "'bursts'"]),
    ("[grid.load]\ninput_len = ['100', 'uniform:9-1']", ["input_len", "uniform:9-1"]),
    ("[grid]\nseeds = 0", ["[grid] seeds", "1 to 100,000"]),
    ("[grid]\nseeds = [0, -1]", ["[grid] seeds", "-1"]),
    ("[grid]\nseeds = [1, 1]", ["[grid] seeds", "twice"]),
    ("[grid]\nworkers = 3", ["[grid]", "'workers'"]),
    ("[compare]\nmodels = ['llama-3.1-8b']", ["'compare'", "[grid.design] model"]),
    ("[acceptance]\nruns = 3", ["[acceptance] runs", "[grid] seeds"]),
    ("[faults]\nschedule = ['worker:0@1+1']", ["'faults'", "serving accept"]),
    ("[grid.design]\nbuckets = [{chat = [1, 2]}]", ["[grid.design] buckets", "number, string"]),
    ("[defaults]\nreplicas = 2\n[grid.design]\nreplicas = [1]", ["replicas", "[defaults]",
                                                                  "one place"]),
    ("[defaults]\nreplica = 2", ["[defaults]", "unknown knob 'replica'"]),
    ("[[designs]]\nname = 'a'\ntpp = 2", ["design 1", "unknown knob 'tpp'"]),
    ("[[designs]]\nname = 'a'\n[[designs]]\nname = 'a'", ["both 'a'"]),
]


@pytest.mark.parametrize("extra, words", BAD_GRIDS)
def test_bad_grids_are_one_line_naming_the_key(tmp_path, capsys, extra, words):
    base = "[load]\nrate = 2\nrequests = 10\n" if "rate" not in extra else \
        "[load]\nrequests = 10\n"
    f = _grid_file(tmp_path, base + extra + "\n")
    code, out, err = _run(f, "--workers", 1, capsys=capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize("args, words", [
    (["--workers", "0"], ["--workers", "1 to 4,096"]),
    (["--ray", "auto", "--workers", "2"], ["--workers", "Ray cluster"]),
    (["--ray", ""], ["--ray", "local"]),
])
def test_bad_flags_are_one_line(tmp_path, capsys, args, words):
    code, out, err = _run(_grid_file(tmp_path), *args, capsys=capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    for w in words:
        assert w in err


def test_missing_and_malformed_grid_files_are_one_line(tmp_path, capsys):
    code, _, err = _run(tmp_path / "nope.toml", capsys=capsys)
    assert code == 2 and "grid" in err and "cannot be read" in err
    code, _, err = _run(_grid_file(tmp_path, "[grid\n"), capsys=capsys)
    assert code == 2 and "not valid TOML" in err


def test_an_error_found_only_when_a_task_runs_comes_back_from_a_worker_naming_the_task():
    g = load_grid_text(TINY)
    bad = dataclasses.replace(g.tasks[1], scenario={**g.tasks[1].scenario,
                                                   "designs": [{"tp": 3}]})
    for workers in (1, 2):
        with pytest.raises(InputError, match=r"design '2 x TP1', load 'rate=3', seed 3: .*tp"):
            run_tasks([g.tasks[0], bad], workers=workers)


def load_grid_text(text: str):
    import tomllib
    return grid_from_dict(tomllib.loads(text))


# -- the same table everywhere -----------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_sweep():
    return run_sweep(load_grid_text(TINY), workers=1)


def test_a_row_is_exactly_what_serving_run_prints_for_that_design_load_and_seed(
        tmp_path, capsys, tiny_sweep):
    row = next(r for r in tiny_sweep.rows if r["design"] == "2 x TP1" and r["load"] ==
               "rate=12" and r["seed"] == 4)
    scenario = TINY.split("[grid]")[0].replace("[load]", "[load]\nrate = 12") + \
        "[[designs]]\nreplicas = 2\n"
    f = _grid_file(tmp_path, scenario, "scenario.toml")
    code = main(["serving", "run", str(f), "--seed", "4", "--json"])
    one = json.loads(capsys.readouterr().out)["designs"][0]
    assert code == 0
    for key, value in one.items():
        if isinstance(value, dict) or key in ("name", "runs"):
            continue
        assert row[key] == value, key
    for cls, figs in one["per_class"].items():
        for key, value in figs.items():
            assert row[f"per_class.{cls}.{key}"] == value, (cls, key)
    assert row["design.replicas"] == 2 and row["load.rate"] == 12


def test_each_design_at_one_load_and_seed_meets_the_same_arrivals(tiny_sweep):
    by = {(r["load"], r["seed"], r["design"]): r for r in tiny_sweep.rows}
    for load in ("rate=3", "rate=12"):
        for seed in (3, 4):
            a, b = by[(load, seed, "1 x TP1")], by[(load, seed, "2 x TP1")]
            assert a["arrived"] == b["arrived"] == 120
            assert a["per_class.chat.arrived"] == b["per_class.chat.arrived"]
        assert by[(load, 3, "1 x TP1")]["ttft_p95"] != by[(load, 4, "1 x TP1")]["ttft_p95"]


def test_task_order_and_the_process_do_not_move_a_row(tiny_sweep):
    g = load_grid_text(TINY)
    backwards = run_tasks(list(reversed(g.tasks)), workers=1)[::-1]
    assert backwards == tiny_sweep.rows
    in_processes = run_sweep(g, workers=2)
    assert in_processes.rows == tiny_sweep.rows
    assert csv_text(in_processes) == csv_text(tiny_sweep)


@pytest.mark.skipif(not ray_available(), reason="ray is not installed (the optional extra "
                    "'cluster': pip install 'schedatrix[cluster]')")
def test_a_sweep_on_local_ray_gives_exactly_the_table_of_local_processes(tiny_sweep):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        on_ray = run_sweep(load_grid_text(TINY), workers=2, ray_address="local")
    # Ray's tips about its future defaults are not the learner's business
    assert not [w for w in seen if issubclass(w.category, FutureWarning)], \
        [str(w.message)[:80] for w in seen]
    assert on_ray.rows == tiny_sweep.rows
    assert csv_text(on_ray) == csv_text(tiny_sweep)
    assert on_ray.points == tiny_sweep.points


def test_without_ray_the_flag_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "ray", None)
    code, _, err = _run(_grid_file(tmp_path), "--ray", "local", "--quiet", capsys=capsys)
    assert code == 2 and "schedatrix[cluster]" in err and err.count("\n") == 1


# -- the Pareto front and the table ------------------------------------------------------------

def test_pareto_front_keeps_what_nothing_beats_on_both_latency_and_cost():
    pts = [(1.0, 5.0), (2.0, 3.0), (3.0, 3.0), (4.0, 1.0), (0.5, 9.0), (2.0, 4.0),
           (math.nan, 0.1), (5.0, math.inf)]
    assert pareto_front(pts) == [True, True, False, True, True, False, False, False]
    assert pareto_front([(1.0, 1.0), (1.0, 1.0)]) == [True, True]
    assert pareto_front([]) == []


def test_points_are_means_over_seeds_and_decide_the_share_of_seeds_that_meet(tiny_sweep):
    rows = tiny_sweep.rows
    for p in tiny_sweep.points:
        mine = [r for r in rows if r["load"] == p.load and r["design"] == p.design]
        assert p.seeds == 2
        assert p.ttft_p95_s == pytest.approx(sum(r["ttft_p95"] for r in mine) / 2, rel=1e-12)
        assert p.cost_per_mtok == pytest.approx(sum(r["cost_per_mtok"] for r in mine) / 2,
                                                rel=1e-12)
        assert p.met == sum(r["met"] for r in mine)
        # two seeds decide nothing unless both miss (at most 78% of runs meet, 95%)
        assert p.status == ("fail" if p.met == 0 else "undecided") and \
            p.passed == (False if p.met == 0 else None)
    heavy = {p.design: p for p in tiny_sweep.points if p.load == "rate=12"}
    # one replica at 12 requests/s is both cheaper and slower than two: both on the front
    assert heavy["1 x TP1"].cost_per_mtok < heavy["2 x TP1"].cost_per_mtok
    assert heavy["1 x TP1"].ttft_p95_s > heavy["2 x TP1"].ttft_p95_s
    assert heavy["1 x TP1"].front and heavy["2 x TP1"].front


def test_csv_reads_back_to_the_rows(tiny_sweep):
    table = list(csv.DictReader(io.StringIO(csv_text(tiny_sweep))))
    assert len(table) == len(tiny_sweep.rows) == 8
    assert list(table[0]) == tiny_sweep.columns
    for got, row in zip(table, tiny_sweep.rows, strict=True):
        for c in tiny_sweep.columns:
            v = row.get(c)
            if v is None:
                assert got[c] == ""
            elif isinstance(v, bool) or isinstance(v, str):
                assert got[c] == str(v)
            else:
                assert float(got[c]) == v, c
    for key in ("design", "load", "seed", "design.gpu", "ttft_p95", "itl_p95", "goodput_rps",
                "cost_per_mtok", "per_class.chat.ttft_p95", "per_class.batch.slo_attainment",
                "met", "verdict"):
        assert key in tiny_sweep.columns


@pytest.mark.skipif(not parquet_available(), reason="pyarrow is not installed (Parquet is "
                    "written only when it is)")
def test_parquet_holds_the_same_rows_with_typed_columns(tmp_path, tiny_sweep):
    import pyarrow.parquet as pq
    write_sweep(tiny_sweep, tmp_path)
    t = pq.read_table(tmp_path / "sweep.parquet")
    assert t.column_names == tiny_sweep.columns
    assert str(t.schema.field("seed").type) == "int64"
    assert str(t.schema.field("ttft_p95").type) == "double"
    assert str(t.schema.field("met").type) == "bool"
    assert t.to_pylist() == [{c: r.get(c) for c in tiny_sweep.columns}
                             for r in tiny_sweep.rows]


# -- the command line --------------------------------------------------------------------------

def test_sweep_command_writes_the_table_json_and_plot(tmp_path, capsys):
    out = tmp_path / "out"
    code, text, _ = _run(_grid_file(tmp_path), "--workers", 1, "--out", out, capsys=capsys)
    assert code == 0
    assert "2 designs x 2 loads x 2 seeds = 8 runs, in this process" in text
    assert "load rate=12:" in text and "front" in text and "cheapest passing:" in text
    assert "synthetic" in text
    for name in ("sweep.csv", "sweep.json", "pareto.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "sweep.parquet").exists() == parquet_available()
    data = json.loads((out / "sweep.json").read_text())
    assert data["runs"] == 8 and len(data["rows"]) == 8
    assert set(data["pareto"]) == {"rate=3", "rate=12"}


def test_sweep_json_is_one_object_and_the_same_for_processes(tmp_path, capsys, tiny_sweep):
    f = _grid_file(tmp_path)
    code, one, err = _run(f, "--workers", 1, "--json", capsys=capsys)
    assert code == 0 and err == ""
    code, two, _ = _run(f, "--workers", 2, "--json", capsys=capsys)
    assert one == two
    data = json.loads(one)
    assert data["rows"] == json.loads(json.dumps(sweep_json(tiny_sweep)))["rows"]
    fronts = data["pareto"]["rate=12"]
    assert set(fronts["front"]) == {"1 x TP1", "2 x TP1"}


def test_example_grid_parses(tmp_path):
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    g = load_grid(root / "schedatrix" / "examples" / "serving-sweep.toml")
    assert len(g.tasks) == len(g.designs) * len(g.loads) * len(g.seeds) and not g.skipped


def test_task_carries_plain_data():
    g = load_grid_text(TINY)
    import pickle
    t = pickle.loads(pickle.dumps(g.tasks[0]))
    assert isinstance(t, Task) and t == g.tasks[0]
