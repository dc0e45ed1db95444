"""The command line as a person uses it: readouts, JSON, presets, odds, and bad input."""

import json
import subprocess
import sys

import pytest
from conftest import run_in_process

from schedatrix.cli import main

JSON_KEYS = {
    "plan", "warm", "evicted", "wrong_evictions", "wrong_share", "bill", "run_rent",
    "churn_fees", "idle_bill", "demand_tok_s", "delivered_tok_s", "unmet_share",
    "mtok_per_dollar", "ideal_bill", "ideal_cards", "ideal_mtok_per_dollar", "convergence",
    "median_true_tok_s", "target_tok_s", "checks", "signature", "verdict",
}


def run(*args):
    return subprocess.run([sys.executable, "-m", "schedatrix", *args],
                          capture_output=True, text=True, timeout=60)


def test_month_readout_shows_the_opening_state(capsys):
    assert main(["month"]) == 0
    out = capsys.readouterr().out
    for text in ("$27,170", "10 of 16", "60,000 of 60,000", "0.00%", "$1,170", "5.803",
                 "ideal 6.065", "95.7%", "signature 111", "The month reads clean"):
        assert text in out


def test_month_json_has_the_documented_keys_in_documented_units(capsys):
    assert main(["month", "--preset", "noise-evictor", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert JSON_KEYS <= d.keys()
    assert d["checks"] == {"capacity": True, "convergence": True, "evictions": False}
    assert d["wrong_share"] == pytest.approx(4 / 12)  # a fraction, not 33
    assert d["plan"]["evict_share"] == 0.40 and d["plan"]["window"] == "hour"


def test_flags_override_the_preset(capsys):
    assert main(["month", "--preset", "golden-idler", "--seed", "5", "--headroom", "25",
                 "--window", "12", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan == {"cards": 32, "card_class": "flagship", "demand_tok_s": 60000.0,
                    "headroom": 0.25, "shape": "jumpy", "window": "12", "evict_share": 0.2,
                    "seed": 5}


def test_presets_lists_every_preset_with_its_story(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    for name in ("walkthrough", "golden-idler", "golden-idler-steady", "golden-idler-12-cards",
                 "noise-evictor", "noise-evictor-day", "bargain-shortfall",
                 "bargain-shortfall-flagship"):
        assert f"\n{name}" in f"\n{out}"
    assert "fixes golden-idler" in out


def test_odds_reports_each_check_with_an_interval(capsys):
    assert main(["odds", "--preset", "noise-evictor", "--months", "3000", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["months"] == 3000
    assert sum(d["signatures"].values()) == 3000
    low, high = d["interval"]["evictions"]
    assert 0.1 < low <= d["fail_share"]["evictions"] <= high < 0.5
    assert main(["odds", "--months", "500"]) == 0
    assert "evictions" in capsys.readouterr().out


def test_console_script_and_module_agree():
    a = run("month", "--json")
    assert a.returncode == 0
    assert json.loads(a.stdout)["bill"] == 27_170


@pytest.mark.parametrize(
    "args, words",
    [
        (["month", "--cards", "0"], "cards must be a whole number from 1 to 4096, got 0"),
        (["month", "--cards", "1.5"], "argument --cards: must be a whole number, got '1.5'"),
        (["month", "--card-class", "gold"], "invalid choice: 'gold'"),
        (["month", "--demand", "-1"], "--demand must be a finite number > 0"),
        (["month", "--demand", "nan"], "argument --demand: must be a finite number, got 'nan'"),
        (["month", "--headroom", "-5"], "--headroom must be a percentage >= 0, got -5"),
        (["month", "--shape", "wavy"], "invalid choice: 'wavy'"),
        (["month", "--window", "fortnight"], "got 'fortnight'"),
        (["month", "--window", "-2"], "got '-2'"),
        (["month", "--evict-share", "100"], "--evict-share must be a percentage in [0, 100)"),
        (["month", "--evict-share", "inf"], "argument --evict-share: must be a finite number"),
        (["month", "--seed", "-3"], "seed must be a whole number from 0"),
        (["month", "--preset", "golden"], "invalid choice: 'golden'"),
        (["month", "--bogus"], "unrecognized arguments: --bogus"),
        (["odds", "--months", "0"], "months must be a whole number >= 1, got 0"),
        ([], "required: COMMAND"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_traceback(args, words):
    r = run_in_process(*args)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("schedatrix: error: ")
    assert words in lines[0]
    assert "Traceback" not in r.stderr


# ---------------------------------------------------------------- grade and make-exercises


_PLAIN_INSTALL = ("import sys\n"
                  "sys.modules['nbformat'] = None  # a plain install: no test extra\n"
                  "from schedatrix.cli import main\n"
                  "sys.exit(main(sys.argv[1:]))\n")


@pytest.mark.parametrize("args", [["grade", "{tmp}"], ["make-exercises", "--check",
                                                       "--exercises", "{tmp}/ex"]])
def test_a_plain_install_names_the_extra_in_one_line(tmp_path, args):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "01_score.ipynb").write_text("{}")
    argv = [a.format(tmp=tmp_path) for a in args]
    r = subprocess.run([sys.executable, "-c", _PLAIN_INSTALL, *argv], capture_output=True,
                       text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "nbformat" in lines[0] and "pip install 'schedatrix[test]'" in lines[0]


def test_grade_without_a_sandbox_stops_in_one_line_saying_why(tmp_path, monkeypatch, capsys):
    from schedatrix.classroom.grader import sandbox

    reasons = {"bubblewrap": "bwrap is not installed",
               "setuid": "the sandbox's uid cannot read /root (mode 0700, owner uid 0), on "
                         "the way to /root/.pyenv/versions/3.11.7/bin/python3.11"}
    monkeypatch.setattr(sandbox, "_probed", lambda kind: reasons.get(kind, ""))
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "01_score.ipynb").write_text("{}")
    assert main(["grade", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing was graded
    line, = captured.err.strip().splitlines()
    assert "--sandbox auto found no sandbox here" in line
    assert "bubblewrap: bwrap is not installed" in line and "cannot read /root" in line
    assert "apt-get install bubblewrap" in line and "--sandbox none" in line
