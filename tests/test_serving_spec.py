"""Speculative decoding in the serving simulator (issue 38, item 1): the step's cost, the
acceptance draws, the KV it takes, reference = fast, the validation rows, bad input refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_in_process
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serving_support import layout, poisson_load
from test_serving_sim import _same

from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design, build
from schedatrix.serving.cluster.policy import Policy
from schedatrix.serving.figures.record import COMPLETED
from schedatrix.serving.load.requests import Requests
from schedatrix.serving.perf.model import PerfModel
from schedatrix.serving.perf.spec_decode import (
    DEFAULT_ACCEPT,
    SpecDecode,
    SpecPerfModel,
    expected_tokens,
)
from schedatrix.serving.published.spec_rows import SPEC_PUBLISHED, accept_from_length
from schedatrix.serving.replica.knobs import SchedulerConfig
from schedatrix.serving.replica.speculation import AcceptanceDraws, kept_blocks, lookahead_blocks
from schedatrix.serving.sim.engine import simulate_fast
from schedatrix.serving.sim.reference import simulate_reference
from schedatrix.serving.validation.replay import check

BASE = PerfModel("llama-3.1-8b", "h100-80gb")
SPECS = {"eagle": SpecDecode("eagle"), "ngram": SpecDecode("ngram", 4, 0.8),
         "draft": SpecDecode("draft", 3, 0.6, "llama-3.2-3b")}


# -- the acceptance draws --------------------------------------------------------------------------
@pytest.mark.parametrize("accept, k", [(0.57, 3), (0.8, 5), (0.3, 2), (0.9, 7)])
def test_the_draws_yield_leviathans_expected_tokens(accept, k):
    draws = AcceptanceDraws(1, accept, k)
    got = np.array([1 + draws.next(i) for i in range(400) for _ in range(50)])
    assert got.min() >= 1 and got.max() <= k + 1
    assert got.mean() == pytest.approx(expected_tokens(accept, k), rel=0.02)


def test_the_draws_of_a_request_do_not_depend_on_the_order_requests_are_reached():
    a, b = AcceptanceDraws(5, 0.6, 4), AcceptanceDraws(5, 0.6, 4)
    first = [a.next(3) for _ in range(100)]
    for i in (7, 1, 3):                     # another order, other requests in between
        b.next(i)
    assert [b.next(3) for _ in range(99)] == first[1:]
    assert [AcceptanceDraws(6, 0.6, 4).next(3) for _ in range(20)] != first[:20]
    assert {AcceptanceDraws(0, 0.0, 4).next(i) for i in range(50)} == {0}
    assert {AcceptanceDraws(0, 1.0, 4).next(i) for i in range(50)} == {4}


def test_a_verification_takes_the_blocks_of_its_drafted_tokens_and_gives_back_the_rejected():
    # 30 cached, K = 3, blocks of 16: positions 30..33 need block 3 (tokens 32-47)
    assert lookahead_blocks(30, 3, 16) == 1 and lookahead_blocks(32, 3, 16) == 1
    assert lookahead_blocks(20, 3, 16) == 0
    assert kept_blocks(30, 3, 1, 16) == 1 and kept_blocks(30, 3, 4, 16) == 0


# -- the step's cost -------------------------------------------------------------------------------
def test_the_gain_falls_with_the_batch():
    for spec in SPECS.values():
        perf = SpecPerfModel(BASE, spec)
        gain = [spec.expected_tokens * BASE.iteration_s((), n, n * 1001)
                / perf.iteration_s((), n, n * 1001) for n in (1, 8, 32, 128, 256)]
        assert gain == sorted(gain, reverse=True), spec


def test_a_verification_costs_more_than_one_decode_and_less_than_k_plus_one():
    perf = SpecPerfModel(BASE, SpecDecode("ngram", 4, 0.8))
    one = BASE.iteration_s((), 1, 1001)
    assert one < perf.iteration_s((), 1, 1001) < 5 * one


def test_the_proposer_takes_kv_and_weights_from_the_cache():
    full = BASE.kv_capacity_tokens()
    assert SpecPerfModel(BASE, SPECS["ngram"]).kv_capacity_tokens() == full
    eagle = SpecPerfModel(BASE, SPECS["eagle"]).kv_capacity_tokens()
    draft = SpecPerfModel(BASE, SPECS["draft"]).kv_capacity_tokens()
    assert draft < eagle < full


# -- the simulators --------------------------------------------------------------------------------
CASES = {
    "plain": (dict(n=200, rate=20, seed=1), SchedulerConfig(32, 512), layout(2, 400)),
    "preemption": (dict(n=200, rate=30, seed=2, out=(20, 200)), SchedulerConfig(64, 512),
                   layout(2, 60)),
    "prefix cache": (dict(n=200, rate=30, seed=7, hashes=True, out=(20, 200)),
                     SchedulerConfig(64, 512, hash_block_tokens=32), layout(2, 70)),
    "prefill/decode split": (dict(n=200, rate=30, seed=10, out=(20, 200)),
                             SchedulerConfig(64, 512), layout(0, 60, prefill=1, decode=3)),
    "async": (dict(n=200, rate=30, seed=3, out=(20, 200)),
              SchedulerConfig(64, 512, async_scheduling=True), layout(2, 60)),
}


@pytest.mark.parametrize("method", SPECS)
@pytest.mark.parametrize("case", CASES)
def test_reference_equals_fast_when_speculating(case, method):
    load, cfg, lay = CASES[case]
    req = poisson_load(**load)
    perf = SpecPerfModel(BASE, SPECS[method])
    _same(simulate_reference(req, perf, cfg, lay, Policy(seed=3)),
          simulate_fast(req, perf, cfg, lay, Policy(seed=3)))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10**6), rate=st.floats(5, 60), max_batch=st.integers(1, 48),
       blocks=st.integers(40, 400), k=st.integers(1, 7), accept=st.floats(0.0, 1.0),
       method=st.sampled_from(["ngram", "eagle"]), priority=st.booleans())
def test_reference_equals_fast_on_random_speculating_designs(seed, rate, max_batch, blocks, k,
                                                             accept, method, priority):
    from test_serving_sim import CLASSES
    req = poisson_load(n=120, rate=rate, seed=seed, out=(1, 120), classes=CLASSES)
    cfg = SchedulerConfig(max_batch, 512)
    perf = SpecPerfModel(BASE, SpecDecode(method, k, accept))
    policy = Policy(priority_preemption=priority, seed=seed)
    _same(simulate_reference(req, perf, cfg, layout(2, blocks), policy),
          simulate_fast(req, perf, cfg, layout(2, blocks), policy))


def test_every_output_token_comes_and_speculation_cuts_tpot_at_low_load():
    n = 40
    req = Requests(np.arange(n) * 2.0, np.full(n, 200, np.int64), np.full(n, 200, np.int64),
                   np.zeros(n, np.int16))
    tpot = {}
    for method in ("none", "eagle"):
        d = Design(model="llama-3.1-8b", gpu="h100-80gb", spec_method=method)
        b = build(d)
        run = simulate_fast(req, b.perf, b.config, b.layout, d.policy())
        assert (run.status == COMPLETED).all()
        tpot[method] = float(np.mean((run.done_s - run.first_token_s) / 199))
    # one at a time the step is memory-bound: ~2.1 tokens a step for ~1.2x the step's time
    assert tpot["eagle"] < 0.75 * tpot["none"]


def test_no_speculation_leaves_the_design_as_it_was():
    d = Design(model="llama-3.1-8b", gpu="h100-80gb")
    assert d.spec_method == "none" and type(d.perf()) is PerfModel
    assert d.label() == "1 x TP1"


def test_vllm_turns_async_scheduling_off_for_ngram_and_draft():
    d = Design(model="llama-3.1-8b", gpu="h100-80gb")
    assert d.async_on()                      # vLLM 0.14's default
    assert Design(model="llama-3.1-8b", gpu="h100-80gb", spec_method="eagle").async_on()
    assert not Design(model="llama-3.1-8b", gpu="h100-80gb", spec_method="ngram").async_on()
    with pytest.raises(InputError, match="async_scheduling"):
        Design(model="llama-3.1-8b", gpu="h100-80gb", spec_method="ngram",
               async_scheduling=True)


# -- validation ------------------------------------------------------------------------------------
def test_the_acceptance_rate_is_solved_from_the_rows_length():
    for length, k in ((2.1, 2), (3.54, 7), (2.96, 5)):
        assert expected_tokens(accept_from_length(length, k), k) == pytest.approx(length)
    assert DEFAULT_ACCEPT["eagle"] == pytest.approx(accept_from_length(1.89, 2), abs=0.005)


def test_the_issues_rows_are_every_row_and_eagle_1s_are_in_band():
    assert len(SPEC_PUBLISHED) == 13     # 6 K x 2 heads + the baseline
    checks = {r.id: check(r) for r in SPEC_PUBLISHED}
    for r in SPEC_PUBLISHED:
        assert r.known_miss or checks[r.id].within, (r.id, checks[r.id].ratio)
        if r.head == "eagle1":
            assert checks[r.id].within, (r.id, checks[r.id].ratio)
    assert sum(c.within for c in checks.values()) >= 9


# -- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize("flags, words", [
    (["--spec-method", "medusa"], ["--spec-method", "medusa"]),
    (["--spec-method", "eagle", "--spec-accept", "1.5"], ["--spec-accept", "1.5"]),
    (["--spec-method", "eagle", "--spec-tokens", "0"], ["--spec-tokens"]),
    (["--spec-method", "eagle", "--spec-tokens", "40"], ["spec_tokens", "40"]),
    (["--spec-method", "draft"], ["spec_accept"]),
    (["--spec-method", "draft", "--spec-accept", "0.6"], ["draft_model"]),
    (["--spec-method", "draft", "--spec-accept", "0.6", "--draft-model", "llama-2-7b"],
     ["draft_model", "vocabulary"]),
    (["--spec-method", "draft", "--spec-accept", "0.6", "--draft-model", "llama-3.1-70b"],
     ["draft_model", "not smaller"]),
    (["--spec-accept", "0.5"], ["spec_accept", "'none'"]),
    (["--spec-method", "eagle", "--draft-model", "llama-3.2-3b"], ["draft_model"]),
    (["--spec-method", "eagle", "--pp", "2"], ["pp"]),
    (["--spec-method", "ngram", "--async-scheduling", "on"], ["async_scheduling"]),
    (["--spec-method", "eagle", "--engine", "tensorrt-llm"], ["spec_method", "engine"]),
])
def test_bad_speculation_flags_are_one_line_exit_2(flags, words):
    done = run_in_process("serving", "run", "--model", "llama-3.1-8b", "--gpu", "h100-80gb",
                          "--rate", "2", "--requests", "20", "--quiet", *flags)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    for w in words:
        assert w in done.stderr, done.stderr


@pytest.mark.parametrize("knobs, words", [
    ('spec_method = "eagle"\nspec_tokens = "3"', ["spec_tokens", "'3'"]),
    ('spec_method = "eagle"\nspec_accept = 2', ["spec_accept", "2"]),
    ('spec_method = "ngram"\nspec_accept = true', ["spec_accept", "True"]),
    ('spec_method = 1', ["spec_method"]),
])
def test_bad_speculation_in_toml_is_one_line_exit_2(tmp_path, knobs, words):
    path = tmp_path / "s.toml"
    path.write_text(f'[load]\nrate = 2\nrequests = 20\n[[designs]]\nmodel = "llama-3.1-8b"\n'
                    f'gpu = "h100-80gb"\n{knobs}\n')
    done = run_in_process("serving", "run", str(path), "--quiet")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done
    assert "Traceback" not in done.stderr
    for w in words:
        assert w in done.stderr, done.stderr


def test_the_toml_keys_and_the_flags_give_the_same_run(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[load]\nrate = 4\nrequests = 60\n[[designs]]\nmodel = "llama-3.1-8b"\n'
                    'gpu = "h100-80gb"\nspec_method = "draft"\nspec_tokens = 3\n'
                    'spec_accept = 0.6\ndraft_model = "llama-3.2-3b"\n')
    toml = run_in_process("serving", "run", str(path), "--quiet", "--json")
    flags = run_in_process("serving", "run", "--model", "llama-3.1-8b", "--gpu", "h100-80gb",
                           "--rate", "4", "--requests", "60", "--spec-method", "draft",
                           "--spec-tokens", "3", "--spec-accept", "0.6", "--draft-model",
                           "llama-3.2-3b", "--quiet", "--json")
    assert toml.returncode == flags.returncode == 0, (toml, flags)
    a, b = json.loads(toml.stdout)["designs"][0], json.loads(flags.stdout)["designs"][0]
    assert a["tpot_p50"] == b["tpot_p50"] and "spec draft" in a["design"]["name"]
    assert a["design"]["spec_method"] == "draft" and a["design"]["draft_model"] == "llama-3.2-3b"


def test_the_event_log_has_every_token_of_a_speculating_run():
    from schedatrix.serving.sim.event_log import event_log, logged_run
    n = 6
    req = Requests(np.arange(n) * 0.5, np.full(n, 100, np.int64), np.full(n, 40, np.int64),
                   np.zeros(n, np.int16))
    run = logged_run(req, Design(model="llama-3.1-8b", gpu="h100-80gb", spec_method="ngram"))
    tokens = [e for e in event_log(run) if e[2] == "token"]
    assert len(tokens) == 40 * n
    assert len({(t, i) for t, i, _ in tokens}) < 40 * n   # some left together, one chunk


def test_the_same_seed_gives_the_same_speculating_run_and_another_seed_another():
    req = poisson_load(n=150, rate=20, seed=4, out=(20, 120))
    perf, cfg, lay = SpecPerfModel(BASE, SPECS["eagle"]), SchedulerConfig(32, 512), layout(1, 400)
    a, b = (simulate_fast(req, perf, cfg, lay, Policy(seed=9)) for _ in range(2))
    c = simulate_fast(req, perf, cfg, lay, Policy(seed=10))
    assert np.array_equal(a.done_s, b.done_s) and a.iterations == b.iterations
    assert not np.array_equal(a.done_s, c.done_s)
