"""A live picture of one run: each request's TTFT and TPOT, in arrival order, redrawn fast.

The axes never move (request number 0 to N across; seconds on fixed log scales up), so the
figure's frame, ticks and labels are drawn once and kept as a bitmap; a redraw pastes it back
and draws only what changed (the dots and the SLO lines), then encodes a PNG. That is
what keeps a knob's redraw cheap: laying out tick labels is most of a full matplotlib draw.
Values outside a panel's range are drawn on its edge.
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator
from PIL import Image

from ...serving.reports.plot_text import plain_ticks

__all__ = ["RequestPlot", "TTFT_RANGE_S", "TPOT_RANGE_S"]

#: The panels' fixed ranges, seconds.
TTFT_RANGE_S = (1e-3, 1e3)
TPOT_RANGE_S = (1e-3, 10.0)
_COLOURS = {"ttft": "#3b75af", "tpot": "#2f8f5b", "slo": "#c8443b"}


class RequestPlot:
    """Two panels: TTFT and TPOT of each request against its number in arrival order
    (``requests`` of them), SLO thresholds dashed. :meth:`png` redraws and returns PNG bytes."""

    def __init__(self, requests: int, size_in=(7.9, 3.0), dpi: int = 96):
        self.requests = int(requests)
        self.fig = Figure(figsize=size_in, dpi=dpi)
        self.canvas = FigureCanvasAgg(self.fig)
        axes = self.fig.subplots(1, 2)
        self.fig.subplots_adjust(left=0.085, right=0.99, top=0.88, bottom=0.19, wspace=0.32)
        self.axes = dict(zip(("ttft", "tpot"), axes, strict=True))
        self.ranges = {"ttft": TTFT_RANGE_S, "tpot": TPOT_RANGE_S}
        self.dots, self.slo = {}, {}
        for key, ax in self.axes.items():
            ax.set_yscale("log")
            ax.set_ylim(*self.ranges[key])
            ax.yaxis.set_minor_locator(NullLocator())
            plain_ticks(ax.yaxis, minor=False)
            ax.set_xlim(0, max(self.requests, 1))
            ax.set_xlabel("request (in arrival order)", fontsize=10)
            ax.set_ylabel(f"{key.upper()} (s)", fontsize=10)
            ax.tick_params(labelsize=9.5)
            ax.grid(True, which="major", axis="y", color="#eeeeee", linewidth=0.8)
            ax.plot([], [], color=_COLOURS["slo"], linestyle="--", linewidth=1,
                    label="SLO threshold")
            ax.legend(fontsize=9.5, loc="upper right", frameon=False)
            self.dots[key] = ax.scatter([], [], s=6, color=_COLOURS[key], linewidths=0,
                                        alpha=0.7, animated=True)
            self.slo[key] = ax.axhline(1.0, color=_COLOURS["slo"], linestyle="--",
                                       linewidth=1, animated=True)
            ax.set_title(f"{key.upper()} of each request", fontsize=11, loc="left")
        self.canvas.draw()                      # the frame alone: animated artists skipped
        self._background = self.canvas.copy_from_bbox(self.fig.bbox)

    def png(self, ttft: tuple[np.ndarray, np.ndarray], tpot: tuple[np.ndarray, np.ndarray],
            ttft_slo_s: float | None, tpot_slo_s: float | None) -> bytes:
        """Redraw: ``ttft`` and ``tpot`` are (request numbers, seconds); SLOs None = no line."""
        self.canvas.restore_region(self._background)
        for (key, (x, y)), slo in zip((("ttft", ttft), ("tpot", tpot)),
                                      (ttft_slo_s, tpot_slo_s), strict=True):
            lo, hi = self.ranges[key]
            y = np.clip(np.asarray(y, dtype=float), lo * 1.05, hi / 1.05)
            self.dots[key].set_offsets(np.column_stack([x, y]) if len(y) else
                                       np.empty((0, 2)))
            ax = self.axes[key]
            ax.draw_artist(self.dots[key])
            if slo is not None:
                self.slo[key].set_ydata([slo, slo])
                ax.draw_artist(self.slo[key])
        width, height = self.canvas.get_width_height()
        image = Image.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba())
        buf = io.BytesIO()
        image.save(buf, format="png", compress_level=1)
        return buf.getvalue()
