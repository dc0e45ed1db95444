"""``schedatrix serving measured``: a client's per-request results beside the simulation of the
same load. Files are written here from each format's documented fields (vLLM's
``bench serve --save-result --save-detailed``: ``input_lens``, ``output_lens``, ``ttfts``,
``itls``, ``errors``, ``duration``; ``serving bench``'s ``requests.json``; AIPerf's
``profile_export.jsonl``; GuideLLM's ``benchmarks.json``) out of the model's own token times, so
what is measured is what the model said: every distance is 0. The hand-written fixtures of
AIPerf and GuideLLM (tests/fixtures/live, their README cites each schema) are read back figure
by figure. ``--load-out`` writes a load that reads back as the same load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_in_process

from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.figures.record import COMPLETED
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.sim.simulate import simulate

LOAD = ("--rate", "6", "--requests", "60", "--input-len", "uniform:100-1500",
        "--output-len", "uniform:5-80", "--slo-ttft", "0.15", "--slo-tpot", "0.02",
        "--reference")


def _tokens():
    """The scenario's load and the model's token times of each request (the reference run)."""
    req = generate(Load(rate_rps=6, input_len="uniform:100-1500", output_len="uniform:5-80"),
                   seed=0, requests=60)
    from schedatrix.serving.cluster.deployment import build
    from schedatrix.serving.sim.reference import simulate_reference
    d = Design()
    b = build(d)
    run = simulate_reference(req, b.perf, b.config, b.layout, d.policy(), keep_tokens=True)
    assert (run.status == COMPLETED).all()
    assert np.allclose(run.done_s, simulate(req, d, "reference").done_s)
    return req, run


def _rows(req, run) -> list[dict]:
    rows = []
    for i in range(len(req)):
        t = run.token_times[i]
        a = float(run.arrival_s[i])
        rows.append({"index": i, "class_id": 0, "state": "ok",
                     "prompt_tokens": int(req.input_tokens[i]),
                     "max_tokens": int(req.output_tokens[i]),
                     "output_tokens": int(req.output_tokens[i]), "sent_s": a,
                     "ttft_s": t[0] - a, "itl_s": np.diff(t).tolist(), "error": ""})
    return rows


def _compared(*args):
    done = run_in_process("serving", "measured", *map(str, args), *LOAD, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_benchs_own_results_of_the_models_times_are_at_distance_0(tmp_path):
    req, run = _tokens()
    (tmp_path / "requests.json").write_text(json.dumps([_rows(req, run)]))
    data = _compared(tmp_path)
    assert data["format"] == "schedatrix" and data["note"] is None
    for k, r in data["compared"]["all"].items():
        assert r["measured"] == pytest.approx(r["simulated"], rel=1e-9, abs=1e-12), k
    assert 0 < data["compared"]["all"]["slo_attainment"]["measured"] < 1   # the SLOs bite


def test_vllms_detailed_results_of_the_models_times_are_at_distance_0(tmp_path):
    req, run = _tokens()
    rows = _rows(req, run)
    start, end = float(run.arrival_s.min()), float(run.done_s.max())
    vllm = {"backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
            "num_prompts": len(rows), "duration": end - start, "completed": len(rows),
            "input_lens": [r["prompt_tokens"] for r in rows],
            "output_lens": [r["output_tokens"] for r in rows],
            "ttfts": [r["ttft_s"] for r in rows], "itls": [r["itl_s"] for r in rows],
            "generated_texts": [""] * len(rows), "errors": [""] * len(rows)}
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps(vllm))
    data = _compared(path)
    assert data["format"] == "vllm"
    c = data["compared"]["all"]
    for k in ("completed", "ttft_p50", "ttft_p95", "itl_p50", "itl_p95", "tpot_p50",
              "tpot_p95", "e2e_p50", "slo_attainment", "goodput_rps"):
        assert c[k]["measured"] == pytest.approx(c[k]["simulated"], rel=1e-9), k
    # one request failed: counted, and not in the latencies
    vllm["errors"][3], vllm["ttfts"][3], vllm["itls"][3] = "Bad Gateway", 0.0, []
    path.write_text(json.dumps(vllm))
    c = _compared(path)["compared"]["all"]
    assert c["failed"]["measured"] == 1 and c["completed"]["measured"] == 59


def test_the_text_report_shows_the_distance(tmp_path):
    req, run = _tokens()
    rows = _rows(req, run)
    for r in rows:
        r["ttft_s"] *= 1.5          # a deployment 50% slower to its first token
    (tmp_path / "requests.json").write_text(json.dumps([rows]))
    done = run_in_process("serving", "measured", str(tmp_path), *LOAD)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("ttft_p50"))
    assert line.split()[-1] == "+50%"
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("itl_p50"))
    assert line.split()[-1] in ("+0%", "-0%")


@pytest.mark.parametrize("content, says", [
    ({"benchmarks": []}, "GuideLLM's report holds no benchmarks"),
    ({"benchmarks": [{"requests": {}}, {"requests": {}}]}, "choose one with --benchmark"),
    ({"benchmarks": [{"requests": {"successful": [{"prompt_tokens": 3}]}}]},
     "needs info.timings.request_start"),
    ({"request_latency": {"unit": "ms", "avg": 5.0}}, "give its profile_export.jsonl"),
    ({"mean_ttft_ms": 12.0, "completed": 3}, "--save-detailed"),
    ({"ttfts": [0.1], "itls": [], "input_lens": [1], "output_lens": [1], "duration": 1},
     "lists of one length"),
    ({"foo": 1}, "not a format read here"),
])
def test_files_it_cannot_read_are_one_line_naming_why(tmp_path, content, says):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(content))
    done = run_in_process("serving", "measured", str(path), *LOAD)
    assert done.returncode == 2 and says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = run_in_process("serving", "measured", str(tmp_path / "missing"), *LOAD)
    assert done.returncode == 2 and "no such file" in done.stderr


FIXTURES = Path(__file__).parent / "fixtures" / "live"


def test_aiperfs_export_fixture_reads_as_its_records_say():
    from schedatrix.serving.live.results import read_results
    r = read_results(FIXTURES / "aiperf")             # the folder: its profile_export.jsonl
    assert r.format == "aiperf" and len(r.measured) == 4      # the warm-up record is skipped
    ok = [m for m in r.measured if m.state == "ok"]
    assert [m.prompt_tokens for m in r.measured] == [550, 300, 1200, 550]
    assert [m.sent_s for m in r.measured] == pytest.approx([0.0, 0.2, 0.4, 0.6])
    assert [m.ttft_s for m in ok] == pytest.approx([0.040, 0.025, 0.080])
    assert ok[0].itl_s == pytest.approx([0.010, 0.012, 0.011])
    assert [m.output_tokens for m in ok] == [4, 3, 5]
    failed = r.measured[3]
    assert failed.state == "error" and "RequestCancellationError" in failed.error


def test_guidellms_report_fixture_reads_as_its_requests_say():
    from schedatrix.serving.live.results import read_results
    r = read_results(FIXTURES / "guidellm" / "benchmarks.json")
    assert r.format == "guidellm"
    states = [m.state for m in r.measured]
    assert states == ["ok", "ok", "ok", "error", "unfinished"]
    ok = r.measured[:3]
    assert [m.sent_s for m in r.measured] == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])
    assert [m.ttft_s for m in ok] == pytest.approx([0.050, 0.030, 0.090])
    assert [m.e2e_s for m in ok] == pytest.approx([0.120, 0.070, 0.240])   # the third: ITL
    assert [m.output_tokens for m in ok] == [8, 5, 11]
    assert ok[0].itl_s == pytest.approx([0.010] * 7)   # its mean ITL, every gap
    assert "503" in r.measured[3].error
    done = run_in_process("serving", "measured", str(FIXTURES / "guidellm"), *LOAD,
                          "--benchmark", "2")
    assert done.returncode == 2 and "holds 1 benchmark(s)" in done.stderr


def _aiperf_lines(rows) -> str:
    t0 = 1_700_000_000_000_000_000
    out = []
    for r in rows:
        n = r["output_tokens"]
        out.append(json.dumps({
            "metadata": {"session_num": r["index"], "request_start_ns":
                         t0 + round(r["sent_s"] * 1e9), "benchmark_phase": "profiling",
                         "was_cancelled": False},
            "metrics": {"input_sequence_length": {"value": r["prompt_tokens"],
                                                  "unit": "tokens"},
                        "time_to_first_token": {"value": r["ttft_s"] * 1e3, "unit": "ms"},
                        "inter_chunk_latency": {"value": [g * 1e9 for g in r["itl_s"]],
                                                "unit": "ns"},
                        "output_sequence_length": {"value": n, "unit": "tokens"}},
            "error": None}))
    return "\n".join(out) + "\n"


def test_aiperfs_export_of_the_models_times_is_at_distance_0(tmp_path):
    req, run = _tokens()
    (tmp_path / "profile_export.jsonl").write_text(_aiperf_lines(_rows(req, run)))
    data = _compared(tmp_path)
    assert data["format"] == "aiperf"
    for k, r in data["compared"]["all"].items():
        # ns rounding of the sends (request_start_ns is whole nanoseconds)
        assert r["measured"] == pytest.approx(r["simulated"], rel=1e-6, abs=1e-9), k


def test_guidellms_report_of_the_models_times_is_at_distance_0_but_for_itl(tmp_path):
    req, run = _tokens()
    s0 = 1.7e9
    succ = [{"prompt_tokens": r["prompt_tokens"], "output_tokens": r["output_tokens"],
             "info": {"timings": {"request_start": s0 + r["sent_s"],
                                  "first_token_iteration": s0 + r["sent_s"] + r["ttft_s"],
                                  "last_token_iteration": s0 + r["sent_s"] + r["ttft_s"]
                                  + sum(r["itl_s"])}}}
            for r in _rows(req, run)]
    (tmp_path / "benchmarks.json").write_text(json.dumps(
        {"metadata": {"version": 2}, "benchmarks": [{"requests": {"successful": succ}}]}))
    data = _compared(tmp_path)
    assert data["format"] == "guidellm"
    c = data["compared"]["all"]
    for k in ("completed", "ttft_p50", "ttft_p95", "tpot_p50", "tpot_p95", "e2e_p50",
              "slo_attainment", "goodput_rps"):
        assert c[k]["measured"] == pytest.approx(c[k]["simulated"], rel=1e-6), k
    # each request's gaps are its mean ITL, not its own gaps: the gap percentiles move
    assert c["itl_p50"]["distance"] != 0


def _same_load(got, want):
    assert len(got) == len(want)
    # timestamps are whole milliseconds, and the replay counts from the first
    first = round(float(want.arrival_s[0]) * 1000) / 1000
    assert np.abs(got.arrival_s + first - want.arrival_s).max() <= 0.0005 + 1e-9
    assert (got.input_tokens == want.input_tokens).all()
    assert (got.output_tokens == want.output_tokens).all()


def test_load_out_writes_a_mooncake_trace_that_reads_back_as_the_same_load(tmp_path):
    import argparse

    from schedatrix.serving.cli import add_serving_parser
    from schedatrix.serving.live.live_cli import _positionals
    from schedatrix.serving.load.replay import replay
    args = ["--rate", "5", "--requests", "40", "--input-len", "uniform:100-3000",
            "--output-len", "uniform:5-80", "--load-out", str(tmp_path / "load.jsonl")]
    done = run_in_process("serving", "measured", *args)
    assert done.returncode == 0, done.stderr
    assert "40 requests written" in done.stdout and "mooncake_trace" in done.stdout
    top = argparse.ArgumentParser()                 # the load as the command built it
    add_serving_parser(top.add_subparsers())
    ns = top.parse_args(["serving", "measured", *args])
    _positionals(ns)
    sc = ns.make_scenario(ns, one_design=True)
    want = sc.make_requests()(sc.seed)
    _same_load(replay(tmp_path / "load.jsonl"), want)
    rows = [json.loads(x) for x in (tmp_path / "load.jsonl").read_text().splitlines()]
    assert all(set(r) == {"timestamp", "input_length", "output_length", "hash_ids"} and
               isinstance(r["timestamp"], int) for r in rows)
    ids = [h for r in rows for h in r["hash_ids"]]   # no shared prefix: blocks of its own
    assert len(ids) == len(set(ids))
    assert all(len(r["hash_ids"]) == -(-r["input_length"] // 512) for r in rows)


def test_a_shared_prefix_load_keeps_its_block_hashes_through_the_trace(tmp_path):
    from schedatrix.serving.live.load_out import write_mooncake
    from schedatrix.serving.load.prefixes import shared_prefix_load
    from schedatrix.serving.load.replay import replay
    want = shared_prefix_load(60, 4.0, documents=3, document_tokens=2048, seed=3)
    assert write_mooncake(want, tmp_path / "load.jsonl") == 60
    got = replay(tmp_path / "load.jsonl")
    _same_load(got, want)
    assert (got.hash_offsets == want.hash_offsets).all()
    assert (got.hash_values == want.hash_values).all()


def test_load_out_refuses_a_closed_loop(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text('[load]\nusers = 4\nrequests = 20\ninput_len = 100\noutput_len = 10\n')
    done = run_in_process("serving", "measured", str(scenario), "--load-out",
                          str(tmp_path / "x.jsonl"))
    assert done.returncode == 2 and "closed loop" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = run_in_process("serving", "measured", *LOAD)
    assert done.returncode == 2 and "RESULTS" in done.stderr
