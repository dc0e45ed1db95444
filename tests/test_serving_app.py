"""The serving app and the design page without a browser: set knobs, read the readouts, and
check them against the simulator run directly on the same setting."""

import re

import numpy as np
import pytest

from schedatrix.course.apps.design_app import DesignApp, comparison_table, design_page
from schedatrix.course.apps.serving_app import READOUTS, ServingApp, seconds_text, serving_app
from schedatrix.course.apps.serving_knobs import (
    DESIGN_MENU,
    Setting,
    design_of,
    designs_for,
    load_of,
    menu_label,
    outcome_of,
)
from schedatrix.course.figures.request_plot import RequestPlot
from schedatrix.errors import InputError
from schedatrix.serving.figures.metrics import figures
from schedatrix.serving.load.workload import generate
from schedatrix.serving.sim.simulate import simulate
from schedatrix.serving.studies.acceptance import evaluate
from schedatrix.serving.studies.compare import compare


@pytest.fixture(scope="module")
def app():
    return ServingApp()


def direct(setting: Setting):
    """The figures and run of a setting, by the simulator alone."""
    run = simulate(generate(load_of(setting), setting.seed, requests=setting.requests),
                   design_of(setting))
    return figures(run), run


# -- the knobs' setting -------------------------------------------------------------------------

def test_setting_makes_the_load_and_design_it_says():
    s = Setting(rate_rps=3.0, burstiness=0.5, lengths="random", model="llama-3.2-3b",
                gpu="h100-80gb", tp=2, replicas=3, max_batch=64, ttft_slo_s=0.5)
    load, d = load_of(s), design_of(s)
    assert load.rate_rps == 3.0 and load.burstiness == 0.5
    assert str(load.input_len) == "1024" and str(load.output_len) == "128"
    assert load.classes[0].ttft_s == 0.5 and load.classes[0].tpot_s == 0.1
    assert (d.model, d.gpu, d.tp, d.replicas, d.max_batch) == ("llama-3.2-3b", "h100-80gb", 2,
                                                               3, 64)
    split = design_of(s.with_(split=(2, 1)))
    assert (split.replicas, split.prefill_replicas, split.decode_replicas) == (0, 2, 1)
    assert load_of(Setting()).pairs is not None          # the hour's pairs by default


def test_setting_refuses_what_the_simulator_refuses():
    with pytest.raises(InputError, match="lengths"):
        load_of(Setting(lengths="medium"))
    with pytest.raises(InputError, match="does not fit"):
        design_of(Setting(model="llama-3.1-70b"))
    with pytest.raises(InputError, match="tp"):
        design_of(Setting(tp=3))


def test_the_menu_and_its_labels():
    designs, skipped = designs_for("llama-3.1-8b", "a100-80gb")
    assert [d.name for d in designs] == [menu_label(k) for k in DESIGN_MENU]
    assert skipped == []
    big, too_small = designs_for("llama-3.1-70b", "a100-80gb")
    assert {n for n, _ in too_small} == {"1 x TP1", "2 x TP1", "1 x TP2"}
    assert all("does not fit" in reason for _, reason in too_small)
    assert min(d.gpus for d in big) == 4


def test_outcome_of_one_run_is_evaluate_of_that_run():
    s = Setting(rate_rps=6.0, requests=200)
    f, run = direct(s)
    mine = outcome_of(run, design_of(s))
    theirs = evaluate(design_of(s), lambda seed: run.requests, runs=1)
    assert mine.runs == theirs.runs and mine.per_class == theirs.per_class
    assert mine.verdict() == theirs.verdict() and mine.passed == theirs.passed
    assert mine.cost_per_mtok() == theirs.cost_per_mtok()


# -- the serving app -------------------------------------------------------------------------

def test_opening_readouts_are_the_simulator_figures(app):
    f, run = direct(app.setting())
    assert app.text("ttft") == (f"TTFT p50 / p95 {seconds_text(f.ttft_p50)} / "
                                f"{seconds_text(f.ttft_p95)}")
    assert seconds_text(f.itl_p95) in app.text("itl")
    assert seconds_text(f.tpot_p95) in app.text("tpot")
    assert seconds_text(f.queue_p95) in app.text("queue")
    assert f"{f.goodput_rps:.2f} req/s" in app.text("goodput")
    assert f"{f.slo_attainment:.1%}" in app.text("goodput")
    assert f"{f.throughput_tok_s:,.0f}" in app.text("throughput")
    assert f"{run.kv_peak_share:.0%}" in app.text("kv")
    assert "300 synthetic requests" in app.text("load")
    assert app.text("verdict").endswith("Synthetic load: not a production SLO result.")
    assert bytes(app.image.value).startswith(b"\x89PNG")


