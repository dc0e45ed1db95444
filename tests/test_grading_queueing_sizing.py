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
