"""Engine profiles, async scheduling, guaranteed no evict and the client's path."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serving_support import LinearCost, layout, poisson_load
from test_serving_sim import CASES, CLASSES, _same

from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design, build
from schedatrix.serving.figures.metrics import figures
from schedatrix.serving.figures.record import COMPLETED
from schedatrix.serving.load.requests import Requests
from schedatrix.serving.perf.client_path import TERMS, VLLM_CLIENT_PATH, ClientPath
from schedatrix.serving.perf.engines import DEFAULT_ENGINE, ENGINES, engine
from schedatrix.serving.perf.model import PerfModel
from schedatrix.serving.replica.knobs import SchedulerConfig
from schedatrix.serving.sim.engine import simulate_fast
from schedatrix.serving.sim.reference import simulate_reference
from schedatrix.serving.sim.simulate import simulate


class AsyncLinear(LinearCost):
    """LinearCost with async scheduling: the host's 6 ms overlaps the GPU's part, 0.1 ms serial
    (the host above the GPU's fixed part, so the floor binds on small batches)."""

    host, serial, gpu_base = 0.006, 1e-4, 0.002

    def iteration_s(self, chunks, n, ctx):
        gpu = super().iteration_s(chunks, n, ctx) - self.base + self.gpu_base
        return max(gpu, self.host) + self.serial

    def decode_line(self, n):
        return self.gpu_base + self.decode * n + self.serial, self.ctx

    def decode_floor(self, n):
        return self.host + self.serial


def batch(n, inp, out, at=0.0):
    return Requests(np.full(n, at), np.full(n, inp, np.int64), np.full(n, out, np.int64),
                    np.zeros(n, np.int16))


# -- profiles ---------------------------------------------------------------------------------
def test_the_default_engine_is_vllm_at_a_named_version_with_async_scheduling():
    p = engine()
    assert p.name == DEFAULT_ENGINE == "vllm-0.14" and p.version == "0.14.0"
    assert p.async_scheduling and p.preemption == ("recompute",)
    assert p.capacity == "max-utilization"
    assert engine("vllm-0.10").async_scheduling is False


@pytest.mark.parametrize("gpu, serve, offline", [
    ("a100-80gb", (2048, 256), (8192, 256)),      # an A100 keeps the small budget (PR #17885)
    ("h100-80gb", (8192, 1024), (16384, 1024)),
    ("h200", (8192, 1024), (16384, 1024)),
    ("l4", (2048, 256), (8192, 256))])            # under 70 GiB
def test_vllm_s_batch_defaults_by_gpu_and_entry_point(gpu, serve, offline):
    for name in ("vllm-0.14", "vllm-0.10"):
        assert ENGINES[name].defaults(gpu, "serve") == serve
        assert ENGINES[name].defaults(gpu, "offline") == offline
    d = Design(gpu=gpu, dtype="bf16")
    assert (d.token_budget(), d.batch_cap()) == serve
    assert (build(d).config.max_batched_tokens, build(d).config.max_batch) == serve


def test_a_design_s_own_limits_replace_the_engine_s():
    d = Design(gpu="h100-80gb", max_batch=64, max_batched_tokens=4096)
    assert (d.batch_cap(), d.token_budget()) == (64, 4096)
    # unchunked: vLLM raises the default budget to the model's context
    assert Design(gpu="h100-80gb", chunked_prefill=False).token_budget() == 131072


def test_every_profile_names_its_sources():
    for p in ENGINES.values():
        assert p.sources and all(len(s) > 20 for s in p.sources), p.name
    assert any("#27614" in s for s in ENGINES["vllm-0.14"].sources)
    assert any("get_batch_defaults" in s for s in ENGINES["vllm-0.14"].sources)


def test_swap_is_offered_only_where_the_engine_has_it():
    assert Design(preemption="swap").engine == "vllm-0.6"      # no engine named: V0's
    assert Design().engine == DEFAULT_ENGINE
    with pytest.raises(InputError, match="preemption: 'swap' with engine vllm-0.14.*recompute"):
        Design(engine="vllm-0.14", preemption="swap")
    with pytest.raises(InputError, match="never preempts"):
        Design(engine="tensorrt-llm", preemption="recompute")
    with pytest.raises(InputError, match="never preempts"):
        Design(engine="tensorrt-llm", priority_preemption=True)


@pytest.mark.parametrize("knobs, needle", [
    (dict(engine="sglang"), "engine: 'sglang'; allowed: vllm-0.14, vllm-0.10"),
    (dict(async_scheduling="yes"), "async_scheduling: 'yes'; allowed: true or false"),
    (dict(engine="vllm-0.6", async_scheduling=True), "has no async scheduling"),
    (dict(client_path="fast"), "client_path: 'fast'; allowed: vllm, none")])
def test_bad_engine_knobs_are_refused_naming_what_is_allowed(knobs, needle):
    with pytest.raises(InputError, match=needle.replace("(", r"\(")):
        Design(**knobs)


# -- async scheduling -------------------------------------------------------------------------
def test_async_step_is_the_longer_of_gpu_and_host_plus_the_serial_part():
    sync = PerfModel("llama-3.1-8b", "h100-80gb")
    asy = PerfModel("llama-3.1-8b", "h100-80gb", async_scheduling=True, serial_s=1e-4)
    host = sync.host.step_s
    for chunks, n, ctx in (((), 8, 8 * 200), ([(512, 0)], 4, 4000), ((), 256, 256 * 2000)):
        gpu = sync.iteration_s(chunks, n, ctx) - host
        assert asy.iteration_s(chunks, n, ctx) == pytest.approx(max(gpu, host) + 1e-4)
        assert asy.iteration_s(chunks, n, ctx) < sync.iteration_s(chunks, n, ctx)
    a, b = asy.decode_line(8)
    floor = asy.decode_floor(8)
    for s in (0, 1000, 10**6):
        assert asy.iteration_s((), 8, s) == pytest.approx(max(floor, a + b * s))
    assert sync.decode_floor(8) == 0.0


def test_a_request_arriving_mid_step_n_first_joins_step_n_plus_2_with_async():
    # request 0 runs alone (6.1 ms steps: the floor binds); request 1 arrives mid step 2
    step = AsyncLinear.host + AsyncLinear.serial
    req = Requests(np.array([0.0, 1.5 * step]), np.array([8, 8], np.int64),
                   np.array([50, 5], np.int64), np.zeros(2, np.int16))
    cfg = dataclasses.replace(SchedulerConfig(8, 512), async_scheduling=True)
    for sim in (simulate_reference, simulate_fast):
        run = sim(req, AsyncLinear(), cfg, layout(1, 1000))
        # step 1 = [0, step) prefills request 0; step 2 = [step, 2 step) is in flight at 1.5
        # steps; step 3 was scheduled during step 2, so request 1 joins step 4: its prompt
        # ends with step 4, at 4 steps
        assert run.first_token_s[1] == pytest.approx(4 * step)
        sync = sim(req, AsyncLinear(), SchedulerConfig(8, 512), layout(1, 1000))
        assert sync.first_token_s[1] == pytest.approx(3 * step)   # synchronously: step 3


def test_arrivals_that_wake_an_idle_scheduler_join_its_first_step():
    cfg = dataclasses.replace(SchedulerConfig(8, 512), async_scheduling=True)
    for sim in (simulate_reference, simulate_fast):
        run = sim(batch(4, 16, 3), AsyncLinear(), cfg, layout(1, 1000))
        assert np.allclose(run.first_token_s, AsyncLinear.host + AsyncLinear.serial)


@pytest.mark.parametrize("capacity", ["max-utilization", "guaranteed-no-evict"])
@pytest.mark.parametrize("case", CASES)
def test_fast_equals_reference_under_async_scheduling(case, capacity):
    load, cfg, lay = CASES[case]
    cfg = dataclasses.replace(cfg, async_scheduling=True, capacity=capacity)
    req = poisson_load(**load)
    a = simulate_reference(req, AsyncLinear(), cfg, lay)
    b = simulate_fast(req, AsyncLinear(), cfg, lay)
    _same(a, b)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), rate=st.floats(2, 60), max_batch=st.integers(1, 48),
       budget=st.sampled_from([64, 256, 2048]), chunked=st.booleans(),
       kv=st.integers(40, 600), replicas=st.integers(1, 3), split=st.booleans(),
       prefix=st.booleans(), no_evict=st.booleans())
