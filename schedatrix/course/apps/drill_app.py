"""The drills as an ipywidgets app: pick a drill number, type answers, get feedback at once.

A thin layer over :mod:`schedatrix.course.drills.fleet`: every question, answer and piece of
feedback comes from :class:`~schedatrix.course.drills.fleet.Drill`. The app has one row per
question slot; each drill puts its own five questions (of different kinds) in them. Tests set
an answer box's ``.value`` (or call :meth:`DrillApp.answer`) and read the feedback widget, no
browser needed.
"""

from __future__ import annotations

import html
import re

import ipywidgets as widgets

from ..drills.fleet import PER_DRILL, Drill, drill
from ..live import page_text

__all__ = ["DrillApp", "drill_app"]

_OK = "#1a7f37"
_NO = "#cf222e"
_TAG = re.compile(r"<[^>]+>")


class DrillApp:
    """One drill on screen: its number and seed, its facts, five questions, an answer box
    and feedback each."""

    def __init__(self, number: int = 1) -> None:
        self.number = widgets.BoundedIntText(value=number, min=0, max=999_999_999,
                                             description="Drill", layout={"width": "180px"})
        self.next_button = widgets.Button(description="Next drill", icon="forward")
        self.reveal_button = widgets.Button(description="Show answers", icon="eye")
        self.header = widgets.HTML()
        self.facts = widgets.HTML()
        self.score = widgets.HTML()
        self.prompts = [widgets.HTML() for _ in range(PER_DRILL)]
        self.boxes = [widgets.Text(placeholder="your answer, then Enter",
                                   layout={"width": "260px"}, continuous_update=False)
                      for _ in range(PER_DRILL)]
        self.feedback = [widgets.HTML() for _ in range(PER_DRILL)]
        self.right: dict[str, bool] = {}
        self.drill: Drill = drill(number)
        rows = []
        for slot in range(PER_DRILL):
            self.boxes[slot].observe(
                lambda change, slot=slot: self._on_answer(slot, change["new"]), names="value")
            rows.append(widgets.VBox([self.prompts[slot],
                                      widgets.HBox([self.boxes[slot], self.feedback[slot]])]))
        self.number.observe(lambda change: self.load(change["new"]), names="value")
        self.next_button.on_click(lambda _b: setattr(self.number, "value",
                                                     self.number.value + 1))
        self.reveal_button.on_click(lambda _b: self.reveal())
        self.ui = widgets.VBox([
            widgets.HBox([self.number, self.next_button, self.reveal_button]),
            self.header, self.facts, *rows, self.score,
        ])
        self.load(number)

    def load(self, number: int) -> None:
        """Show drill ``number`` with empty answer boxes."""
        self.drill = drill(int(number))
        if self.number.value != number:
            self.number.value = number
        self.header.value = f"<b>{html.escape(self.drill.header)}</b>"
        self.facts.value = "<br>".join(html.escape(f) for f in self.drill.facts)
        self.right = {}
        for slot, q in enumerate(self.drill.questions):
            self.prompts[slot].value = f"<b>Q{slot + 1}.</b> {html.escape(q.prompt)}"
            self.boxes[slot].value = ""
            self.feedback[slot].value = ""
        self._tally()

    def _slot(self, question_id: str) -> int:
        q = self.drill.question(question_id)  # an id not in this drill raises InputError
        return self.drill.questions.index(q)

    def _on_answer(self, slot: int, text: str) -> None:
        if slot >= len(self.drill.questions):
            return
        q = self.drill.questions[slot]
        if not text.strip():
            self.feedback[slot].value = ""
            return
        ok, message = self.drill.check(q.id, text)
        self.right[q.id] = ok
        colour, mark = (_OK, "&#10003;") if ok else (_NO, "&#10007;")
        self.feedback[slot].value = (
            f'<span style="color:{colour}">{mark} {html.escape(message)}</span>'
        )
        self._tally()

    def answer(self, question_id: str, text: str) -> str:
        """Type ``text`` into a question's box; return the feedback as plain text."""
        slot = self._slot(question_id)
        self.boxes[slot].value = str(text)
        return self.feedback_text(question_id)

    def feedback_text(self, question_id: str) -> str:
        """A question's feedback without its HTML."""
        slot = self._slot(question_id)
        return html.unescape(_TAG.sub("", self.feedback[slot].value)).strip()

    def reveal(self) -> None:
        """Show every answer with its explanation."""
        for slot, q in enumerate(self.drill.questions):
            self.feedback[slot].value = (
                f'<span style="color:#57606a">answer: {html.escape(q.answer_text)}. '
                f"{html.escape(q.explanation)}</span>"
            )

    def _tally(self) -> None:
        done = sum(self.right.values())
        self.score.value = f"<b>{done} of {len(self.drill.questions)} right</b>"

    def static_html(self) -> str:
        """The drill as a page shows it before any answer: what a notebook opened without
        running displays in place of the live widgets."""
        rows = "".join(
            f"<p><b>Q{i}.</b> {page_text(q.prompt)}</p>"
            for i, q in enumerate(self.drill.questions, start=1))
        facts = "<br>".join(page_text(f) for f in self.drill.facts)
        return (f"<div><p><b>{page_text(self.drill.header)}</b><br>{facts}</p>{rows}"
                "<p><i>Run this cell for the live drill: answer boxes, instant feedback, the "
                "next drill.</i></p></div>")

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.ui._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):
            bundle["text/html"] = self.static_html()
            bundle["text/plain"] = self.drill.text()
        return bundle


def drill_app(number: int = 1) -> DrillApp:
    """The drill app at drill ``number``; display it by ending a cell with it."""
    return DrillApp(number)
