"""The checks: right answers pass, each kind of wrong answer fails with a useful message; the
boundary carries plain data only; the registry and the template rule."""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import schedatrix as s
from schedatrix.classroom import grading as cells
from schedatrix.classroom.checking import boundary, exercises
from schedatrix.classroom.checking import checks as grading
from schedatrix.classroom.checking.checker import run_session

# ---------------------------------------------------------------- learner-style implementations


def score_card(true_tok_s, rent_per_month):
    return true_tok_s * 2_628_000 / rent_per_month / 1_000_000


def greedy(rates, target):
    order = sorted(range(len(rates)), key=lambda i: (-rates[i], i))
    taken, total = [], 0.0
    for i in order:
        taken.append(i)
        total += rates[i]
        if total >= target:
            break
    return taken


def evict(scores, share):
    k = math.floor(share * len(scores) + 1e-9)
    return sorted(range(len(scores)), key=lambda i: (scores[i], i))[:k]


def wrong(true_tok_s, evicted):
    ordered = sorted(true_tok_s)
    n = len(ordered)
    median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
    return sum(1 for i in evicted if true_tok_s[i] >= median)


def diagnose(month):
    sig = month.signature
    if sig == "111":
        return None, None
    check = ("capacity", "convergence", "evictions")[sig.index("0")]
    return check, {"capacity": "card_class", "convergence": "shape", "evictions": "window"}[check]


def fix(plan):
    check, _ = diagnose(s.simulate(plan))
    if check == "capacity":
        return plan.with_knobs(card_class="flagship")
    if check == "convergence":
        return plan.with_knobs(cards=12)
    return plan.with_knobs(window="day", evict_share=0.10)


# ---------------------------------------------------------------- right answers pass


def test_right_answers_pass_with_one_line_each():
    lines = [grading.check_score(score_card), grading.check_run_set(greedy),
             grading.check_eviction(evict, wrong), grading.check_famous_months(diagnose, fix)]
    assert all("\n" not in line and line.endswith("Well done!") for line in lines)
    assert lines[0].startswith("check_score: all ") and "pass" in lines[0]
    assert lines[3].startswith("check_famous_months: all ")


def test_the_library_passes_its_own_checks():
    lines = [grading.check_score(s.score), grading.check_run_set(s.greedy_run_set),
             grading.check_eviction(s.evict_worst, s.wrong_evictions)]
    assert all("Well done!" in line for line in lines)


def test_success_message_is_deterministic():
    assert grading.check_run_set(greedy) == grading.check_run_set(greedy)


def test_score_rounded_to_three_decimals_passes():
    grading.check_score(lambda r, rent: round(score_card(r, rent), 3))


# ---------------------------------------------------------------- wrong answers fail, specifically


def test_unimplemented_stub_raises_not_implemented():
    def stub(true_tok_s, rent_per_month):
        raise NotImplementedError("write score_card")

    with pytest.raises(NotImplementedError, match="write score_card"):
        grading.check_score(stub)


def test_score_in_tokens_not_millions_fails_with_hint():
    with pytest.raises(AssertionError, match=r"expected 10\.1077.*divide by a million"):
        grading.check_score(lambda r, rent: r * 2_628_000 / rent)


def test_score_with_a_thirty_day_month_fails_with_hint():
    with pytest.raises(AssertionError, match="not 30 days"):
        grading.check_score(lambda r, rent: r * 2_592_000 / rent / 1e6)


def test_score_returning_text_fails():
    with pytest.raises(AssertionError, match=r"returned '10.108': return a number"):
        grading.check_score(lambda r, rent: "10.108")


# ---------------------------------------------------------------- issue 34, item 2: no NaN passes

#: What a poisoned answer holds in place of every number.
POISONS = [float("nan"), float("inf"), float("-inf"), -0.0, 1e308]


def _poisoned(func, value):
    """``func`` with every number of its answers (in lists, tuples, dicts, arrays) replaced by
    ``value``; text, None and bools kept."""
    def poison(x):
        if isinstance(x, (bool, np.bool_)) or x is None or isinstance(x, str):
            return x
        if isinstance(x, (int, float, np.integer, np.floating)):
            return value
        if isinstance(x, np.ndarray):
            return np.full(x.shape, value)
        if isinstance(x, (list, tuple)):
            return type(x)(poison(v) for v in x)
        if isinstance(x, dict):
            return {k: poison(v) for k, v in x.items()}
        return x

    return lambda *args: poison(func(*args))


#: The checks whose answers hold no number (a failing check's name, a knob, a plan, three
#: digits as text): poisoning changes nothing there.
NO_NUMBERS = {"check_famous_months", "check_signature"}


