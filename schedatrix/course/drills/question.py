"""One drill question for every bank (fleet, system, serving, expert): what it asks, its answer,
how the answer is written and the one rule that grades it.

Every kind of answer has one rule: ``exact`` (a whole number, yes or no, an incident's name),
``tolerance`` (a figure within an absolute ``tolerance`` or a ``rel_tolerance`` share of the
answer) or ``set`` (the one failing check or SLO, with a repair knob from ``accepted``). The
banks phrase their feedback; whether an answer is right is decided here."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError

__all__ = ["Question", "GRADINGS", "RULES", "by_id"]

#: The rules, one per kind of answer.
RULES = ("exact", "tolerance", "set")

#: How each answer is written (``grading``) and the rule that grades it.
GRADINGS = {
    "count": "exact",       # a whole number
    "yesno": "exact",       # yes or no
    "incident": "exact",    # an incident's name
    "money": "tolerance",   # dollars
    "number": "tolerance",  # a score, three decimals
    "percent": "tolerance",  # a share, one decimal
    "figure": "tolerance",  # a figure with its unit, three significant digits
    "check": "set",         # the failing fleet check (or none) and a knob that repairs it
    "slo": "set",           # the failing SLO (or none) and a knob that repairs it
}


@dataclass(frozen=True)
class Question:
    """One question: its prompt, its answer, how that is written (``grading``, one of
    :data:`GRADINGS`) and what grading it takes (``tolerance`` or ``rel_tolerance`` for a
    figure, the repair knobs ``accepted`` for a failing check or SLO)."""

    id: str
    prompt: str
    answer: object
    grading: str
    explanation: str
    hint: str
    unit: str = ""
    tolerance: float = 0.0
    rel_tolerance: float = 0.0
    accepted: frozenset[str] = frozenset()

    def __post_init__(self):
        if self.grading not in GRADINGS:
            raise ValueError(f"grading must be one of {', '.join(GRADINGS)}, "
                             f"got {self.grading!r}")

    @property
    def rule(self) -> str:
        """The rule that grades this question's answers: one of :data:`RULES`."""
        return GRADINGS[self.grading]

    def within(self, value) -> bool:
        """Whether ``value`` is the answer by this question's rule (``exact`` or
        ``tolerance``)."""
        if self.rule == "exact":
            return value == self.answer
        if self.rule != "tolerance":
            raise ValueError(f"question {self.id!r} is graded by names, not by a value")
        allowed = max(self.tolerance, self.rel_tolerance * abs(self.answer))
        return abs(value - self.answer) <= allowed

    def names_right(self, named: set[str], knobs: set[str]) -> bool:
        """The ``set`` rule: exactly the failing check or SLO named, and at least one knob, every
        one of them among the ``accepted`` repairs (an answer of ``none`` names nothing)."""
        if self.answer == "none":
            return not named
        return named == {self.answer} and bool(knobs) and knobs <= self.accepted

    @property
    def answer_text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.rule == "set":
            if self.answer == "none":
                return "none"
            return f"{self.answer}, with {' or '.join(sorted(self.accepted))}"
        if self.grading == "money":
            return f"${self.answer:,.0f}"
        if self.grading == "number":
            return f"{self.answer:.3f}"
        if self.grading == "percent":
            return f"{self.answer:.1f}%"
        if self.grading == "yesno":
            return "yes" if self.answer else "no"
        if self.grading == "count":
            return f"{self.answer:,}{unit}"
        if self.grading == "figure":
            return f"{self.answer:,.3g}{unit}" if self.answer < 100 else \
                f"{self.answer:,.0f}{unit}"
        return str(self.answer)


def by_id(questions, question_id: str) -> Question:
    """The drill's question ``question_id``; an unknown id is refused naming the drill's ids."""
    for q in questions:
        if q.id == question_id:
            return q
    raise InputError(f"question_id must be one of this drill's "
                     f"{', '.join(q.id for q in questions)}, got {question_id!r}")
