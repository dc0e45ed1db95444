"""What a stored lesson shows when opened: no stray solver line, no progress bar but a finished
one, no raw Markdown or tuple printed, no widget repr in place of a picture; answers folded
where a reader must choose to open them (on GitHub and nbviewer too)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _shown(stream: str) -> str:
    """Stream text as a page shows it: a carriage return overwrites its line."""
    return "\n".join(line.rsplit("\r", 1)[-1] for line in stream.split("\n"))


def _cells(path: Path):
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_stored_outputs_render_cleanly(path):
    for cell in _cells(path):
        streams = "".join("".join(o["text"]) for o in cell.get("outputs", [])
                          if o["output_type"] == "stream")
        shown = _shown(streams)
        assert "HighsMipSolverData" not in shown
        assert not re.search(r"(?m)^.*\b0%\|.*\| 0/\d+", shown), shown  # a bar's first frame
        assert "|---|" not in shown  # Markdown printed as text
        assert not re.search(r"(?m)^\((True|False), ['\"]", shown)  # a raw tuple
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            # JupyterLab's MathJax reads text between two dollar signs as math
            assert "$" not in "".join(data.get("text/markdown", "")), "a $ in Markdown output"
            plain = "".join(data.get("text/plain", ""))
            if "application/vnd.jupyter.widget-view+json" in data:
                # a widget's fallback is a picture of it, never its repr
                assert not plain.startswith(("VBox(", "HBox(", "IntProgress(", "FloatProgress(")),\
                    plain[:80]


def test_the_walkthrough_and_the_drill_app_store_a_still_picture():
    for name, needle in (("00_walkthrough", "<span>&#36;</span>27,170"),
                         ("05_drills", "Drill 2 (lottery seed")):
        app = next(c for c in _cells(NOTEBOOKS / f"{name}.ipynb")
                   if "".join(c["source"]).strip().endswith("app"))
        html = "".join(app["outputs"][0]["data"]["text/html"])
        assert needle in html


#: Lessons still to move: owned elsewhere; strict, so each reads as a failure once it is fixed
#: and can leave the list. (Empty: the walkthrough's answers and the serving lessons' bars
#: moved.)
_NOT_YET: dict[str, str] = {}


def _not_yet(path: Path, kind: str):
    reason = _NOT_YET.get(path.stem, "")
    if kind in reason:
        return pytest.mark.xfail(strict=True, reason=f"{path.stem}: {reason}")
    return ()


_BAR = re.compile(r"(\d+)%\|.*\| *(\d+)/(\d+)")


@pytest.mark.parametrize("path", [pytest.param(p, marks=_not_yet(p, "bar")) for p in LESSONS],
                         ids=lambda p: p.stem)
def test_a_stored_progress_bar_is_one_finished_line(path):
    """Lesson 02 once stored 99 fragments of a bar, and the serving lessons a widget bar at its
    first frame, "0%": a stored bar is its last frame, whole, with counts and no timing (so
    nbval checks it like any output: :mod:`schedatrix.course.progress`)."""
    for cell in _cells(path):
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
            assert "\r" not in text, "a stored stream keeps every refresh of a bar"
            for done, n, total in _BAR.findall(text):
                assert (done, n) == ("100", total), f"an unfinished bar: {text[:120]!r}"
            assert not re.search(r"\d+(\.\d+)?(it/s|s/it)|\[\d\d:\d\d<", text), text[:120]


@pytest.mark.parametrize("path", [pytest.param(p, marks=_not_yet(p, "metadata"))
                                  for p in LESSONS], ids=lambda p: p.stem)
def test_answers_are_folded_where_a_reader_must_open_them(path):
    """JupyterLab folds a cell by its ``jupyter`` metadata; GitHub and nbviewer ignore it and
    show the answers beside the questions. An answer is a Markdown ``<details>`` block, which
    all three show closed until the reader opens it (tests/test_lesson_claims.py runs the code
    inside and holds its text to what it prints)."""
    cells = json.loads(path.read_text())["cells"]
    for cell in cells:
        folded = cell["metadata"].get("jupyter", {})
        assert not (folded.get("outputs_hidden") or folded.get("source_hidden")), (
            "a cell hidden by metadata alone: " + "".join(cell["source"])[:80])
        assert "answer" not in cell["metadata"].get("tags", [])
    for i, cell in enumerate(cells):
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and "open **Answers** below" in text:
            after = "".join(cells[i + 1]["source"])
            assert cells[i + 1]["cell_type"] == "markdown"
            assert after.startswith("<details>\n<summary><b>Answers</b>")
            assert after.rstrip().endswith("</details>") and "```text\n" in after