def test_fast_equals_reference_async_on_random_designs(seed, rate, max_batch, budget, chunked,
                                                        kv, replicas, split, prefix, no_evict):
    budget = max(budget, max_batch)
    req = poisson_load(60, rate, seed, inp=(20, 300), out=(1, 120), hashes=prefix,
                       classes=CLASSES)
    lay = layout(0 if split else replicas, kv, 1, prefill=replicas if split else 0,
                 decode=replicas if split else 0)
    cfg = SchedulerConfig(max_batch, budget, chunked, 16, 32 if prefix else 0,
                          async_scheduling=True,
                          capacity="guaranteed-no-evict" if no_evict else "max-utilization")
    _same(simulate_reference(req, AsyncLinear(), cfg, lay),
          simulate_fast(req, AsyncLinear(), cfg, lay))


def test_sync_designs_run_as_before_async_ones_faster_on_a_small_model():
    req = batch(8, 32, 128)
    sync = simulate(req, Design(gpu="h100-80gb", engine="vllm-0.10", max_batch=8,
                                max_batched_tokens=8192, client_path="none"))
    asy = simulate(req, Design(gpu="h100-80gb", engine="vllm-0.14", max_batch=8,
                               max_batched_tokens=8192, client_path="none"))
    # the host's 1.77 ms a step, hidden behind the GPU's: about 1.7 ms on each of ~130 steps
    assert np.max(sync.done_s) == pytest.approx(1.069, abs=0.002)
    assert np.max(asy.done_s) == pytest.approx(0.856, abs=0.002)