@pytest.mark.parametrize("value", POISONS, ids=repr)
@pytest.mark.parametrize("name", sorted(set(exercises.CHECKS) - NO_NUMBERS))
def test_every_check_fails_nan_infinities_negative_zero_and_a_huge_value(name, value):
    """Each check, given the solution's functions with every number of their answers made NaN,
    an infinity, -0.0 or 1e308, fails with a message (never passes, never crashes): every
    comparison goes through check_support's as_number and close, which refuse what is not
    finite (check_kv_capacity's `abs(got - want) > 1` passed NaN)."""
    from test_grading_exercises import solution

    from schedatrix.classroom.checking.checks import CHECKS as CHECK_FUNCTIONS

    check = exercises.CHECKS[name]
    exercise = next(e for e in exercises.EXERCISES.values() if check in e.checks)
    ns = solution(exercise.name)
    functions = [_poisoned(ns[f], value) for f in check.functions]
    with pytest.raises(AssertionError) as info:
        CHECK_FUNCTIONS[name](*functions)
    if value != value or abs(value) == math.inf:
        assert "finite" in str(info.value) or "return the index" in str(info.value) \
            or "return a list of card indices" in str(info.value), str(info.value)


def test_negative_zero_where_zero_is_right_passes():
    grading.check_score(lambda r, rent: -0.0 if r == 0 else score_card(r, rent))


def test_a_crash_names_the_input():
    def crash(rates, target):
        return [rates.index(max(rates))]  # ValueError on the empty pool, wrong elsewhere

    with pytest.raises(AssertionError, match=r"greedy_run_set\(.*\)"):
        grading.check_run_set(crash)


def test_run_set_with_strict_greater_fails_on_the_exact_hit():
    def strict(rates, target):
        order = sorted(range(len(rates)), key=lambda i: (-rates[i], i))
        taken, total = [], 0.0
        for i in order:
            if total > target:
                break
            taken.append(i)
            total += rates[i]
        return taken

    with pytest.raises(AssertionError, match="One card too many"):
        grading.check_run_set(strict)


def test_run_set_with_ties_broken_by_higher_index_fails():
    def late_ties(rates, target):
        order = sorted(range(len(rates)), key=lambda i: (-rates[i], -i))
        taken, total = [], 0.0
        for i in order:
            taken.append(i)
            total += rates[i]
            if total >= target:
                break
        return taken

    with pytest.raises(AssertionError, match="ties lower index"):
        grading.check_run_set(late_ties)


def test_run_set_that_forgets_the_uncovered_case_fails():
    def drops_all(rates, target):
        got = greedy(rates, target)
        return got if sum(rates[i] for i in got) >= target else []

    with pytest.raises(AssertionError, match=r"expected \[0, 1, 2\]"):
        grading.check_run_set(drops_all)


def test_run_set_order_is_not_graded_but_duplicates_are():
    grading.check_run_set(lambda r, t: sorted(greedy(r, t)))
    with pytest.raises(AssertionError, match="repeated"):
        grading.check_run_set(lambda r, t: greedy(r, t) + greedy(r, t)[:1])


def test_evict_with_round_fails_naming_floor():
    def rounded(scores, share):
        k = round(share * len(scores))
        return sorted(range(len(scores)), key=lambda i: (scores[i], i))[:k]

    with pytest.raises(AssertionError, match="Evict floor"):
        grading.check_eviction(rounded, wrong)


def test_evict_without_float_slack_fails_with_hint():
    def no_slack(scores, share):
        k = math.floor(share * len(scores))
        return sorted(range(len(scores)), key=lambda i: (scores[i], i))[:k]

    with pytest.raises(AssertionError, match="tiny slack"):
        grading.check_eviction(no_slack, wrong)


def test_wrong_evictions_with_strict_median_fails():
    def strict(true_tok_s, evicted):
        ordered = sorted(true_tok_s)
        n = len(ordered)
        median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
        return sum(1 for i in evicted if true_tok_s[i] > median)

    with pytest.raises(AssertionError, match="at or above"):
        grading.check_eviction(evict, strict)


