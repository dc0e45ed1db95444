"""The review app (lesson 12) without a browser: acceptance behind a button, as the library
gives it."""

from __future__ import annotations

from schedatrix.course.apps.review_app import EXAMPLE, NO_LIMIT, ReviewApp
from schedatrix.serving.scenarios.scenario import scenario_from_dict
from schedatrix.serving.studies.accept import accept, chosen

SMALL = {
    "load": {"rate": 6, "duration": 120, "input_len": "lognormal:900,0.8",
             "output_len": "lognormal:150,0.7"},
    "classes": [{"name": "chat", "share": 1.0, "ttft_s": 1.0, "tpot_s": 0.06}],
    "defaults": {"router": "least-work"},
    "designs": [{"name": "2 x TP1", "replicas": 2}, {"name": "3 x TP1", "replicas": 3}],
    "faults": {"schedule": ["worker:0@50+20"]},
    "acceptance": {"runs": 2, "max_recovery_s": 60},
}


def test_the_review_is_the_library_acceptance():
    sc = scenario_from_dict(SMALL)
    app = ReviewApp(sc)
    assert app.knobs["seeds"].value == 2 and app.knobs["max_recovery"].value == 60.0
    results = app.review()
    assert app.progress.value == app.progress.max == 2 * 2 * 2
    expected = accept(list(sc.designs), sc.make_requests(), sc.faults, 2, sc.seed, sc.criteria,
                      sc.fault_criteria, sc.resilience)
    assert [a.accepted for a in results] == [a.accepted for a in expected]
    assert [a.recovery(k) for a in results for k in range(2)] == \
        [a.recovery(k) for a in expected for k in range(2)]
    pick = chosen(expected)
    text = app.text()
    assert (f"Chosen: {pick.design.name}" in text) if pick else ("No design is accepted" in text)
    app.knobs["seeds"].value = 1                  # a knob after the run: the result is stale
    assert "press Run the review again" in app.text("note")


def test_no_limit_and_no_design():
    app = ReviewApp(scenario_from_dict(SMALL))
    app.knobs["designs"].value = ("3 x TP1",)
    app.knobs["seeds"].value = 1
    app.knobs["max_recovery"].value = NO_LIMIT
    assert app.knobs["max_recovery"].label == "no limit"
    (a,) = app.review()
    assert a.criteria.max_recovery_s is None and a.design.name == "3 x TP1"
    app.knobs["designs"].value = ()
    assert app.review() is None and "Pick at least one design" in app.text()


def test_the_lesson_scenario_loads():
    app = ReviewApp(EXAMPLE)
    assert len(app.knobs["designs"].options) == 4
    assert "run this cell" in app._repr_mimebundle_()["text/plain"]


def test_the_recovery_limit_always_shows_a_choice():
    # a value of None left the dropdown blank ("Recovery at most:" and nothing)
    unlimited = {**SMALL, "acceptance": {"runs": 2}}
    knob = ReviewApp(scenario_from_dict(unlimited)).knobs["max_recovery"]
    assert knob.index is not None and knob.label == "no limit"
    # a limit the menu does not list is kept, not turned into "no limit"
    own = {**SMALL, "acceptance": {"runs": 2, "max_recovery_s": 45}}
    knob = ReviewApp(scenario_from_dict(own)).knobs["max_recovery"]
    assert (knob.label, knob.value) == ("45 s", 45.0)
    assert [label for label, _ in knob.options] == ["no limit", "30 s", "45 s", "60 s", "90 s",
                                                     "120 s"]
    assert ReviewApp(EXAMPLE).knobs["max_recovery"].label == "60 s"
