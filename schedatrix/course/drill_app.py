"""The drills as an ipywidgets app: pick a drill number, type answers, get feedback at once.

A thin layer over :mod:`schedatrix.course.drills`: every question, answer and piece of
feedback comes from :class:`~schedatrix.course.drills.Drill`. Tests set an answer box's
``.value`` (or call :meth:`DrillApp.answer`) and read the feedback widget, no browser needed.
"""

from __future__ import annotations

import html
import re

import ipywidgets as widgets

from .drills import Drill, drill

__all__ = ["DrillApp", "drill_app"]

_OK = "#1a7f37"
_NO = "#cf222e"


class DrillApp:
    """One drill on screen: its facts, five questions, an answer box and feedback each."""

    def __init__(self, number: int = 1) -> None:
        self.number = widgets.BoundedIntText(value=number, min=0, max=999_999_999,
                                             description="Drill", layout={"width": "180px"})
        self.next_button = widgets.Button(description="Next drill", icon="forward")
        self.reveal_button = widgets.Button(description="Show answers", icon="eye")
        self.facts = widgets.HTML()
        self.score = widgets.HTML()
        self.prompts: dict[str, widgets.HTML] = {}
        self.boxes: dict[str, widgets.Text] = {}
        self.feedback: dict[str, widgets.HTML] = {}
        self.right: dict[str, bool] = {}
        self.drill: Drill = drill(number)
        rows = []
        for q in self.drill.questions:
            self.prompts[q.id] = widgets.HTML()
            box = widgets.Text(placeholder="your answer, then Enter",
                               layout={"width": "260px"}, continuous_update=False)
            box.observe(lambda change, qid=q.id: self._on_answer(qid, change["new"]),
                        names="value")
            self.boxes[q.id] = box
            self.feedback[q.id] = widgets.HTML()
            rows.append(widgets.VBox([self.prompts[q.id],
                                      widgets.HBox([box, self.feedback[q.id]])]))
        self.number.observe(lambda change: self.load(change["new"]), names="value")
        self.next_button.on_click(lambda _b: setattr(self.number, "value",
                                                     self.number.value + 1))
        self.reveal_button.on_click(lambda _b: self.reveal())
        self.ui = widgets.VBox([
            widgets.HBox([self.number, self.next_button, self.reveal_button]),
            self.facts, *rows, self.score,
        ])
        self.load(number)

    def load(self, number: int) -> None:
        """Show drill ``number`` with empty answer boxes."""
        self.drill = drill(int(number))
        if self.number.value != number:
            self.number.value = number
        self.facts.value = "<br>".join(html.escape(f) for f in self.drill.facts)
        self.right = {}
        for i, q in enumerate(self.drill.questions, start=1):
            self.prompts[q.id].value = f"<b>Q{i}.</b> {html.escape(q.prompt)}"
            self.boxes[q.id].value = ""
            self.feedback[q.id].value = ""
        self._tally()

    def _on_answer(self, question_id: str, text: str) -> None:
        if not text.strip():
            self.feedback[question_id].value = ""
            return
        ok, message = self.drill.check(question_id, text)
        self.right[question_id] = ok
        colour, mark = (_OK, "&#10003;") if ok else (_NO, "&#10007;")
        self.feedback[question_id].value = (
            f'<span style="color:{colour}">{mark} {html.escape(message)}</span>'
        )
        self._tally()

    def answer(self, question_id: str, text: str) -> str:
        """Type ``text`` into a question's box; return the feedback as plain text."""
        self.drill.question(question_id)  # bad ids raise InputError
        self.boxes[question_id].value = str(text)
        return self.feedback_text(question_id)

    def feedback_text(self, question_id: str) -> str:
        """A question's feedback without its HTML."""
        return html.unescape(re.sub(r"<[^>]+>", "", self.feedback[question_id].value)).strip()

    def reveal(self) -> None:
        """Show every answer with its explanation."""
        for q in self.drill.questions:
            self.feedback[q.id].value = (
                f'<span style="color:#57606a">answer: {html.escape(q.answer_text)}. '
                f"{html.escape(q.explanation)}</span>"
            )

    def _tally(self) -> None:
        done = sum(self.right.values())
        self.score.value = f"<b>{done} of {len(self.drill.questions)} right</b>"

    def _repr_mimebundle_(self, **kwargs):
        return self.ui._repr_mimebundle_(**kwargs)


def drill_app(number: int = 1) -> DrillApp:
    """The drill app at drill ``number``; display it by ending a cell with it."""
    return DrillApp(number)
