"""One serving drill question: what it asks, its answer, and how it is graded (its kind).

Its own module so that the kinds of question kept apart from the replica drills
(:mod:`.expert_drills`, :mod:`.system_drills`) and the drills that draw them
(:mod:`.serving_drills`) share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServingQuestion"]


@dataclass(frozen=True)
class ServingQuestion:
    """One question: ``grading`` is ``count`` (a whole number, exact), ``number`` (within
    ``rel_tolerance`` of the answer) or ``slo`` (the failing SLO, ``ttft``, ``tpot`` or
    ``none``, and a knob from ``accepted``)."""

    id: str
    prompt: str
    answer: object
    grading: str
    unit: str
    explanation: str
    hint: str
    rel_tolerance: float = 0.0
    accepted: frozenset[str] = frozenset()

    @property
    def answer_text(self) -> str:
        if self.grading == "slo":
            if self.answer == "none":
                return "none"
            return f"{self.answer}, with {' or '.join(sorted(self.accepted))}"
        if self.grading == "count":
            return f"{self.answer:,} {self.unit}"
        return f"{self.answer:,.3g} {self.unit}" if self.answer < 100 else \
            f"{self.answer:,.0f} {self.unit}"
