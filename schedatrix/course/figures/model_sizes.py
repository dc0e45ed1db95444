"""Lesson 09's figure: the same designs for each model size, p95 TTFT against cost, each point
labelled with its design's GPU count, clear of the other labels, the points, the legend and the
SLO line; a cost axis spanning less than a decade labels every tick (1 to 9 of its decade), so
that it shows at least three."""

from __future__ import annotations

import numpy as np

from ...serving.reports.plot_text import label_points, plain_ticks

__all__ = ["model_sizes_figure"]

_BLUE, _STAR, _SLO = "#3b75af", "#f2a93b", "#c8443b"


class _Band:
    """A vertical line as a band a few pixels wide, for :func:`label_points` to keep labels
    off (a line's own extent is as thin as the line, so a label on it overlaps no area)."""

    def __init__(self, line, pad_px: float = 3.0):
        self.line, self.pad_px = line, pad_px

    def get_window_extent(self, renderer):
        from matplotlib.transforms import Bbox
        b = self.line.get_window_extent(renderer)
        return Bbox.from_extents(b.x0 - self.pad_px, b.y0, b.x1 + self.pad_px, b.y1)


def model_sizes_figure(by_model: dict, ttft_slo_s: float = 1.0, runs: int = 3):
    """One panel per model of ``by_model`` (model name -> Comparison): each design at its mean
    p95 TTFT and cost per million output tokens, filled where it met the SLOs in every run,
    labelled with its GPU count (:func:`label_points`: no two labels overlap); the cheapest
    design passing (or, undecided, leaning to pass) starred; the TTFT SLO dashed."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(13, 3.8))
    axes = fig.subplots(1, len(by_model))
    axes = np.atleast_1d(axes)
    points, legends = [], []
    for ax, (name, c) in zip(axes, by_model.items(), strict=True):
        xs = [o.mean("ttft_p95") for o in c.outcomes]
        ys = [float(np.mean(o.cost_per_mtok())) for o in c.outcomes]
        for o, x, y in zip(c.outcomes, xs, ys, strict=True):
            filled = o.label().lower().startswith("pass")
            ax.scatter([x], [y], s=30, color=_BLUE if filled else "white", edgecolors=_BLUE,
                       zorder=2)
        best = c.cheapest or c.cheapest_indicative
        if best is not None:
            words = "passing" if best is c.cheapest else "leaning to pass"
            ax.scatter([best.mean("ttft_p95")], [np.mean(best.cost_per_mtok())], s=160,
                       marker="*", color=_STAR, zorder=3,
                       label=f"cheapest {words}: {best.design.name}")
        slo = _Band(ax.axvline(ttft_slo_s, color=_SLO, linestyle="--", linewidth=1))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.margins(0.15)
        plain_ticks(ax.xaxis)
        plain_ticks(ax.yaxis)
        low, high = ax.get_ylim()
        if high / low < 10:     # under a decade: 2 and 5 alone may leave one tick, or none
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.set_xlabel(f"p95 TTFT (s), mean of {runs} runs")
        ax.set_ylabel("$ per million output tokens")
        ax.set_title(name, fontsize=10, loc="left")
        legends.append(ax.legend(fontsize=8, frameon=False, loc="upper right")
                       if best is not None else None)
        points.append((ax, xs, ys, [str(o.design.gpus) for o in c.outcomes], slo))
    fig.suptitle(f"Filled: met the SLOs in all {runs} runs (pass?); numbers: GPUs; dashed: "
                 "the TTFT SLO", fontsize=10)
    fig.tight_layout()
    for (ax, xs, ys, names, slo), legend in zip(points, legends, strict=True):
        label_points(ax, xs, ys, names, fontsize=7, avoid=[slo, legend] if legend else [slo])
    return fig
