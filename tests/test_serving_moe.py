"""Mixture-of-experts routing as it runs: skewed routing against a Monte Carlo of the routing it
defines, the grouped matmuls at each expert's rows, expert parallelism's busiest GPU, the engine
settings for the experts' precision and kernel, and the expert_skew knob (Design, CLI, TOML)."""

from __future__ import annotations

import numpy as np
import pytest

from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design, design_from_dict
from schedatrix.serving.perf import moe
from schedatrix.serving.perf.model import PerfModel

MIXTRAL = (8, 2)
QWEN3 = (128, 8)


# -- routing: the formulas against the routing they define, drawn -------------------------------
@pytest.mark.parametrize("experts, k", [MIXTRAL, QWEN3])
def test_pick_probabilities_are_k_zipf_shares_and_uniform_at_zero(experts, k):
    q0 = moe.pick_probabilities(experts, k, 0.0)
    assert q0 == pytest.approx(np.full(experts, k / experts))
    q = moe.pick_probabilities(experts, k, 0.3)
    assert q.sum() == pytest.approx(k) and all(np.diff(q) < 0)
    assert q[0] / q[1] == pytest.approx(2**0.3)                 # Zipf: p_i proportional to i^-s
    assert moe.peak_to_mean(experts, 0.0) == pytest.approx(1.0)
    assert moe.peak_to_mean(8, 1.0) == pytest.approx(8 / sum(1 / i for i in range(1, 9)))


@pytest.mark.parametrize("experts, k", [MIXTRAL, QWEN3])
def test_the_largest_skew_has_every_token_pick_the_most_used_expert(experts, k):
    top = moe.max_expert_skew(experts, k)
    assert moe.pick_probabilities(experts, k, top)[0] == pytest.approx(1.0, abs=1e-9)
    assert moe.pick_probabilities(experts, k, top * 1.01)[0] > 1.0


@pytest.mark.parametrize("experts, k, skew, tokens", [
    (8, 2, 0.0, 3), (8, 2, 0.8, 3), (8, 2, 1.4, 16), (128, 8, 0.0, 16), (128, 8, 0.5, 40)])
def test_expected_experts_and_rows_match_a_monte_carlo_of_the_routing(experts, k, skew, tokens):
    trials = 4000
    picks = moe.sample_routing(experts, k, tokens * trials, skew, seed=1)
    # each token's experts are distinct, and expert i is picked with probability q_i
    assert all(len(set(row)) == k for row in picks[:500])
    counts = np.bincount(picks.ravel(), minlength=experts) / (tokens * trials)
    q = moe.pick_probabilities(experts, k, skew)
    assert counts == pytest.approx(q, abs=0.01)
    # distinct experts of a batch of `tokens` tokens, averaged over batches
    batches = picks.reshape(trials, tokens * k)
    touched = np.mean([len(np.unique(b)) for b in batches])
    assert touched == pytest.approx(float(moe.expected_experts(experts, k, tokens, skew)),
                                    rel=0.02)
    # the most used expert's rows per batch: tokens x q_1
    busiest = np.mean((batches == 0).sum(axis=1))
    assert busiest == pytest.approx(tokens * q[0], rel=0.03)


def test_the_routing_draw_is_the_same_for_the_same_seed():
    a = moe.sample_routing(8, 2, 100, 0.7, seed=5)
    assert (a == moe.sample_routing(8, 2, 100, 0.7, seed=5)).all()
    assert not (a == moe.sample_routing(8, 2, 100, 0.7, seed=6)).all()


@pytest.mark.parametrize("skew", [0.0, 0.6, 1.2])
def test_the_busiest_expert_parallel_gpu_holds_the_most_used_expert_and_average_others(skew):
    experts, k, ep, tokens, trials = 8, 2, 4, 16, 3000
    rng = np.random.default_rng(3)
    picks = moe.sample_routing(experts, k, tokens * trials, skew, seed=2).reshape(
        trials, tokens * k)
    rows = []
    for b in picks:                   # experts placed on GPUs by id, unrelated to popularity
        gpu_of = rng.permutation(experts) // (experts // ep)
        rows.append((gpu_of[b] == gpu_of[0]).sum())
    q = moe.busiest_gpu_picks(experts, k, ep, skew)
    assert len(q) == experts // ep
    assert np.mean(rows) == pytest.approx(tokens * q.sum(), rel=0.03)
    if skew == 0.0:
        assert q.sum() == pytest.approx(k / ep)


