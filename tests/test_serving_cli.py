"""The serving simulator as a user meets it: designs, scenarios, the command line, the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from schedatrix.cli import main
from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design, build
from schedatrix.serving.load.requests import SLOClass
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.scenarios.scenario import load_scenario, scenario_from_dict
from schedatrix.serving.studies.acceptance import Criteria, evaluate, interval
from schedatrix.serving.studies.compare import compare

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "schedatrix" / "examples" / "serving-compare.toml"
AZURE = (ROOT.parent / "shared" / "traces" / "azure-llm-2023"
         / "AzureLLMInferenceTrace_conv_2023.csv")

JSON_KEYS = {"name", "gpus", "arrived", "completed", "rejected", "failed", "ttft_p50", "ttft_p95",
             "ttft_p99", "itl_p50", "itl_p95", "tpot_p50", "tpot_p95", "e2e_p50", "e2e_p95",
             "e2e_mean", "queue_p50", "queue_p95", "queue_mean", "mean_in_system",
             "throughput_tok_s", "throughput_rps", "goodput_rps", "slo_attainment",
             "kv_peak_share", "preemptions", "per_class", "synthetic", "verdict"}


def run_cli(*args, capsys):
    code = main(["serving", *args])
    out, err = capsys.readouterr()
    return code, out, err


# -- designs ------------------------------------------------------------------------------------

def test_design_counts_gpus_and_places_replicas_on_nodes():
    d = Design(tp=2, replicas=5)
    assert d.gpus == 10 and d.name == "5 x TP2"
    nodes = [r.nodes for r in build(d).layout.replicas]
    assert nodes == [(0,), (0,), (0,), (0,), (1,)]
    split = Design(prefill_replicas=2, decode_replicas=6, tp=2)
    assert split.gpus == 16 and split.replicas == 0
    roles = [r.role for r in build(split).layout.replicas]
    assert roles == ["prefill"] * 2 + ["decode"] * 6
    big = Design(model="llama-3.1-70b", gpu="a100-80gb", tp=8, pp=2)
    assert build(big).layout.replicas[0].nodes == (0, 1)
    assert build(big).layout.replicas[0].engines == 2


@pytest.mark.parametrize("knobs, words", [
    ({"model": "llama-2-70b", "gpu": "l4"}, ["does not fit", "GB"]),
    ({"tp": 3}, ["tp", "3"]),
    ({"pp": 5}, ["pp", "5"]),
    ({"gpu": "b200"}, ["gpu", "b200", "a100-80gb"]),
    ({"model": "gpt-5"}, ["model", "gpt-5", "llama-3.1-8b"]),
    ({"tp": 16}, ["tp", "16"]),
    ({"replicas": 0}, ["replicas"]),
    ({"prefill_replicas": 2}, ["decode_replicas"]),
    ({"max_batch": 0}, ["max_batch"]),
    ({"max_batch": 512, "max_batched_tokens": 256}, ["max_batched_tokens", "max_batch"]),
    ({"gpu_memory_share": 1.5}, ["gpu_memory_share"]),
    ({"price_per_gpu_hour": float("nan")}, ["price_per_gpu_hour"]),
    ({"tp": True}, ["tp"]),
])
def test_bad_designs_name_the_knob(knobs, words):
    with pytest.raises(InputError) as e:
        Design(**knobs)
    for w in words:
        assert w in str(e.value)


def test_numpy_numbers_are_accepted():
    assert Design(tp=np.int64(2), replicas=np.int32(3)).gpus == 6


# -- acceptance -----------------------------------------------------------------------------------

def _small_load(ttft=None, tpot=None, rate=4.0, n=400):
    load = Load(rate_rps=rate, input_len="lognormal:400,0.5", output_len="lognormal:80,0.5",
                classes=[SLOClass("chat", 1.0, 0, ttft, tpot)])
    return lambda seed: generate(load, seed, requests=n)


def test_interval_is_students_t():
    m, lo, hi = interval([1.0, 2.0, 3.0])
    assert m == 2.0 and hi - m == pytest.approx(4.302652729911275 * 1 / 3 ** 0.5)
    assert interval([5.0]) == (5.0, 5.0, 5.0)


def test_no_slos_no_verdict():
    o = evaluate(Design(), _small_load(), runs=2)
    assert o.passed is None and o.verdict().startswith("No verdict")
    assert "Synthetic load" in o.verdict()


def test_a_pass_needs_enough_runs_and_three_clear_misses_fail():
    easy = evaluate(Design(), _small_load(ttft=5.0, tpot=0.5, n=100), runs=3)
    # three runs that all meet the SLOs are indicative only: 3 of 3 bounds the share of runs
    # that meet from below at 0.05^(1/3) = 37%, far from the 90% needed
    assert easy.passed is None and easy.status == "undecided" and easy.label() == "pass?"
    assert easy.verdict().startswith("UNDECIDED (indicative pass): the SLOs were met in 3 of 3")
    assert "26 more runs, all meeting them, would pass it" in easy.verdict()
    sure = evaluate(Design(), _small_load(ttft=5.0, tpot=0.5, n=100), runs="auto")
    assert len(sure.runs) == 48 and sure.passed is True      # 3, 6, 12, 24 undecided
    assert sure.verdict().startswith("PASS") and "Runs auto: decided after 48 runs" in \
        sure.verdict()
    hard = evaluate(Design(), _small_load(ttft=0.001, tpot=0.5), runs=3)
    assert hard.passed is False and hard.verdict().startswith("FAIL")
    assert hard.verdict().count("3 of 3") == 1 and "at most 63% of runs" in hard.verdict()


def test_a_low_traffic_model_on_one_machine_needs_nothing_distributed():
    c = compare([Design(replicas=4)], _small_load(ttft=2.0, tpot=0.2, rate=1.0, n=100),
                runs="auto")
    names = [o.design.name for o in c.outcomes]
    assert names[-1].endswith("(baseline)")          # one replica on one machine, added
    assert c.single_machine_enough is not None and c.no_distributed_needed
    assert "no distributed design is needed" in c.summary()


def test_cheapest_design_meeting_the_slos():
    c = compare([Design(replicas=1), Design(replicas=3)], _small_load(2.0, 0.2, rate=3.0),
                runs=1, baseline=False)
    # one run decides nothing: it names the cheapest that met the SLOs, as indicative only
    assert c.cheapest is None and c.cheapest_indicative.design.name == "1 x TP1"
    assert c.summary().startswith("Undecided: 1 x TP1 (1 GPU, ") and \
        "met the SLOs in 1 of 1 run, which is indicative only: 28 more runs" in c.summary()


# -- scenarios ----------------------------------------------------------------------------------

def test_the_example_scenario_reads():
    s = load_scenario(EXAMPLE)
    assert len(s.designs) == 9 and s.runs == 3 and s.models
    assert s.load.rate_rps == 12 and [c.name for c in s.load.classes] == ["interactive",
                                                                            "batch"]


@pytest.mark.parametrize("data, words", [
    ({"load": {"rate": 0, "requests": 5}}, ["rate", "0"]),
    ({"load": {"rate": 5}}, ["requests", "duration"]),
    ({"load": {"rate": 5, "requests": 10, "input_len": "gauss:3"}}, ["input", "gauss:3"]),
    ({"load": {"rate": 5, "requests": 10, "colour": 1}}, ["colour", "allowed"]),
    ({"designs": [{"tp": 3}]}, ["design 1", "tp"]),
    ({"designs": [{"name": "a"}, {"name": "a"}]}, ["share the name"]),
    ({"acceptance": {"runs": 0}}, ["runs"]),
    ({"compare": {"models": ["llama-9"]}}, ["models"]),
    ({"classes": [{"name": "x", "share": 0.5, "ttft_s": -1}]}, ["ttft_s"]),
    ({"load": {"trace": "/nonexistent/trace.csv"}}, ["trace"]),
])
def test_bad_scenarios_say_where(data, words):
    data = {"load": {"rate": 5, "requests": 10}, **data}
    with pytest.raises(InputError) as e:
        scenario_from_dict(data)
    for w in words:
        assert w in str(e.value)


def test_a_broken_scenario_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[load\nrate = 3")
    code, _, err = run_cli("compare", str(bad), capsys=capsys)
    assert code == 2 and err.count("\n") == 1 and "not valid TOML" in err
    latin = tmp_path / "latin.toml"
    latin.write_bytes("[load]\n# caf\xe9\nrate = 1\n".encode("latin-1"))
    code, _, err = run_cli("compare", str(latin), capsys=capsys)
    assert code == 2 and "UTF-8" in err


# -- the command line ---------------------------------------------------------------------------

def test_run_json_has_every_key(capsys):
    code, out, _ = run_cli("run", "--rate", "3", "--requests", "300", "--slo-ttft", "1",
                           "--slo-tpot", "0.1", "--json", capsys=capsys)
    assert code == 0
    result = json.loads(out)
    d = result["designs"][0]
    assert JSON_KEYS <= set(d)
    assert d["arrived"] == 300 and d["synthetic"] is True
    assert d["per_class"]["default"]["ttft_slo_s"] == 1.0
    assert d["completed"] + d["rejected"] + d["failed"] == d["arrived"]
    assert 0 < d["ttft_p50"] <= d["ttft_p95"] <= d["ttft_p99"]


def test_run_with_runs_gives_intervals(capsys):
    code, out, _ = run_cli("run", "--rate", "3", "--requests", "200", "--runs", "3", "--json",
                           capsys=capsys)
    d = json.loads(out)["designs"][0]
    assert d["runs"] == 3
    lo, hi = d["intervals"]["ttft_p95"]
    assert lo <= d["ttft_p95"] <= hi


def test_the_same_seed_gives_the_same_json(capsys):
    args = ("run", "--rate", "5", "--requests", "300", "--seed", "7", "--json")
    a = run_cli(*args, capsys=capsys)[1]
    b = run_cli(*args, capsys=capsys)[1]
    assert a == b
    c = run_cli("run", "--rate", "5", "--requests", "300", "--seed", "8", "--json",
                capsys=capsys)[1]
    assert c != a


def test_reference_flag_gives_the_same_figures(capsys):
    args = ("run", "--rate", "4", "--requests", "150", "--replicas", "2", "--json")
    fast = json.loads(run_cli(*args, capsys=capsys)[1])["designs"][0]
    ref = json.loads(run_cli(*args, "--reference", capsys=capsys)[1])["designs"][0]
    for k in ("ttft_p95", "itl_p95", "tpot_p50", "queue_mean", "goodput_rps"):
        assert ref[k] == pytest.approx(fast[k], rel=1e-9)


@pytest.mark.parametrize("args, words", [
    (["run", "--rate", "0"], ["--rate", "above 0"]),
    (["run", "--rate", "-3"], ["--rate"]),
    (["run", "--gpu", "b200"], ["--gpu", "b200"]),
    (["run", "--model", "gpt"], ["--model"]),
    (["run", "--tp", "3"], ["tp"]),
    (["run", "--pp", "7"], ["pp"]),
    (["run", "--model", "llama-2-70b", "--gpu", "l4"], ["does not fit"]),
    (["run", "--input-len", "lognormal:abc"], ["--input-len", "lognormal:abc"]),
    (["run", "--output-len", "uniform:9-3"], ["--output-len", "uniform:9-3"]),
    (["run", "--requests", "1.5"], ["--requests"]),
    (["run", "--trace", "/no/such/file.csv"], ["/no/such/file.csv"]),
    (["run", "--prefill-replicas", "2"], ["decode_replicas"]),
    (["run", "--max-batch", "64", "--max-batched-tokens", "32"], ["max_batched_tokens"]),
    (["compare", "/no/such.toml"], ["cannot be read"]),
    (["run", str(EXAMPLE), "--design", "nope"], ["--design", "nope"]),
])
def test_bad_input_is_one_line_exit_2(args, words, capsys):
    code, out, err = run_cli(*args, capsys=capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    for w in words:
        assert w in err


def test_compare_writes_a_report(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text("""
[load]
rate = 3
requests = 300
input_len = "lognormal:500,0.5"
output_len = "lognormal:80,0.5"
[[classes]]
name = "chat"
ttft_s = 1.0
tpot_s = 0.1
[[designs]]
replicas = 1
[[designs]]
replicas = 2
[compare]
models = ["llama-3.2-3b", "llama-3.1-70b"]
""")
    code, out, _ = run_cli("compare", str(scenario), "--out", str(tmp_path / "r"), "--quiet",
                           capsys=capsys)
    assert code == 0
    assert "Undecided: 1 x TP1" in out and "pass?" in out     # one run: indicative only
    md = (tmp_path / "r" / "report.md").read_text()
    assert "Synthetic load" in md and "How the answer moves with model size" in md
    assert (tmp_path / "r" / "series.png").stat().st_size > 10_000
    result = json.loads((tmp_path / "r" / "result.json").read_text())
    assert result["cheapest"] is None and result["cheapest_indicative"] == "1 x TP1"
    assert set(result["models"]) == {"llama-3.1-8b", "llama-3.2-3b", "llama-3.1-70b"}
    seventy = result["models"]["llama-3.1-70b"]
    assert seventy["cheapest"] is None and all("does not fit" in s["reason"]
                                               for s in seventy["skipped"])


def test_compare_runs_the_designs_own_model_once(tmp_path, capsys, monkeypatch):
    # [compare] models may name the designs' own model: its comparison is the main one, and
    # the sweep over models does not run it a second time (the README's example names 8B)
    from schedatrix.serving.studies import acceptance
    runs = []
    real = acceptance.simulate

    def counted(req, design, *args, **kwargs):
        runs.append(design.model)
        return real(req, design, *args, **kwargs)

    monkeypatch.setattr(acceptance, "simulate", counted)
    scenario = tmp_path / "s.toml"
    scenario.write_text("""
