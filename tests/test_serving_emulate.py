"""``schedatrix serving emulate``: the simulator stepped live (the driver) and served over real
HTTP on 127.0.0.1 (a free port; every emulator a test starts is stopped by it)."""

from __future__ import annotations

import json
import signal
import threading
import time

import httpx
import numpy as np
import openai
import pytest
from live_support import emulator, start_emulator
from prometheus_client.parser import text_string_to_metric_families

from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design, build
from schedatrix.serving.cluster.faults import Fault
from schedatrix.serving.figures.record import COMPLETED
from schedatrix.serving.live.driver import Collector, Driver
from schedatrix.serving.live.tokenizer import count_chat, count_text
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.sim.reference import simulate_reference
from schedatrix.serving.sim.simulate import simulate

DESIGN = Design(model="llama-3.1-8b", gpu="a100-80gb")
MODEL = "llama-3.1-8b"


# -- the driver: the simulator's own run, stepped ------------------------------------------------

def _driven(design, req, faults=(), capacity=4096):
    c = Collector()
    d = Driver(design, c, faults=faults, capacity=capacity)
    for i, a in enumerate(req.arrival_s):
        assert d.submit(float(a), int(req.input_tokens[i]), int(req.output_tokens[i])) == i
    d.advance(1e9)
    return d, c


@pytest.mark.parametrize("faults", [(), (Fault("worker", 0, 3.0, 4.0),)])
def test_submitting_a_loads_arrivals_gives_the_reference_simulators_run(faults):
    design = Design(model="llama-3.1-8b", gpu="a100-80gb", replicas=2)
    req = generate(Load(rate_rps=25, input_len="uniform:100-3000", output_len="uniform:5-200"),
                   seed=3, requests=300)
    built = build(design)
    ref = simulate_reference(req, built.perf, built.config, built.layout,
                             design.policy(faults, None, 0), keep_tokens=True)
    # room for 16 requests at first: the per-request state grows five times on the way
    d, c = _driven(design, req, faults, capacity=16)
    assert d.sim.n == 512
    done = np.array([c.done.get(i, np.nan) for i in range(len(req))])
    np.testing.assert_array_equal(done, ref.done_s)
    for i in range(len(req)):
        assert c.tokens.get(i, []) == ref.token_times[i][:len(c.tokens.get(i, []))]
        if i in c.done:
            assert len(c.tokens[i]) == req.output_tokens[i]
    assert d.preemptions() == int(ref.preemptions.sum())
    if faults:
        assert d.fault_log and d.fault_log[0]["kind"] == "worker"
        assert set(c.errors) == {i for i in range(len(req)) if ref.status[i] != COMPLETED}


def test_the_driver_refuses_time_going_back_and_bad_requests():
    d = Driver(DESIGN)
    d.advance(2.0)
    with pytest.raises(InputError, match="t must not go back"):
        d.submit(1.0, 10, 10)
    with pytest.raises(InputError, match="prompt_tokens must be a whole number"):
        d.submit(2.0, 0, 10)
    with pytest.raises(InputError, match="output_tokens"):
        d.submit(2.0, 10, 2.5)
    with pytest.raises(InputError, match="class_id must be 0 to 0"):
        d.submit(2.0, 10, 10, class_id=1)
    with pytest.raises(InputError, match="kind must be one of"):
        d.inject(2.0, "meteor", 0, 1.0)
    with pytest.raises(InputError):
        d.inject(2.0, "worker", 5, 1.0)     # no replica 5


def test_a_fault_injected_live_is_the_scheduled_fault():
    design = Design(model="llama-3.1-8b", gpu="a100-80gb", replicas=2)
    req = generate(Load(rate_rps=20, input_len="uniform:100-1000", output_len="uniform:5-100"),
                   seed=5, requests=120)
    scheduled = simulate(req, design, "reference", faults=(Fault("worker", 1, 2.0, 3.0),))
    c = Collector()
    d = Driver(design, c)
    for i, a in enumerate(req.arrival_s):
        if a >= 2.0 and not d.fault_log:
            d.inject(2.0, "worker", 1, 3.0)
        d.submit(float(a), int(req.input_tokens[i]), int(req.output_tokens[i]))
    d.advance(1e9)
    done = np.array([c.done.get(i, np.nan) for i in range(len(req))])
    np.testing.assert_array_equal(done, scheduled.done_s)


