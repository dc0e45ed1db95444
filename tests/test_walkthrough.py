"""The walkthrough app without a browser: set a knob's value, read the readout."""

import pytest

import schedatrix as s
from schedatrix.course.apps.walkthrough import READOUTS, Walkthrough, next_seed, walkthrough
from schedatrix.fleet.odds import mattered_vs_noise


@pytest.fixture(scope="module")
def app():
    return Walkthrough()


@pytest.fixture
def fresh():
    return Walkthrough(plots_on=False)


def test_opening_state_is_the_spec(app):
    assert app.plan() == s.Plan()
    assert "$27,170" in app.text("bill")
    assert "10 of 16" in app.text("warm")
    assert "95.7%" in app.text("convergence")
    assert "60,000 of 60,000" in app.text("delivered")
    assert "0.00%" in app.text("unmet")
    assert "$3,877" in app.text("idle")
    assert "$1,170" in app.text("churn") and "3 cards" in app.text("churn")
    assert "5.803" in app.text("score") and "ideal 6.065" in app.text("score")
    assert app.text("signature").endswith("111")
    assert app.text("verdict").startswith("The month's verdict. The month reads clean")
    assert bytes(app.month_image.value).startswith(b"\x89PNG")


def test_every_readout_has_its_css_class(app):
    for name, css in READOUTS.items():
        assert css in app.readouts[name]._dom_classes


def test_picking_golden_idler_shows_its_figures(fresh):
    before = fresh.updates
    fresh.preset.value = "golden-idler"
    assert fresh.updates == before + 1  # one update for the whole preset
    assert fresh.plan() == s.preset("golden-idler").plan
    assert "$69,940" in fresh.text("bill")
    assert fresh.text("signature").endswith("101")
    assert "26 of 32" in fresh.text("warm")
    assert "55.8%" in fresh.text("convergence")
    assert "convergence fails" in fresh.text("lamps")
    assert "Golden idler" in fresh.text("verdict")
    assert "jumpy" in fresh.story.value


@pytest.mark.parametrize("name", list(s.PRESETS))
def test_every_preset_loads_to_its_own_month(fresh, name):
    fresh.load(name)
    m = s.simulate(s.preset(name).plan)
    assert fresh.month == m
    assert f"{m.warm} of {m.cards}" in fresh.text("warm")
    assert fresh.text("signature").endswith(m.signature)


def test_the_fixes_show_the_verified_figures(fresh):
    fresh.load("golden-idler-steady")
    assert "$25,740" in fresh.text("bill") and "90.9%" in fresh.text("convergence")
    fresh.load("noise-evictor")
    assert "$30,520" in fresh.text("bill") and fresh.text("signature").endswith("110")
    assert "4 of 12 wrong" in fresh.text("lamps")
    fresh.load("noise-evictor-day")
    assert "$30,030" in fresh.text("bill") and "97.9%" in fresh.text("convergence")
    fresh.load("bargain-shortfall")
    assert "$28,840" in fresh.text("bill") and fresh.text("signature").endswith("011")
    assert "61,014 of 90,000" in fresh.text("delivered")
    fresh.load("bargain-shortfall-flagship")
    assert "$35,360" in fresh.text("bill") and "95.6%" in fresh.text("convergence")


def test_moving_a_knob_changes_the_readout(fresh):
    before = fresh.text("bill")
    fresh.knobs["shape"].value = "jumpy"
    assert fresh.plan().shape == "jumpy"
    assert fresh.text("bill") != before
    assert fresh.month == s.simulate(s.Plan(shape="jumpy"))
    fresh.knobs["cards"].value = 20
    assert "of 20" in fresh.text("warm")


def test_turning_a_knob_clears_the_famous_month(fresh):
    fresh.load("noise-evictor")
    before = fresh.updates
    fresh.knobs["window"].value = "day"
    assert fresh.preset.value == "" and fresh.story.value == ""
    assert fresh.updates == before + 1
    assert fresh.plan() == s.preset("noise-evictor").plan.with_knobs(window="day")