def test_wrong_evictions_with_lower_middle_median_fails():
    def lower(true_tok_s, evicted):
        median = sorted(true_tok_s)[(len(true_tok_s) - 1) // 2]
        return sum(1 for i in evicted if true_tok_s[i] >= median)

    with pytest.raises(AssertionError, match="median true rate is 2.5"):
        grading.check_eviction(evict, lower)


def test_diagnose_naming_the_wrong_check_fails():
    def backwards(month):
        sig = month.signature
        if sig == "111":
            return None, None
        check = ("evictions", "convergence", "capacity")[sig.index("0")]
        return check, "cards"

    with pytest.raises(AssertionError, match="expected 'evictions': digit 3"):
        grading.check_famous_months(backwards, fix)


def test_diagnose_naming_a_knob_that_does_not_repair_fails():
    def bad_knob(month):
        check, knob = diagnose(month)
        return check, ("headroom" if check else None)

    with pytest.raises(AssertionError, match="named the knob 'headroom'"):
        grading.check_famous_months(bad_knob, fix)


def test_fix_that_changes_the_seed_fails():
    def reroll(plan):
        return plan.with_knobs(seed=plan.seed + 1)

    with pytest.raises(AssertionError, match="changed the seed"):
        grading.check_famous_months(diagnose, reroll)


def test_fix_on_the_wrong_knob_fails():
    with pytest.raises(AssertionError, match="turned demand_tok_s|changed the demand"):
        grading.check_famous_months(diagnose, lambda p: p.with_knobs(demand_tok_s=10_000.0))
    with pytest.raises(AssertionError, match="turned headroom"):
        grading.check_famous_months(diagnose, lambda p: p.with_knobs(headroom=0.5))


def test_fix_that_does_not_repair_fails():
    def half_fix(plan):
        check, _ = diagnose(s.simulate(plan))
        if check == "evictions":
            return plan.with_knobs(evict_share=0.30)  # still the hour window
        return fix(plan)

    with pytest.raises(AssertionError, match="Expected a clean month, signature 111"):
        grading.check_famous_months(diagnose, half_fix)


def test_random_months_cover_each_single_incident():
    sigs = [m.signature for m, _ in grading._random_months()]
    for sig in ("111", "011", "101", "110"):
        assert sig in sigs
    assert grading.expected_diagnosis(s.simulate(s.preset("golden-idler").plan)) == "convergence"


# ---------------------------------------------------------------- the boundary: plain data only


def test_plain_data_round_trips_and_other_objects_become_their_repr():
    for value in (1, 2.5, float("inf"), "text", None, True, [1, [2.0, "x"]], (1, 2)):
        assert boundary.decode(boundary.encode(value)) == value
    arr = boundary.decode(boundary.encode(np.array([3, 1, 2], dtype=np.int32)))
    assert arr.dtype == np.int32 and arr.tolist() == [3, 1, 2]
    assert boundary.encode(np.int64(7)) == 7 and boundary.encode(np.float64(0.5)) == 0.5

    class Weird:
        def __repr__(self):
            return "<weird>"

    back = boundary.decode(boundary.encode(Weird()))
    assert isinstance(back, boundary.Opaque) and repr(back) == "<weird>"
    month = boundary.decode(boundary.encode(s.simulate(s.preset("golden-idler").plan)))
    assert month.signature == "101" and month.plan == s.preset("golden-idler").plan


def test_a_plan_crosses_as_the_knobs_simulate_reads_not_what_to_dict_says():
    class Sneaky(s.Plan):
        def to_dict(self):
            return {**dataclasses.asdict(self), "seed": 0, "demand_tok_s": 60_000.0}

    sneaky = Sneaky(seed=99, demand_tok_s=1_000.0)
    back = boundary.decode(boundary.encode(sneaky))
    assert type(back) is s.Plan and back.seed == 99 and back.demand_tok_s == 1_000.0
    forged = {"plan": {**dataclasses.asdict(s.Plan()), "cards": -1}}
    assert "invalid Plan" in repr(boundary.decode(forged))


def _serve_locally(check: str, functions: dict, answers=()):
    """Run the checker in a thread and the kernel side here, over a socket pair."""
    kernel_end, checker_end = socket.socketpair()
    sessions = []
    thread = threading.Thread(target=lambda: sessions.append(
        run_session(boundary.Channel.over_socket(checker_end))))
    thread.start()
    with boundary.Channel.over_socket(kernel_end) as channel:
        verdict, raised = boundary.serve_check(channel, check, functions, answers)
    thread.join()
    return verdict, raised, sessions[0]


def test_a_check_across_the_boundary_passes_a_right_answer_and_fails_a_wrong_one():
    verdict, _, session = _serve_locally("check_score", {"score_card": score_card})
    assert verdict["verdict"] == "pass" and session.passed and "Well done" in session.message
    verdict, _, session = _serve_locally("check_score",
                                         {"score_card": lambda r, rent: r * 2_628_000 / rent})
    assert verdict["error"] == "AssertionError" and "divide by a million" in verdict["message"]
    assert not session.passed and session.failure.startswith("check_score: AssertionError: ")


def test_a_crash_crosses_as_text_and_the_kernel_keeps_the_exception():
    def stub(true_tok_s, rent_per_month):
        raise NotImplementedError("write score_card")

    verdict, raised, _ = _serve_locally("check_score", {"score_card": stub})
    assert verdict["error"] == "NotImplementedError" and verdict["message"] == "write score_card"
    assert isinstance(raised, NotImplementedError)


def test_the_library_answer_refuses_to_run_during_the_check_and_is_restored_after():
    from schedatrix import score as captured_before  # a reference taken before the check

    answers = exercises.CHECKS["check_score"].answers
    # held as a default, which the check does not follow: the refusal catches the call
    verdict, _, _ = _serve_locally("check_score", {
        "score_card": lambda r, rent, answer=captured_before: answer(r, rent)}, answers)
    assert verdict["verdict"] == "fail"
    assert "called schedatrix.score, the library's own answer" in verdict["message"]
    # held in a closure: named as the library's own function before it is called
    verdict, _, _ = _serve_locally("check_score",
                                   {"score_card": lambda r, rent: captured_before(r, rent)},
                                   answers)
    assert verdict["message"].startswith("score_card is schedatrix.fleet.score.score, the "
                                         "library's own function")

    def swallowed(r, rent):  # catching the refusal does not hide it
        try:
            return s.score(r, rent)
        except RuntimeError:
            return score_card(r, rent)

    verdict, _, _ = _serve_locally("check_score", {"score_card": swallowed}, answers)
    assert "library's own answer" in verdict["message"]
    assert s.score(10_000, 2_600) == pytest.approx(10.1077, abs=1e-4)


def test_every_registered_answer_can_be_refused():
    for check in exercises.CHECKS.values():
        with boundary.refused_answers(check.answers) as hits:
            for answer in check.answers:
                with pytest.raises(RuntimeError, match="the library's own answer"):
                    boundary._resolve(answer)(1)
        assert len(hits) == len(check.answers)
    assert s.evict_worst([3.0, 1.0], 0.5).tolist() == [1]


def test_the_checker_refuses_a_check_of_another_exercise_and_garbage():
    a, b = socket.socketpair()
    with boundary.Channel.over_socket(a) as kernel:
        kernel.send({"check": "check_score", "functions": ["score_card"]})
        session = run_session(boundary.Channel.over_socket(b), allowed={"check_run_set"})
        assert not session.passed and "not a check of this exercise" in session.message
    a, b = socket.socketpair()
    a.sendall(b"not json\n")
    session = run_session(boundary.Channel.over_socket(b))
    assert not session.passed and session.error == "BoundaryError"
    a.close()


def test_check_cells_in_a_kernel_reach_a_checker_process(capsys, monkeypatch):
    # as in JupyterLab: no grader around, so the cell starts a checker process of its own
    # (under `pytest --nbval` the plugin's checker would be a thread of this very process)
    monkeypatch.delenv(boundary.CHECKER_ENV, raising=False)
    cells.check_score(score_card)
    assert capsys.readouterr().out.startswith("check_score: all ")
    with pytest.raises(AssertionError, match="divide by a million"):
        cells.check_score(lambda r, rent: r * 2_628_000 / rent)
    with pytest.raises(AssertionError, match="library's own answer"):
        cells.check_run_set(lambda rates, target: s.greedy_run_set(rates, target))


# ---------------------------------------------------------------- the registry and the template


def _notebook(*cells, kernel="python3"):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src, metadata=meta)
                                         for src, meta in cells])
    nb.metadata["kernelspec"] = {"name": kernel}
    return nb


