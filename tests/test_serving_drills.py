"""Serving drills: reproducible by number, no leaks, balanced answers, answers that agree with
the library's performance model, feedback that never gives the answer."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import pytest

from schedatrix.cli import main
from schedatrix.course.drills import serving as sd
from schedatrix.errors import InputError
from schedatrix.serving.cluster.faults import Resilience
from schedatrix.serving.perf.catalog import GPUS, MODELS
from schedatrix.serving.perf.kernels import allreduce_s
from schedatrix.serving.perf.model import PerfModel
from schedatrix.serving.replica.kv_cache import largest_batch

COUNT = 900


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
            "expert_reads", "fp8_weights"} <= set(asked)
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
            elif q.id in SYSTEM_CHECKS:
                SYSTEM_CHECKS[q.id](q, model, gpu, tp)
    assert all(seen[k] for k in sd.SERVING_KINDS)


def _num(pattern, text, kind=float):
    return kind(re.search(pattern, text).group(1).replace(",", ""))


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
    a = re.search(r"SLOs \(DistServe's goodput\): (.+?) of [\w.-]+, ([\d.]+) requests", q.prompt)
    b = re.search(r"the prefill/decode split (.+?) \(P prefill.*?shown\), ([\d.]+) a second",
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
    down = _num(r"back (\d+) s after the crash", q.prompt, int)
    rate = _num(r"at ([\d.]+) GB/s", q.prompt)
    per_gpu = PerfModel(model, gpu, tp=tp).weights_bytes_per_gpu
    assert q.answer == pytest.approx(down + per_gpu / (Resilience(weight_load_gb_s=rate)
                                                       .weight_load_gb_s * 1e9))
    assert f"({per_gpu / 1e9:,.2f} GB)" in q.prompt


SYSTEM_CHECKS = {"mg1_wait": _check_mg1, "littles_law": _check_little,
                 "goodput_per_gpu": _check_goodput, "prefix_cache": _check_prefix,
                 "kv_move": _check_kv_move, "recovery": _check_recovery}


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
