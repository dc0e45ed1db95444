"""The fault timeline app (lesson 11) without a browser: knobs redraw the timeline and the plan
at once, the run waits for the button and equals the library's own fault study."""

from __future__ import annotations

import pytest

from schedatrix.course.apps.fault_app import (
    FAULT_DESIGN,
    FAULT_LOAD,
    FaultApp,
    fault_study,
    restart_s,
)
from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.cluster.faults import Fault, Resilience
from schedatrix.serving.figures.record import UNFINISHED
from schedatrix.serving.figures.recovery import recovery_time
from schedatrix.serving.load.workload import generate


@pytest.fixture(scope="module")
def app():
    return FaultApp(duration_s=150.0, plots_on=False)


def test_knobs_redraw_the_plan_and_wait_for_the_button(app):
    app.knobs["kind"].value = "worker"
    app.knobs["target"].value = 1
    before = app.redraws
    app.knobs["at_s"].value = 60
    assert app.redraws == before + 1 and app.study is None and app.progress.value == 0
    assert app.fault() == Fault("worker", 1, 60.0, 30.0)
    took = restart_s(FAULT_DESIGN, Resilience())
    back = 60 + 30 + took
    assert app.text("plan") == (
        f"Replica 1 crashes at 60 s; the router notices at 65 s (health checks every 5 s) and "
        f"retries the lost requests on the 2 replicas left; back at {back:.1f} s (30 s down "
        f"plus {took:.1f} s restarting).")


def test_the_run_is_the_library_fault_study(app):
    app.knobs["kind"].value = "worker"
    app.knobs["target"].value = 2
    app.knobs["at_s"].value = 70
    app.knobs["down_s"].value = 20
    study = app.run()
    assert app.progress.value == app.progress.max == 3
    expected = fault_study(generate(FAULT_LOAD, 0, duration_s=150.0), FAULT_DESIGN,
                           Fault("worker", 2, 70.0, 20.0))
    assert study.figures == expected.figures
    f = expected.figures
    text = app.text("result")
    assert f"requests retried {f.retried:,}" in text and "lost 0" in text
    rec = "never (within the run)" if f.recovery_s is None else f"{f.recovery_s:g} s"
    assert f"recovery time {rec}" in text
    # against the run without the fault, with that run's own phantom recovery beside it
    assert f.paired and f.noise_floor_s == recovery_time(expected.baseline, 70.0)[0]
    floor = "never (within the run)" if f.noise_floor_s is None else f"{f.noise_floor_s:g} s"
    assert f"own level before) {floor}" in text
    assert ("verdict damage measured" if f.measurable else "verdict no measurable damage") \
        in text
    app.knobs["down_s"].value = 30           # a knob after the run clears its result
    assert app.study is None and app.text("result") == "" and app.progress.value == 0


def test_the_target_follows_the_kind(app):
    app.knobs["kind"].value = "worker"
    app.knobs["target"].value = 2
    app.knobs["kind"].value = "node"
    assert [v for _, v in app.knobs["target"].options] == [0] and app.knobs["target"].value == 0
    assert "has no replica left" in app.text("plan")
    app.knobs["kind"].value = "drain"
    assert [v for _, v in app.knobs["target"].options] == [0, 1, 2]
    assert "Nothing should be lost" in app.text("plan")


@pytest.mark.parametrize("kind", ["worker", "node", "drain"])
def test_nothing_is_lost_whatever_the_fault(app, kind):
    app.knobs["kind"].value = kind
    app.knobs["target"].value = 0
    study = app.run()
    assert study.figures.lost == 0 and not (study.run.status == UNFINISHED).any()
    if kind == "node":          # every replica down: retries run out
        assert study.figures.failed > 0
    if kind == "drain":
        assert study.figures.retried == 0 and study.figures.failed == 0


def test_a_fault_on_a_replica_that_does_not_exist_is_refused():
    req = generate(FAULT_LOAD, 0, requests=20)
    with pytest.raises(InputError, match="there is no replica 3"):
        fault_study(req, FAULT_DESIGN, Fault("worker", 3, 10.0, 5.0))


def test_the_app_draws_its_timeline_and_plot():
    app = FaultApp(design=Design(replicas=2), duration_s=120.0)
    assert bytes(app.timeline.value).startswith(b"\x89PNG") and app.image.layout.display == "none"
    app.run()
    assert bytes(app.image.value).startswith(b"\x89PNG") and app.image.layout.display == ""
    bundle = app._repr_mimebundle_()
    assert "run this cell" in bundle["text/plain"]


def test_studies_of_one_load_share_its_run_without_the_fault():
    from schedatrix.serving.figures.metrics import figures
    from schedatrix.serving.sim.simulate import simulate

    load = generate(FAULT_LOAD, 3, duration_s=60.0)
    crash = fault_study(load, FAULT_DESIGN, Fault("worker", 0, 20.0, 10.0))
    slower = fault_study(load, FAULT_DESIGN, Fault("worker", 1, 30.0, 5.0),
                         Resilience(health_check_s=15.0))
    assert slower.baseline is crash.baseline            # simulated once
    assert figures(crash.baseline) == figures(simulate(load, FAULT_DESIGN))   # and as fresh
    same_draw = generate(FAULT_LOAD, 3, duration_s=60.0)  # another object: a run of its own
    other = fault_study(same_draw, FAULT_DESIGN, Fault("worker", 0, 20.0, 10.0))
    assert other.baseline is not crash.baseline
    assert figures(other.baseline) == figures(crash.baseline)
    spare = fault_study(load, FAULT_DESIGN.with_(replicas=4), Fault("worker", 0, 20.0, 10.0))
    assert spare.baseline is not crash.baseline and spare.baseline.replica.max() == 3