def test_the_template_rule_refuses_every_change_to_the_check_cells():
    ex = exercises.EXERCISES["03_eviction"]
    check = ex.checks[0].cell_source
    tag = {"tags": ["nbval-check-output"]}
    assert exercises.template_problem(_notebook(("x = 1", {}), (check, tag), ("y", {})), ex) == ""
    assert "changed or removed" in exercises.template_problem(_notebook(("x = 1", {})), ex)
    edited = check.replace("wrong_evictions)", "evict_worst)")
    assert "changed or removed" in exercises.template_problem(_notebook((edited, tag)), ex)
    for extra in ("raises-exception", "nbval-skip", "nbval-ignore-output"):
        bad = {"tags": ["nbval-check-output", extra]}
        assert "has the tags" in exercises.template_problem(_notebook((check, bad)), ex)
    assert "has the tags" in exercises.template_problem(_notebook((check, {})), ex)
    assert "2 times" in exercises.template_problem(_notebook((check, tag), (check, tag)), ex)
    assert "unknown kernel 'julia-1.9'" in exercises.template_problem(
        _notebook((check, tag), kernel="julia-1.9"), ex)
    two = exercises.Exercise("x", "two checks", (exercises.CHECKS["check_score"],
                                                 exercises.CHECKS["check_run_set"]))
    first, second = (c.cell_source for c in two.checks)
    assert exercises.template_problem(_notebook((first, tag), (second, tag)), two) == ""
    assert "out of order" in exercises.template_problem(_notebook((second, tag), (first, tag)),
                                                        two)


def test_every_check_cell_function_is_registered_and_has_a_check():
    from schedatrix.classroom.checking.checks import CHECKS as CHECK_FUNCTIONS

    assert set(exercises.CHECKS) == set(CHECK_FUNCTIONS)
    for name in exercises.CHECKS:
        assert callable(getattr(cells, name))