# -- over HTTP -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def emu():
    with emulator() as e:
        yield e


def _model_times(prompt_tokens: int, max_tokens: int) -> list[float]:
    """The model's token times of one request alone on the default design."""
    c = Collector()
    d = Driver(DESIGN, c)
    d.submit(0.0, prompt_tokens, max_tokens)
    d.advance(1e9)
    return c.tokens[0]


def test_the_openai_client_streams_completions_at_the_models_times(emu):
    client = openai.OpenAI(base_url=emu.url + "/v1", api_key="none", max_retries=0)
    prompt = list(range(1000, 1800))       # token ids: counted exactly
    started = time.perf_counter()
    stream = client.completions.create(model=MODEL, prompt=prompt, max_tokens=20, stream=True,
                                       stream_options={"include_usage": True})
    texts, seen, usage, finish = [], [], None, []
    for chunk in stream:
        if chunk.choices:
            texts.append(chunk.choices[0].text)
            finish.append(chunk.choices[0].finish_reason)
            seen.append(time.perf_counter() - started)
        if chunk.usage:
            usage = chunk.usage
    assert len(texts) == 20 and all(texts)
    assert finish[-1] == "length" and set(finish[:-1]) == {None}
    assert (usage.prompt_tokens, usage.completion_tokens) == (800, 20)
    model = _model_times(800, 20)
    # no token before the model emits it; the whole stream within 0.3 s of the model's
    assert seen[-1] >= model[-1] - model[0] and seen[0] >= model[0] * 0.9
    assert seen[-1] < model[-1] + 0.3
    gaps = np.diff(seen)
    assert np.median(gaps) == pytest.approx(np.median(np.diff(model)), rel=0.3)


def test_the_openai_client_streams_chat_and_reads_whole_answers(emu):
    client = openai.OpenAI(base_url=emu.url + "/v1", api_key="none", max_retries=0)
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Say something about GPUs, please."}]
    stream = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=6,
                                            stream=True)
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    contents = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert len(contents) == 6
    whole = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=9)
    assert whole.choices[0].finish_reason == "length"
    assert whole.usage.completion_tokens == 9
    assert whole.usage.prompt_tokens == count_chat(messages)
    assert count_text(whole.choices[0].message.content) == 9   # 4 characters a token
    text = client.completions.create(model=MODEL, prompt="x" * 403, max_tokens=3)
    assert text.usage.prompt_tokens == 101 and count_text(text.choices[0].text) == 3
    models = client.models.list()
    assert [m.id for m in models.data] == [MODEL]
    assert httpx.get(emu.url + "/health").status_code == 200


