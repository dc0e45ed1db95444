"""Serving drills: reproducible by number, no leaks, balanced answers, answers that agree with
the library's performance model, feedback that never gives the answer."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import pytest

from schedatrix.cli import main
from schedatrix.course import serving_drills as sd
from schedatrix.errors import InputError
from schedatrix.serving.perf.catalog import GPUS, MODELS
from schedatrix.serving.perf.kernels import allreduce_s
from schedatrix.serving.perf.model import PerfModel
from schedatrix.serving.replica.kv_cache import largest_batch

COUNT = 300


@pytest.fixture(scope="module")
def many():
    return sd.serving_drill_set(0, COUNT)


def test_same_number_same_drill_and_different_numbers_differ():
    assert sd.serving_drill(42).text(answers=True) == sd.serving_drill(42).text(answers=True)
    assert sd.serving_drill(42).text() != sd.serving_drill(43).text()


def test_a_drill_is_the_same_in_another_process():
    code = ("from schedatrix.course.serving_drills import serving_drill; "
            "print(serving_drill(1234).text(answers=True))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == sd.serving_drill(1234).text(answers=True)
    assert out.startswith("Serving drill 1234 (seed 'schedatrix-serving-drill-1234')")


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
             if any(q.grading == "number" for q in d.questions))
    q = next(q for q in d.questions if q.grading == "number")
    assert sd.leaks(q, f"it is {q.answer * 1.003:,.2f} or so")
    assert not sd.leaks(q, f"it is {q.answer * 1.5:,.2f}")
    slo = sd.ServingQuestion("slo", "", "tpot", "slo", "", "", "")
    assert sd.leaks(slo, "8.7 ms is over the TPOT SLO of 8 ms")


def test_every_kind_is_asked_in_a_fair_share_of_drills_in_varied_order(many):
    asked = Counter(q.id for d in many for q in d.questions)
    assert set(asked) == set(sd.SERVING_KINDS)
    for kind, n in asked.items():
        assert n >= 0.12 * COUNT, (kind, n)
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
    for kind in ("largest_batch", "kv_per_token"):
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
    assert all(seen[k] for k in sd.SERVING_KINDS)


def test_grading_numbers_counts_and_the_slo_question():
    q = sd.ServingQuestion("kv_capacity", "", 100_000, "number", "tokens", "", "hint",
                           rel_tolerance=0.005)
    assert sd.grade(q, "100,400 tokens")[0] and sd.grade(q, 99_600)[0]
    ok, says = sd.grade(q, "101000")
    assert not ok and "too high" in says and "100,000" not in says
    assert not sd.grade(q, "lots")[0] and not sd.grade(q, "")[0]
    c = sd.ServingQuestion("kv_per_token", "", 131_072, "count", "bytes", "", "hint")
    assert sd.grade(c, "131072")[0] and not sd.grade(c, "131073")[0]
    s = sd.ServingQuestion("slo", "", "tpot", "slo", "", "", "hint",
                           accepted=frozenset({"tp", "gpu"}))
    assert sd.grade(s, "TPOT; double tp")[0]
    assert sd.grade(s, "tpot, gpu")[0]
    assert not sd.grade(s, "tpot, max_batch")[0]
    assert not sd.grade(s, "tpot")[0]
    assert not sd.grade(s, "ttft, tp")[0]
    assert not sd.grade(s, "none")[0]
    n = sd.ServingQuestion("slo", "", "none", "slo", "", "", "hint",
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
