"""Serving drills: reproducible by number, no leaks, balanced answers, answers that agree with
the library's performance model, setups the simulator takes, feedback that never gives the
answer."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from schedatrix.cli import main
from schedatrix.course.drills import serving as sd
from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design, build
from schedatrix.serving.cluster.restart import RestartCosts
from schedatrix.serving.figures.kv_tiers import kv_tiers
from schedatrix.serving.figures.record import COMPLETED
from schedatrix.serving.load.requests import Requests
from schedatrix.serving.perf.catalog import GPUS, MODELS
from schedatrix.serving.perf.kernels import allreduce_s
from schedatrix.serving.perf.model import PerfModel
from schedatrix.serving.perf.pcie import h2d_gb_s
from schedatrix.serving.perf.spec_decode import SpecDecode, SpecPerfModel, expected_tokens
from schedatrix.serving.replica.kv_cache import largest_batch
from schedatrix.serving.replica.lora import adapter_bytes_per_gpu, slots_tokens
from schedatrix.serving.sim.simulate import simulate
from schedatrix.serving.studies.queueing import mg1

COUNT = 1000          # drills 0 to 999


@pytest.fixture(scope="module")
def many():
    return sd.serving_drill_set(0, COUNT)


def test_same_number_same_drill_and_different_numbers_differ():
    assert sd.serving_drill(42).text(answers=True) == sd.serving_drill(42).text(answers=True)
    assert sd.serving_drill(42).text() != sd.serving_drill(43).text()


def test_a_drill_is_the_same_in_another_process():
    code = ("from schedatrix.course.drills.serving import serving_drill; "
            "print(serving_drill(1234).text(answers=True))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == sd.serving_drill(1234).text(answers=True)
    assert out.startswith("Serving drill 1234 (seed 'schedatrix-serving-drill-1234')")


@pytest.mark.slow
def test_three_questions_of_three_kinds_that_never_clash(many):
    for d in many:
        ids = [q.id for q in d.questions]
        assert len(ids) == sd.PER_DRILL == len(set(ids))
        for a in ids:
            for b in ids:
                if a != b:
                    assert not sd.SERVING_KINDS[a].clashes(sd.SERVING_KINDS[b])


def test_no_text_of_a_drill_prints_another_questions_answer(many):
    for d in many:
        for q in d.questions:
            others = [*d.facts] + [t for o in d.questions if o is not q
                                   for t in (o.prompt, o.explanation)]
            assert not sd.leaks(q, "\n".join(others)), (d.number, q.id)


def test_the_leak_scan_sees_a_printed_answer():
    d = next(d for d in sd.serving_drill_set(0, 50)
             if any(q.grading == "figure" for q in d.questions))
    q = next(q for q in d.questions if q.grading == "figure")
    assert sd.leaks(q, f"it is {q.answer * 1.003:,.2f} or so")
    assert not sd.leaks(q, f"it is {q.answer * 1.5:,.2f}")
    slo = sd.Question("slo", "", "tpot", "slo", "", "")
    assert sd.leaks(slo, "8.7 ms is over the TPOT SLO of 8 ms")


def test_every_kind_is_asked_in_a_fair_share_of_drills_in_varied_order(many):
    asked = Counter(q.id for d in many for q in d.questions)
    questions = sum(asked.values())
    assert set(asked) == set(sd.SERVING_KINDS) and len(asked) >= 10
    assert {"mg1_wait", "littles_law", "goodput_per_gpu", "prefix_cache", "kv_move", "recovery",
            "expert_reads", "fp8_weights", "spec_gain", "lora_slots", "tier_copy"} <= set(asked)
    for kind, n in asked.items():
        # none over a fifth of the questions, none rare
        assert 0.02 * questions <= n <= 0.20 * questions, (kind, n, questions)
    firsts = Counter(d.questions[0].id for d in many)
    assert len(firsts) == len(sd.SERVING_KINDS)


def test_slo_answers_are_balanced_and_knobs_vary(many):
    slo = [q for d in many for q in d.questions if q.id == "slo"]
    answers = Counter(q.answer for q in slo)
    assert set(answers) == {"ttft", "tpot", "none"}
    assert max(answers.values()) <= 1.5 * min(answers.values()), answers
    knob_sets = Counter(q.accepted for q in slo if q.answer != "none")
    assert len(knob_sets) >= 3


def test_count_answers_are_not_dominated_by_one_value(many):
    for kind in ("largest_batch", "kv_per_token", "prefix_cache"):
        values = Counter(q.answer for d in many for q in d.questions if q.id == kind)
        assert values.most_common(1)[0][1] <= 0.35 * sum(values.values()), (kind, values)


def _facts_of(d):
    """The replica a drill's facts describe, read back from its text."""
    model = next(name for name in MODELS if f"Model: {name}," in d.facts[0])
    rest = d.facts[1].split("tensor parallelism over ")[1]
    tp, gpu = int(rest.split(" x ")[0]), rest.split(" x ")[1].split(" (")[0]
    return model, gpu, tp


