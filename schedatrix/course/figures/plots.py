"""Matplotlib figures of one month: where the bill came from, the pool's cards, and which
knobs mattered against the lottery's noise.

Each function draws on an ``ax`` it is given (or a new one) and returns the ``ax``; none of
them shows, prints or touches a widget. Colours are fixed so the same thing always looks
the same across the course: rent that moved tokens is blue, idle rent amber, churn red.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from ...errors import InputError
from ...fleet.explain import money

__all__ = [
    "COLOURS",
    "BillPicture",
    "PoolPicture",
    "bill_picture",
    "pool_picture",
    "bill_split",
    "pool_cards",
    "mattered_vs_noise",
    "month_figure",
]

#: One colour per meaning, shared by every figure of the course.
COLOURS = {
    "moving": "#3b75af",  # rent that moved tokens
    "idle": "#f2a93b",  # rent of warm cards beyond the demand
    "churn": "#c8443b",  # churn fees
    "ideal": "#8c8c8c",  # the ideal operator
    "warm": "#3b75af",
    "skipped": "#b9c7d6",
    "evicted": "#c8443b",
    "median": "#444444",
    "target": "#2f8f5b",
    "noise": "#d9d9d9",  # one month's luck
    "small": "#8fb3d9",  # a real shift smaller than one month's luck
    "noise_step": "#ffffff",  # a shift the paired months cannot tell from zero
}


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


class BillPicture(NamedTuple):
    """What :func:`bill_split` draws for one month, as data (the live picture draws it too)."""

    rows: tuple[str, ...]  #: the y tick labels, row 0 at the bottom
    bars: tuple[tuple[int, float, float, str, str], ...]  #: row, left, width, colour, label
    totals: tuple[tuple[float, int, str], ...]  #: x, row, text: each bar's total at its end
    xlim: tuple[float, float]


def bill_picture(month, ideal: bool = True) -> BillPicture:
    """The bars, totals and x range of :func:`bill_split` for ``month``."""
    parts = [
        ("rent that moved tokens", month.moving_rent, COLOURS["moving"]),
        ("idle rent", month.idle_bill, COLOURS["idle"]),
        ("churn fees", month.churn_fees, COLOURS["churn"]),
    ]
    rows = ("ideal operator", "this month") if ideal else ("this month",)
    y_month = len(rows) - 1
    bars, left = [], 0.0
    for label, value, colour in parts:
        bars.append((y_month, left, value, colour, f"{label} {money(value)}"))
        left += value
    totals = [(left, y_month, f"  {money(month.bill)}")]
    if ideal:
        bars.append((0, 0.0, month.ideal_bill, COLOURS["ideal"],
                     f"ideal bill {money(month.ideal_bill)}"))
        totals.append((month.ideal_bill, 0, f"  {money(month.ideal_bill)}"))
    top = max(month.bill, month.ideal_bill if ideal else 0.0)
    return BillPicture(rows, tuple(bars), tuple(totals), (0, top * 1.22 if top > 0 else 1.0))


def bill_split(month, ax: Axes | None = None, ideal: bool = True) -> Axes:
    """The month's bill as one stacked bar: rent that moved tokens, idle rent, churn fees.

    With ``ideal`` a second bar shows the ideal operator's bill (all of it rent, no churn).
    Dollars on the x axis.
    """
    ax = _axes(ax, (6.0, 2.2))
    picture = bill_picture(month, ideal)
    for row, left, width, colour, label in picture.bars:
        ax.barh(row, width, left=left, color=colour, label=label)
    for x, row, text in picture.totals:
        ax.text(x, row, text, va="center", fontsize=9)
    ax.set_yticks(range(len(picture.rows)), picture.rows)
    ax.set_xlim(*picture.xlim)
    ax.xaxis.set_major_formatter(lambda x, _pos: money(x))
    ax.set_title("Where this month's pool bill came from", fontsize=10, loc="left")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, fontsize=8,
              frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return ax


class PoolPicture(NamedTuple):
    """What :func:`pool_cards` draws for one month, as data (the live picture draws it too)."""

    order: np.ndarray  #: card numbers, best measured first
    true: np.ndarray  #: each bar's height: the card's true rate, in that order
    measured: np.ndarray  #: each dot: what the window measured, in that order
    colours: tuple[str, ...]  #: each bar's colour: warm, skipped or evicted
    wrong: tuple[bool, ...]  #: each bar hatched: a wrong eviction
    median: float  #: the dashed line: the pool's median true rate
    ylim: tuple[float, float]
    xticks: tuple[str, ...]  #: the cards' numbers under their bars, or none for a big pool
    xlabel: str
    title: str
    median_label: str  #: the dashed line's legend entry


def pool_picture(month) -> PoolPicture:
    """The bars, dots, line and texts of :func:`pool_cards` for ``month``."""
    pool = month.pool
    true = np.asarray(pool.true_tok_s)
    measured = np.asarray(pool.measured_tok_s)
    n = true.size
    order = np.argsort(-measured, kind="stable")
    run, evicted = set(pool.run), set(pool.evicted)
    median = pool.median_true_tok_s
    colours = []
    for i in order:
        if i in evicted:
            colours.append(COLOURS["evicted"])
        elif i in run:
            colours.append(COLOURS["warm"])
        else:
            colours.append(COLOURS["skipped"])
    # A wrong eviction is hatched (labels would pile up when they sit side by side).
    wrong = tuple(bool(i in evicted and true[i] >= median) for i in order)
    small = n <= 40
    return PoolPicture(
        order, true[order], measured[order], tuple(colours), wrong, median,
        (0, max(true.max(), measured.max()) * 1.15),
        tuple(str(i) for i in order) if small else (),
        "card (best measured first)" if small else f"{n} cards, best measured first",
        f"The pool's {n} cards: {month.warm} warm, {month.skipped} skipped, "
        f"{month.evicted} evicted ({month.wrong_evictions} wrong)",
        f"median true {median:,.0f}",
    )


def pool_cards(month, ax: Axes | None = None) -> Axes:
    """Every card of the pool: its true rate (bar) and what the window measured (dot).

    Cards are ordered by measured rate, best first, the order the autoscaler sees them. Bars
    are coloured warm (in the run set), skipped (survived, never billed) or evicted, a wrong
    eviction hatched; the dashed line is the pool's median true rate, which decides whether
    an eviction was wrong.
    """
    ax = _axes(ax, (7.0, 3.0))
    p = pool_picture(month)
    n = p.order.size
    x = np.arange(n)
    bars = ax.bar(x, p.true, color=list(p.colours), width=0.8)
    ax.scatter(x, p.measured, color="black", s=12, zorder=3)
    for bar, wrong in zip(bars, p.wrong, strict=True):
        if wrong:
            bar.set_hatch("////")
            bar.set_edgecolor("white")
    ax.axhline(p.median, color=COLOURS["median"], linestyle="--", linewidth=1)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(*p.ylim)
    if p.xticks:
        ax.set_xticks(x, p.xticks, fontsize=7)
    else:
        ax.set_xticks([])
    ax.set_xlabel(p.xlabel, fontsize=8)
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:,.0f}")
    ax.set_ylabel("tok/s", fontsize=8)
    ax.set_title(p.title, fontsize=10, loc="left")
    handles = [
        Patch(color=COLOURS["warm"], label="warm (true rate)"),
        Patch(color=COLOURS["skipped"], label="skipped"),
        Patch(color=COLOURS["evicted"], label="evicted"),
        Patch(facecolor=COLOURS["evicted"], edgecolor="white", hatch="////",
              label="wrong eviction"),
        Line2D([], [], color="black", marker="o", linestyle="", markersize=4,
               label="measured"),
        Line2D([], [], color=COLOURS["median"], linestyle="--", label=p.median_label),
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=6,
              fontsize=7, frameon=False, handlelength=1.5, columnspacing=1.0)
    ax.spines[["top", "right"]].set_visible(False)
    return ax


def _abs_interval(interval: tuple[float, float]) -> tuple[float, float]:
    """The interval of |x| for x in ``interval``."""
    low, high = interval
    if low <= 0 <= high:
        return 0.0, max(-low, high)
    return min(abs(low), abs(high)), max(abs(low), abs(high))


def mattered_vs_noise(steps: Sequence, ax: Axes | None = None) -> Axes:
    """One bar per knob step: how far it moved the mean bill, against one month's luck.

    ``steps`` is what :func:`schedatrix.fleet.odds.mattered_vs_noise` returns. Bars are
    |shift| in dollars with the 95% interval of the paired differences as a whisker: dark
    when the step mattered (real and larger than one month's luck), mid when it is real but
    smaller than one month's luck, pale when the paired months cannot tell it from zero.
    The grey band is one month's luck: the standard deviation of the unchanged plan's bill.
    """
    if len(steps) == 0:
        raise InputError("steps must hold at least one knob step, got an empty sequence")
    ax = _axes(ax, (6.0, 0.32 * len(steps) + 1.2))
    labels = [f"{s.knob}: {s.step}" for s in steps]
    shifts = np.array([s.shift for s in steps])
    noise = steps[0].noise
    y = np.arange(len(steps))[::-1]
    colour = {"mattered": COLOURS["moving"], "noise": COLOURS["noise_step"]}
    colours = [colour.get(s.label, COLOURS["small"]) for s in steps]
    ax.axvspan(0, noise, color=COLOURS["noise"], zorder=0)
    ax.barh(y, np.abs(shifts), color=colours, edgecolor="#8c8c8c", linewidth=0.6, zorder=2)
    # The whisker: the paired 95% interval of |shift| (clipped at zero).
    whiskers = [_abs_interval(s.interval) for s in steps]
    for yy, (low, high) in zip(y, whiskers, strict=True):
        ax.plot([low, high], [yy, yy], color="black", linewidth=1, zorder=3)
    top = max(np.abs(shifts).max(), noise, max(high for _, high in whiskers))
    for yy, shift in zip(y, shifts, strict=True):
        sign = "+" if shift >= 0 else "-"
        ax.text(abs(shift) + 0.01 * top, yy, f" {sign}{money(abs(shift))}", va="center",
                fontsize=7, zorder=4)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlim(0, top * 1.3)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.xaxis.set_major_formatter(lambda x, _pos: money(x))
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("|change of the mean bill| (paired months)", fontsize=8)
    ax.set_title("Mattered vs noise: one step of each knob", fontsize=10, loc="left")
    handles = [
        Patch(color=COLOURS["moving"], label="mattered"),
        Patch(color=COLOURS["small"], label="real, smaller than one month's luck"),
        Patch(facecolor=COLOURS["noise_step"], edgecolor="#8c8c8c", label="noise"),
        Patch(color=COLOURS["noise"], label=f"one month's luck {money(noise)}"),
    ]
    ax.legend(handles=handles, loc="lower right", fontsize=7, frameon=True, framealpha=0.9)
    ax.spines[["top", "right"]].set_visible(False)
    return ax


def month_figure(month, figsize: tuple[float, float] = (8.0, 5.6)):
    """A two-panel figure: the bill split above, the pool's cards below. Returns the Figure."""
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=figsize, gridspec_kw={"height_ratios": [1, 1.6]}
    )
    bill_split(month, top)
    pool_cards(month, bottom)
    fig.tight_layout()
    return fig