def test_a_lesson_that_shares_an_exercise_name_is_not_an_exercise():
    import nbformat

    ex = exercises.EXERCISES["01_score"]
    root = exercises.__file__.rsplit("/schedatrix/", 1)[0]
    lesson = nbformat.read(f"{root}/notebooks/01_score.ipynb", as_version=4)
    student = nbformat.read(f"{root}/exercises/01_score.ipynb", as_version=4)
    solution = nbformat.read(f"{root}/solutions/01_score.ipynb", as_version=4)
    assert not exercises.is_exercise_notebook(lesson, ex)
    assert exercises.is_exercise_notebook(solution, ex)
    student.cells = [c for c in student.cells if "check_score(" not in c.source]
    assert exercises.is_exercise_notebook(student, ex)  # the mark stays when the check goes


# -------------------------------------------------------- issue 18: the grader's own evidence


def test_answers_are_read_as_plain_data_and_never_rebuilt_into_months(monkeypatch):
    import schedatrix.fleet.month as month_module

    months = boundary.encode([s.simulate(s.preset("golden-idler").plan)] * 1_000)
    monkeypatch.setattr(month_module, "simulate", lambda *a, **k: pytest.fail("simulated"))
    back = boundary.decode(months, months=False)
    assert len(back) == 1_000 and all(isinstance(m, boundary.Opaque) for m in back)
    assert "a Month" in repr(back[0])
    plan = boundary.decode(boundary.encode(s.Plan(cards=12)), months=False)
    assert type(plan) is s.Plan and plan.cards == 12  # a plan is knobs: rebuilt, not simulated


