"""Many LoRA adapters on one base model: the slots' LRU, an adapter's bytes, the batched kernels'
cost, reference = fast with adapters on, slot waits and loads, and bad values refused in one
line."""

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
from schedatrix.serving.load.requests import Requests
from schedatrix.serving.perf.catalog import model
from schedatrix.serving.replica.knobs import SchedulerConfig
from schedatrix.serving.replica.lora import (
    DISK_GB_S,
    LoRA,
    LoraKernels,
    adapter_bytes_per_gpu,
    draw_adapters,
    slots_tokens,
)
from schedatrix.serving.replica.lora_slots import FROM_CPU, FROM_DISK, RESIDENT, AdapterSlots
from schedatrix.serving.sim.engine import simulate_fast
from schedatrix.serving.sim.reference import simulate_reference
from schedatrix.serving.sim.simulate import simulate


# -- the slots -----------------------------------------------------------------------------------
def test_slots_hold_the_running_adapters_and_drop_the_oldest_idle_one():
    s = AdapterSlots(2, 3)
    assert s.take(0, 7) == FROM_DISK and s.take(1, 7) == RESIDENT
    assert s.take(2, 8) == FROM_DISK
    assert s.blocked(9) and not s.blocked(7)          # two adapters active: no third
    s.release(0)
    s.release(1)                                       # 7 idle now, still in its slot
    assert not s.blocked(9) and s.take(3, 9) == FROM_DISK   # 9 takes 7's slot
    assert list(s.gpu) == [8, 9] and list(s.cpu) == [7, 8, 9]
    s.release(3)
    assert s.take(4, 7) == FROM_CPU                    # back from host memory, 9's slot
    assert list(s.gpu) == [8, 7]
    s.release(4)
    s.release(2)
    assert s.take(5, 10) == FROM_DISK                  # host memory full: its oldest (8) out
    assert list(s.cpu) == [9, 7, 10] and list(s.gpu) == [7, 10]
    s.release(99)                                      # a request holding nothing: no change
    assert s.loads == [1, 1, 4] and s.active == {10: 1}


# -- bytes and kernels ---------------------------------------------------------------------------
def test_an_adapters_bytes_are_its_a_and_b_matrices_on_every_linear_layer():
    shape = model("llama-3.1-8b")
    # q 4096->4096, k and v 4096->1024, o 4096->4096, gate and up 4096->14336, down 14336->4096:
    # (in + out) summed over the slices = 81,920; x rank 16 x 2 bytes x 32 layers
    assert adapter_bytes_per_gpu(shape, 16) == 81_920 * 16 * 2 * 32 == 83_886_080
    # TP 2: column-parallel layers split B, row-parallel ones split A
    split = (4096 * 16 * 3 + 16 * 6144 / 2 + 4096 * 16 / 2 + 16 * 4096 + 4096 * 16 * 2
             + 16 * 28672 / 2 + 14336 * 16 / 2 + 16 * 4096) * 2 * 32
    assert adapter_bytes_per_gpu(shape, 16, tp=2) == split