def test_answers_agree_with_the_library(many):
    seen = Counter()
    for d in many:
        model, gpu, tp = _facts_of(d)
        perf = PerfModel(model, gpu, tp=tp, activation_reserve_gb=sd.RESERVE_GB)
        for q in d.questions:
            seen[q.id] += 1
            if q.id == "kv_per_token":
                assert q.answer == MODELS[model].kv_bytes_per_token
            elif q.id == "kv_capacity":
                assert q.answer == perf.kv_capacity_tokens(sd.USABLE_SHARE)
            elif q.id == "largest_batch":
                numbers = [int(x.replace(",", "")) for x in
                           re.findall(r"\d[\d,]*", q.prompt)]
                cap, block, prompt, output, cap_batch = numbers[:5]
                assert q.answer == largest_batch(cap, prompt, output, block, cap_batch)
            elif q.id == "step_time":
                # the catalog's facts, read at HBM_SHARE of the bandwidth, split over tp GPUs
                batch, context = (int(x.replace(",", "")) for x in
                                  re.findall(r"(\d[\d,]*) (?:requests|tokens)", q.prompt)[:2])
                m, g = MODELS[model], GPUS[gpu]
                nbytes = (m.weight_bytes + batch * context * m.kv_bytes_per_token) / tp
                assert q.answer == pytest.approx(1e3 * nbytes / (sd.HBM_SHARE * g.hbm_gb_s
                                                                 * 1e9), rel=1e-12)
                # never slower than the library's calibrated model, which adds the rest
                assert q.answer < 1e3 * perf.iteration_s((), batch, batch * context)
            elif q.id == "allreduce_bytes":
                # the bytes on the wire behind the library's all-reduce time, 2 per layer
                batch = int(re.search(r"step of (\d+) requests", q.prompt).group(1))
                act = batch * MODELS[model].hidden * 2
                e, g = perf.eff, GPUS[gpu]
                wire = ((allreduce_s(e, g, act, tp, floored=False) - e.allreduce_latency_s)
                        * g.link_one_way_gb_s * 1e9 * e.allreduce_link_share)
                assert q.answer == pytest.approx(2 * MODELS[model].layers * wire / 1e6)
            elif q.id == "slo":
                assert q.accepted and (q.answer == "none") == (q.accepted == {"none"})
                # a smaller batch cap is never accepted: it moves the wait to the queue
                assert "max_batch" not in q.accepted and q.accepted <= {"tp", "gpu", "none"}
                _check_slo(q, model, gpu, tp)
            elif q.id in SYSTEM_CHECKS:
                SYSTEM_CHECKS[q.id](q, model, gpu, tp)
    assert all(seen[k] for k in sd.SERVING_KINDS)


def _num(pattern, text, kind=float):
    return kind(re.search(pattern, text).group(1).replace(",", ""))


