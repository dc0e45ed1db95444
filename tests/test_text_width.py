"""What the library and the lessons print fits JupyterLab's output area (schedatrix.text):
JupyterLab cuts a line wider than its output area at any character, so a number would be split
across two lines."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from schedatrix.course.drills.fleet import drill_set
from schedatrix.course.drills.kit import format_drill_set
from schedatrix.course.drills.serving import serving_drill_set
from schedatrix.text import WIDTH, wrap

ROOT = Path(__file__).resolve().parents[1]


def test_a_wrapped_line_keeps_every_word_and_number_whole():
    r = random.Random(0)
    for _ in range(200):
        words = [r.choice([f"{r.randint(1, 10**9):,}", f"${r.randint(1, 10**6):,}", "tok/s",
                           "p95", "self-evidently", "x" * r.randint(1, 30), "(95%:"])
                 for _ in range(r.randint(1, 60))]
        text = "  " + " ".join(words)
        out = wrap(text, width=60)
        assert out.split() == text.split()            # nothing cut, nothing lost, same order
        for line in out.split("\n"):
            assert len(line) <= 60 or " " not in line.strip()   # only a lone long word is wider
            assert line.startswith("  ")                 # the line's indent, and more after it
        assert all(line.startswith("      ") for line in out.split("\n")[1:])


def test_lines_that_fit_come_back_as_they_were():
    text = "a  table   row\n\n   indented  | kept"
    assert wrap(text) == text


def test_a_width_too_narrow_is_refused_by_name():
    with pytest.raises(ValueError, match=r"width: 5 .*20 or more"):
        wrap("some text", width=5)


@pytest.mark.parametrize("drills", [drill_set, serving_drill_set], ids=["fleet", "serving"])
def test_drills_printed_with_their_answers_fit(drills):
    text = format_drill_set(drills(1, 60), answers=True)
    assert "ANSWER KEY" in text
    too_wide = [line for line in text.split("\n") if len(line) > WIDTH]
    assert not too_wide, too_wide[:3]


def _output_lines(path: Path):
    nb = json.loads(path.read_text())
    for k, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain") or ""
            for line in ("".join(text) if isinstance(text, list) else text).split("\n"):
                yield k, line


#: Every notebook the course ships with stored outputs: the lessons, the solutions (whose
#: check cells print the checker's pass line) and the student copies.
NOTEBOOKS = sorted(p for folder in ("notebooks", "solutions", "exercises")
                   for p in (ROOT / folder).glob("*.ipynb"))
#: Known wide, strictly: solution 11 prints its windows as dicts of 122 columns; exercise 11
#: is being redesigned, and its re-run solution must print them to fit (then this fails, as
#: an unexpected pass, until the mark is removed).
WIDE_FOR_NOW: set[str] = set()


def _marked(path: Path):
    name = f"{path.parent.name}/{path.name}"
    marks = [pytest.mark.xfail(strict=True, reason="dict reprs of 122 columns (issue 35)")]
    return pytest.param(path, id=name, marks=marks if name in WIDE_FOR_NOW else [])


def test_the_notebooks_checked_are_every_folder_s():
    folders = {p.parent.name for p in NOTEBOOKS}
    assert folders == {"notebooks", "solutions", "exercises"}, folders
    assert len(NOTEBOOKS) >= 14 + 12 + 12


@pytest.mark.parametrize("path", [_marked(p) for p in NOTEBOOKS])
def test_every_line_a_notebook_prints_fits_the_output_area(path):
    too_wide = [(k, len(line), line[:60]) for k, line in _output_lines(path) if len(line) > WIDTH]
    assert not too_wide, f"{path.name}: {len(too_wide)} lines over {WIDTH} columns: {too_wide[:3]}"


def test_a_pass_line_too_wide_puts_its_breakdown_on_a_second_line():
    from schedatrix.classroom.checking.check_support import passed

    short = passed("check_score", {"fixed": 7, "random": 30})
    assert short == "check_score: all 37 cases pass (7 fixed, 30 random). Well done!"
    wide = passed("check_decode_step", {"roofline steps": 35,
                                        "steps beside the calibrated model": 83})
    assert wide == ("check_decode_step: all 118 cases pass\n"
                    "    (35 roofline steps, 83 steps beside the calibrated model). Well done!")
    assert all(len(line) <= WIDTH for line in wide.split("\n"))


def test_a_check_s_message_is_printed_wrapped_to_fit(monkeypatch, capsys):
    """Whatever line the checker sends (check_router's is its own), the check cell prints it
    through :func:`wrap`: lines that fit, every word kept."""
    from schedatrix.classroom import grading

    long = ("check_router: all 3 targets met on the document load (1,234,567 routing decisions "
            "on a load much longer than the usual one). Well done!")
    assert len(long) > WIDTH

    class Channel:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(grading, "connect", lambda: Channel())
    monkeypatch.setattr(grading, "serve_check",
                        lambda *a: ({"verdict": "pass", "message": long}, None))
    grading.run_check("check_router", choose=lambda *a: 0)
    printed = capsys.readouterr().out
    assert printed.split() == long.split()
    assert len(printed.rstrip("\n").split("\n")) == 2
    assert all(len(line) <= WIDTH for line in printed.split("\n"))