# -- the model: skew 0 is uniform, the grouped matmuls, the decode line ---------------------------
def _uniform_grouped(pm, tokens):
    """The expert block's matmuls as the model computed them before skew: one roofline of all
    rows against the touched experts' weights (tokens x k / ep rows)."""
    from schedatrix.serving.perf.kernels import matmul_s
    sh, m = pm.shard, pm.model
    rows = tokens * m.experts_per_token / sh.ep
    touched = moe.expected_experts(m.experts, m.experts_per_token, tokens) / sh.ep
    return sum(float(matmul_s(pm.eff, pm.gpu, rows, kk, n, weight_bytes=sh.weight_bytes_per_value,
                              tflops=pm.tflops, weights=touched))
               for kk, n in sh.expert_matmuls.values())


@pytest.mark.parametrize("gpu, tp, ep, dtype", [("h100-80gb", 2, 1, "bf16"),
                                                ("h100-80gb", 4, 4, "fp8"), ("h200", 2, 2, "bf16")])
def test_skew_zero_reproduces_the_uniform_figures(gpu, tp, ep, dtype):
    pm = PerfModel("mixtral-8x7b", gpu, tp=tp, ep=ep, dtype=dtype)
    assert pm.expert_skew == 0.0
    for tokens in (1, 7, 64, 2048):
        grouped = sum(float(moe._grouped_matmul_s(
            pm.eff, pm.gpu, tokens, moe.busiest_gpu_picks(8, 2, ep), kk, n,
            pm.shard.weight_bytes_per_value, pm.tflops)) + pm.eff.kernel_launch_s
            for kk, n in pm.shard.expert_matmuls.values())
        assert grouped == pytest.approx(_uniform_grouped(pm, tokens), rel=1e-9)
    same = PerfModel("mixtral-8x7b", gpu, tp=tp, ep=ep, dtype=dtype, expert_skew=0)
    assert same.iteration_s([(500, 0)], 20, 20_000) == pm.iteration_s([(500, 0)], 20, 20_000)


def test_skew_touches_fewer_experts_and_loads_the_busiest_gpu_more():
    flat = PerfModel("mixtral-8x7b", "h100-80gb", tp=4, ep=4)
    skewed = PerfModel("mixtral-8x7b", "h100-80gb", tp=4, ep=4, expert_skew=1.2)
    # fewer distinct experts read at a small batch
    assert skewed.weight_bytes_read(4) < flat.weight_bytes_read(4)
    # a large prefill: the busiest GPU computes more rows and receives more of the all-to-all
    assert skewed.iteration_s([(4096, 0)]) > 1.2 * flat.iteration_s([(4096, 0)])
    # without expert parallelism the GPUs share every expert: the prefill's work is the same
    tp_flat = PerfModel("mixtral-8x7b", "h100-80gb", tp=4)
    tp_skew = PerfModel("mixtral-8x7b", "h100-80gb", tp=4, expert_skew=1.2)
    assert tp_skew.iteration_s([(4096, 0)]) == pytest.approx(tp_flat.iteration_s([(4096, 0)]),
                                                             rel=0.02)


def test_the_busiest_gpus_all_to_all_share_sets_dispatch_and_combine():
    from schedatrix.serving.perf.catalog import gpu
    from schedatrix.serving.perf.kernels import alltoall_s, efficiency
    e, g = efficiency("h100-80gb"), gpu("h100-80gb")
    even = alltoall_s(e, g, 1e9, 4, False)
    assert alltoall_s(e, g, 1e9, 4, False, share=0.25) == even
    assert alltoall_s(e, g, 1e9, 4, False, share=0.5) > even


@pytest.mark.parametrize("skew", [0.0, 0.9])
def test_the_fast_simulators_decode_line_still_holds_with_skew(skew):
    pm = PerfModel("mixtral-8x7b", "h200", tp=2, expert_skew=skew)
    for n in (1, 5, 64, 300):
        a, b = pm.decode_line(n)
        for context in (0, 1000, 250_000):
            assert pm.iteration_s((), n, context) == pytest.approx(a + b * context, rel=1e-12)


# -- how the engine runs the experts --------------------------------------------------------------
def test_16_bit_experts_read_twice_the_bytes_and_compute_at_the_16_bit_peak():
    fp8 = PerfModel("mixtral-8x7b", "h100-80gb", tp=2, dtype="fp8")
    wide = PerfModel("mixtral-8x7b", "h100-80gb", tp=2, dtype="fp8", moe_fp8_compute=False)
    m = fp8.model
    extra = m.layers * m.experts * m.expert_params          # one more byte per expert weight
    assert wide.weights_bytes_per_gpu - fp8.weights_bytes_per_gpu == pytest.approx(extra / 2)
    assert wide.weight_bytes_read(512) - fp8.weight_bytes_read(512) == pytest.approx(
        extra, rel=1e-6)
    assert wide.iteration_s([(2048, 0)]) > 1.4 * fp8.iteration_s([(2048, 0)])
    # BF16 models and dense models are untouched by the setting
    bf = PerfModel("mixtral-8x7b", "h100-80gb", tp=2)
    assert PerfModel("mixtral-8x7b", "h100-80gb", tp=2, moe_fp8_compute=False).iteration_s(
        [(100, 0)]) == bf.iteration_s([(100, 0)])