def _slo_setup(q):
    """(batch, context, budget, prompt, output, TTFT SLO ms, TPOT SLO ms) as printed."""
    batch, context = (int(x.replace(",", "")) for x in re.search(
        r"a batch of (\d+) requests of ([\d,]+) tokens", q.prompt).groups())
    budget = _num(r"token budget of ([\d,]+) a step", q.prompt, int)
    prompt, output = (int(x.replace(",", "")) for x in re.search(
        r"A request of ([\d,]+) prompt and (\d+) output tokens", q.prompt).groups())
    ttft, tpot = (int(x) for x in re.search(r"TTFT <= (\d+) ms and TPOT <= (\d+) ms",
                                             q.prompt).groups())
    return batch, context, budget, prompt, output, ttft, tpot


def _slo_ms(model, gpu, tp, batch, context, prompt):
    """TTFT and TPOT of the SLO question's request, ms, by the glossary's definitions and the
    library's performance model: TTFT from its arrival (the decode step under way, then the
    step its prefill joins), TPOT a decode step with it in the batch."""
    perf = PerfModel(model, gpu, tp=tp)
    ctx = batch * context
    ttft = perf.iteration_s((), batch, ctx) + perf.iteration_s([(prompt, 0)], batch, ctx)
    return 1e3 * ttft, 1e3 * perf.iteration_s((), batch + 1, ctx + prompt)


def _check_slo(q, model, gpu, tp):
    batch, context, _budget, prompt, _out, ttft_slo, tpot_slo = _slo_setup(q)
    ttft, tpot = _slo_ms(model, gpu, tp, batch, context, prompt)
    # the printed steps are the library's, and their sum is the TTFT the answer judges
    wait, joined, decode = (float(x) for x in re.search(
        r"arrives into takes ([\d.]+) ms, the step its prefill joins ([\d.]+) ms, and a "
        r"decode step with it in the batch ([\d.]+) ms", q.prompt).groups())
    assert wait + joined == pytest.approx(ttft, abs=0.11) and decode == pytest.approx(tpot,
                                                                                   abs=0.06)
    fails = [n for n, v, slo in (("ttft", ttft, ttft_slo), ("tpot", tpot, tpot_slo)) if v > slo]
    assert fails == ([] if q.answer == "none" else [q.answer])
    if q.answer != "none":
        turned = {"tp": (gpu, 2 * tp), "gpu": ("h200", tp)}
        repairs = set()
        for knob, (g, t) in turned.items():
            try:
                a, b = _slo_ms(model, g, t, batch, context, prompt)
            except InputError:
                continue
            if (knob != "gpu" or gpu != "h200") and a <= ttft_slo and b <= tpot_slo:
                repairs.add(knob)
        assert q.accepted == repairs


def _check_mg1(q, *_):
    rate = _num(r"stream at ([\d.]+) a second", q.prompt)
    mean = _num(r"average (\d+) ms", q.prompt) / 1e3
    cv = _num(r"variation of ([\d.]+)\.", q.prompt)
    rho = rate * mean
    assert rho < 1
    # Pollaczek-Khinchine from the printed figures
    assert q.answer == pytest.approx(1e3 * rate * mean**2 * (1 + cv**2) / (2 * (1 - rho)))


def _check_little(q, *_):
    rate = _num(r"takes (\d+) requests a second", q.prompt)
    ttft = _num(r"waits (\d+) ms", q.prompt) / 1e3
    more, tpot = (int(x) for x in re.search(r"streams (\d+) more tokens at (\d+) ms",
                                             q.prompt).groups())
    assert q.answer == pytest.approx(rate * (ttft + more * tpot / 1e3))


def _gpus_of(name):
    """A design's GPUs counted from its printed name, apart from the library's Design."""
    m = re.fullmatch(r"(\d+) x TP(\d+)", name)
    if m:
        return int(m.group(1)) * int(m.group(2))
    m = re.fullmatch(r"split P(\d+):D(\d+) TP(\d+)", name)
    if m:
        return (int(m.group(1)) + int(m.group(2))) * int(m.group(3))
    m = re.fullmatch(r"split P(\d+) TP(\d+) : D(\d+) TP(\d+)", name)
    return int(m.group(1)) * int(m.group(2)) + int(m.group(3)) * int(m.group(4))