def _in_the_copy(exercise: str, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python that imports the exercise's answer-free copy as the
    grader's evaluation does (and nothing else of the package)."""
    from schedatrix.classroom.grader import answer_free

    package = answer_free.package_for(exercises.EXERCISES[exercise])
    prelude = ("import sys\n"
               f"sys.path.insert(0, {str(package / 'classroom' / 'grader')!r})\n"
               "from evaluate_run import only_this_copy\n"
               f"only_this_copy({str(package.parent)!r})\n"
               "from schedatrix import _refused\n"
               "_refused.swap()\n")
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("name", list(exercises.EXERCISES))
def test_no_answer_of_an_exercise_is_reachable_in_its_evaluation(name):
    """Each registered answer either refuses (and is recorded) or is not in the copy at all,
    and no check, checker or check cell module is there to read the expected answers from."""
    answers = sorted({a for c in exercises.EXERCISES[name].checks for a in c.answers})
    code = ("import importlib, schedatrix\n"
            "assert 'answer-free' in schedatrix.__file__, schedatrix.__file__\n"
            "refused, absent = [], []\n"
            f"for answer in {answers!r}:\n"
            "    module, _, qualname = answer.partition(':')\n"
            "    try:\n"
            "        target = importlib.import_module(module)\n"
            "    except ImportError:\n"
            "        absent.append(answer)\n"
            "        continue\n"
            "    for part in qualname.split('.'):\n"
            "        target = getattr(target, part)\n"
            "    target = target.fget if isinstance(target, property) else target\n"
            "    try:\n"
            "        target(*([None] * target.__code__.co_argcount))\n"
            "    except RuntimeError as exc:\n"
            "        assert \"library's own answer\" in str(exc), (answer, exc)\n"
            "        refused.append(answer)\n"
            "    else:\n"
            "        raise SystemExit(f'{answer} ran')\n"
            "assert len(_refused.HITS) == len(refused), _refused.HITS\n"
            "for gone in ('checking.checks', 'checking.checks_month', 'checking.checks_serving',\n"
            "             'checking.checker', 'grading', 'checking.exercises', 'releases',\n"
            "             'grader.evaluation', 'grader.grade_notebook', 'grader.sandbox'):\n"
            "    try:\n"
            "        importlib.import_module('schedatrix.classroom.' + gone)\n"
            "    except ImportError:\n"
            "        continue\n"
            "    raise SystemExit(f'schedatrix.classroom.{gone} is in the copy')\n"
            "print(len(refused), sorted(absent))\n")
    done = _in_the_copy(name, code)
    assert done.returncode == 0, done.stderr[-2000:]
    absent = [a for a in answers if a.startswith("schedatrix.classroom.")]
    assert done.stdout.strip() == f"{len(answers) - len(absent)} {absent}"


def test_a_computed_name_reaches_the_refusal_too():
    done = _in_the_copy("01_score", "import schedatrix as sx\n"
                                    "try:\n"
                                    "    getattr(sx, 'sc' + 'ore')(10_000, 2_600)\n"
                                    "except RuntimeError as exc:\n"
                                    "    print(exc)\n")
    assert done.stdout.strip() == ("schedatrix.score() is the library's own answer to this "
                                   "exercise: write it yourself"), done.stderr[-2000:]


def test_stubbing_keeps_signatures_decorators_and_the_rest_of_the_module():
    from schedatrix.classroom.grader.answer_free import stub_source

    source = ("import functools\n\n\ndef keep(x):\n    return x\n\n\n@functools.cache\n"
              "def answer(a, b=2):\n    \"\"\"Doc.\"\"\"\n    return a + b  # the answer\n\n\n"
              "class Model:\n    def method(self, x): return x * 2\n\n\n"
              "def one_line(x): return x\n")
    out = stub_source(source, {"answer": "schedatrix.answer", "Model.method":
                               "schedatrix.Model.method", "one_line": "schedatrix.one_line"})
    assert "return a + b" not in out and "return x * 2" not in out
    assert "@functools.cache\ndef answer(a, b=2):\n    raise __import__(" in out
    assert "def keep(x):\n    return x\n" in out and "def one_line(x): raise" in out
    assert ".refused('schedatrix.Model.method')" in out


def test_only_the_evaluation_decides_a_pass():
    from schedatrix.classroom.checking.checker import Session
    from schedatrix.classroom.grader.evaluation import Evaluation
    from schedatrix.classroom.grader.grade_notebook import decide
    from schedatrix.classroom.grader.nbval_sandbox import Run
    from schedatrix.classroom.grader.sandbox import Limits

    ex = exercises.EXERCISES["01_score"]
    perfect = Run(reached=["check_score"], exit_code=0)  # what a kernel could make up
    failed = Evaluation([Session("check_score", False, "AssertionError", "wrong")],
                        "check_score: AssertionError: wrong")
    assert decide(ex, failed, perfect, Limits()) == (False, "check_score: AssertionError: wrong")
    passed = Evaluation([Session("check_score", True, "", "ok")])
    assert decide(ex, passed, perfect, Limits()) == (True, "")
    assert not decide(ex, passed, None, Limits())[0]
    skipped = Run(reached=[], exit_code=0)  # the check cell printed, but never asked
    assert "never reached the grader's checker" in decide(ex, passed, skipped, Limits())[1]
    broken = Run(reached=["check_score"], exit_code=1,
                 summary={"failures": [{"where": "Cell 0", "text": "NameError: x"}]})
    assert decide(ex, passed, broken, Limits()) == (
        False, "code cell 1 (counting code cells from the top): NameError: x")


def test_a_note_names_only_what_the_graded_functions_use():
    import nbformat

    from schedatrix.classroom.releases.copying import library_calls

    root = exercises.__file__.rsplit("/schedatrix/", 1)[0]
    for name, ex in exercises.EXERCISES.items():  # item 7: the templates' own imports
        for folder in ("exercises", "solutions"):
            nb = nbformat.read(f"{root}/{folder}/{name}.ipynb", as_version=4)
            assert library_calls(nb, ex) == "", (folder, name)
    ex = exercises.EXERCISES["10_request_log"]
    nb = nbformat.read(f"{root}/exercises/10_request_log.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "def log_figures" in c.source)
    cell.source = cell.source.replace("    raise NotImplementedError",
                                      "    return helper(events)\n    raise NotImplementedError")
    cell.source += "\n\ndef helper(events):\n    return figures(events)\n"
    assert library_calls(nb, ex) == "names the library's own schedatrix.figures"


# ---------------------------------------------------------------- issue 18: the sandbox


def test_auto_never_falls_back_to_no_sandbox(monkeypatch):
    from schedatrix.classroom.grader import sandbox

    monkeypatch.setattr(sandbox, "_probed", lambda kind: "" if kind == "none" else "broken")
    with pytest.raises(s.InputError, match=r"found no sandbox here \(bubblewrap: broken; "
                                           r"setuid: broken\).*--sandbox none"):
        sandbox.choose("auto")
    assert sandbox.choose("none").kind == "none"
    assert "NO SANDBOX" in sandbox.choose("none").describe()


def test_a_probe_is_tried_again_and_waits_long(monkeypatch):
    from schedatrix.classroom.grader import sandbox

    tries = []

    def once(box, timeout_s):
        tries.append(timeout_s)
        return "bubblewrap started no Python within 180 s" if len(tries) == 1 else ""

    monkeypatch.setattr(sandbox, "_probe_once", once)
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: "/usr/bin/bwrap")
    assert sandbox.probe("bubblewrap") == ""
    assert tries == [sandbox.PROBE_TIMEOUT_S] * 2 and sandbox.PROBE_TIMEOUT_S >= 120


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_the_probe_names_what_the_sandbox_uid_cannot_read():
    import tempfile

    from schedatrix.classroom.grader.sandbox import UID_BASE, unreadable_for

    top = Path(tempfile.mkdtemp())  # under /tmp, which every uid may pass (pytest's is 0700)
    home = top / "home"
    (home / "python").mkdir(parents=True)
    os.chmod(top, 0o755)
    os.chmod(home, 0o700)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # as the sandbox's uid
        os.close(read)
        try:
            os.setgid(UID_BASE)
            os.setuid(UID_BASE)
            os.write(write, unreadable_for([str(home / "python")]).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as said:
        line = said.read()
    shutil.rmtree(top)
    assert line == (f"the sandbox's uid cannot read {home} (mode 0700, owner uid 0), on the "
                    f"way to {home / 'python'}")


# ------------------------------------------- issue 34, item 3: the library's answers, any name

#: Rooms whose functions start processes, read files or print (never called by the search).
_NOT_SEARCHED = ("schedatrix.classroom", "schedatrix.course", "schedatrix.serving.sweeps",
                 "schedatrix.serving.harness", "schedatrix.serving.reports",
                 "schedatrix.serving.studies")


def _library_functions() -> dict[str, object]:
    import importlib
    import inspect
    import pkgutil

    found = {}
    for info in pkgutil.walk_packages(s.__path__, "schedatrix."):
        name = info.name
        if name.startswith(_NOT_SEARCHED) or name.endswith("__main__") \
                or "cli" in name.rpartition(".")[2]:
            continue
        module = importlib.import_module(name)
        for attr, f in vars(module).items():
            if inspect.isfunction(f) and f.__module__ == name:
                found[f"{name}:{attr}"] = f
    return found


def test_no_function_of_the_library_computes_an_answer_the_copy_keeps():
    """Every function of the package (outside the classroom and the rooms that start
    processes) is called on a few of each exercise's visible cases; one that gives the
    library's answer on all of them must be among the exercise's registered answers, which
    its copy holds no code of (schedatrix.fleet.bill.mtok_per_dollar is score's formula)."""
    import inspect
    import signal

    from schedatrix.classroom.checking import checks_month as cm
    from schedatrix.classroom.checking import checks_queueing as cq
    from schedatrix.classroom.checking import checks_serving as cs
    from schedatrix.fleet.window import measured_tok_s
    from schedatrix.serving.replica.kv_cache import largest_batch
    from schedatrix.serving.studies.queueing import mg1

    fixed, rand = grading._score_cases()
    run_f, run_r = grading._run_set_cases()
    ev_f, ev_r = grading._evict_cases()
    wr_f, wr_r = grading._wrong_cases()
    tasks = {  # check: (cases, the library's answer, how answers compare)
        "check_score": ([c[:2] for c in (fixed + rand)[:12]], lambda a: s.score(*a), "number"),
        "check_run_set": ([(list(r), t) for r, t, _ in (run_f + run_r)[4:16]],
                          lambda a: s.greedy_run_set(*a), "indices"),
        "check_eviction": ([(list(r), t) for r, t, _ in (ev_f + ev_r)[4:16]],
                           lambda a: s.evict_worst(*a), "indices"),
        "check_eviction ": ([(list(r), list(e)) for r, e, _ in (wr_f + wr_r)[3:15]],
                            lambda a: s.wrong_evictions(*a), "number"),
        "check_window": ([c[:5] for c in cm._window_cases()[:12]],
                         lambda a: measured_tok_s(*a), "number"),
        "check_largest_batch": ([c[:5] for c in cs._batch_cases()[:12]],
                                lambda a: largest_batch(*a), "number"),
        "check_pk_wait": ([(r, sv) for r, sv, _ in cq._wait_cases()[:4]],
                          lambda a: mg1(a[0], np.array(a[1])).wait_s, "number"),
        "check_max_rate": ([c[:2] for c in cq._rate_cases()[:4]],
                           lambda a: cq.pk_max_rate_rps(*a), "number"),
    }

    def same(kind, got, want):
        try:
            if kind == "number":
                return math.isclose(float(got), float(want), rel_tol=1e-6, abs_tol=1e-9)
            return sorted(np.asarray(got).reshape(-1).tolist()) == sorted(
                np.asarray(want).reshape(-1).tolist())
        except Exception:
            return False

    armed = [False]   # the alarm counts only while a library function runs: once it has
                      # returned, a late alarm (a loaded machine) must not fail the comparison

    def too_long(*_):
        if armed[0]:
            raise TimeoutError

    functions = _library_functions()
    previous = signal.signal(signal.SIGALRM, too_long)
    computing: dict[str, list[str]] = {}
    try:
        for task, (cases, want, kind) in tasks.items():
            for name, f in functions.items():
                try:
                    params = list(inspect.signature(f).parameters.values())
                except (TypeError, ValueError):
                    continue
                positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                               p.POSITIONAL_OR_KEYWORD)]
                required = [p for p in positional if p.default is p.empty]
                if not len(required) <= len(cases[0]) <= len(positional):
                    continue
                agrees = True
                for args in cases:
                    armed[0] = True
                    signal.setitimer(signal.ITIMER_REAL, 2.0)
                    try:
                        got = f(*args)
                        armed[0] = False
                        agrees = same(kind, got, want(args))
                    except BaseException:
                        agrees = False
                    finally:
                        armed[0] = False
                        signal.setitimer(signal.ITIMER_REAL, 0)
                    if not agrees:
                        break
                if agrees:
                    computing.setdefault(task.strip(), []).append(name)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert "schedatrix.fleet.bill:mtok_per_dollar" in computing["check_score"]
    for check, names in computing.items():
        registered = set(exercises.CHECKS[check].answers)
        assert set(names) <= registered, (check, sorted(set(names) - registered))


