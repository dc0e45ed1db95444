"""The walkthrough's live month picture: the same picture as a full draw of plots.py's panels,
whatever months came before, redrawn without a full draw when the frame stays."""

import io
import threading

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from PIL import Image  # noqa: E402

import schedatrix as s  # noqa: E402
from schedatrix.course.figures import plots  # noqa: E402
from schedatrix.course.figures.month_plot import MonthPlot, month_panels  # noqa: E402
from schedatrix.course.figures.png import png  # noqa: E402
from schedatrix.errors import InputError  # noqa: E402

PLAN = s.Plan()
#: Months that move every part of the picture: the pool's size (either side of 40 cards, when
#: the cards' numbers give way to a count), the card class, the demand, evictions, the window,
#: the lottery; the famous months.
PLANS = [PLAN, *(p.plan for p in s.PRESETS.values()),
         PLAN.with_knobs(cards=1), PLAN.with_knobs(cards=40), PLAN.with_knobs(cards=41),
         PLAN.with_knobs(cards=128, card_class="bargain"), PLAN.with_knobs(card_class="b-stock"),
         PLAN.with_knobs(demand_tok_s=200_000.0), PLAN.with_knobs(demand_tok_s=5_000.0),
         PLAN.with_knobs(evict_share=0.0), PLAN.with_knobs(evict_share=0.6),
         PLAN.with_knobs(window="hour", shape="jumpy"), PLAN.with_knobs(seed=3)]


def pixels(data: bytes) -> np.ndarray:
    assert data.startswith(b"\x89PNG")
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def full_draw(month) -> np.ndarray:
    """The picture as the walkthrough drew it before: plots.py's panels, a whole draw."""
    fig = Figure(figsize=(8.0, 5.4))
    bill_ax, pool_ax = month_panels(fig)
    plots.bill_split(month, bill_ax)
    plots.pool_cards(month, pool_ax)
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=80)
    return pixels(out.getvalue())


@pytest.fixture(scope="module")
def live():
    return MonthPlot()


@pytest.mark.parametrize("plan", PLANS, ids=range(len(PLANS)))
def test_the_live_picture_is_the_full_draw(live, plan):
    month = s.simulate(plan)
    got, want = pixels(live.png(month)), full_draw(month)
    assert got.shape == want.shape == (432, 640, 3)
    # Texts sit within a quarter pixel of the full draw's (pasted, not drawn in place): their
    # edges differ a little; a bar, a tick, a dot or a letter missing or moved differs by far
    # more (a dark mark on white: 200 or more).
    diff = np.abs(got - want).max(axis=2)
    assert diff.max() <= 64, np.argwhere(diff > 64)[:10]
    assert diff.mean() < 1


def test_what_came_before_does_not_show(live):
    """Frames, legends and texts kept from earlier months draw a month as a fresh plot does
    (after the parametrised test above drew them all, in another order)."""
    for plan in [PLANS[i] for i in (19, 12, 11, 10, 3, 0)]:  # 128, 41 and 40 cards among them
        month = s.simulate(plan)
        assert live.png(month) == MonthPlot().png(month)


def test_a_redraw_keeps_the_frame_and_the_same_month_keeps_its_bytes():
    plot = MonthPlot()
    first = plot.png(s.simulate(PLAN))
    assert plot.full_draws == 1
    # The eviction share moves colours, the bill and the legends, not the cards' rates: the
    # pool's y labels stay, and so does the frame.
    seen = {first}
    for share in (0.1, 0.3, 0.4):
        seen.add(plot.png(s.simulate(PLAN.with_knobs(evict_share=share))))
    assert len(seen) == 4 and plot.full_draws == 1
    again = s.simulate(PLAN.with_knobs(evict_share=0.4))
    assert plot.png(again) is plot.png(again)  # the last month again: not drawn again


def test_png_writes_what_it_is_given_and_refuses_what_is_not_a_picture():
    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, (5, 7, 4), dtype=np.uint8)
    for picture, mode in ((rgba, "RGBA"), (rgba[..., :3].copy(), "RGB")):
        read = Image.open(io.BytesIO(png(picture)))
        assert read.mode == mode and (np.asarray(read) == picture).all()
    with pytest.raises(InputError, match="pixels"):
        png(np.zeros((5, 7), np.uint8))
    with pytest.raises(InputError, match="pixels"):
        png(np.zeros((5, 7, 3), np.float64))


def test_two_threads_redrawing_at_once_each_get_their_month():
    """JupyterLab hands widget messages to kernel subshells: two knob turns can redraw at once,
    in two threads, on one picture."""
    months = [s.simulate(PLAN), s.simulate(PLAN.with_knobs(cards=24, seed=5))]
    want = [MonthPlot().png(m) for m in months]
    shared = MonthPlot()
    got = [[], []]

    def turn(k: int) -> None:
        for i in range(6):
            j = (k + i) % 2  # each thread alternates, so every call redraws
            got[k].append((j, shared.png(months[j])))

    threads = [threading.Thread(target=turn, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(data == want[j] for calls in got for j, data in calls)