def test_every_readout_has_its_css_class(app):
    for name, css in READOUTS.items():
        assert css in app.readouts[name]._dom_classes


def test_a_knob_updates_once_and_the_figures_follow():
    a = ServingApp(plots_on=False)
    before, ttft = a.updates, a.outcome.runs[0].ttft_p95
    a.knobs["rate"].value = 12.0
    assert a.updates == before + 1
    assert a.setting().rate_rps == 12.0
    assert a.outcome.runs[0] == direct(a.setting())[0]
    assert a.outcome.runs[0].ttft_p95 > ttft
    a.set(model="llama-3.2-3b", gpu="h100-80gb", tp=2)
    assert a.updates == before + 2                       # one update for three knobs
    assert a.outcome.design.name == "1 x TP2" and a.outcome.design.model == "llama-3.2-3b"
    assert a.outcome.runs[0] == direct(a.setting())[0]


def test_the_plot_redraws_what_changed():
    a = ServingApp()
    first = bytes(a.image.value)
    a.knobs["rate"].value = 15.0
    assert bytes(a.image.value) != first and bytes(a.image.value).startswith(b"\x89PNG")


def test_knobs_turned_at_once_in_two_threads_show_one_run():
    """JupyterLab hands widget messages to kernel subshells: two knob turns can update at
    once; the readouts and the picture end on the run the knobs say, drawn whole."""
    import threading

    a = ServingApp()
    for round_ in range(3):
        turns = [threading.Thread(target=setattr, args=(a.knobs["rate"], "value",
                                                         4.0 + round_)),
                 threading.Thread(target=setattr, args=(a.knobs["seed"], "value", 7 + round_))]
        for t in turns:
            t.start()
        for t in turns:
            t.join()
        s = a.setting()
        assert (s.rate_rps, s.seed) == (4.0 + round_, 7 + round_)
        f, _run = direct(s)
        assert a.outcome.runs[0] == f
        assert a.text("ttft") == (f"TTFT p50 / p95 {seconds_text(f.ttft_p50)} / "
                                  f"{seconds_text(f.ttft_p95)}")
        assert bytes(a.image.value) == bytes(ServingApp(s).image.value)


def test_a_refused_design_shows_the_simulator_message_and_recovers():
    a = ServingApp(plots_on=False)
    a.knobs["model"].value = "llama-3.1-70b"             # on one A100: does not fit
    assert a.outcome is None and "does not fit on 1 x a100-80gb" in a.text("error")
    assert a.text("ttft").endswith("-")
    a.knobs["tp"].value = 4
    assert a.outcome is not None and a.text("error") == ""
    assert a.outcome.design.gpus == 4


def test_the_split_knob_disables_replicas():
    a = ServingApp(plots_on=False)
    a.knobs["split"].value = (1, 2)
    assert a.knobs["replicas"].disabled
    assert a.outcome.design.name == "split P1:D2 TP1" and a.outcome.design.gpus == 3
    a.knobs["split"].value = (0, 0)
    assert not a.knobs["replicas"].disabled


def test_seeds_button_is_evaluate_over_seeds():
    a = ServingApp(plots_on=False, seeds_runs=3, seeds_requests=300)
    a.knobs["seed"].value = 4
    o = a.run_seeds()
    s = a.setting()
    load = load_of(s)
    ref = evaluate(design_of(s), lambda seed: generate(load, seed, requests=300), runs=3,
                   seed=4)
    assert o.runs == ref.runs
    assert a.progress.value == a.progress.max == 3
    assert "95% interval" in a.text("seeds") and ref.verdict() in a.text("seeds")
    a.knobs["rate"].value = 2.0                          # a knob clears the stale table
    assert a.text("seeds") == "" and a.progress.value == 0


