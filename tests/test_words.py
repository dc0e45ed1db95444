"""The words a learner reads: plurals, zeros, flags named as typed, convergence above 100%."""

import subprocess
import sys

import pytest

import schedatrix as sx


def test_one_card_and_zero_cards_read_as_english():
    one = sx.simulate(sx.Plan(cards=5, evict_share=0.2))  # evicts floor(0.2 x 5) = 1
    assert one.evicted == 1 and one.skipped == 0
    assert "1 is churned" in one.sentences[0] and "the run set skips none" in one.sentences[0]
    assert "1 card bills $390" in " ".join(one.sentences)
    lone = sx.simulate(sx.Plan(cards=1, evict_share=0.0))
    assert lone.sentences[0].startswith("1 card of one class rents as a pool: 1 runs")
    assert "none is churned" in lone.sentences[0]
    assert "1 of 1 steady card delivers" in lone.verdict
    text = " ".join([*lone.sentences, lone.verdict, *one.sentences, one.verdict])
    for wrong in ("1 cards", "1 are", "the 0 ", "0 are churned"):
        assert wrong not in text
    opening = sx.simulate()
    assert "the 3 cards the run set skips never bill" in opening.sentences[0]


def test_convergence_above_100_percent_is_explained_not_praised():
    fix = sx.simulate(sx.preset("golden-idler-12-cards").plan)
    assert fix.convergence > 1 and fix.signature == "111"
    assert not fix.verdict.startswith("The month reads clean")
    assert "no praise" in fix.verdict and "No check looks at that" in fix.verdict
    assert f"truly carry {fix.run_true_tok_s:,.0f} tok/s" in fix.verdict
    assert "108,000 tok/s" in fix.verdict
    clean = sx.simulate()
    assert clean.convergence < 1 and clean.verdict.startswith("The month reads clean")
    assert "no praise" not in " ".join(clean.sentences)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "schedatrix", *args], capture_output=True,
                          text=True)


@pytest.mark.parametrize("args, flag", [
    (["--cards", "x"], "--cards"), (["--cards", "0"], "--cards"), (["--demand", "-5"],
                                                                   "--demand"),
    (["--seed", "-1"], "--seed"), (["--window", "0.01"], "--window"),
])
def test_errors_name_the_flag_typed_once(args, flag):
    r = _cli("month", *args)
    assert r.returncode == 2
    line = r.stderr.strip()
    assert line.count(flag) == 1, line
    assert "demand_tok_s" not in line and "evict_share" not in line


def test_one_eviction_reads_as_one_card():
    r = _cli("month", "--cards", "5")
    assert "1 card evicted" in r.stdout and "1 cards" not in r.stdout


def test_grade_names_a_failing_cell_as_the_student_counts_it():
    from schedatrix.classroom.grader.nbval_sandbox import explain
    from schedatrix.classroom.grader.sandbox import Limits
    line = explain({"where": "Cell 2", "text": "ValueError: rates must be positive"}, Limits())
    assert line == ("code cell 3 (counting code cells from the top): ValueError: rates must be "
                    "positive")