[load]
rate = 3
requests = 200
[[designs]]
replicas = 1
[[designs]]
replicas = 2
[acceptance]
runs = 2
[compare]
models = ["llama-3.2-3b", "llama-3.1-8b"]
""")
    code, out, _ = run_cli("compare", str(scenario), "--json", "--quiet", capsys=capsys)
    assert code == 0
    assert runs.count("llama-3.1-8b") == 2 * 2 and runs.count("llama-3.2-3b") == 2 * 2
    assert list(json.loads(out)["models"]) == ["llama-3.1-8b", "llama-3.2-3b"]


@pytest.mark.skipif(not AZURE.exists(), reason=f"{AZURE} is absent (it lives in ../shared)")
def test_replaying_the_azure_hour_is_not_synthetic(capsys):
    code, out, _ = run_cli("run", "--trace", str(AZURE), "--replicas", "4", "--json",
                           capsys=capsys)
    d = json.loads(out)["designs"][0]
    assert code == 0 and d["synthetic"] is False and d["arrived"] == 19_366
    assert d["completed"] + d["rejected"] == 19_366


def test_console_script_prints_help():
    r = subprocess.run([sys.executable, "-m", "schedatrix", "serving", "run", "--help"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "--slo-ttft" in r.stdout and "--prefill-replicas" in r.stdout


def test_requests_longer_than_the_context_are_rejected_with_their_reason(capsys):
    code, out, _ = run_cli("run", "--model", "llama-2-7b", "--rate", "2", "--requests", "50",
                           "--input-len", "uniform:3000-5000", "--output-len", "200", "--json",
                           capsys=capsys)
    d = json.loads(out)["designs"][0]
    reasons = d["rejected_by_reason"]
    assert d["rejected"] > 0 and reasons == {
        "longer than the model's context": {"default": d["rejected"]}}


def test_criteria_validate():
    with pytest.raises(InputError, match="attainment"):
        Criteria(attainment=1.5)