def test_a_function_that_is_or_wraps_the_librarys_is_named():
    import functools

    from schedatrix.classroom.checking.boundary import library_functions
    from schedatrix.fleet.bill import mtok_per_dollar

    @functools.wraps(mtok_per_dollar)
    def wrapped(*args):
        return mtok_per_dollar(*args)

    def closes_over(f):
        return lambda *args: f(*args)

    class Callable:
        __call__ = staticmethod(s.score)

    found = library_functions({
        "same": mtok_per_dollar, "wrapped": wrapped, "closure": closes_over(s.score),
        "partial": functools.partial(s.score, 10_000), "method": s.Plan().with_knobs,
        "instance": Callable(), "own": score_card, "calls_it": lambda r, t: s.score(r, t)})
    assert found == {"same": "schedatrix.fleet.bill.mtok_per_dollar",
                     "wrapped": "schedatrix.fleet.bill.mtok_per_dollar",
                     "closure": "schedatrix.fleet.score.score",
                     "partial": "schedatrix.fleet.score.score",
                     "method": "schedatrix.fleet.plan.Plan.with_knobs",
                     "instance": "schedatrix.fleet.score.score"}
    a, b = socket.socketpair()
    with boundary.Channel.over_socket(a) as kernel:
        kernel.send({"check": "check_score", "functions": ["score_card"],
                     "library": {"score_card": "schedatrix.fleet.bill.mtok_per_dollar"}})
        session = run_session(boundary.Channel.over_socket(b))
    assert not session.passed and session.message.startswith(
        "score_card is schedatrix.fleet.bill.mtok_per_dollar, the library's own function")
    assert session.library == "schedatrix.fleet.bill.mtok_per_dollar handed in as score_card"


