"""The drill app without a browser: type answers into the boxes, read the feedback."""

from __future__ import annotations

import pytest

from schedatrix.course.apps.drill_app import drill_app
from schedatrix.course.drills.fleet import drill
from schedatrix.course.live import page_text
from schedatrix.errors import InputError


def _right(q) -> str:
    if q.grading == "money":
        return f"{q.answer:,.0f}"
    if q.grading == "number":
        return f"{q.answer:.3f}"
    if q.grading == "percent":
        return f"{q.answer:.1f}%"
    if q.grading == "yesno":
        return "yes" if q.answer else "no"
    if q.grading == "check":
        return "none" if q.answer == "none" else f"{q.answer}, {sorted(q.accepted)[0]}"
    return str(q.answer)


def test_typed_answers_get_immediate_feedback():
    app = drill_app(3)
    d = drill(3)
    assert "0 of 5 right" in app.score.value
    first, second, third = d.questions[:3]
    assert app.answer(first.id, _right(first)).startswith("✓ Right!")
    assert "1 of 5 right" in app.score.value
    assert app.answer(second.id, "999999").startswith("✗")
    assert "1 of 5 right" in app.score.value
    assert app.answer(third.id, _right(third)).startswith("✓")
    assert "2 of 5 right" in app.score.value


def test_every_question_of_every_shown_drill_can_be_answered_right():
    app = drill_app(0)
    for n in range(8):
        app.number.value = n
        for q in app.drill.questions:
            assert app.answer(q.id, _right(q)).startswith("✓"), (n, q.id)
        assert "5 of 5 right" in app.score.value


def test_next_drill_shows_its_own_questions_number_and_seed():
    app = drill_app(3)
    app.answer(app.drill.questions[0].id, "1")
    app.next_button.click()
    assert app.number.value == 4 and app.drill.number == 4
    assert all(box.value == "" for box in app.boxes)
    assert all(fb.value == "" for fb in app.feedback)
    assert f"Drill 4 (lottery seed {drill(4).seed})" in app.header.value
    assert drill(4).facts[0].split(",")[0] in app.facts.value
    for slot, q in enumerate(drill(4).questions):
        assert q.prompt.split(" ")[0] in app.prompts[slot].value
    app.number.value = 10
    assert app.drill.plan == drill(10).plan


def test_reveal_shows_every_answer():
    app = drill_app(5)
    app.reveal_button.click()
    for q in drill(5).questions:
        assert q.answer_text in app.feedback_text(q.id)


def test_a_notebook_opened_without_running_shows_the_drill_not_a_widget_repr():
    bundle = drill_app(2)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "Drill 2 (lottery seed" in bundle["text/html"]
    assert "VBox(" not in bundle["text/plain"] and bundle["text/plain"].startswith("Drill 2")
    for q in drill(2).questions:
        assert page_text(q.prompt) in bundle["text/html"]
    assert "$" not in bundle["text/html"]  # JupyterLab's MathJax would read dollars as math
    assert "answer:" not in bundle["text/html"]  # the still picture keeps the key hidden


def test_bad_question_id():
    with pytest.raises(InputError):
        drill_app(1).answer("cost", "1")