def test_bad_requests_get_openais_errors(emu):
    post = httpx.Client(base_url=emu.url, timeout=10).post
    r = post("/v1/completions", json={"model": "gpt-9", "prompt": "hi"})
    assert r.status_code == 404 and "gpt-9" in r.json()["error"]["message"]
    r = post("/v1/completions", json={"model": MODEL, "prompt": [1] * 131000, "max_tokens": 500})
    assert r.status_code == 400 and "maximum context length is 131072" in r.json()["error"][
        "message"]
    r = post("/v1/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400
    r = post("/v1/completions", json={"model": MODEL, "prompt": "hi", "max_tokens": 0})
    assert r.status_code == 400 and "max_tokens" in r.json()["error"]["message"]
    r = post("/v1/chat/completions", json={"model": MODEL, "messages": []})
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    r = post("/v1/completions", json={"model": MODEL, "prompt": "hi"},
             headers={"X-SLO-Class": "gold"})
    assert r.status_code == 400 and "gold" in r.json()["error"]["message"]
    with pytest.raises(openai.NotFoundError):
        openai.OpenAI(base_url=emu.url + "/v1", api_key="x", max_retries=0).completions.create(
            model="nope", prompt="hi", max_tokens=2)


def _scrape(url: str) -> dict:
    """Each metric family's samples summed by sample name (over engines)."""
    fams = {f.name: f for f in text_string_to_metric_families(httpx.get(url + "/metrics").text)}
    sums: dict = {}
    for f in fams.values():
        for s in f.samples:
            sums[s.name] = sums.get(s.name, 0.0) + s.value
    return {"families": fams, "sums": sums}


def test_metrics_parse_with_prometheus_client_under_vllms_names(emu):
    before = _scrape(emu.url)["sums"]
    client = openai.OpenAI(base_url=emu.url + "/v1", api_key="none", max_retries=0)
    for k in range(3):
        client.completions.create(model=MODEL, prompt=list(range(100 + k)), max_tokens=5 + k)
    after = _scrape(emu.url)
    fams, sums = after["families"], after["sums"]
    kinds = {"vllm:num_requests_running": "gauge", "vllm:num_requests_waiting": "gauge",
             "vllm:kv_cache_usage_perc": "gauge", "vllm:num_preemptions": "counter",
             "vllm:prompt_tokens": "counter", "vllm:generation_tokens": "counter",
             "vllm:time_to_first_token_seconds": "histogram",
             "vllm:inter_token_latency_seconds": "histogram",
             "vllm:e2e_request_latency_seconds": "histogram",
             "vllm:prefix_cache_queries": "counter", "vllm:prefix_cache_hits": "counter"}
    for name, kind in kinds.items():
        assert fams[name].type == kind, name
    assert {s.labels["model_name"] for s in fams["vllm:num_requests_running"].samples} == {MODEL}

    def grew(name):
        return sums[name] - before.get(name, 0.0)
    assert grew("vllm:prompt_tokens_total") == 100 + 101 + 102
    assert grew("vllm:generation_tokens_total") == 5 + 6 + 7
    assert grew("vllm:time_to_first_token_seconds_count") == 3
    assert grew("vllm:inter_token_latency_seconds_count") == 4 + 5 + 6
    assert grew("vllm:e2e_request_latency_seconds_count") == 3
    assert sums["vllm:num_requests_running"] == 0 and sums["vllm:num_requests_waiting"] == 0


def test_prefix_cache_counters_count_tokens_looked_up_and_found_as_vllm_v1_does():
    """vLLM V1's vllm:prefix_cache_queries (prompt tokens looked up) and
    vllm:prefix_cache_hits (tokens found cached), parsed by prometheus_client's parser."""
    with emulator("--prefix-block-tokens", "16", "--speed", "4") as emu:
        client = openai.OpenAI(base_url=emu.url + "/v1", api_key="none", max_retries=0)
        before = _scrape(emu.url)["sums"]
        assert before["vllm:prefix_cache_queries_total"] == 0
        prompt = list(range(1000, 1200))                   # 200 tokens: 12 whole blocks
        client.completions.create(model=MODEL, prompt=prompt, max_tokens=3)
        one = _scrape(emu.url)["sums"]
        client.completions.create(model=MODEL, prompt=prompt, max_tokens=3)
        client.completions.create(model=MODEL, prompt=list(range(2000, 2100)), max_tokens=3)
        after = _scrape(emu.url)
    assert one["vllm:prefix_cache_queries_total"] == 200
    assert one["vllm:prefix_cache_hits_total"] == 0          # the first finds nothing
    sums = after["sums"]
    assert sums["vllm:prefix_cache_queries_total"] == 200 + 200 + 100
    # the second finds its 12 blocks (the last prompt token is always computed: (200-1)//16)
    assert sums["vllm:prefix_cache_hits_total"] == 12 * 16
    fam = after["families"]["vllm:prefix_cache_hits"]
    assert fam.type == "counter" and fam.samples[0].labels["model_name"] == MODEL


def test_metrics_show_requests_running_and_kv_in_use_while_they_run(emu):
    client = httpx.Client(base_url=emu.url, timeout=30)
    done = []

    def one():
        done.append(client.post("/v1/completions", json={
            "model": MODEL, "prompt": list(range(4000)), "max_tokens": 150}).status_code)
    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.8)
    sums = _scrape(emu.url)["sums"]
    for t in threads:
        t.join()
    assert done == [200] * 4
    assert sums["vllm:num_requests_running"] + sums["vllm:num_requests_waiting"] == 4
    assert sums["vllm:kv_cache_usage_perc"] > 0