# -- guaranteed no evict ------------------------------------------------------------------------
def test_guaranteed_no_evict_never_preempts_and_never_exceeds_the_kv():
    req = poisson_load(300, 30, 2, out=(20, 200))
    lay = layout(2, 60)
    greedy = simulate_fast(req, LinearCost(), SchedulerConfig(64, 512), lay)
    assert greedy.preemptions.sum() > 0          # the load does preempt a greedy scheduler
    cfg = SchedulerConfig(64, 512, capacity="guaranteed-no-evict")
    for sim in (simulate_reference, simulate_fast):
        run = sim(req, LinearCost(), cfg, lay)
        assert run.preemptions.sum() == 0
        assert (run.status == COMPLETED).all()
        assert run.kv_peak_share <= 1.0
        t, delta, total = run.kv_samples
        assert np.cumsum(delta).max() <= total


def test_guaranteed_no_evict_admits_only_what_fits_to_its_end():
    # 60 blocks of 16 tokens: each request needs (100 + 400) / 16 -> 32 blocks at its end, so
    # only one runs at a time although both prompts fit at once
    req = batch(2, 100, 400)
    cfg = SchedulerConfig(8, 512, capacity="guaranteed-no-evict")
    for sim in (simulate_reference, simulate_fast):
        run = sim(req, LinearCost(), cfg, layout(1, 60))
        assert run.scheduled_s[1] >= run.done_s[0] - 1e-12
        free = sim(req, LinearCost(), SchedulerConfig(8, 512), layout(1, 60))
        assert free.scheduled_s[1] == 0.0 and free.preemptions.sum() > 0


# -- the client's path --------------------------------------------------------------------------
def test_every_client_path_term_has_a_source_and_an_error():
    assert {t.name for t in TERMS} == {f.name for f in dataclasses.fields(ClientPath)}
    for t in TERMS:
        assert t.source and t.error and t.seconds > 0


def test_the_client_path_adds_its_terms_to_ttft_and_leaves_the_gaps():
    req = batch(1, 1000, 20)
    base = simulate(req, Design(gpu="h100-80gb", client_path="none"))
    client = simulate(req, Design(gpu="h100-80gb", client_path="vllm"))
    p = VLLM_CLIENT_PATH
    ttft = lambda r: float(r.first_token_s[0] - r.arrival_s[0])    # noqa: E731
    extra = p.front_end_s + 1000 * p.tokenize_s_per_token + p.detokenize_s_per_token \
        + p.stream_chunk_s
    assert ttft(client) - ttft(base) == pytest.approx(extra, rel=1e-9)
    assert client.arrival_s[0] == base.arrival_s[0] == 0.0        # the client's send time
    fb, fc = figures(base), figures(client)
    assert fc.tpot_p95 == pytest.approx(fb.tpot_p95) and fc.itl_p95 == pytest.approx(fb.itl_p95)


# -- command line and TOML ----------------------------------------------------------------------
@pytest.mark.parametrize("args, needle", [
    (["--engine", "sglang"], "--engine must be one of vllm-0.14"),
    (["--async-scheduling", "maybe"], "--async-scheduling must be on or off, got 'maybe'"),
    (["--engine", "vllm-0.6", "--async-scheduling", "on"], "has no async scheduling"),
    (["--engine", "tensorrt-llm", "--priority-preemption"], "never preempts")])
def test_the_cli_refuses_bad_engine_flags_in_one_line(args, needle, capsys):
    from schedatrix.cli import main
    assert main(["serving", "run", "--requests", "5", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_the_cli_takes_an_engine_and_async_scheduling(capsys):
    from schedatrix.cli import main
    assert main(["serving", "run", "--requests", "20", "--engine", "tensorrt-llm",
                 "--async-scheduling", "off", "--json"]) == 0
    assert "tensorrt-llm, async off" in capsys.readouterr().out


@pytest.mark.parametrize("line, needle", [
    ('engine = "sglang"', "engine: 'sglang'; allowed"),
    ('async_scheduling = "on"', "async_scheduling: 'on'; allowed: true or false")])
def test_toml_engine_keys_bad_values_exit_2(tmp_path, line, needle, capsys):
    from schedatrix.cli import main
    path = tmp_path / "s.toml"
    path.write_text(f'[load]\nrate = 1\nrequests = 5\n[[designs]]\n{line}\n')
    assert main(["serving", "run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_toml_engine_keys_reach_the_design(tmp_path):
    from schedatrix.serving.intake.toml_tables import read_toml
    from schedatrix.serving.scenarios.scenario import scenario_from_dict
    path = tmp_path / "s.toml"
    path.write_text('[load]\nrate = 1\nrequests = 5\n[[designs]]\nengine = "vllm-0.10"\n'
                    'async_scheduling = true\n')
    d = scenario_from_dict(read_toml(path, "scenario"), base=tmp_path).designs[0]
    assert d.engine == "vllm-0.10" and d.async_on() and build(d).config.async_scheduling
