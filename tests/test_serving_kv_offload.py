"""The CPU tier of the KV cache: its LRU, its size, reference = fast with it on, what it buys a
prefix-heavy load whose documents exceed HBM, and bad values refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serving_support import LinearCost, design_refusal, layout, poisson_load
from test_serving_sim import CLASSES, EXAMPLES, _same

from schedatrix.cli import main
from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design, build
from schedatrix.serving.cluster.faults import Fault, Resilience
from schedatrix.serving.cluster.policy import Policy
from schedatrix.serving.figures.kv_tiers import kv_tiers
from schedatrix.serving.figures.metrics import figures
from schedatrix.serving.load.prefixes import shared_prefix_load
from schedatrix.serving.perf.pcie import h2d_gb_s
from schedatrix.serving.replica.cpu_tier import CPUTier, KVOffload
from schedatrix.serving.replica.knobs import SchedulerConfig
from schedatrix.serving.sim.engine import simulate_fast
from schedatrix.serving.sim.reference import simulate_reference
from schedatrix.serving.sim.simulate import simulate
from schedatrix.serving.studies.cpu_tier_effect import lone_prompt_speedup, tier_effect

#: The load that shows the tier matters: 400 documents of 3,072 tokens (1.2M tokens, three
#: times the 412k tokens of KV an A100 holds beside Llama-3.1-8B), 4 questions a second.
BIG = dict(requests=2000, rate_rps=4.0, documents=400, seed=0)
#: The same questions about 50 documents (154k tokens): they fit in HBM.
FITS = dict(BIG, documents=50)


# -- the tier itself ----------------------------------------------------------------------------
def test_the_tier_keeps_the_most_recent_evictions_and_touches_what_it_copies_back():
    tier = CPUTier(3, 16)
    for h in (1, 2, 3):
        tier.keep(h)
    assert tier.peek([1, 2, 3, 9], 200, 0) == 3       # 4 blocks, the last one not in the tier
    assert tier.peek([1, 2, 3], 48, 0) == 2           # the last prompt token is computed
    assert tier.load([1, 2, 3], 0, 1) == 16           # block 1 copied back: most recent now
    tier.keep(4)                                      # full: the oldest (2) goes
    assert list(tier.blocks) == [3, 1, 4] and tier.hit_tokens == 16
    assert tier.peek([7, 3, 1, 4, 5], 500, 1) == 3    # after one block found in HBM
    empty = CPUTier(0, 16)
    empty.keep(1)
    assert not empty.blocks


def test_its_size_is_the_replicas_host_memory_over_a_tokens_kv_on_all_its_gpus():
    d = Design(model="llama-3.1-70b", gpu="h100-80gb", tp=4, pp=2, kv_offload_gb=100)
    perf = d.perf()
    off = d.kv_offload()
    assert off.h2d_gb_s == 50.0 and Design(kv_offload_gb=1).kv_offload().h2d_gb_s == 25.0
    blocks = off.blocks(perf.kv_bytes_per_token_per_gpu, perf.gpus, 2, 512)
    # 70B: 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 327,680 bytes a token
    assert blocks == int(100e9 / 327_680) // 2 // 512
    assert Design().kv_offload() is None and build(Design()).config.kv_offload is None
    assert Design(kv_offload_gb=64).name == "1 x TP1, CPU tier 64 GB" and Design().name == "1 x TP1"


# -- the two simulators agree with it on ---------------------------------------------------------
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), rate=st.floats(5, 60), kv=st.integers(40, 400),
       mb=st.floats(0.2, 40), engines=st.integers(1, 2), replicas=st.integers(1, 3),
       split=st.booleans(), swap=st.booleans(), crash=st.booleans(), chunked=st.booleans(),
       max_batch=st.integers(1, 32))
def test_reference_equals_fast_with_the_cpu_tier(seed, rate, kv, mb, engines, replicas, split,
                                                 swap, crash, chunked, max_batch):
    req = poisson_load(80, rate, seed, inp=(20, 300), out=(1, 120), hashes=True,
                       classes=CLASSES)
    lay = layout(0 if split else replicas, kv, engines, prefill=replicas if split else 0,
                 decode=replicas if split else 0)
    # LinearCost holds 100,000 bytes a token: mb MB is 2 to 400 tokens of host memory
    cfg = SchedulerConfig(max_batch, max(256, max_batch), chunked, 16, 32,
                          kv_offload=KVOffload(mb / 1000, 25.0))
    policy = Policy(router="prefix", preemption="swap" if swap else "recompute",
                    faults=(Fault("worker", 0, 1.0, 0.5),) if crash else (),
                    resilience=Resilience(health_check_s=0.2, retry_budget=2, backoff_s=0.1))
    a = simulate_reference(req, LinearCost(), cfg, lay, policy)
    b = simulate_fast(req, LinearCost(), cfg, lay, policy)
    _same(a, b)
    assert a.prefix_cpu_hit_tokens == b.prefix_cpu_hit_tokens
    assert a.kv_load_s == pytest.approx(b.kv_load_s, rel=1e-9, abs=1e-12)
    assert a.kv_load_saved_s == pytest.approx(b.kv_load_saved_s, rel=1e-9, abs=1e-12)


def test_reference_equals_fast_on_a_design_whose_documents_spill_to_the_tier():
    req = shared_prefix_load(**{**BIG, "requests": 400})
    d = Design(kv_offload_gb=200)
    a, b = simulate(req, d, "reference"), simulate(req, d, "fast")
    _same(a, b)
    assert a.prefix_cpu_hit_tokens == b.prefix_cpu_hit_tokens > 0


# -- what it buys ---------------------------------------------------------------------------------
def test_the_tier_raises_the_hit_share_and_cuts_ttft_when_the_documents_exceed_hbm():
    e = tier_effect(Design(), 200)                       # 400 documents
    assert e.document_tokens > 2.5 * e.hbm_tokens        # they exceed HBM
    assert e.off.cpu_hit_share == 0 and e.on.cpu_hit_share > 0.3
    assert e.on.hit_share > e.off.hit_share + 0.3
    assert e.ttft_on_s < 0.6 * e.ttft_off_s
    assert e.on.load_s < e.on.recompute_saved_s / 5      # far less than the prefill it saves


def test_the_tier_does_nothing_when_the_documents_fit_in_hbm():
    e = tier_effect(Design(), 200, documents=50)
    assert e.document_tokens < 0.5 * e.hbm_tokens
    assert e.on == e.off and e.ttft_on_s == e.ttft_off_s
    req = shared_prefix_load(**FITS)
    off, on = simulate(req, Design()), simulate(req, Design(kv_offload_gb=200))
    assert figures(on) == figures(off)
    assert np.array_equal(on.first_token_s, off.first_token_s, equal_nan=True)


def test_each_copy_is_charged_at_its_gpus_pcie_rate():
    req = shared_prefix_load(**{**BIG, "requests": 800})
    assert h2d_gb_s("h100-80gb") == 2 * h2d_gb_s("a100-80gb") == 50.0
    for gpu, gb_s in (("a100-80gb", 25e9), ("h100-80gb", 50e9)):
        run = simulate(req, Design(gpu=gpu, kv_offload_gb=200))
        assert run.prefix_cpu_hit_tokens > 0
        # its seconds are its tokens' bytes on one GPU over that GPU's PCIe link
        assert kv_tiers(run).load_s == pytest.approx(
            run.prefix_cpu_hit_tokens * Design(gpu=gpu).perf().kv_bytes_per_token_per_gpu / gb_s)


def test_a_lone_prompts_copy_back_beats_recompute_within_vllms_published_range():
    # vLLM's post on its offloading connector: TTFT from CPU memory 2x to 22x below recompute,
    # H100, by the model's own terms (its Figure 1's points are validation rows:
    # tests/test_serving_validation.py replays them through the simulator)
    speedups = [lone_prompt_speedup(Design(gpu="h100-80gb"), n)
                for n in (1024, 2048, 4096, 8192, 16384, 32768)]
    assert all(2 <= s <= 22 for s in speedups)
    assert speedups == sorted(speedups)          # the longer the prompt, the more it saves
    assert speedups[0] == pytest.approx(2.9, abs=0.1) and speedups[-1] == pytest.approx(13.7,
                                                                                       abs=0.2)


# -- the command line and TOML --------------------------------------------------------------------
def _trace(tmp_path, documents=200, requests=300):
    """A Mooncake-format trace: each request a document of six 512-token blocks plus a question."""
    rng = np.random.default_rng(5)
    rows = []
    for k in range(requests):
        doc = int(rng.integers(documents))
        rows.append({"timestamp": 250 * k, "input_length": 3072 + int(rng.integers(50, 300)),
                     "output_length": int(rng.integers(20, 120)),
                     "hash_ids": [10 * doc + b for b in range(6)]})
    f = tmp_path / "mooncake.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f


def test_the_command_line_reports_hits_by_tier(tmp_path, capsys):
    trace = str(_trace(tmp_path))
    assert main(["serving", "run", "--trace", trace, "--kv-offload-gb", "200", "--json"]) == 0
    on = json.loads(capsys.readouterr().out)["designs"][0]
    k = on["kv_offload"]
    assert k["gb"] == 200 and k["prefix_hit_share_cpu"] > 0
    assert k["prefix_hit_share_hbm"] == pytest.approx(on["prefix_hit_share"])
    assert main(["serving", "run", "--trace", trace, "--json"]) == 0
    off = json.loads(capsys.readouterr().out)["designs"][0]
    assert "kv_offload" not in off and off["ttft_p50"] > on["ttft_p50"]
    assert main(["serving", "run", "--trace", trace, "--kv-offload-gb", "200"]) == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if "prefix hits" in x]
    assert line.startswith("  1 x TP1, CPU tier 200 GB: prefix hits ") and len(line) <= 100
    assert "% CPU; copies " in line and " s, prefill saved " in line


def test_a_scenario_file_sets_the_tier(tmp_path, capsys):
    trace = _trace(tmp_path)
    f = tmp_path / "s.toml"
    f.write_text(f'[load]\ntrace = "{trace}"\n\n[[designs]]\nkv_offload_gb = 150\n')
    assert main(["serving", "run", str(f), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["designs"][0]["kv_offload"]["gb"] == 150


@pytest.mark.parametrize("value, words", [
    ("-1", ["--kv-offload-gb", "from 0 to 100000", "'-1'"]),
    ("lots", ["--kv-offload-gb", "a number", "'lots'"]),
    ("inf", ["--kv-offload-gb", "'inf'"]),
    ("1e9", ["--kv-offload-gb", "from 0 to 100000"]),
])
def test_bad_flag_values_are_one_line_exit_2(value, words, capsys):
    code = main(["serving", "run", "--kv-offload-gb", value])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    for w in words:
        assert w in err


@pytest.mark.parametrize("value, words", [
    ("-5", ["kv_offload_gb", "[0, 100000]", "-5"]),
    ('"big"', ["kv_offload_gb", "a number", "'big'"]),
    ("true", ["kv_offload_gb", "a number", "True"]),
])
def test_bad_toml_values_are_one_line_exit_2(tmp_path, value, words, capsys):
    err = design_refusal(tmp_path, f"kv_offload_gb = {value}", capsys)
    for w in words:
        assert w in err


def test_bad_values_in_python_name_the_knob():
    with pytest.raises(InputError, match=r"kv_offload_gb must be in \[0, 100000\], got -1"):
        Design(kv_offload_gb=-1)
    with pytest.raises(InputError, match="kv_offload_gb must be in"):
        KVOffload(0.0, 25.0)
    with pytest.raises(InputError, match="kv_offload must be a KVOffload"):
        SchedulerConfig(kv_offload=5)
