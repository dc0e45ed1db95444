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


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")),
                         ids=lambda p: p.name)
def test_every_line_a_lesson_prints_fits_the_output_area(path):
    too_wide = [(k, len(line), line[:60]) for k, line in _output_lines(path) if len(line) > WIDTH]
    assert not too_wide, f"{path.name}: {len(too_wide)} lines over {WIDTH} columns: {too_wide[:3]}"
