"""Claims in lesson 14's prose ("Predict, then measure"), checked against the library.

The predicted figures the lesson states are the simulator's and are recomputed here; the
measured ones are verdicts its cells print against a tolerance (a measurement moves from run to
run), checked here in the stored outputs so that the prose and the outputs agree; the loop
itself (bench, measured, calibrate over loopback) is tested in tests/test_serving_calibrate.py
and tests/test_serving_bench.py."""

from __future__ import annotations

import pytest
from test_serving_lessons import printed, says

from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.figures.metrics import figures
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.perf.client_path import VLLM_CLIENT_PATH
from schedatrix.serving.perf.host import VLLM_HOST
from schedatrix.serving.sim.simulate import simulate

# the lesson's load (its LOAD flags): seed 0, as serving measured simulates it
LESSON_LOAD = Load(rate_rps=6, input_len="uniform:1000-3000", output_len="uniform:20-100")


def _ttft_p50_ms(replicas: int) -> float:
    req = generate(LESSON_LOAD, seed=0, requests=60)
    return figures(simulate(req, Design(replicas=replicas))).ttft_p50 * 1000


def test_one_replica_left_predicts_almost_five_times_the_ttft():
    says("14", "the predicted TTFT p50 on the one replica left is almost five times the two "
               "replicas' (944 ms against 199 ms)")
    two, one = _ttft_p50_ms(2), _ttft_p50_ms(1)
    assert (round(two), round(one)) == (199, 944)
    assert 4.5 < one / two < 5
    assert "TTFT p50 predicted: 199 ms on two replicas, 944 ms on one" in printed("14", "faulted")


def test_the_measured_fault_follows_the_one_replica_prediction():
    says("14", "The crash costs no request here")
    out = printed("14", "faulted")
    assert "replicas serving: 1 of 2" in out and "60 completed, 0 failed" in out
    says("14", "the bench's TTFT and TPOT after the crash land within a quarter of the "
               "prediction for one replica")
    for key in ("ttft_p50", "ttft_p95", "tpot_p50"):
        assert f"measured {key} within 25% of the one-replica prediction: yes" in out


def test_the_emulators_ttft_reads_above_the_prediction_and_tpot_within_10_percent():
    says("14", "Above, and TPOT nearly equal: the TTFT was measured longer than the model put "
               "it, while the time per output token after the first matched within 10%")
    out = printed("14", 'first = bench("bench-1")')
    assert "measured TTFT p50 above the predicted: yes" in out
    assert "within 50%: yes" in out.split("ttft_p50", 1)[1].splitlines()[0]
    assert "within 10%: yes" in out.split("tpot_p50", 1)[1].splitlines()[0]
    # ... and the gap is the front end's, not the host's (the calibration of that bench)
    says("14", "finds the gap in the client path, the time outside the GPU before the first "
               "token, not in the per-token host time")
    out = printed("14", "cal1 = run_json")
    assert "client path at a 2,000-token prompt: design 3.3 ms; fitted above it: yes" in out
    assert (VLLM_CLIENT_PATH.front_end_s + VLLM_CLIENT_PATH.egress_s
            + 2000 * VLLM_CLIENT_PATH.tokenize_s_per_token) * 1000 == pytest.approx(3.3, abs=0.05)
    assert "host step fitted: no | host step not identified" in out
    assert "held-out TPOT error with the design's terms below 5%: yes" in out


def test_the_mystery_deployments_terms_against_the_models():
    says("14", "a host step of 6 ms and a front end of 20 ms, about three times the model's "
               "host step and twenty times its front end (1 ms)")
    assert round(0.006 / VLLM_HOST.step_s) == 3
    assert VLLM_CLIENT_PATH.front_end_s == 0.001          # the lesson's "(1 ms)": 20 ms is 20x
    says("14", "With the design's defaults the held-out requests' TPOT was off by more than "
               "15%; calibrated, by less than 10%")
    out = printed("14", "mystery.write_text")
    for verdict in ("fitted within 10% of the 6 ms: yes", "fitted at least the 20 ms given: yes",
                    "above 15%: yes; calibrated below 10%: yes"):
        assert verdict in out, verdict
    out = printed("14", "calibrated = run_json")
    assert out.count("of the design's prediction: no; of the calibrated one: yes") == 2


def test_the_lesson_stops_its_emulator_in_its_last_cell():
    import json

    from test_serving_lessons import notebook
    cells = notebook("14")["cells"]
    last = cells[-1]
    assert last["cell_type"] == "code" and "emu.stop()" in "".join(last["source"])
    assert "emulator stopped cleanly: yes" in "".join(
        "".join(o.get("text", "")) for o in last["outputs"])
    # no port is printed (a free one differs run to run)
    assert "127.0.0.1:PORT" in json.dumps(cells[1]["outputs"])


def test_the_glossarys_client_path_figures_are_the_models():
    from pathlib import Path
    text = " ".join((Path(__file__).parents[1] / "docs" / "glossary.md").read_text().split())
    assert "(the model's terms for vLLM: 1 ms, 1.1 us a prompt token, 0.11 ms a token out)" \
        in text
    p = VLLM_CLIENT_PATH
    assert (p.front_end_s, p.tokenize_s_per_token) == (1e-3, 1.1e-6)
    assert round(p.egress_s * 1000, 2) == 0.11