def test_each_knob_reaches_the_plan(fresh):
    k = fresh.knobs
    k["card_class"].value = "bargain"
    k["demand"].value = 50_000
    k["headroom"].value = 25
    k["window"].value = "hour"
    k["evict"].value = 40
    k["seed"].value = 7
    assert fresh.plan() == s.Plan(card_class="bargain", demand_tok_s=50_000.0, headroom=0.25,
                                  window="hour", evict_share=0.40, seed=7)
    assert fresh.month == s.simulate(fresh.plan())


def test_sliders_update_once_per_move(fresh):
    for name in ("cards", "demand", "headroom", "evict"):
        assert fresh.knobs[name].continuous_update is False
    before = fresh.updates
    fresh.knobs["headroom"].value = 20
    assert fresh.updates == before + 1


def test_new_lottery_draw_changes_the_seed_deterministically(fresh):
    seed = fresh.plan().seed
    fresh.new_draw.click()
    assert fresh.plan().seed == next_seed(seed) != seed
    assert fresh.month.plan.seed == next_seed(seed)
    assert next_seed(seed) == next_seed(seed)


def test_sentences_are_the_months(fresh):
    for sentence in fresh.month.sentences[:3]:
        assert sentence.split(":")[0] in fresh.text("sentences")


def test_mattered_vs_noise_behind_its_button(app):
    assert app.mattered_image.layout.display == "none"  # no broken image before a measure
    steps = app.measure_mattered(months=50)
    assert app.progress.value == app.progress.max == len(steps) + 1
    assert bytes(app.mattered_image.value).startswith(b"\x89PNG")
    assert app.mattered_image.layout.display == ""
    note = app.text_of(app.mattered_note)
    moved = sum(s.mattered for s in steps)
    small = sum(s.real and not s.beats_luck for s in steps)
    assert (f"{moved} moved the mean bill by more than that, {small} by a real amount"
            in note)
    assert steps == mattered_vs_noise(app.plan(), 50, 0)  # the library's answer, not a copy
    app.knobs["cards"].value = 17
    assert "moved since the last measurement" in app.mattered_note.value


def test_walkthrough_function_displays():
    w = walkthrough()
    bundle = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_a_notebook_opened_without_running_shows_the_opening_month():
    """The still picture a page shows without a kernel: the opening state's readout, verdict
    and plot, not a placeholder."""
    app = walkthrough()
    page = app._repr_mimebundle_()["text/html"]
    for figure in ("<span>&#36;</span>27,170", "10 of 16", "95.7%", "<span>&#36;</span>3,877",
                   "The month reads clean"):
        assert figure in page
    assert "$" not in page.split("<img")[0]  # JupyterLab's MathJax would read dollars as math
    assert "<style" not in page  # an untrusted notebook's output loses its styles
    assert "<img src='data:image/png;base64," in page
    assert "16 flagship cards, 60,000 tok/s steady +10% headroom, day window" in page
    assert "<td>signature</td><td><b>111</b></td>" in page
    plain = app._repr_mimebundle_()["text/plain"]
    assert "The month reads clean" in " ".join(plain.split())   # wrapped to fit
    assert max(len(line) for line in plain.splitlines()) <= 100


def test_knobs_turned_at_once_in_two_threads_show_one_month():
    """JupyterLab hands widget messages to kernel subshells: two knob turns can update at
    once; the readouts and the picture end on the month the knobs say."""
    import threading

    from schedatrix.course.figures.month_plot import MonthPlot

    w = Walkthrough()
    for round_ in range(3):
        turns = [threading.Thread(target=setattr, args=(w.knobs["cards"], "value", 20 + round_)),
                 threading.Thread(target=setattr, args=(w.knobs["seed"], "value", 7 + round_))]
        for t in turns:
            t.start()
        for t in turns:
            t.join()
        assert w.plan() == s.Plan(cards=20 + round_, seed=7 + round_)
        assert w.month == s.simulate(w.plan())
        assert f"of {20 + round_}" in w.text("warm")
        assert bytes(w.month_image.value) == MonthPlot().png(w.month)
