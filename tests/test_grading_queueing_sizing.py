"""The checks of exercises 13 (queueing) and 14 (sizing): the solutions pass on the visible and
the drawn cases, an untouched stub is not implemented, each likely mistake fails with its hint,
and a table of the visible cases' answers fails on the cases drawn for a grading.

The right answers are the solutions' own functions, run here as plain callables (the boundary
and the grader's evaluation are tested in tests/test_grading.py and tests/test_exercises.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_grading_exercises import fails, solution

from schedatrix.classroom.checking import checks_queueing as cq
from schedatrix.classroom.checking import checks_sizing as cz
from schedatrix.classroom.checking.check_support import drawing
from schedatrix.serving.studies.queueing import mg1


def _stub(*args):
    raise NotImplementedError("write it")


@pytest.fixture(scope="module")
def q():
    return solution("13_queueing")


@pytest.fixture(scope="module")
def z():
    return solution("14_sizing")


def test_the_solutions_pass_on_the_cases_drawn_for_three_gradings(q, z):
    for seed in (1, 2, 20_261_204):
        with drawing(seed):
            assert cq.check_pk_wait(q["pk_wait_s"]).endswith("Well done!")
            assert cq.check_max_rate(q["max_rate_rps"]).endswith("Well done!")
            assert cz.check_weight_reads(z["decode_weight_bytes"]).endswith("Well done!")
            assert cz.check_batch_for_tpot(z["largest_batch_for_tpot"]).endswith("Well done!")


def test_untouched_stubs_are_not_implemented():
    for check in (cq.check_pk_wait, cq.check_max_rate, cz.check_weight_reads,
                  cz.check_batch_for_tpot):
        with pytest.raises(NotImplementedError):
            check(_stub)


def test_the_cases_cover_every_service_kind_and_both_sides_of_the_wall():
    cases = cq._wait_cases()
    kinds = {what.rpartition(": ")[2] for _, _, what in cases[7:]}
    assert kinds == set(cq.KINDS)
    rho = [rate * np.mean(s) for rate, s, _ in cases]
    assert sum(r >= 1 for r in rho) >= 4 and sum(r > 0.9 for r in rho if r < 1) >= 2
    # the answers are the library's: the M/D/1 and two-point cases by hand
    assert mg1(5.0, np.array([0.1] * 50)).wait_s == pytest.approx(0.05)
    assert mg1(8.0, np.array([0.05, 0.15])).wait_s == pytest.approx(8 * 0.0125 / 0.4)


# ---------------------------------------------------------------- exercise 13


def _moments(s):
    s = np.asarray(s, dtype=float)
    return s.mean(), (s * s).mean()


def test_pk_wait_mistakes_fail_with_their_hints(q):
    right = q["pk_wait_s"]

    def md1(rate, s):
        m1, _ = _moments(s)
        return None if rate * m1 >= 1 else rate * m1 * m1 / (2 * (1 - rate * m1))

    fails(cq.check_pk_wait, md1, match="mean of the squared service times")
    fails(cq.check_pk_wait, lambda r, s: None if right(r, s) is None else right(r, s)
          + _moments(s)[0], match="time in the system")
    fails(cq.check_pk_wait, lambda r, s: None if right(r, s) is None else r * right(r, s),
          match="Little's law")
    fails(cq.check_pk_wait, lambda r, s: None if right(r, s) is None else right(r, s) * 1e3,
          match="milliseconds")

    def no_wall(rate, s):
        m1, m2 = _moments(s)
        return None if rate * m1 >= 1 else rate * m2 / 2

    fails(cq.check_pk_wait, no_wall, match="no wall")

    def n_minus_1(rate, s):
        m1, _ = _moments(s)
        if rate * m1 >= 1:
            return None
        return rate * (np.var(s, ddof=1) + m1 * m1) / (2 * (1 - rate * m1))

    fails(cq.check_pk_wait, n_minus_1, match="divide by n, not n - 1")
    fails(cq.check_pk_wait, lambda r, s: right(r, s) if right(r, s) is not None else math.inf,
          match="expected None .* no steady state")
    msg = fails(cq.check_pk_wait, lambda r, s: 1.0, match="expected 0.05 s")
    assert "rho 0.5" in msg and "by hand" in msg


def test_max_rate_mistakes_fail_with_their_hints(q):
    fails(cq.check_max_rate, lambda s, w: 1 / _moments(s)[0], match="wait is infinite")

    def md1(s, w):
        m1, _ = _moments(s)
        return 2 * w / (m1 * m1 + 2 * w * m1)

    fails(cq.check_max_rate, md1, match="spread of the sample")
    fails(cq.check_max_rate, lambda s, w: 0.5 * q["max_rate_rps"](s, w),
          match="A higher rate still waits within the target")
    fails(cq.check_max_rate, lambda s, w: -1.0, match="above 0 and below 1 / E")


def test_a_bisection_to_full_precision_passes(q):
    def bisect(s, w):
        m1, _ = _moments(s)
        low, high = 0.0, 1 / m1
        for _ in range(200):
            mid = (low + high) / 2
            wait = q["pk_wait_s"](mid, s)
            low, high = (mid, high) if wait is not None and wait <= w else (low, mid)
        return low

    assert cq.check_max_rate(bisect).endswith("Well done!")


def test_tables_of_the_visible_cases_fail_on_the_drawn_ones(q, z):
    waits = {(r, tuple(s)): q["pk_wait_s"](r, s) for r, s, _ in cq._wait_cases()}
    rates = {(tuple(s), w): q["max_rate_rps"](s, w) for s, w, _ in cq._rate_cases()}
    reads = {c[:3]: z["decode_weight_bytes"](cz.model_facts(c[0]), c[1], c[2])
             for c in cz._reads_cases()}
    batches = {c[:8]: cz.roofline_batch_for_tpot(*c[:8]) for c in cz._sizing_cases()}
    tables = ((cq.check_pk_wait, lambda r, s: waits[(r, tuple(s))]),
              (cq.check_max_rate, lambda s, w: rates[(tuple(s), w)]),
              (cz.check_weight_reads, lambda m, d, b: reads[(m["name"], d, b)]),
              (cz.check_batch_for_tpot, lambda m, g, d, tp, c, slo, sh, cap:
               batches[(m["name"], g["name"], d, tp, c, slo, sh, cap)]))
    for check, table in tables:
        assert check(table).endswith("Well done!")            # the visible cases: all in it
        with drawing(424_242), pytest.raises(AssertionError, match="KeyError"):
            check(table)


# ---------------------------------------------------------------- exercise 14


def _bytes(z, **change):
    right = z["decode_weight_bytes"]

    def wrong(m, dtype, batch):
        return change["how"](m, dtype, batch, right(m, dtype, batch))

    return wrong


def test_weight_read_mistakes_fail_with_their_hints(z):
    head = lambda m: m["vocab"] * m["hidden"]  # noqa: E731
    per = {"bf16": 2, "fp8": 1}
    fails(cz.check_weight_reads, _bytes(z, how=lambda m, d, b, r: r + 2 * head(m)),
          match="rows of the embedding")
    fails(cz.check_weight_reads, _bytes(z, how=lambda m, d, b, r: r - head(m) * (2 - per[d])),
          match="LM head in BF16")

    def all_experts(m, dtype, batch):
        return z["decode_weight_bytes"](m, dtype, 10**6)

    fails(cz.check_weight_reads, all_experts, match="only the experts its tokens picked")

    def picks(m, dtype, batch):
        got = z["decode_weight_bytes"](m, dtype, batch)
        if not m["experts"]:
            return got
        e, k = m["experts"], m["experts_per_token"]
        extra = min(e, k * batch) - e * (1 - (1 - k / e) ** batch)
        return got + m["layers"] * extra * 3 * m["hidden"] * m["expert_ffn"] * per[dtype]

    fails(cz.check_weight_reads, picks, match="read once")
    fails(cz.check_weight_reads, lambda m, d, b: z["decode_weight_bytes"](m, "bf16", b),
          match="what does FP8 store in one")


def test_batch_for_tpot_mistakes_fail_with_their_hints(z):
    right = z["largest_batch_for_tpot"]
    fails(cz.check_batch_for_tpot, lambda m, g, d, tp, *a: right(m, g, d, 1, *a),
          match="Each of the tp GPUs reads only its share")
    fails(cz.check_batch_for_tpot, lambda m, g, d, tp, c, slo, sh, cap:
          right(m, g, d, tp, c, slo, sh, 10**9), match="more than the .* the KV cache holds")

    def off_by_one(*args):
        b = right(*args)
        return None if b is None else b - 1

    fails(cz.check_batch_for_tpot, off_by_one, match="more requests still fit the SLO")
    fails(cz.check_batch_for_tpot, lambda *a: 1.5, match="whole number")
    fails(cz.check_batch_for_tpot, lambda *a: 1, match="expected")


def test_the_sizing_cases_are_bound_by_the_slo_and_by_the_kv_cache_both():
    bound = {"none": 0, "kv": 0, "slo": 0}
    for c in cz._sizing_cases():
        want = cz.roofline_batch_for_tpot(*c[:8])
        bound["none" if want is None else "kv" if want == c[7] // c[4] else "slo"] += 1
    assert min(bound.values()) >= 3, bound


def test_the_roofline_reads_the_librarys_bytes():
    # the reference is the library's weight_bytes_read plus the KV cache in the precision
    from schedatrix.serving.perf.catalog import GPUS, MODELS
    from schedatrix.serving.perf.model import PerfModel

    perf = PerfModel("mixtral-8x7b", "h100-80gb", tp=2, dtype="fp8")
    m = MODELS["mixtral-8x7b"]
    want = (perf.weight_bytes_read(64) + 64 * 1000 * m.kv_bytes_per_token_in("fp8")) / 2 / (
        0.85 * GPUS["h100-80gb"].hbm_gb_s * 1e9)
    assert cz.roofline_step_s("mixtral-8x7b", "h100-80gb", "fp8", 2, 64, 1000, 0.85) == \
        pytest.approx(want, rel=1e-6)


# ---------------------------------------------------------------- the difficulty curve


def test_the_curve_holds_every_serving_exercise_once_and_the_readmes_print_it(tmp_path):
    import re
    from pathlib import Path

    from schedatrix.classroom.checking.exercises import EXERCISES
    from schedatrix.classroom.releases.curve import SERVING_CURVE, curve_table
    from schedatrix.classroom.releases.release import write_release

    root = Path(__file__).resolve().parents[1]
    serving = sorted(n for n in EXERCISES if "08" <= n[:2] <= "14")
    assert sorted(s.exercise for s in SERVING_CURVE) == serving
    assert curve_table() in root.joinpath("README.md").read_text()
    write_release(tmp_path / "class", root / "solutions", root / "notebooks")
    assert curve_table() in (tmp_path / "class" / "README.md").read_text()
    # each lesson and section it names is there
    for step in SERVING_CURVE:
        named = re.findall(r"(\d\d) \(([^)]*)\)", step.lesson)
        assert named, step.lesson
        for lesson, sections in named:
            nb = next(root.joinpath("notebooks").glob(f"{lesson}_*.ipynb")).read_text()
            numbers = [int(k) for k in re.findall(r"\d+", sections)]
            if " to " in sections:
                numbers = list(range(numbers[0], numbers[-1] + 1))
            for k in numbers:
                assert f"## {k}. " in nb, (step.exercise, lesson, k)


# ---------------------------------------------------------------- the answers' claims
#
# Each closing question's answer says why; the runs below change the cause and hold the
# sentence to what moves (as tests/test_lesson_claims.py does for the lessons).


def _answer_says(name: str, sentence: str) -> None:
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "solutions" / f"{name}.ipynb")
                    .read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"]
                     if "solution" in c["metadata"].get("tags", []))
    folded = " ".join(text.replace("#", " ").split())
    assert " ".join(sentence.split()) in folded, f"{name} no longer says: {sentence}"


def test_12_no_router_brings_the_p95_down_while_first_turns_are_over_5_percent():
    from schedatrix.serving.cluster.deployment import Design
    from schedatrix.serving.figures.metrics import figures
    from schedatrix.serving.load.prefixes import document_sessions
    from schedatrix.serving.sim.simulate import simulate

    _answer_says("12_router", "A quarter of the requests (400 of 1,600) are a document's first "
                              "turn")
    _answer_says("12_router", "with 40 turns, 2.5%, and the p95 falls to a cache hit's")
    for sessions, turns, share, slow in ((400, 4, 0.25, True), (100, 16, 0.0625, True),
                                         (40, 40, 0.025, False)):
        docs = document_sessions(sessions=sessions, turns=turns)
        assert sessions / len(docs) == share
        for router in ("prefix", "session"):
            p95 = figures(simulate(docs, Design(replicas=4, router=router))).ttft_p95
            assert (p95 > 0.2) == slow, (sessions, router, p95)


def test_13_batching_breaks_the_m_g_1_queue_and_longer_runs_come_nearer():
    from schedatrix.serving.cluster.deployment import Design
    from schedatrix.serving.figures.metrics import figures
    from schedatrix.serving.load import Load, generate
    from schedatrix.serving.sim.simulate import simulate
    from schedatrix.serving.studies.queueing import service_s

    _answer_says("13_queueing", "so it carries several times 1 / E[S] with short waits")
    _answer_says("13_queueing", "longer runs come nearer")
    lengths = {"input_len": "lognormal:1000,0.8", "output_len": "lognormal:150,0.8"}
    one = Design(max_batch=1)
    drawn = generate(Load(rate_rps=1.0, **lengths), seed=1, requests=20_000)
    service = service_s(one, drawn.input_tokens, drawn.output_tokens)
    rate = 4 / service.mean()                 # four times what one at a time can serve
    assert mg1(rate, service).rho >= 1
    batched = figures(simulate(generate(Load(rate_rps=rate, **lengths), 0, requests=20_000),
                               Design()))
    assert batched.queue_mean < 0.1
    target = cq.pk_max_rate_rps(service.tolist(), 8.0)
    means = [np.mean([figures(simulate(generate(Load(rate_rps=target, **lengths), seed,
                                                requests=n), one)).queue_mean
                      for seed in range(3)]) for n in (20_000, 100_000)]
    assert abs(means[1] - 8.0) < abs(means[0] - 8.0)


def test_14_an_moe_step_reads_every_expert_at_a_tpot_sized_batch_and_the_ceiling():
    from schedatrix.serving.perf.catalog import GPUS, MODELS
    from schedatrix.serving.perf.moe import expected_experts

    _answer_says("14_sizing", "Mixtral's step reads 99% of its expert weights from batch 16")
    _answer_says("14_sizing", "Qwen3's 128 experts, 8 a token, take longer to cover (64% at "
                              "batch 16)")
    _answer_says("14_sizing", "80 GB at 85% of 3,350 GB/s is 28 ms")
    mix, qwen = MODELS["mixtral-8x7b"], MODELS["qwen3-30b-a3b"]
    assert round(float(expected_experts(mix.experts, mix.experts_per_token, 16)) / mix.experts,
                 2) == 0.99
    assert round(float(expected_experts(qwen.experts, qwen.experts_per_token, 16))
                 / qwen.experts, 2) == 0.64
    assert expected_experts(qwen.experts, qwen.experts_per_token, 128) / qwen.experts > 0.99
    h100 = GPUS["h100-80gb"]
    assert round(h100.memory_gb / (0.85 * h100.hbm_gb_s) * 1e3) == 28
    # below the ceiling the SLO binds: the roofline's batch at 20 ms is under the KV cache's
    case = next(c for c in cz._sizing_cases() if c[0] == "llama-3.1-8b" and c[1] == "h100-80gb")
    at_20 = cz.roofline_batch_for_tpot(*case[:5], 0.020, case[6], case[7])
    assert at_20 < case[7] // case[4] == cz.roofline_batch_for_tpot(*case[:8])
