"""The drill app without a browser: type answers into the boxes, read the feedback."""

from __future__ import annotations

import pytest

from schedatrix.course.drill_app import drill_app
from schedatrix.course.drills import drill
from schedatrix.errors import InputError


def test_typed_answers_get_immediate_feedback():
    app = drill_app(3)
    d = drill(3)
    assert "0 of 5 right" in app.score.value
    assert app.answer("bill", f"{d.question('bill').answer:,.0f}").startswith("✓ Right!")
    assert app.answer("run_set", str(d.question("run_set").answer + 1)).startswith("✗ Not quite")
    assert "1 of 5 right" in app.score.value
    assert app.answer("signature", d.question("signature").answer).startswith("✓")
    assert "2 of 5 right" in app.score.value


def test_next_drill_clears_the_boxes_and_shows_the_new_facts():
    app = drill_app(3)
    app.answer("bill", "1")
    app.next_button.click()
    assert app.number.value == 4 and app.drill.number == 4
    assert app.boxes["bill"].value == "" and app.feedback["bill"].value == ""
    assert app.facts.value.startswith("Pool: ")
    assert drill(4).facts[0].split(",")[0] in app.facts.value
    app.number.value = 10
    assert app.drill.plan == drill(10).plan


def test_reveal_shows_every_answer():
    app = drill_app(5)
    app.reveal_button.click()
    for q in drill(5).questions:
        assert q.answer_text in app.feedback_text(q.id)


def test_bad_question_id():
    with pytest.raises(InputError):
        drill_app(1).answer("cost", "1")