# ------------------------------------------------ issue 34, item 4: one memory bound per run


def test_the_watchdog_ends_a_tree_that_holds_too_much_together():
    """Three children of 150 MB each (each far under any per-process limit) are ended, all
    of them, once the tree holds over 256 MiB together; a tree under the bound is left alone."""
    from schedatrix.classroom.grader.memory_bound import Watchdog, tree
    from schedatrix.classroom.grader.sandbox import end

    code = ("import os, time\nfor _ in range(3):\n    if os.fork() == 0:\n"
            "        hog = b'x' * (150 * 1024 * 1024)\n        time.sleep(60)\n"
            "        os._exit(0)\n"
            "time.sleep(60)\n")
    bound = Watchdog(256 * 1024 * 1024)
    process = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    bound.watch(process.pid, None, lambda: os.killpg(process.pid, 9))
    try:
        process.wait(timeout=30)
    finally:
        end(process, bound=bound)
    assert bound.exceeded and bound.peak_bytes > 256 * 1024 * 1024
    assert tree(process.pid) == {}
    calm = Watchdog(256 * 1024 * 1024)
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"],
                               start_new_session=True)
    calm.watch(process.pid, None, lambda: None)
    assert process.wait(timeout=30) == 0
    end(process, bound=calm)
    assert not calm.exceeded and 0 < calm.peak_bytes < 100 * 1024 * 1024


def test_a_cgroup_bound_starts_the_run_inside_and_reads_its_end(tmp_path):
    """Where the machine offers a cgroup (v2) this runs in one: the shell writes its own pid
    into cgroup.procs before it becomes the run (so nothing starts outside), and a group the
    kernel ended at memory.max reads as over the bound. (This machine has no cgroup v2 memory
    controller: a folder stands in for the cgroup.)"""
    from schedatrix.classroom.grader.memory_bound import CgroupBound, bound_for, cgroup_parent

    bound = CgroupBound(512 * 1024 * 1024, tmp_path)
    assert (bound.path / "memory.max").read_text() == str(512 * 1024 * 1024)
    argv = bound.wrap([sys.executable, "-c", "import os; print(os.getpid())"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == (bound.path / "cgroup.procs").read_text().strip()
    (bound.path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    bound.close()
    assert bound.exceeded
    expected = "cgroup" if cgroup_parent() is not None else "watchdog"
    assert bound_for(768).kind == expected and bound_for(768, "watchdog").kind == "watchdog"