def test_groups_choose_the_knobs_shown():
    a = serving_app(groups=("load",), rate_rps=2.5)
    assert a.setting().rate_rps == 2.5
    shown = set()
    stack = [a.ui]
    while stack:
        w = stack.pop()
        shown.add(id(w))
        stack.extend(getattr(w, "children", ()))
    assert id(a.knobs["rate"]) in shown and id(a.knobs["model"]) not in shown
    with pytest.raises(InputError, match="groups"):
        ServingApp(groups=("load", "colour"))


def test_request_plot_clips_to_its_range():
    p = RequestPlot(10)
    png = p.png((np.arange(3), np.array([1e-6, 0.5, 1e6])), (np.arange(2), [0.01, 0.02]),
                1.0, None)
    assert png.startswith(b"\x89PNG")


def test_the_request_plot_reads_at_the_size_the_app_shows_it():
    """Lesson 07's app showed its plot's words at 8 pixels (8 pt at 72 dpi, shown 1:1): every
    text is now at least 12 pixels high where the app draws it, ticks plain numbers."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    a = ServingApp(groups=("load", "slo", "seed"))
    fig = a._plot.fig
    shown = int(a.image.layout.width.removesuffix("px")) / fig.bbox.width   # widget px per px
    FigureCanvasAgg(fig).draw()
    texts = [t for ax in fig.axes for t in (ax.title, ax._left_title, ax.xaxis.label,
                                             ax.yaxis.label, *ax.get_xticklabels(),
                                             *ax.get_yticklabels(), *ax.get_legend().get_texts())
             if t.get_text()]
    assert len(texts) > 20
    for t in texts:
        assert t.get_fontsize() * fig.dpi / 72 * shown >= 12, t.get_text()
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert "0.001" in ticks and "1000" in ticks and not any("^" in t for t in ticks)


def test_seconds_text():
    assert [seconds_text(x) for x in (0.0042, 0.123, 2.5, float("nan"))] == [
        "4.2 ms", "123 ms", "2.50 s", "-"]


# -- the design page ---------------------------------------------------------------------------

SMALL = ("1 x TP1", "2 x TP1", "1 x TP4")


@pytest.fixture(scope="module")
def page():
    p = DesignApp(runs=2, requests=250)
    p.knobs["designs"].value = SMALL
    p.compare()
    return p


def test_the_page_compares_what_compare_compares(page):
    s = page.setting()
    designs, _ = designs_for(s.model, s.gpu, [k for k in DESIGN_MENU if menu_label(k) in SMALL])
    load = load_of(s)
    ref = compare(designs, lambda seed: generate(load, seed, requests=250), runs=2)
    assert [o.runs for o in page.comparison.outcomes] == [o.runs for o in ref.outcomes]
    assert page.text("summary") == f"Answer. {ref.summary()}"
    assert page.text("table") == " ".join(re.sub("<[^>]+>", " ", comparison_table(ref)).split())
    assert "Synthetic" in page.text("summary") or "synthetic" in page.text("summary")
    assert bytes(page.plot.value).startswith(b"\x89PNG")
    assert page.progress.value == page.progress.max


def test_a_knob_marks_the_result_stale():
    p = DesignApp(runs=1, requests=250)
    p.knobs["designs"].value = ("1 x TP1",)
    p.compare()
    p.knobs["rate"].value = 9.0
    assert "knobs moved" in p.text("status")


def test_the_page_says_why_nothing_ran():
    p = DesignApp(runs=1, requests=250)
    p.knobs["designs"].value = ()
    assert p.compare() is None and "at least one candidate" in p.text("status")
    p.knobs["designs"].value = ("1 x TP1",)
    p.knobs["model"].value = "llama-3.1-70b"
    assert p.compare() is None and "does not fit" in p.text("status")


def test_model_sizes_table():
    p = design_page(rate_rps=3.0)
    p.knobs["runs"].value = 1
    p.knobs["requests"].value = 250
    p.knobs["designs"].value = ("1 x TP1", "1 x TP4")
    by_model = p.compare_sizes()
    assert list(by_model) == ["llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b"]
    text = p.text("sizes")
    for name, c in by_model.items():
        assert name in text and c.summary() in text
    assert by_model["llama-3.1-70b"].skipped[0][0] == "1 x TP1"
    assert "(+1 too small)" in text