def test_every_expert_over_every_token_reads_them_all_and_computes_e_over_k_times():
    grouped = PerfModel("mixtral-8x7b", "h200", tp=2, dtype="fp8")
    every = PerfModel("mixtral-8x7b", "h200", tp=2, dtype="fp8", moe_all_experts=True)
    m = grouped.model
    one = 3 * m.hidden * m.expert_ffn                         # bytes of one FP8 expert
    assert every.weight_bytes_read(1) - grouped.weight_bytes_read(1) == pytest.approx(
        m.layers * (m.experts - m.experts_per_token) * one, rel=1e-6)
    # a long prefill is compute bound: the experts' FLOPs are E / k = 4 times the routed ones
    ratio = every.iteration_s([(8192, 0)]) / grouped.iteration_s([(8192, 0)])
    assert 2.0 < ratio < 4.0
    assert PerfModel("mixtral-8x7b", "h200", tp=2, dtype="fp8", moe_all_experts=True,
                     expert_skew=1.0).iteration_s([(300, 0)]) == every.iteration_s([(300, 0)])


@pytest.mark.parametrize("knob, value", [("moe_fp8_compute", "yes"), ("moe_all_experts", 1)])
def test_the_engine_settings_take_booleans_only(knob, value):
    with pytest.raises(InputError, match=f"^{knob}: "):
        PerfModel("mixtral-8x7b", "h200", tp=2, **{knob: value})


# -- the knob: PerfModel, Design, TOML, CLI ------------------------------------------------------
@pytest.mark.parametrize("value, message", [
    (-0.1, "allowed: 0 .uniform. to 1.436"), (2.0, "allowed: 0 .uniform. to 1.436"),
    ("high", "is not a number"), (True, "is not a number"), (float("nan"), "allowed: 0")])
def test_expert_skew_out_of_range_is_refused_naming_it(value, message):
    with pytest.raises(InputError, match="^expert_skew: ") as err:
        PerfModel("mixtral-8x7b", "h200", tp=2, expert_skew=value)
    assert __import__("re").search(message, str(err.value))
    with pytest.raises(InputError, match="^expert_skew: "):
        Design(model="mixtral-8x7b", gpu="h200", tp=2, expert_skew=value)


def test_expert_skew_for_a_dense_model_is_refused():
    with pytest.raises(InputError, match="needs a mixture-of-experts model; llama-3.1-8b is "
                                         r"dense \(allowed: 0\)"):
        Design(model="llama-3.1-8b", expert_skew=0.5)
    assert Design(model="llama-3.1-8b", expert_skew=0).expert_skew == 0.0


def test_design_and_toml_carry_expert_skew_to_the_performance_model():
    d = design_from_dict({"model": "mixtral-8x7b", "gpu": "h200", "tp": 2, "expert_skew": 0.7})
    assert d.expert_skew == 0.7 and d.perf().expert_skew == 0.7
    with pytest.raises(InputError, match="^design: expert_skew: "):
        design_from_dict({"model": "mixtral-8x7b", "gpu": "h200", "tp": 2, "expert_skew": 9})


def test_a_scenario_file_sets_expert_skew(tmp_path):
    from schedatrix.serving.intake.toml_tables import read_toml
    from schedatrix.serving.scenarios.scenario import scenario_from_dict
    path = tmp_path / "moe.toml"
    path.write_text('[load]\nrate = 1\nrequests = 5\n[defaults]\nmodel = "mixtral-8x7b"\n'
                    'gpu = "h200"\ntp = 2\n[[designs]]\nexpert_skew = 0.4\n')
    sc = scenario_from_dict(read_toml(path, "scenario"), base=tmp_path)
    assert sc.designs[0].expert_skew == 0.4


@pytest.mark.parametrize("args, needle", [
    (["--expert-skew", "abc"], "--expert-skew must be a number, got 'abc'"),
    (["--expert-skew", "-1"], "--expert-skew must be 0 or more"),
    (["--expert-skew", "0.5"], "needs a mixture-of-experts model"),
    (["--model", "mixtral-8x7b", "--gpu", "h200", "--tp", "2", "--expert-skew", "3"],
     "allowed: 0 (uniform) to 1.436")])
def test_the_cli_refuses_a_bad_expert_skew_in_one_line(args, needle, capsys):
    from schedatrix.cli import main
    assert main(["serving", "run", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err
