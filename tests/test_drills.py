"""Drills: the same number gives the same drill; answers are graded with tolerance."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

import schedatrix as s
from schedatrix.course.drills import (
    QUESTION_IDS,
    add_drills_parser,
    drill,
    drill_set,
    format_drill_set,
)
from schedatrix.errors import InputError


def test_same_number_same_drill_and_different_numbers_differ():
    a, b = drill(7), drill(7)
    assert a.plan == b.plan and a.text(answers=True) == b.text(answers=True)
    plans = {drill(n).plan for n in range(1, 31)}
    assert len(plans) == 30


def test_drill_is_stable_across_processes():
    code = "from schedatrix.course.drills import drill; print(drill(12).text(answers=True))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out == drill(12).text(answers=True) + "\n"


def test_answers_agree_with_the_library():
    for d in drill_set(1, 30):
        m = s.simulate(d.plan)
        assert [q.id for q in d.questions] == list(QUESTION_IDS)
        assert d.question("bill").answer == m.bill
        assert d.question("run_set").answer == m.warm
        assert d.question("signature").answer == m.signature
        q = d.question("score")
        rate = float(q.prompt.split("truly serves ")[1].split(" tok/s")[0].replace(",", ""))
        assert q.answer == pytest.approx(s.score(rate, m.card_class.rent_per_month))
        knob = d.question("knob")
        failing = [c for c, ok in m.checks.items() if not ok]
        assert (knob.accepted == {"none"}) == (not failing)


def test_drills_vary_and_include_each_famous_incident():
    ds = drill_set(1, 60)
    assert {d.month.signature for d in ds} >= {"111", "101", "110", "011"}
    assert len({d.plan.card_class for d in ds}) == 3
    assert len({d.plan.shape for d in ds}) == 3
    assert len({d.plan.window for d in ds}) >= 3
    assert len({d.plan.evict_share for d in ds}) >= 4
    for d in ds:  # at most one failing check, so "which knob" has an answer
        assert d.month.signature.count("0") <= 1
        if d.kind != "random":
            assert d.month.signature == {"idler": "101", "evictor": "110",
                                         "shortfall": "011"}[d.kind]


def test_check_money_with_tolerance_and_formats():
    d = drill(3)
    bill = d.question("bill").answer
    assert d.check("bill", bill)[0]
    assert d.check("bill", f"${bill:,.0f}")[0]
    assert d.check("bill", str(bill + 0.9))[0]
    ok, feedback = d.check("bill", bill + 50)
    assert not ok and "too high" in feedback and f"{bill:,.0f}" not in feedback
    ok, feedback = d.check("bill", "lots")
    assert not ok and "not a number" in feedback
    assert not d.check("bill", "")[0]


def test_check_score_accepts_three_decimals():
    d = drill(4)
    value = d.question("score").answer
    assert d.check("score", f"{value:.3f}")[0]
    assert d.check("score", value)[0]
    ok, feedback = d.check("score", value * 1.01 + 0.01)
    assert not ok and "2,628,000" in feedback


def test_check_run_set_is_exact():
    d = drill(5)
    warm = d.question("run_set").answer
    assert d.check("run_set", str(warm))[0]
    assert d.check("run_set", f"{warm} cards")[0]
    assert not d.check("run_set", warm + 1)[0]
    assert "too low" in d.check("run_set", warm - 1)[1]


def test_check_signature_and_knob():
    idler = next(d for d in drill_set(1, 40) if d.month.signature == "101")
    assert idler.check("signature", "101")[0]
    assert idler.check("signature", "1 0 1")[0]
    ok, feedback = idler.check("signature", "111")
    assert not ok and "convergence" in feedback
    assert not idler.check("signature", "12")[0]
    assert idler.check("knob", "shape")[0]
    assert idler.check("knob", "Card count")[0]
    assert not idler.check("knob", "window")[0]
    assert "Name a knob" in idler.check("knob", "turbo")[1]
    clean = next(d for d in drill_set(1, 40) if d.month.signature == "111")
    assert clean.check("knob", "none")[0]
    assert not clean.check("knob", "cards")[0]


def test_format_with_and_without_answers():
    ds = drill_set(10, 3)
    plain = format_drill_set(ds)
    keyed = format_drill_set(ds, answers=True)
    assert plain.count("Drill ") == 3 and "answer:" not in plain and "ANSWER KEY" not in plain
    assert keyed.startswith(plain.rstrip("\n")) and keyed.count("answer:") == 15
    assert f"${ds[0].question('bill').answer:,.0f}" in keyed.split("ANSWER KEY")[1]


def test_bad_input():
    with pytest.raises(InputError, match="n must be"):
        drill(-1)
    with pytest.raises(InputError, match="count must be"):
        drill_set(1, 0)
    with pytest.raises(InputError, match="question_id must be one of"):
        drill(1).check("cost", 1)


def _cli(*argv):
    parser = argparse.ArgumentParser(prog="schedatrix")
    add_drills_parser(parser.add_subparsers())
    args = parser.parse_args(["drills", *argv])
    return args.func(args)


def test_drills_command(capsys):
    assert _cli("--first", "3", "--count", "2") == 0
    out = capsys.readouterr().out
    assert out == format_drill_set(drill_set(3, 2))
    assert _cli("--first", "3", "--count", "2", "--answers") == 0
    assert "ANSWER KEY" in capsys.readouterr().out
    with pytest.raises(InputError, match="--first"):
        _cli("--first", "-2")
