"""The graders: right answers pass, each kind of wrong answer fails with a useful message."""

from __future__ import annotations

import math

import pytest

import schedatrix as s
from schedatrix.classroom import grading

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


def test_right_answers_pass_and_print_one_line(capsys):
    grading.check_score(score_card)
    grading.check_run_set(greedy)
    grading.check_eviction(evict, wrong)
    grading.check_famous_months(diagnose, fix)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("check_score: all ") and "pass" in lines[0]
    assert lines[3].startswith("check_famous_months: all ")


def test_the_library_passes_its_own_checks(capsys):
    grading.check_score(s.score)
    grading.check_run_set(s.greedy_run_set)
    grading.check_eviction(s.evict_worst, s.wrong_evictions)
    assert capsys.readouterr().out.count("Well done!") == 3


def test_success_message_is_deterministic(capsys):
    grading.check_run_set(greedy)
    first = capsys.readouterr().out
    grading.check_run_set(greedy)
    assert capsys.readouterr().out == first


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
    with pytest.raises(AssertionError, match="not a number"):
        grading.check_score(lambda r, rent: "10.108")


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
