"""``schedatrix serving measured``: a client's per-request results beside the simulation of the
same load. The fixtures are written here from each format's documented fields (vLLM's
``bench serve --save-result --save-detailed``: ``input_lens``, ``output_lens``, ``ttfts``,
``itls``, ``errors``, ``duration``; ``serving bench``'s ``requests.json``) out of the model's own
token times, so what is measured is what the model said: every distance is 0."""

from __future__ import annotations

import json

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
    ({"benchmarks": []}, "GuideLLM's or AIPerf's export is not read yet"),
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
