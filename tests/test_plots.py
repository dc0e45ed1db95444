"""The month's figures: what they draw is what the month says."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import schedatrix as s  # noqa: E402
from schedatrix.course.figures import plots  # noqa: E402
from schedatrix.errors import InputError  # noqa: E402
from schedatrix.fleet.odds import mattered_vs_noise  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_bill_split_bars_add_up_to_the_bill():
    m = s.simulate()
    ax = plots.bill_split(m)
    widths = [p.get_width() for p in ax.patches]
    # moving, idle, churn, then the ideal bar
    assert widths[:3] == pytest.approx([m.moving_rent, m.idle_bill, m.churn_fees])
    assert sum(widths[:3]) == pytest.approx(27_170)
    assert widths[3] == pytest.approx(m.ideal_bill) == pytest.approx(26_000)
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "$27,170" in texts and "$26,000" in texts


def test_bill_split_without_ideal_has_three_bars():
    ax = plots.bill_split(s.simulate(), ideal=False)
    assert len(ax.patches) == 3


def test_pool_cards_colours_each_card_by_its_fate():
    m = s.simulate(s.preset("noise-evictor").plan)
    ax = plots.pool_cards(m)
    bars = ax.patches
    assert len(bars) == m.cards == 32
    colours = [matplotlib.colors.to_hex(b.get_facecolor()) for b in bars]
    assert colours.count(plots.COLOURS["evicted"]) == m.evicted == 12
    assert colours.count(plots.COLOURS["warm"]) == m.warm == 20
    # bars are true rates, best measured first
    order = np.argsort(-np.asarray(m.pool.measured_tok_s), kind="stable")
    heights = [b.get_height() for b in bars]
    assert heights == pytest.approx(np.asarray(m.pool.true_tok_s)[order])
    # the median line, and one hatched bar per wrong eviction (no labels to pile up)
    assert ax.lines[0].get_ydata()[0] == pytest.approx(m.median_true_tok_s)
    hatched = [b for b in bars if b.get_hatch()]
    assert len(hatched) == m.wrong_evictions == 4
    assert all(b.get_height() >= m.median_true_tok_s for b in hatched)
    assert not ax.texts


def test_pool_cards_title_counts():
    m = s.simulate()
    title = plots.pool_cards(m).get_title(loc="left")
    assert "10 warm, 3 skipped, 3 evicted (0 wrong)" in title


def test_mattered_vs_noise_one_bar_per_step_and_the_noise_band():
    steps = mattered_vs_noise(s.Plan(), months=100)
    ax = plots.mattered_vs_noise(steps)
    bars = [p for p in ax.patches if p.get_height() < 1]  # barh bars are 0.8 high
    assert len(bars) == len(steps)
    assert [b.get_width() for b in bars] == pytest.approx([abs(x.shift) for x in steps])
    top = max(ax.get_yticklabels(), key=lambda t: t.get_position()[1])
    assert top.get_text().startswith("cards:")  # the first step is drawn on top


def test_mattered_vs_noise_refuses_nothing():
    with pytest.raises(InputError, match="steps"):
        plots.mattered_vs_noise([])


def test_month_figure_has_two_panels():
    fig = plots.month_figure(s.simulate())
    assert len(fig.axes) == 2