def test_the_slots_come_out_of_the_kv_cache():
    base = build(Design()).kv_blocks_per_replica
    d = Design(lora_adapters=100, max_loras=8, lora_rank=64)
    tokens = slots_tokens(d.perf(), d.lora())
    assert tokens == -(-8 * 4 * 83_886_080 // 131_072)       # 8 x 335 MB over 128 KiB a token
    assert build(d).kv_blocks_per_replica == (d.perf().kv_capacity_tokens() - tokens) // 16
    assert base > build(d).kv_blocks_per_replica
    assert build(Design()).config.lora is None and Design().lora() is None


def test_the_kernels_cost_more_with_distinct_adapters_and_rank_and_launches_dominate_decode():
    perf = Design(gpu="h100-80gb").perf()
    k16, k64 = LoraKernels(perf, 16), LoraKernels(perf, 64)
    one, eight = k16.seconds(32, 1), k16.seconds(32, 8)
    assert 0 < one < eight < k64.seconds(32, 8)
    assert k16.seconds(0, 3) == 0 == k16.seconds(5, 0)
    launches = 8 * 32 * perf.eff.kernel_launch_s          # 8 kernels a layer, 32 layers
    assert launches < one < 1.2 * launches                # a decode batch: mostly fixed time
    assert k16.seconds(8192, 1) > 3 * launches            # a long prefill: the work shows


def test_adapters_are_drawn_from_the_seed_uniform_or_skewed():
    lora = LoRA(10)
    a, b = draw_adapters(5000, lora, 3), draw_adapters(5000, lora, 3)
    assert a == b and set(a) == set(range(10)) and a != draw_adapters(5000, lora, 4)
    skewed = draw_adapters(5000, LoRA(10, skew=1.5), 3)
    assert skewed.count(0) > 3 * skewed.count(9) and a.count(0) < 1.5 * a.count(9)


# -- the two simulators agree with it on ---------------------------------------------------------
class _Kernels:
    adapter_bytes = 2e6          # 2 MB an adapter: 80 us over 25 GB/s

    def __init__(self, rank):
        self.rank = rank

    def seconds(self, tokens, distinct):
        return 1e-4 * distinct + 1e-7 * tokens * self.rank


class LoraCost(LinearCost):
    def lora_kernels(self, rank):
        return _Kernels(rank)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), rate=st.floats(5, 60), kv=st.integers(40, 400),
       adapters=st.integers(1, 12), slots=st.integers(1, 6), cpu=st.integers(0, 8),
       skew=st.sampled_from([0.0, 1.0]), engines=st.integers(1, 2), replicas=st.integers(1, 3),
       split=st.booleans(), swap=st.booleans(), crash=st.booleans(), chunked=st.booleans(),
       priority=st.booleans(), hashes=st.booleans(), max_batch=st.integers(1, 32))
def test_reference_equals_fast_with_lora(seed, rate, kv, adapters, slots, cpu, skew, engines,
                                         replicas, split, swap, crash, chunked, priority,
                                         hashes, max_batch):
    req = poisson_load(80, rate, seed, inp=(20, 300), out=(1, 120), hashes=hashes,
                       classes=CLASSES)
    lay = layout(0 if split else replicas, kv, engines, prefill=replicas if split else 0,
                 decode=replicas if split else 0)
    lora = LoRA(adapters, 16, slots, slots + cpu, skew, 25.0)
    cfg = SchedulerConfig(max_batch, max(256, max_batch), chunked, 16, 32 if hashes else 0,
                          lora=lora)
    policy = Policy(router="prefix" if hashes else "round-robin",
                    preemption="swap" if swap else "recompute", priority_preemption=priority,
                    faults=(Fault("worker", 0, 1.0, 0.5),) if crash else (),
                    resilience=Resilience(health_check_s=0.2, retry_budget=2, backoff_s=0.1),
                    seed=seed)
    a = simulate_reference(req, LoraCost(), cfg, lay, policy)
    b = simulate_fast(req, LoraCost(), cfg, lay, policy)
    _same(a, b)
    assert a.lora_loads == b.lora_loads and a.lora_skips == b.lora_skips
    assert a.lora_load_s == pytest.approx(b.lora_load_s, rel=1e-9, abs=1e-12)
    assert a.lora_kernel_s == pytest.approx(b.lora_kernel_s, rel=1e-9, abs=1e-12)
    assert sum(a.lora_loads) > 0


def test_reference_equals_fast_on_a_design_with_adapters():
    req = poisson_load(300, 20, 1, out=(20, 200))
    d = Design(lora_adapters=16, max_loras=4, max_cpu_loras=8, lora_skew=1.0)
    a, b = simulate(req, d, "reference"), simulate(req, d, "fast")
    _same(a, b)
    assert a.lora_loads == b.lora_loads and a.lora_skips == b.lora_skips > 0


# -- what it does ----------------------------------------------------------------------------------
def test_requests_wait_for_a_slot_when_their_adapters_outnumber_the_slots():
    req = poisson_load(300, 20, 1, out=(20, 200))
    few = simulate(req, Design(lora_adapters=8, max_loras=1, max_cpu_loras=8))
    many = simulate(req, Design(lora_adapters=8, max_loras=8))
    assert few.lora_skips > 0 and many.lora_skips == 0
    assert (few.status == many.status).all()              # all served, later
    assert few.first_token_s.mean() - few.arrival_s.mean() > \
        2 * (many.first_token_s.mean() - many.arrival_s.mean())