def _check_goodput(q, *_):
    a = re.search(r"DistServe's goodput\): (.+?) of [\w.-]+ on [\w.-]+, ([\d.]+) requests",
                  q.prompt)
    b = re.search(r"the prefill/decode (split .+?) \(P prefill.*?shown\), ([\d.]+) a second",
                  q.prompt)
    per = [float(m.group(2)) / _gpus_of(m.group(1)) for m in (a, b)]
    assert q.answer == pytest.approx(max(per))
    assert min(_gpus_of(a.group(1)), _gpus_of(b.group(1))) >= 2


def _check_prefix(q, *_):
    shared = _num(r"same ([\d,]+)-token system prompt", q.prompt, int)
    block = _num(r"blocks of (\d+) tokens", q.prompt, int)
    prompt = _num(r"A ([\d,]+)-token prompt", q.prompt, int)
    assert q.answer == prompt - block * min(shared // block, (prompt - 1) // block)
    assert 1 <= q.answer <= prompt


def _check_kv_move(q, model, gpu, _tp):
    tp_p = _num(r"prefill replica of TP(\d+)", q.prompt, int)
    tp_d = _num(r"decode replica of TP(\d+)", q.prompt, int)
    tokens = _num(r"a ([\d,]+)-token prompt", q.prompt, int)
    same = "in one machine" in q.prompt
    pre, dec = PerfModel(model, gpu, tp=tp_p), PerfModel(model, gpu, tp=tp_d)
    assert q.answer == pytest.approx(1e3 * pre.kv_transfer_s(tokens, same, to=dec))
    # and from the printed figures: the bigger shard a GPU, over one link, after its latency
    shards = [_num(r"prefill side holds ([\d,]+) bytes", q.prompt, int),
              _num(r"decode side ([\d,]+)\.", q.prompt, int)]
    bw = _num(r"moves ([\d.,]+) GB/s", q.prompt)
    lat = _num(r"after ([\d.]+) µs", q.prompt) / 1e6
    by_hand = lat + max(shards) * tokens / (bw * 1e9)
    if same:
        by_hand = max(by_hand, _num(r"never under ([\d.]+) µs", q.prompt) / 1e6)
    assert 1e3 * by_hand == pytest.approx(q.answer, rel=0.005)


def _check_recovery(q, model, gpu, tp):
    down = _num(r"restarted (\d+) s after the crash", q.prompt, int)
    source = re.search(r"from (page-cache|disk|network) at", q.prompt).group(1)
    per_gpu = PerfModel(model, gpu, tp=tp).weights_bytes_per_gpu
    restart = RestartCosts(weights_from=source)
    assert q.answer == pytest.approx(down + restart.total_s(per_gpu))
    assert f"({per_gpu / 1e9:,.2f} GB)" in q.prompt
    # and from the printed figures alone
    fixed = sum(_num(rf"{name} \(([\d.]+) s\)", q.prompt)
                for name in ("starts", "compile", "capture", "warm-up"))
    rate = _num(r"at ([\d.]+) GB/s", q.prompt)
    assert q.answer == pytest.approx(down + fixed + per_gpu / (rate * 1e9), rel=1e-3)


def _spec_setup(q):
    """(method, K, acceptance, batch, context, plain step ms, speculating step ms) as printed."""
    method = "eagle" if "EAGLE's head drafts" in q.prompt else "ngram"
    k = _num(r"K = (\d+) tokens", q.prompt, int)
    accept = _num(r"with probability ([\d.]+) when", q.prompt)
    batch, context = (int(x.replace(",", "")) for x in re.search(
        r"Decoding (\d+) sequences of ([\d,]+) tokens", q.prompt).groups())
    plain = _num(r"plain decode step takes ([\d.]+) ms", q.prompt)
    step = _num(r"\) ([\d.]+) ms\. How many", q.prompt)
    return method, k, accept, batch, context, plain, step


def _check_spec(q, model, gpu, tp):
    method, k, accept, batch, context, plain, step = _spec_setup(q)
    base = PerfModel(model, gpu, tp=tp)
    spec = SpecDecode(method, k, accept)
    ctx = batch * (context + 1)
    # the printed steps are the library's, and the answer is Leviathan's tokens over their ratio
    assert 1e3 * base.iteration_s((), batch, ctx) == pytest.approx(plain, abs=0.006)
    assert 1e3 * SpecPerfModel(base, spec).iteration_s((), batch, ctx) == pytest.approx(
        step, abs=0.006)
    assert q.answer == pytest.approx(expected_tokens(accept, k) * plain / step, rel=1e-9)
    assert spec.expected_tokens == pytest.approx(expected_tokens(accept, k))


def _check_tier(q, model, gpu, tp):
    prefix = _num(r"finds its first ([\d,]+) tokens", q.prompt, int)
    gb_s = _num(r"all at once, at ([\d.]+) GB/s", q.prompt)
    design = Design(model=model, gpu=gpu, tp=tp, kv_offload_gb=100)
    assert gb_s == h2d_gb_s(gpu) == design.kv_offload().h2d_gb_s
    # the seconds the simulator charges a copy (tests/test_serving_kv_offload.py): its tokens'
    # bytes on one GPU over that GPU's PCIe rate
    per_gpu = design.perf().kv_bytes_per_token_per_gpu
    assert q.answer == pytest.approx(1e3 * prefix * per_gpu / (gb_s * 1e9), rel=1e-9)


def _lora_design(q, model, gpu, tp):
    """The design a LoRA slots question describes (as many adapters as slots)."""
    rank = _num(r"rank R = (\d+) on", q.prompt, int)
    slots = _num(r"max_loras = (\d+) adapters", q.prompt, int)
    return Design(model=model, gpu=gpu, tp=tp, lora_adapters=slots, max_loras=slots,
                  lora_rank=rank, lora_targets="attention"), rank, slots


def _check_lora(q, model, gpu, tp):
    design, rank, slots = _lora_design(q, model, gpu, tp)
    perf = design.perf()
    # the tokens the simulator's KV cache loses to the slots (tests/test_serving_lora.py), and
    # an adapter's bytes as the library counts them on the attention's modules
    assert q.answer == slots_tokens(perf, design.lora())
    one = adapter_bytes_per_gpu(MODELS[model], rank, tp=tp, targets="attention")
    assert q.answer == -int(-(slots * one) // perf.kv_bytes_per_token_per_gpu)
    assert f"= {one / 1e6:,.2f} MB an adapter a GPU" in q.explanation


SYSTEM_CHECKS = {"lora_slots": _check_lora, "mg1_wait": _check_mg1, "littles_law": _check_little,
                 "goodput_per_gpu": _check_goodput, "prefix_cache": _check_prefix,
                 "kv_move": _check_kv_move, "recovery": _check_recovery,
                 "spec_gain": _check_spec, "tier_copy": _check_tier}


def test_grading_numbers_counts_and_the_slo_question():
    q = sd.Question("kv_capacity", "", 100_000, "figure", "", "hint", unit="tokens",
                    rel_tolerance=0.005)
    assert sd.grade(q, "100,400 tokens")[0] and sd.grade(q, 99_600)[0]
    ok, says = sd.grade(q, "101000")
    assert not ok and "too high" in says and "100,000" not in says
    assert not sd.grade(q, "lots")[0] and not sd.grade(q, "")[0]
    c = sd.Question("kv_per_token", "", 131_072, "count", "", "hint", unit="bytes")
    assert sd.grade(c, "131072")[0] and not sd.grade(c, "131073")[0]
    s = sd.Question("slo", "", "tpot", "slo", "", "hint",
                    accepted=frozenset({"tp", "gpu"}))
    assert sd.grade(s, "TPOT; double tp")[0]
    assert sd.grade(s, "tpot, gpu")[0]
    ok, says = sd.grade(s, "tpot, max_batch")
    assert not ok and "queue" in says
    assert not sd.grade(s, "tpot")[0]
    assert not sd.grade(s, "ttft, tp")[0]
    assert not sd.grade(s, "none")[0]
    n = sd.Question("slo", "", "none", "slo", "", "hint",
                    accepted=frozenset({"none"}))
    assert sd.grade(n, "none")[0] and not sd.grade(n, "ttft, tp")[0]


def test_wrong_feedback_never_gives_the_answer(many):
    for d in many[:100]:
        for q in d.questions:
            wrong = "ttft, tp" if q.grading == "slo" and q.answer != "ttft" else (
                "none" if q.grading == "slo" else str(q.answer * 3))
            ok, says = d.check(q.id, wrong)
            assert not ok
            assert not sd.leaks(q, says), (d.number, q.id, says)
            right = (q.answer if q.answer == "none" else f"{q.answer} {min(q.accepted)}") \
                if q.grading == "slo" else str(q.answer)
            assert d.check(q.id, right)[0], (d.number, q.id, right)


def test_bad_input():
    for n in (-1, 10**9, 1.5, True, "3"):
        with pytest.raises(InputError, match="n must be a whole number"):
            sd.serving_drill(n)
    with pytest.raises(InputError, match="count must be"):
        sd.serving_drill_set(1, 0)
    with pytest.raises(InputError, match="question_id"):
        sd.serving_drill(1).check("bill", "3")


def test_drills_command_serving(capsys):
    assert main(["drills", "--serving", "--first", "3", "--count", "2", "--answers"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Serving drill 3 ") and "Serving drill 4 " in out
    assert "ANSWER KEY" in out and out.count("answer: ") == 2 * sd.PER_DRILL


# ---------------------------------------------------------------------------- setups


def _serve(design, prompts, outputs, arrivals=None, hashes=None, hash_block=0, faults=(),
           resilience=None):
    """A run of these requests on ``design`` (``hashes``: each request's prefix-block hashes)."""
    n = len(prompts)
    offsets = values = None
    if hashes is not None:
        offsets = np.cumsum([0] + [len(h) for h in hashes]).astype(np.int64)
        values = np.asarray([v for h in hashes for v in h], dtype=np.int64)
    req = Requests(np.asarray(np.zeros(n) if arrivals is None else arrivals, dtype=float),
                   np.asarray(prompts, dtype=np.int64), np.asarray(outputs, dtype=np.int64),
                   np.zeros(n, dtype=np.int16), hash_offsets=offsets, hash_values=values,
                   meta={"hash_block_tokens": hash_block} if hash_block else {})
    return simulate(req, design, faults=faults, resilience=resilience)


def _all_served(run):
    assert not run.reasons, run.reasons                  # nothing refused at the door
    assert (run.status == COMPLETED).all()


def _setup_largest_batch(q, design, m):
    cache, block, prompt, output, cap = (int(x.replace(",", "")) for x in
                                         re.findall(r"\d[\d,]*", q.prompt)[:5])
    assert prompt + output <= m.max_context
    assert q.answer == largest_batch(cache, prompt, output, block, cap)
    # the cache printed is the replica's, rounded to a thousand tokens
    assert abs(cache - build(design).kv_blocks_per_replica * block) <= 500 + block
    run = _serve(replace(design, max_batch=cap), [prompt] * q.answer, [output] * q.answer)
    _all_served(run)


def _setup_decode_batch(q, design, m):
    """A step-time or all-reduce question's batch: that many requests decoding at that context
    (the all-reduce question's at 512 tokens), all in the cache at once."""
    batch = int(re.search(r"(\d+) requests", q.prompt).group(1))
    found = re.search(r"requests of ([\d,]+) tokens of context", q.prompt)
    context = int(found.group(1).replace(",", "")) if found else 512
    assert batch <= design.batch_cap() and context < m.max_context
    run = _serve(design, [context - 15] * batch, [16] * batch)     # the last step at context
    _all_served(run)
    assert run.preemptions.sum() == 0
    PerfModel(m.name, design.gpu, tp=design.tp).iteration_s((), batch, batch * context)


def _setup_slo(q, design, m):
    batch, context, budget, prompt, output, *_ = _slo_setup(q)
    # the whole prompt is prefilled in one step beside the batch's decode tokens
    assert prompt + batch <= budget and batch + 1 <= design.batch_cap()
    assert prompt + output <= m.max_context and context < m.max_context
    d = replace(design, max_batched_tokens=budget)
    blocks = build(d).kv_blocks_per_replica
    assert batch * -(-(context + 1) // 16) + -(-(prompt + output) // 16) <= blocks
    run = _serve(d, [context - 15] * batch + [prompt], [64] * batch + [output],
                 arrivals=[0.0] * batch + [0.05])
    _all_served(run)


def _setup_mg1(q, *_):
    rate = _num(r"stream at ([\d.]+) a second", q.prompt)
    mean = _num(r"average (\d+) ms", q.prompt) / 1e3
    cv = _num(r"variation of ([\d.]+)\.", q.prompt)
    assert 1e3 * mg1(rate, [mean * (1 - cv), mean * (1 + cv)]).wait_s == pytest.approx(q.answer)


def _design_of(name, model, gpu):
    """The Design a goodput question's printed name describes."""
    if found := re.fullmatch(r"(\d+) x TP(\d+)", name):
        n, tp = map(int, found.groups())
        return Design(model=model, gpu=gpu, tp=tp, replicas=n)
    if found := re.fullmatch(r"split P(\d+):D(\d+) TP(\d+)", name):
        p, d, tp = map(int, found.groups())
        return Design(model=model, gpu=gpu, tp=tp, replicas=0, prefill_replicas=p,
                      decode_replicas=d)
    p, ptp, d, dtp = map(int, re.fullmatch(r"split P(\d+) TP(\d+) : D(\d+) TP(\d+)",
                                           name).groups())
    return Design(model=model, gpu=gpu, tp=min(ptp, dtp), replicas=0, prefill_replicas=p,
                  decode_replicas=d, prefill_tp=ptp, decode_tp=dtp)


def _setup_goodput(q, design, m):
    a = re.search(r"goodput\): (.+?) of ([\w.-]+) on ([\w.-]+), ([\d.]+) requests", q.prompt)
    b = re.search(r"the prefill/decode (split .+?) \(P prefill.*?shown\), ([\d.]+) a second",
                  q.prompt)
    model, gpu = a.group(2), a.group(3)
    assert gpu == design.gpu
    per = []
    for name, rate in ((a.group(1), a.group(4)), (b.group(1), b.group(2))):
        d = _design_of(name, model, gpu)
        assert d.name == name
        build(d)                                       # the simulator builds it
        per.append(float(rate) / d.gpus)
    assert q.answer == pytest.approx(max(per))


def _setup_prefix(q, design, m):
    shared = _num(r"same ([\d,]+)-token system prompt", q.prompt, int)
    block = _num(r"blocks of (\d+) tokens", q.prompt, int)
    prompt = _num(r"A ([\d,]+)-token prompt", q.prompt, int)
    assert prompt + sd.PROMPT_ROOM <= m.max_context
    hashes = [[b if (b + 1) * block <= shared else 10**6 * who + b
               for b in range(prompt // block)] for who in (1, 2)]
    # the second request arrives long after the first has finished and left its blocks
    run = _serve(design, [prompt, prompt], [sd.PROMPT_ROOM] * 2, arrivals=[0.0, 600.0],
                 hashes=hashes, hash_block=block)
    _all_served(run)
    assert run.prefix_hit_tokens == prompt - q.answer


def _setup_kv_move(q, design, m):
    tp_p = _num(r"prefill replica of TP(\d+)", q.prompt, int)
    tp_d = _num(r"decode replica of TP(\d+)", q.prompt, int)
    tokens = _num(r"a ([\d,]+)-token prompt", q.prompt, int)
    split = Design(model=m.name, gpu=design.gpu, tp=tp_p, replicas=0, prefill_replicas=1,
                   decode_replicas=1, prefill_tp=tp_p, decode_tp=tp_d)
    run = _serve(split, [tokens], [sd.PROMPT_ROOM])
    _all_served(run)


def _setup_fp8(q, *_):
    name = next(n for n in MODELS if q.prompt.startswith(n + " "))
    tp = _num(r"TP(\d+) replica", q.prompt, int)
    gpu = re.search(r"replica on ([\w.-]+) hold", q.prompt).group(1)
    pm = PerfModel(name, gpu, tp=tp, dtype="fp8")           # FP8 runs there, and it fits
    assert q.answer == pytest.approx(pm.weights_bytes_per_gpu / 1e9)


def _setup_expert(q, *_):
    name = next(n for n in ("mixtral-8x7b", "qwen3-30b-a3b") if q.prompt.startswith(n))
    n = _num(r"runs (\d+) request", q.prompt, int)
    PerfModel(name, "h200", tp=2).iteration_s((), n, n * 512)


def _setup_spec(q, design, m):
    """The speculating replica builds and serves the batch decoding at that context."""
    method, k, accept, batch, context, *_ = _spec_setup(q)
    assert batch <= design.batch_cap() and context < m.max_context
    d = design.with_(spec_method=method, spec_tokens=k, spec_accept=accept)
    _all_served(_serve(d, [context - 15] * batch, [16] * batch))


def _setup_tier(q, design, m):
    """The copy the question describes, run: an HBM cache that holds one such request (plus a
    block), a 100 GB tier; a prompt with the prefix, then another that evicts its blocks to the
    tier, then the first prefix again. The third finds the whole prefix in the tier, and the
    seconds the simulator charges its copy are the answer."""
    prefix = _num(r"finds its first ([\d,]+) tokens", q.prompt, int)
    prompt = _num(r"A prompt of ([\d,]+) tokens", q.prompt, int)
    assert prefix < prompt and prompt + 512 <= m.max_context
    perf = design.perf()
    need = prompt + 64 + 16
    share = (perf.weights_bytes_per_gpu + perf.activation_reserve_gb * 1e9
             + need * perf.kv_bytes_per_token_per_gpu) / (perf.gpu.memory_gb * 1e9)
    while perf.kv_capacity_tokens(share) < need:
        share += 1e-6
    d = design.with_(gpu_memory_share=share, kv_offload_gb=100)
    first = list(range(prefix // 512))
    other = [10**6 + h for h in first]
    run = _serve(d, [prompt] * 3, [64] * 3, arrivals=[0.0, 600.0, 1200.0],
                 hashes=[first, other, first], hash_block=512)
    _all_served(run)
    assert run.prefix_cpu_hit_tokens == prefix
    assert 1e3 * kv_tiers(run).load_s == pytest.approx(q.answer, rel=1e-9)


def _setup_lora(q, design, m):
    """The replica with those slots builds with the cache that much smaller, and serves a
    request of each adapter."""
    lora, _, slots = _lora_design(q, m.name, design.gpu, design.tp)
    blocks = build(design).kv_blocks_per_replica
    cap = lora.perf().kv_capacity_tokens()
    assert build(lora).kv_blocks_per_replica == (cap - q.answer) // 16 < blocks
    n = max(2 * slots, 4)
    _all_served(_serve(lora, [256] * n, [32] * n, arrivals=[0.01 * i for i in range(n)]))


SETUPS = {"lora_slots": _setup_lora, "spec_gain": _setup_spec, "tier_copy": _setup_tier,
          "largest_batch": _setup_largest_batch, "step_time": _setup_decode_batch,
          "allreduce_bytes": _setup_decode_batch, "slo": _setup_slo, "mg1_wait": _setup_mg1,
          "goodput_per_gpu": _setup_goodput, "prefix_cache": _setup_prefix,
          "kv_move": _setup_kv_move, "fp8_weights": _setup_fp8, "expert_reads": _setup_expert}


@pytest.mark.slow
def test_every_drill_setup_is_one_the_simulator_takes(many):
    """Drills 0 to 999: the replica each describes builds, and every request, batch, design or
    restart a question sets up is admitted and served by the simulator (or timed by the
    performance model, for a step), with the answer the library gives."""
    checked = Counter()
    for d in many:
        model, gpu, tp = _facts_of(d)
        design = Design(model=model, gpu=gpu, tp=tp)
        build(design)
        for q in d.questions:
            if q.id in SETUPS:
                SETUPS[q.id](q, design, MODELS[model])
                checked[q.id] += 1
    assert set(checked) == set(SETUPS)
    # Llama 2 7B's 4,096-token context is among the setups checked
    assert any(_facts_of(d)[0] == "llama-2-7b" and any(q.id == "slo" for q in d.questions)
               for d in many)
