"""Several models on one constrained pool: the placement planner (schedatrix serving plan), its
pool file, its search and its verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_in_process

from schedatrix import examples
from schedatrix.errors import InputError
from schedatrix.serving.reports.plan_report import plan_json, plan_lines
from schedatrix.serving.studies.plan import load_pool, packs, plan, pool_from_dict
from schedatrix.text import WIDTH

ROOT = Path(__file__).resolve().parents[1]

#: A small pool for fast tests: two small models, few requests a rate.
SMALL = {
    "pool": {"gpu": "h100-80gb", "count": 2, "requests": 1000, "seed": 3},
    "models": [
        {"name": "chat", "model": "llama-3.2-3b", "rate": 6, "input_len": "512",
         "output_len": "64", "ttft_s": 0.5, "tpot_s": 0.05},
        {"name": "assist", "model": "llama-3.1-8b", "rate": 3, "input_len": "1024",
         "output_len": "128", "ttft_s": 0.5, "tpot_s": 0.05},
    ],
}


def _with(count: int, **pool) -> dict:
    return {"pool": {**SMALL["pool"], "count": count, **pool}, "models": SMALL["models"]}


def _cli(*args):
    return run_in_process("serving", "plan", *args)


@pytest.fixture(scope="module")
def small():
    return plan(pool_from_dict(_with(2)))


def test_a_small_pool_places_both_models_and_says_how(small):
    assert small.fits and len(small.models) == 2
    used, idle = small.gpus_used["h100-80gb"], small.gpus_idle["h100-80gb"]
    assert used + idle == 2 and used >= 2
    for m in small.models:
        assert m.meets and m.option.attained >= 0.9
        assert m.headroom == pytest.approx(m.goodput.max_rate_rps / m.spec.rate_rps)
        assert m.headroom >= 0.97          # the goodput search's tolerance below the rate
    first = small.breaks_first
    assert first.headroom == min(m.headroom for m in small.models)
    text = "\n".join(plan_lines(small))
    assert max(len(line) for line in plan_lines(small)) <= WIDTH   # fits JupyterLab's output
    assert "a placement fits" in text and "breaks first as load grows: " + first.spec.name \
        in text
    out = json.loads(json.dumps(plan_json(small), allow_nan=False))
    assert out["fits"] and out["breaks_first"] == first.spec.name
    assert out["gpus_used"] == small.gpus_used


def test_the_chosen_placement_is_the_cheapest_that_fits(small):
    chosen = {m.spec.name: m.option for m in small.models}
    for name, options in small.options.items():
        fitting = [o for o in options if o.gpus <= 2]
        assert chosen[name].dollars_per_hour == min(o.dollars_per_hour for o in fitting)
    # every unit the search ran has a goodput or a stated reason to be skipped
    assert all(good is not None or result.startswith("pruned") for *_, good, result
               in small.tried)


def test_a_pool_too_small_says_who_cannot_be_served_and_the_count_that_would(small):
    none = plan(pool_from_dict(_with(1)))
    assert not none.fits and not none.models and none.unservable
    assert none.smallest_budget == {"h100-80gb": 2}
    text = "\n".join(plan_lines(none))
    assert max(len(line) for line in plan_lines(none)) <= WIDTH
    assert "no placement fits in 1 x h100-80gb" in text
    assert "the smallest budget that would: 2 x h100-80gb" in text
    # the smallest count it names is enough: the plan above, on 2 GPUs, fits
    assert small.fits


def test_same_seed_same_plan(small):
    again = plan(pool_from_dict(_with(2)))
    assert plan_json(again) == plan_json(small)


def test_packing_on_nodes_of_eight():
    assert packs([4, 4, 4, 2, 1], 16) and not packs([4, 4, 4, 4, 1], 16)
    assert packs([8, 8], 16) and not packs([8, 8], 15)
    assert packs([4, 2, 1], 7) and not packs([4, 4], 7)
    assert packs([16], 16) and not packs([16, 1], 16)     # a 16-GPU replica takes two nodes
    assert not packs([6, 3], 9)                            # 9 GPUs: a node of 8 and one of 1


@pytest.mark.parametrize("change, words", [
    ({"pool": {"gpu": "h100-80gb"}}, "[pool] needs gpu and count"),
    ({"pool": {"gpu": "b200", "count": 4}}, "gpu: unknown GPU 'b200'"),
    ({"pool": {"gpu": ["h100-80gb", "a100-80gb"], "count": 8}}, "two kinds and two counts"),
    ({"pool": {"gpu": "h100-80gb", "count": 0}}, "count"),
    ({"pool": {"gpu": "h100-80gb", "count": 2, "attainment": 1.5}}, "attainment"),
    ({"pool": {"gpu": "h100-80gb", "count": 2, "spare": 1}}, "unknown key 'spare'"),
    ({"models": []}, "[[models]] is missing"),
    ({"models": [{"model": "gpt-5", "rate": 1, "ttft_s": 1}]}, "model: 'gpt-5'"),
    ({"models": [{"model": "llama-3.1-8b", "rate": 1}]}, "needs an SLO"),
    ({"models": [{"model": "llama-3.1-8b", "ttft_s": 1}]}, "needs rate"),
    ({"models": [{"model": "llama-3.1-8b", "rate": -1, "ttft_s": 1}]}, "rate"),
    ({"models": [{"model": "llama-3.1-8b", "rate": 1, "ttft_s": 1, "dtype": "int4"}]},
     "dtype: 'int4'"),
    ({"models": [{"model": "llama-3.1-8b", "rate": 1, "ttft_s": 1, "input_len": "x"}]},
     "input_len"),
    ({"models": [{"model": "llama-3.1-8b", "rate": 1, "ttft_s": 1, "replicas": 2}]},
     "unknown key 'replicas'"),
    ({"models": [{"model": "llama-3.1-8b", "rate": 1, "ttft_s": 1},
                 {"model": "llama-3.1-8b", "rate": 2, "ttft_s": 1}]}, "share the name"),
])
def test_bad_pool_files_are_refused_naming_the_key(change, words):
    data = {"pool": dict(SMALL["pool"]), "models": list(SMALL["models"])}
    data.update(change)
    with pytest.raises(InputError) as err:
        pool_from_dict(data, source="pool.toml")
    assert words in str(err.value), str(err.value)


def test_fp8_is_not_offered_where_the_gpu_has_none():
    from schedatrix.serving.studies.plan import _units

    spec = pool_from_dict({"pool": {"gpu": "a100-80gb", "count": 8},
                           "models": [{"model": "llama-3.1-8b", "rate": 1, "ttft_s": 1,
                                       "dtype": ["bf16", "fp8"]}]})
    units, why = _units(spec.models[0], spec.pool)
    assert units and all(u.dtype == "bf16" for u in units)
    assert any("no FP8 tensor cores" in w for w in why)


# -- the example: three models on 20 H100s, and on 2 -------------------------------------------
def test_the_example_places_three_models_on_20_h100s_and_holds_at_steady_state():
    """The packaged plan's verdicts hold when each placed design serves 3,000+ requests (and
    twice the run its verdict was read on) at its planned rate: the queues had settled."""
    from schedatrix.serving.figures.metrics import met_slo
    from schedatrix.serving.studies.steady import steady_run

    path = examples.path("serving-plan.toml")
    spec = load_pool(path)
    assert [m.model for m in spec.models] == ["llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b"]
    assert spec.pool.kinds == (("h100-80gb", 20),)
    out = plan_json(plan(spec))
    assert out["fits"] and out["gpus_used"]["h100-80gb"] <= 20
    assert out["gpus_used"]["h100-80gb"] + out["gpus_idle"]["h100-80gb"] == 20
    assert all(m["meets"] for m in out["models"]) and len(out["models"]) == 3
    for m in plan(spec).models:
        long = steady_run(m.option.design, m.spec.load, spec.pool.seed,
                          max(3000, 2 * m.goodput.requests))
        assert long.requests >= 3000 and long.settled
        share = long.share(met_slo(long.run))
        assert share >= spec.pool.attainment, (m.spec.name, share)
    two = _cli(str(path), "--gpus", "2", "--quiet")
    assert two.returncode == 1 and not two.stderr.strip(), two.stderr     # a verdict of no
    assert "no placement fits in 2 x h100-80gb" in two.stdout
    assert "cannot be served" in two.stdout and "the smallest budget that would" in two.stdout
    need = int(two.stdout.split("would: ")[1].split(" x ")[0])
    assert 2 < need <= out["gpus_used"]["h100-80gb"]


@pytest.mark.parametrize("args, word", [
    (["missing.toml"], "cannot be read"),
    (["--gpus", "0", "x.toml"], "--gpus"),
])
def test_bad_command_lines_are_one_line(args, word, tmp_path):
    done = _cli(*args)
    assert done.returncode == 2 and word in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[pool]\ngpu = "h100-80gb"\ncount = 2\n[[models]]\nmodel = "llama-3.1-8b"\n'
                   'rate = 1\nttft_s = 1\ndtype = "fp16"\n')
    done = _cli(str(bad))
    assert done.returncode == 2 and "dtype" in done.stderr and "model 1" in done.stderr


def test_two_kinds_of_gpu_and_a_trace_load(tmp_path):
    # a trace's rate, burstiness and lengths are fitted; the pool has one H100 and one A100
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.exponential(1 / 2.0, 300))
    rows = "\n".join(f"{x:.3f},{int(i)},{int(o)}" for x, i, o in
                     zip(t, rng.integers(200, 1500, 300), rng.integers(20, 200, 300),
                         strict=True))
    trace = tmp_path / "trace.csv"
    trace.write_text("timestamp,input_tokens,output_tokens\n" + rows + "\n")
    spec = pool_from_dict({
        "pool": {"gpu": ["h100-80gb", "a100-80gb"], "count": [1, 1], "requests": 1000},
        "models": [{"name": "chat", "model": "llama-3.2-3b", "trace": "trace.csv",
                    "ttft_s": 1.0, "tpot_s": 0.1},
                   {"name": "assist", "model": "llama-3.1-8b", "rate": 1, "input_len": "512",
                    "output_len": "64", "ttft_s": 1.0, "tpot_s": 0.1}]}, base=tmp_path)
    assert spec.models[0].source.endswith("trace.csv")
    assert spec.models[0].rate_rps == pytest.approx(300 / t[-1], rel=0.05)
    p = plan(spec)
    assert p.fits and sum(p.gpus_used.values()) == 2
    # both kinds are used: one model on each, the costlier H100 where it pays
    assert p.gpus_used == {"h100-80gb": 1, "a100-80gb": 1}
    assert {m.option.design.gpu for m in p.models} == {"h100-80gb", "a100-80gb"}


def test_fp8_and_expert_parallelism_on_the_command_line():
    run = subprocess.run([sys.executable, "-m", "schedatrix", "serving", "run", "--model",
                          "llama-3.1-8b", "--gpu", "a100-80gb", "--dtype", "fp8", "--rate", "1",
                          "--requests", "20"], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 2 and "no FP8 tensor cores" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    run = subprocess.run([sys.executable, "-m", "schedatrix", "serving", "run", "--model",
                          "mixtral-8x7b", "--gpu", "h100-80gb", "--tp", "2", "--ep", "2",
                          "--dtype", "fp8", "--rate", "1", "--requests", "30", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    d = json.loads(run.stdout)["designs"][0]
    assert d["design"]["ep"] == 2 and d["design"]["dtype"] == "fp8"
    assert d["name"] == "1 x TP2 EP2 FP8" and d["completed"] == 30


def test_a_plan_reuses_the_searches_it_has_made_and_says_the_same(monkeypatch):
    """Searches and runs are kept by their inputs: the same file planned again simulates
    nothing, a pool of another size re-searches no unit, and each plan says what a fresh
    process would."""
    from schedatrix.serving.studies import plan as planner
    from schedatrix.serving.studies import steady

    spec, bigger = pool_from_dict(_with(2)), pool_from_dict(_with(4))
    planner._MEMO.clear()
    fresh = {name: plan_json(plan(s)) for name, s in (("2", spec), ("4", bigger))}
    planner._MEMO.clear()
    runs = []

    def counted(real):
        def simulate(*args, **kw):
            runs.append(1)
            return real(*args, **kw)
        return simulate

    monkeypatch.setattr(steady, "simulate", counted(steady.simulate))
    assert plan_json(plan(spec)) == fresh["2"]
    first = len(runs)
    assert first > 0
    assert plan_json(plan(spec)) == fresh["2"]
    assert len(runs) == first                        # nothing simulated again
    assert plan_json(plan(bigger)) == fresh["4"]     # the same units, the same searches
    assert len(runs) == first
    other = pool_from_dict({**_with(2), "pool": {**_with(2)["pool"], "seed": 4}})
    plan(other)
    assert len(runs) > first                         # another seed is another search


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_a_random_pools_verdicts_hold_over_3000_requests(seed):
    """Issue 33: on random small pools (models, rates, lengths and SLOs drawn), each placed
    model said to meet its SLOs still meets them when its design serves 3,000+ requests at the
    planned rate: the planner judged it at steady state, not on a transient."""
    from schedatrix.serving.figures.metrics import met_slo
    from schedatrix.serving.studies.steady import steady_run

    r = np.random.default_rng(seed)
    models = []
    for k in range(2):
        model = ("llama-3.2-3b", "llama-3.1-8b")[int(r.integers(2))]
        models.append({"name": f"m{k}", "model": model, "rate": float(r.choice([2, 4, 8])),
                       "input_len": str(int(r.choice([256, 512, 1024]))),
                       "output_len": str(int(r.choice([64, 128]))),
                       "ttft_s": float(r.choice([0.5, 1.0])), "tpot_s": 0.05})
    spec = pool_from_dict({"pool": {"gpu": "h100-80gb", "count": 8, "requests": 1000,
                                    "seed": seed}, "models": models})
    result = plan(spec)
    placed = [m for m in result.models if m.option is not None and m.meets]
    assert placed, plan_lines(result)
    for m in placed:
        long = steady_run(m.option.design, m.spec.load, spec.pool.seed,
                          max(3000, 2 * m.goodput.requests))
        assert long.requests >= 3000 and long.settled
        assert long.share(met_slo(long.run)) >= spec.pool.attainment, (seed, m.spec.name)


# -- issue 35: every field's type checked, names printable, one bound ----------------------------
def _example_dict():
    import tomllib
    return tomllib.loads(examples.path("serving-plan.toml").read_text())


@pytest.mark.parametrize("where, value", [
    (("pool", "gpu"), {"x": 1}), (("pool", "gpu"), [[1]]), (("pool", "count"), [[4]]),
    (("pool", "count"), "20"), (("models", 0, "model"), ["llama-3.1-8b"]),
    (("models", 0, "model"), {"x": 1}), (("models", 0, "dtype"), {"x": 1}),
    (("models", 0, "dtype"), [["fp8"]]), (("models", 0, "name"), ["chat"]),
    (("models", 0, "rate"), [30]), (("models", 0, "input_len"), [800]),
    (("models", 0, "name"), "a\nb"), (("models", 0, "name"), "\x1b[31mred"),
])
def test_a_field_of_the_wrong_type_is_refused_in_one_line(where, value):
    data = _example_dict()
    node = data
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = value
    with pytest.raises(InputError) as e:
        pool_from_dict(data, source="pool.toml")
    text = str(e.value)
    assert "\n" not in text and "\x1b" not in text and str(where[-1]) in text


def test_gpus_and_count_share_one_bound(tmp_path):
    data = _example_dict()
    data["pool"]["count"] = 100_001
    with pytest.raises(InputError, match="count"):
        pool_from_dict(data)
    r = _cli(str(examples.path("serving-plan.toml")), "--gpus", "100001")
    assert r.returncode == 2 and "100,000" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_progress_and_the_tried_list_agree_in_number(tmp_path):
    # issue 35: the bar read "10search" (then "1 searches"); the tried list said "1 units"
    import re

    pool = tmp_path / "pool.toml"
    model = ('model = "llama-3.2-3b"\ninput_len = "lognormal:800,0.8"\n'
             'output_len = "lognormal:150,0.7"\nttft_s = 0.5\ntpot_s = 0.04\n')
    pool.write_text('[pool]\ngpu = "h100-80gb"\ncount = 8\nrequests = 1000\n'
                    f'[[models]]\nname = "small"\nrate = 2\n{model}'
                    f'[[models]]\nname = "big"\nrate = 60\n{model}')
    shown = _cli(str(pool)).stderr.replace("\r", "\n")
    assert re.search(r"^plan: search \d+ \[", shown, re.M), shown
    assert not re.search(r"\d ?search|searches", shown.replace("plan: search ", "")), shown
    done = _cli(str(pool), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    units = {m["name"]: m["units"] for m in data["models"]}
    assert units["small"] == 1 and units["big"] >= 2          # both numbers are said
    said = [t["result"] for t in data["tried"] if t["result"].endswith(("unit", "units"))]
    assert "1 unit" in said and f"{units['big']} units" in said
    assert all((r == "1 unit") == r.startswith("1 ") for r in said), said


@pytest.mark.parametrize("old, new", [
    ('model = "llama-3.2-3b"', 'model = ["llama-3.2-3b"]'),          # a model list
    ('gpu = "h100-80gb"', 'gpu = {kind = "h100-80gb"}'),            # a GPU table
    ('gpu = "h100-80gb"', 'gpu = [["h100-80gb"]]'),                 # a nested list
    ('name = "chat"', 'name = "ch\\u001b[31mat"'),                   # an escape sequence
])
def test_the_command_line_refuses_a_wrong_type_in_one_line(old, new, tmp_path):
    # issue 35: these ended in a TypeError traceback, or printed the name raw
    text = examples.path("serving-plan.toml").read_text()
    assert old in text
    pool = tmp_path / "pool.toml"
    pool.write_text(text.replace(old, new, 1))
    done = _cli(str(pool), "--quiet")
    assert done.returncode == 2 and not done.stdout
    line, = done.stderr.strip().splitlines()
    assert "Traceback" not in line and "\x1b" not in line and old.split(" =")[0] in line


def test_a_calibration_reaches_every_design_the_planner_tries(tmp_path):
    """Issue 37: --calibration loads in every serving command, plan's included. A host step of
    60 ms a scheduler iteration (a calibration file as serving calibrate writes it) puts every
    TPOT over the 50 ms SLO, so the pool that fits without it fits nothing with it."""
    import dataclasses
    cal = tmp_path / "cal.toml"
    cal.write_text("[host]\nstep_s = 0.06\n[client_path]\nfront_end_s = 0.001\n")
    pool = tmp_path / "pool.toml"
    pool.write_text(
        "[pool]\ngpu = \"h100-80gb\"\ncount = 2\nrequests = 1000\nseed = 3\n\n[[models]]\n"
        "name = \"chat\"\nmodel = \"llama-3.2-3b\"\nrate = 6\ninput_len = \"512\"\n"
        "output_len = \"64\"\nttft_s = 0.5\ntpot_s = 0.05\n")
    plain = _cli(str(pool), "--quiet", "--json")
    assert plain.returncode == 0, plain.stderr
    slow = _cli(str(pool), "--quiet", "--json", "--calibration", str(cal))
    assert slow.returncode == 1, slow.stderr           # a verdict of no, with the reason
    assert not json.loads(slow.stdout)["fits"]
    from schedatrix.serving.intake.calibration_file import read_calibration
    knobs = tuple(sorted(read_calibration(cal).design_knobs().items()))
    spec = load_pool(pool)
    from schedatrix.serving.studies.plan import _units
    pooled = dataclasses.replace(spec.pool, design_knobs=knobs)
    units, _ = _units(spec.models[0], pooled)
    assert units and all(u.host_ms == pytest.approx(60) for u in units)
    bad = _cli(str(pool), "--quiet", "--calibration", str(tmp_path / "missing.toml"))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