def test_each_adapter_is_read_from_disk_once_when_host_memory_holds_them_all():
    req = poisson_load(300, 20, 1, out=(20, 200))
    d = Design(lora_adapters=8, max_loras=2, max_cpu_loras=8)
    run = simulate(req, d)
    resident, cpu, disk = run.lora_loads
    assert disk == 8 and cpu > 0 and resident + cpu + disk >= 300
    one = adapter_bytes_per_gpu(model("llama-3.1-8b"), 16)
    cpu_s = one / 25e9
    assert run.lora_load_s == pytest.approx(cpu * cpu_s + disk * (cpu_s + one / (DISK_GB_S
                                                                                 * 1e9)))


def test_one_adapter_costs_the_kernels_and_no_waits():
    req = poisson_load(300, 20, 1, out=(20, 200))
    base, one = simulate(req, Design()), simulate(req, Design(lora_adapters=1))
    assert one.lora_loads == (299, 0, 1) and one.lora_skips == 0 and one.lora_kernel_s > 0
    assert base.lora_kernel_s == 0 and base.lora_loads == (0, 0, 0)
    assert one.done_s.max() > base.done_s.max()


# -- the command line and TOML --------------------------------------------------------------------
def test_the_command_line_and_a_scenario_file_set_the_adapters(tmp_path, capsys):
    flags = ["--requests", "60", "--rate", "10", "--quiet"]
    assert main(["serving", "run", *flags, "--lora-adapters", "8", "--max-loras", "4",
                 "--max-cpu-loras", "6", "--lora-rank", "32", "--lora-skew", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 x TP1, 8 LoRA r32, 4 slots" in out
    [line] = [x for x in out.splitlines() if "LoRA loads" in x]
    assert line.startswith("  1 x TP1, 8 LoRA r32, 4 slots: LoRA loads 0 CPU, 8 disk, ")
    assert len(line) <= 100 and " slot waits; kernels " in line
    assert main(["serving", "run", *flags, "--lora-adapters", "1", "--lora-by-class",
                 "--lora-targets", "attention", "--json"]) == 0
    one = json.loads(capsys.readouterr().out)["designs"][0]
    assert one["design"]["lora_by_class"] is True and one["lora"]["loads_disk"] == 1
    assert one["design"]["lora_targets"] == "attention"
    f = tmp_path / "s.toml"
    f.write_text("[load]\nrate = 5\nrequests = 40\n\n[[designs]]\nlora_adapters = 3\n"
                 "max_loras = 2\nmax_cpu_loras = 3\n")
    assert main(["serving", "run", str(f), "--json"]) == 0
    one = json.loads(capsys.readouterr().out)["designs"][0]
    assert one["name"].endswith("3 LoRA r16, 2 slots")
    lora = one["lora"]
    assert lora["adapters"] == 3 and lora["max_loras"] == 2 and lora["loads_disk"] == 3
    assert lora["loads_resident"] + lora["loads_cpu"] + lora["loads_disk"] >= 40
    assert lora["kernel_s"] > 0


@pytest.mark.parametrize("flags, words", [
    (["--lora-adapters", "-1"], ["--lora-adapters", "at least 0", "'-1'"]),
    (["--lora-adapters", "x"], ["--lora-adapters", "whole number", "'x'"]),
    (["--lora-adapters", "4", "--lora-rank", "7"], ["lora_rank", "7", "16, 32"]),
    (["--lora-adapters", "4", "--max-loras", "0"], ["--max-loras", "at least 1"]),
    (["--lora-adapters", "4", "--max-loras", "4", "--max-cpu-loras", "2"],
     ["max_cpu_loras", "at least max_loras (4)"]),
    (["--max-loras", "4"], ["need lora_adapters >= 1"]),
    (["--lora-adapters", "4", "--lora-skew", "-1"], ["--lora-skew", "from 0 to 10"]),
    (["--lora-adapters", "4", "--lora-targets", "mlp"], ["--lora-targets", "'mlp'"]),
    (["--lora-by-class"], ["need lora_adapters >= 1"]),
    (["--lora-adapters", "4", "--model", "mixtral-8x7b", "--gpu", "h100-80gb", "--tp", "2"],
     ["mixture-of-experts"]),
])
def test_bad_flag_values_are_one_line_exit_2(flags, words, capsys):
    code = main(["serving", "run", "--requests", "5", *flags])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    for w in words:
        assert w in err


@pytest.mark.parametrize("knobs, words", [
    ("lora_adapters = -3", ["lora_adapters", "-3"]),
    ('lora_adapters = "many"', ["lora_adapters", "'many'"]),
    ("lora_adapters = 2\nlora_rank = 12", ["lora_rank", "12", "max_lora_rank"]),
    ("lora_adapters = 2\nmax_loras = 3\nmax_cpu_loras = 1", ["max_cpu_loras", "1"]),
    ("lora_adapters = 2\nlora_targets = \"mlp\"", ["lora_targets", "'mlp'", "attention"]),
    ("lora_adapters = 2\nlora_by_class = 1", ["lora_by_class", "true or false"]),
    ("lora_adapters = 2\nmax_loras = 4096\nlora_rank = 512",
     ["max_loras", "leave no KV cache"]),
])
def test_bad_toml_values_are_one_line_exit_2(tmp_path, knobs, words, capsys):
    err = design_refusal(tmp_path, knobs, capsys)
    for w in words:
        assert w in err


def test_bad_values_in_python_name_the_knob():
    with pytest.raises(InputError, match="lora_rank: 3"):
        LoRA(2, rank=3)
    with pytest.raises(InputError, match="lora must be a LoRA"):
        SchedulerConfig(lora=5)
    with pytest.raises(InputError, match="lora_adapters"):
        Design(lora_adapters=True)


# -- a tenant its own adapter, and the placement question ------------------------------------------
def _tenants(rate, count, tpot_s=0.03):
    from schedatrix.serving.load.requests import SLOClass
    from schedatrix.serving.load.workload import Load, Tenant

    return Load(tenants=tuple(
        Tenant(SLOClass(f"t{k}", 0.0, 0, 1.0, tpot_s), rate, input_len="lognormal:500,0.5",
               output_len="lognormal:150,0.5") for k in range(count)))


def test_by_class_each_tenant_uses_its_own_adapter():
    from schedatrix.serving.load.workload import generate

    req = generate(_tenants(2.0, 3), 0, 300)
    lora = LoRA(3, by_class=True)
    assert draw_adapters(len(req), lora, 0, class_id=req.class_id) == req.class_id.tolist()
    assert sorted(set(req.class_id.tolist())) == [0, 1, 2]
    with pytest.raises(InputError, match="lora_by_class: the load has 3 classes"):
        draw_adapters(len(req), LoRA(2, by_class=True), 0, class_id=req.class_id)
    run = simulate(req, Design(lora_adapters=3, max_loras=3, lora_by_class=True))
    assert run.lora_loads[2] == 3                      # one adapter a tenant, each read once


def test_adapters_of_one_base_model_are_cheaper_for_small_tenants_not_for_large_ones():
    from schedatrix.serving.studies.adapters_or_models import adapters_or_models

    small = adapters_or_models(_tenants(12.0, 2), Design(), max_loras=2, requests=1500)
    assert [s.replicas for s in small.separate] == [2, 2] and small.shared.replicas == 3
    assert small.cheaper == "adapters" and min(small.shared.attainment) >= 0.9
    large = adapters_or_models(_tenants(20.0, 2), Design(), max_loras=2, requests=1500)
    assert [s.replicas for s in large.separate] == [2, 2] and large.shared.replicas == 5
    assert large.cheaper == "models"
    assert large.separate_dollars_per_hour < large.shared.dollars_per_hour


def test_the_shared_pool_pays_for_the_adapters_kernels_not_for_pooling():
    # the same merged load on pooled replicas of the base model alone needs what the separate
    # replicas need: the fifth replica is the adapters' cost (their kernels every step)
    from schedatrix.serving.load.workload import generate
    from schedatrix.serving.studies.adapters_or_models import _size

    load = _tenants(20.0, 2)
    merged = generate(load, 0, 1500)
    pooled = _size(Design(), merged, (0, 1), 0.9)
    assert pooled.replicas == 4
    with_adapters = _size(Design(lora_adapters=2, max_loras=2, lora_by_class=True), merged,
                          (0, 1), 0.9)
    assert with_adapters.replicas == 5


def test_the_placement_question_refuses_what_it_cannot_answer():
    from schedatrix.serving.load.workload import Load
    from schedatrix.serving.studies.adapters_or_models import adapters_or_models

    with pytest.raises(InputError, match="tenants only"):
        adapters_or_models(Load(rate_rps=2.0), Design())
    with pytest.raises(InputError, match="serves adapters already"):
        adapters_or_models(_tenants(1.0, 2), Design(lora_adapters=2))
    with pytest.raises(InputError, match="attainment"):
        adapters_or_models(_tenants(1.0, 2), Design(), attainment=1.5)


def test_a_loads_own_adapters_are_part_of_what_the_memo_keeps_runs_by():
    # the same arrivals and lengths with other adapters are another run, not a copy of the first
    req = poisson_load(200, 20, 3, out=(20, 200))
    one = Requests(req.arrival_s, req.input_tokens, req.output_tokens, req.class_id,
                   meta={"lora_adapter": np.zeros(len(req), np.int64)})
    spread = Requests(req.arrival_s, req.input_tokens, req.output_tokens, req.class_id,
                      meta={"lora_adapter": np.arange(len(req)) % 8})
    d = Design(lora_adapters=8, max_loras=2, max_cpu_loras=8)
    a, b = simulate(one, d), simulate(spread, d)
    assert a.lora_loads[2] == 1 and b.lora_loads[2] == 8 and b.lora_skips > 0
    assert simulate(spread, d).lora_loads == b.lora_loads


# -- the planner ---------------------------------------------------------------------------------
_POOL = """[pool]
gpu = "a100-80gb"
count = 8
requests = 1000
adapters = {adapters}

""" + "".join(f"""
[[models]]
name = "{tenant}"
model = "llama-3.1-8b"
rate = {{rate}}
input_len = "lognormal:500,0.5"
output_len = "lognormal:150,0.5"
ttft_s = 1.0
tpot_s = 0.03
""" for tenant in ("support", "sales")) + """
[[models]]
name = "chat"
model = "llama-3.2-3b"
rate = 2.0
input_len = "lognormal:300,0.5"
output_len = "lognormal:100,0.5"
ttft_s = 1.0
"""


def test_the_planner_prices_models_of_one_base_model_as_its_adapters(tmp_path, capsys):
    f = tmp_path / "pool.toml"
    f.write_text(_POOL.format(adapters="true", rate=12.0))
    assert main(["serving", "plan", str(f), "--quiet"]) == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.split("\n(")[0].replace("\n    ", " ").splitlines()
              if x.startswith("as adapters of")]
    assert line.startswith("as adapters of llama-3.1-8b: support, sales on 3 x TP1, 2 LoRA")
    assert line.endswith("against each on replicas of its own: 4 GPUs ($5.20 an hour); "
                         "cheaper: adapters")
    assert all(len(x) <= 100 for x in out.splitlines())
    assert main(["serving", "plan", str(f), "--json", "--quiet"]) == 0
    [shared] = json.loads(capsys.readouterr().out)["adapters"]
    assert shared["models"] == ["support", "sales"] and shared["cheaper"] == "adapters"
    assert shared["shared"]["gpus"] == 3 and shared["separate"]["gpus"] == 4
    f.write_text(_POOL.format(adapters="true", rate=22.0))     # larger tenants: models
    assert main(["serving", "plan", str(f), "--json", "--quiet"]) == 0
    [shared] = json.loads(capsys.readouterr().out)["adapters"]
    assert shared["cheaper"] == "models" and shared["shared"]["gpus"] == 5
    assert shared["separate"]["replicas"] == [2, 2]


def test_the_planner_prices_no_adapters_unless_asked(tmp_path, capsys):
    f = tmp_path / "pool.toml"
    f.write_text(_POOL.format(adapters="false", rate=12.0))
    assert main(["serving", "plan", str(f), "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["adapters"] == []
    f.write_text(_POOL.format(adapters='"yes"', rate=12.0))
    code = main(["serving", "plan", str(f)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "adapters: 'yes'" in err
