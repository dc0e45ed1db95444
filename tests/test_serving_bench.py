"""``schedatrix serving bench``: the load model sent to an OpenAI-compatible endpoint (here the
emulator, over real HTTP on 127.0.0.1), measured as vLLM's bench serve measures, and reported
as ``serving run`` reports."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time

import pytest
from conftest import run_in_process
from live_support import ROOT, emulator

from schedatrix.serving.figures.record import COMPLETED, FAILED, UNFINISHED
from schedatrix.serving.live.measure import (
    ERROR,
    NOT_SENT,
    OK,
    UNFINISHED_STATE,
    Measured,
    as_run,
    rows,
)
from schedatrix.serving.load.workload import Load, generate

LIGHT = ("--rate", "5", "--requests", "30", "--input-len", "uniform:500-2500",
         "--output-len", "uniform:20-100")
# longer prompts: at --speed 2 the fixed cost of an HTTP request (a few wall milliseconds,
# twice as many model ones; more when the machine is busy) stays small beside the model's TTFT
LARGER = ("--rate", "3", "--requests", "70", "--input-len", "uniform:1000-4000",
          "--output-len", "uniform:20-80")
SPEED = "2"


@pytest.fixture(scope="module")
def emu():
    with emulator() as e:
        yield e


def _json(*args):
    done = run_in_process(*args, "--json", "--quiet")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- what is measured ----------------------------------------------------------------------------

def test_a_requests_figures_are_vllms_bench_serves():
    m = Measured(0, 0, 100, 4, sent_s=1.0, chunk_s=[1.25, 1.30, 1.40, 1.45], state=OK)
    assert m.ttft_s == pytest.approx(0.25)
    assert m.itl_s == pytest.approx([0.05, 0.10, 0.05])
    assert m.e2e_s == pytest.approx(0.45)
    assert m.tpot_s == pytest.approx((0.45 - 0.25) / 3)
    m.usage_tokens = 5       # the server's count: two tokens came in one chunk
    assert m.tpot_s == pytest.approx((0.45 - 0.25) / 4)
    assert math.isnan(Measured(1, 0, 10, 1, sent_s=0.0, chunk_s=[0.1]).tpot_s)


def test_measurements_become_a_run_record_in_model_seconds():
    req = generate(Load(rate_rps=2, input_len="100", output_len="4"), seed=0, requests=4)
    ms = [Measured(0, 0, 100, 4, sent_s=0.5, chunk_s=[0.6, 0.7, 0.8, 0.9], state=OK),
          Measured(1, 0, 100, 4, sent_s=1.0, state=ERROR, error="HTTP 503: no replica"),
          Measured(2, 0, 100, 4, sent_s=1.5, chunk_s=[1.7], state=UNFINISHED_STATE),
          Measured(3, 0, 100, 4)]
    run = as_run(req, ms, time_scale=2.0)
    assert list(run.status[:3]) == [COMPLETED, FAILED, UNFINISHED]
    assert run.arrival_s[0] == 1.0 and run.first_token_s[0] == pytest.approx(1.2)
    assert run.done_s[0] == pytest.approx(1.8) and math.isnan(run.arrival_s[3])
    assert run.reasons == {("HTTP 503", 0): 1}
    out = rows(ms, 2.0)
    assert out[0]["ttft_s"] == pytest.approx(0.2) and out[0]["itl_s"] == pytest.approx([0.2] * 3)
    assert [r["state"] for r in out] == [OK, ERROR, UNFINISHED_STATE, NOT_SENT]
    json.dumps(out, allow_nan=False)


# -- against the emulator ------------------------------------------------------------------------

def test_bench_agrees_with_serving_run_at_real_time_on_a_light_load(emu):
    measured = _json("serving", "bench", emu.url, *LIGHT, "--slo-ttft", "2", "--slo-tpot",
                     "0.2")
    predicted = _json("serving", "run", *LIGHT, "--slo-ttft", "2", "--slo-tpot", "0.2")
    m, p = measured["designs"][0], predicted["designs"][0]
    assert set(m) == set(p)                          # the same report keys
    assert m["completed"] == 30 and m["failed"] == 0
    assert m["ttft_p50"] == pytest.approx(p["ttft_p50"], rel=0.25)
    assert m["itl_p50"] == pytest.approx(p["itl_p50"], rel=0.15)
    assert m["verdict"] and m["slo_attainment"] == pytest.approx(p["slo_attainment"], abs=0.1)
    assert measured["bench"]["runs"][0]["counts"] == {"ok": 30, "error": 0, "unfinished": 0,
                                                      "not sent": 0}
    per = measured["requests"][0]
    assert len(per) == 30 and all(r["output_tokens"] == r["max_tokens"] for r in per)
    assert all(len(r["itl_s"]) == r["output_tokens"] - 1 for r in per)


def test_bench_agrees_with_serving_run_at_speed_on_a_larger_load():
    with emulator("--speed", SPEED) as e:
        started = time.monotonic()
        measured = _json("serving", "bench", e.url, *LARGER, "--time-scale", SPEED)
        took = time.monotonic() - started
    predicted = _json("serving", "run", *LARGER)
    m, p = measured["designs"][0], predicted["designs"][0]
    last_sent = max(r["sent_s"] for r in measured["requests"][0])   # model seconds
    assert last_sent > 18 and took < last_sent * 0.8   # it ran faster than real time
    assert m["completed"] == 70
    assert m["ttft_p50"] == pytest.approx(p["ttft_p50"], rel=0.25)
    assert m["itl_p50"] == pytest.approx(p["itl_p50"], rel=0.15)


def test_chat_and_a_closed_loop_of_users(emu, tmp_path):
    scenario = tmp_path / "users.toml"
    scenario.write_text('[load]\nusers = 2\nthink_s = 0.1\nrequests = 6\n'
                        'input_len = 200\noutput_len = "uniform:5-15"\n')
    data = _json("serving", "bench", emu.url, str(scenario), "--endpoint", "chat",
                 "--model", "llama-3.1-8b")
    per = data["requests"][0]
    assert [r["state"] for r in per] == [OK] * 6
    assert all(r["output_tokens"] == r["max_tokens"] for r in per)
    # two users: the third request leaves once one of the first two has ended and thought
    first_end = min(per[0]["sent_s"] + per[0]["e2e_s"], per[1]["sent_s"] + per[1]["e2e_s"])
    assert per[2]["sent_s"] >= first_end + 0.1 - 0.01


def test_a_closed_loops_ramp_spreads_its_first_sends_as_the_simulator_does(emu, tmp_path):
    # ramp_s = 1 s, even: user k's first request (request k) leaves at k / 3 s, as in a run
    scenario = tmp_path / "ramp.toml"
    scenario.write_text('[load]\nusers = 3\nramp_s = 1.0\nrequests = 3\n'
                        'input_len = 50\noutput_len = 5\n')
    data = _json("serving", "bench", emu.url, str(scenario), "--model", "llama-3.1-8b")
    sent = [r["sent_s"] for r in data["requests"][0]]
    assert sent == pytest.approx([0.0, 1 / 3, 2 / 3], abs=0.08)


def test_a_request_past_its_timeout_is_an_error(emu):
    data = _json("serving", "bench", emu.url, "--rate", "5", "--requests", "4",
                 "--output-len", "300", "--timeout", "0.5")
    per = data["requests"][0]
    assert [r["state"] for r in per] == [ERROR] * 4
    assert all(r["error"].startswith("timeout") for r in per)
    d = data["designs"][0]
    assert d["failed"] == 4 and d["rejected_by_reason"] == {"timeout": {"default": 4.0}}


def test_ctrl_c_writes_what_was_measured(emu, tmp_path):
    out = tmp_path / "bench"
    proc = subprocess.Popen([sys.executable, "-m", "schedatrix", "serving", "bench", emu.url,
                             "--rate", "5", "--requests", "200", "--output-len", "50",
                             "--out", str(out), "--quiet"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(5)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert "(interrupted)" in stdout and "Traceback" not in stderr
    per = json.loads((out / "requests.json").read_text())[0]
    states = [r["state"] for r in per]
    assert states.count(OK) >= 3 and states.count(NOT_SENT) > 100 and ERROR not in states
    info = json.loads((out / "bench.json").read_text())
    assert info["interrupted"] is True
    assert (out / "report.md").exists()
    result = json.loads((out / "result.json").read_text())
    assert result["designs"][0]["completed"] == states.count(OK)


def test_a_wrong_model_or_no_server_stops_before_the_load(emu):
    done = run_in_process("serving", "bench", emu.url, "--requests", "3", "--model", "gpt-9",
                          "--quiet")
    assert done.returncode == 2
    assert "warm-up request (model 'gpt-9') failed" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    import socket
    with socket.socket() as s:                 # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = run_in_process("serving", "bench", f"http://127.0.0.1:{port}", "--requests", "3",
                          "--model", "m", "--quiet")
    assert done.returncode == 2 and "ConnectError" in done.stderr
    done = run_in_process("serving", "bench", "ftp://127.0.0.1", "--requests", "3")
    assert done.returncode == 2 and "URL must start with http://" in done.stderr


def test_without_the_live_extra_it_says_which_to_install(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "httpx" else real(name, *a))
    done = run_in_process("serving", "bench", "http://127.0.0.1:9", "--requests", "2")
    assert done.returncode == 2
    line, = done.stderr.strip().splitlines()
    assert 'pip install "schedatrix[live]"' in line and "httpx" in line


def test_preemptions_and_kv_use_are_read_from_the_endpoints_metrics():
    load = ("--gpu", "l4", "--rate", "20", "--requests", "40", "--input-len", "3000",
            "--output-len", "200")
    predicted = _json("serving", "run", *load)["designs"][0]
    assert predicted["preemptions"] > 0 and predicted["kv_peak_share"] > 0.9
    with emulator("--gpu", "l4", "--speed", "20") as e:
        data = _json("serving", "bench", e.url, *load, "--time-scale", "20")
    run = data["bench"]["runs"][0]
    assert run["counts"]["ok"] == 40
    assert run["preemptions"] >= 1          # the counter the emulator's scheduler keeps
    assert run["kv_peak_share"] > 0.5       # scraped once a wall second: not every peak


def test_a_trace_is_replayed_at_its_timestamps(emu):
    trace = ROOT / "schedatrix" / "data" / "audit_hour_conv.csv.gz"
    from schedatrix.serving.load.replay import replay
    want = replay(trace, 1.0, 12)
    data = _json("serving", "bench", emu.url, "--trace", str(trace), "--requests", "12")
    per = data["requests"][0]
    assert [r["state"] for r in per] == [OK] * 12
    assert [r["prompt_tokens"] for r in per] == want.input_tokens.tolist()
    assert [r["output_tokens"] for r in per] == want.output_tokens.tolist()
    # sent at the trace's times (seconds from the bench's start), within a few milliseconds
    assert [r["sent_s"] for r in per] == pytest.approx(want.arrival_s.tolist(), abs=0.03)