def test_a_fault_posted_while_it_runs_takes_a_replica_down():
    # at ten times real time: the crashed replica's restart (its phases, about 66 model
    # seconds for the 8B from disk) is waited for in about 7 s
    with emulator("--replicas", "2", "--health-check", "0.3", "--speed", "10") as e:
        c = httpx.Client(base_url=e.url, timeout=30)
        r = c.post("/admin/fault", json={"kind": "worker", "replica": 0, "seconds": 2})
        assert r.status_code == 200, r.text
        state = c.get("/admin/state").json()
        assert [rep["up"] for rep in state["replicas"]] == [False, True]
        assert state["faults"][0]["kind"] == "worker"
        r = c.post("/admin/fault", json={"kind": "worker", "replica": 0, "seconds": 1})
        assert r.status_code == 409 and "overlap" in r.json()["error"]["message"]
        r = c.post("/admin/fault", json={"kind": "worker", "replica": 7, "seconds": 1})
        assert r.status_code == 400
        r = c.post("/admin/fault", json={"kind": "worker", "seconds": 1})
        assert r.status_code == 400 and "replica" in r.json()["error"]["message"]
        # requests sent meanwhile are served (on replica 1, or retried once 0 is back)
        for _ in range(4):
            r = c.post("/v1/completions", json={"model": MODEL, "prompt": [1] * 50,
                                                "max_tokens": 3})
            assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 3
        state = c.get("/admin/state").json()
        back = state["faults"][0]["until_s"]    # its restart: 2 s down, then its weights load
        assert back > 2
        time.sleep(max(0.0, back - state["now_s"]) / 10 + 0.3)
        assert all(rep["up"] for rep in c.get("/admin/state").json()["replicas"])


def test_a_scenarios_fault_schedule_runs_on_the_emulators_clock():
    with emulator("--replicas", "2", "--fault", "worker:1@0.5+30", "--speed", "2") as e:
        assert "faults worker:1@0.5+30" in e.banner
        time.sleep(0.6)     # 1.2 model seconds
        state = httpx.get(e.url + "/admin/state").json()
        assert [rep["up"] for rep in state["replicas"]] == [True, False]
        assert state["now_s"] > 1.0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_it_cleanly_with_a_stream_in_flight(sig):
    e = start_emulator("--shutdown-timeout", "1")
    try:
        lines: list[str] = []

        def read():
            with httpx.stream("POST", e.url + "/v1/completions", timeout=30, json={
                    "model": MODEL, "prompt": [1] * 10, "max_tokens": 5000,
                    "stream": True}) as r:
                lines.extend(r.iter_lines())
        t = threading.Thread(target=read)
        t.start()
        time.sleep(0.5)
        began = time.monotonic()
        code, out, err = e.stop(sig)
        took = time.monotonic() - began
        t.join(10)
    finally:
        if e.proc.poll() is None:
            e.proc.kill()
            e.proc.communicate()
    assert code == 0 and "emulator stopped" in out, err
    assert took < 5
    data = [x for x in lines if x.startswith("data:")]
    assert len(data) > 5                                        # it was streaming
    assert "shutting down" in data[-2] and data[-1] == "data: [DONE]"   # and was ended
    assert "Traceback" not in err


def test_without_the_live_extra_it_says_which_to_install(monkeypatch):
    import importlib.util

    from conftest import run_in_process
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "uvicorn" else real(name, *a))
    done = run_in_process("serving", "emulate", "--port", "0")
    assert done.returncode == 2
    line, = done.stderr.strip().splitlines()
    assert 'pip install "schedatrix[live]"' in line and "uvicorn" in line


@pytest.mark.parametrize("flags, says", [
    (["--port", "70000"], "--port must be 0"),
    (["--speed", "0"], "--speed must be above 0"),
    (["--prefix-block-tokens", "20"], "multiple of block_tokens"),
])
def test_bad_flags_exit_2_in_one_line(flags, says):
    from conftest import run_in_process
    done = run_in_process("serving", "emulate", *flags)
    assert done.returncode == 2 and says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_port_in_use_exits_2_in_one_line(emu):
    from conftest import run_in_process
    port = emu.url.rsplit(":", 1)[1]
    done = run_in_process("serving", "emulate", "--port", port)
    assert done.returncode == 2 and f"--port {port}: cannot listen" in done.stderr


def test_admin_state_is_json(emu):
    state = httpx.get(emu.url + "/admin/state").json()
    assert state["model"] == MODEL and state["speed"] == 1.0
    json.dumps(state, allow_nan=False)
