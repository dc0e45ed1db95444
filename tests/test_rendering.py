"""What a stored lesson shows when opened: no stray solver line, no first frame of a progress
bar, no raw Markdown or tuple printed, no widget repr in place of a picture; folded answers."""

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


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_answer_cells_are_folded(path):
    answers = [c for c in _cells(path) if "answer" in c["metadata"].get("tags", [])]
    for cell in answers:
        assert cell["metadata"]["jupyter"] == {"source_hidden": True, "outputs_hidden": True}
        assert cell["outputs"], "an answer cell must store the answers it computes"
