"""The walkthrough's live picture of one month, redrawn fast: the bill split above, the pool's
cards below.

The picture is :func:`.plots.bill_split`'s and :func:`.plots.pool_cards`': they draw it onto
this figure, and what it says for a month (every bar, colour, label and range) comes from
:func:`.plots.bill_picture` and :func:`.plots.pool_picture`, as in the lessons' still figures.
A full matplotlib draw of the two panels is slow (a quarter of a second on a busy 2-core
machine), most of it laying out and rasterising its 45 or so texts and ticks; so a redraw
keeps as pixels what the month does not change and draws the rest:

* the frame (the figure, both panels' backgrounds, the bill's row names and title, the
  pool's y label) is drawn once per width of the pool's y tick labels (the y label sits to
  their left), with every part a month changes left out;
* each legend's swatches are drawn once per shape of its labels: the labels with their digits
  as zeros (every digit is as wide as another, and the labels' widths place the swatches);
* each redraw pastes the frame and the legends back, draws the bars, dots, median line, spines
  and tick marks with matplotlib (no text: cheap), and pastes each text from tiles: matplotlib
  rasterises a text once per string, style and quarter-pixel position, and a text set on its
  baseline (a legend's label, the pool's title) is put together from its words and digits,
  so a month's new figures reuse the pixels of those drawn before.

Every pixel is within a quarter of the intensity range of a full draw's (texts sit to a quarter
pixel; ``tests/test_month_plot.py``). :meth:`MonthPlot.png` returns the month's PNG; a month
drawn as the last one returns the same bytes without drawing.
"""

from __future__ import annotations

import re
import threading

import numpy as np
from matplotlib import colors as mcolors
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.transforms import IdentityTransform

from . import plots
from .png import png

__all__ = ["MonthPlot", "month_panels"]

_DIGIT = re.compile(r"\d")
_CLEAR = (255, 255, 255, 0)  # what an Agg canvas holds before anything is drawn on it
_PHASES = 4  # texts are placed to a quarter of a pixel


def month_panels(fig: Figure):
    """The walkthrough's two panels on ``fig``: the bill's above the pool's, taller."""
    bill_ax, pool_ax = fig.subplots(2, 1, gridspec_kw={"height_ratios": [1, 1.6]})
    fig.subplots_adjust(left=0.16, right=0.97, top=0.94, bottom=0.12, hspace=0.75)
    return bill_ax, pool_ax


def _shape(text: str) -> str:
    """``text`` with each digit as 0: texts of one shape are equally wide."""
    return _DIGIT.sub("0", text)


def _anchor(text: Text) -> tuple[float, float]:
    """Where ``text`` is anchored on the canvas, in pixels (after it was laid out)."""
    return tuple(text.get_transform().transform(text.get_unitless_position()))


def _child_text(ax, value: str) -> Text:
    """The one text among ``ax``'s own artists that reads ``value`` (such as its title)."""
    found = [c for c in ax.get_children() if isinstance(c, Text) and c.get_text() == value]
    assert len(found) == 1, f"{len(found)} texts read {value!r}"
    return found[0]


def _ticks(axis, lo: float, hi: float) -> tuple[np.ndarray, list[str]]:
    """The major ticks ``axis`` shows between ``lo`` and ``hi`` and their labels, as its own
    locator and formatter make them."""
    locs = np.asarray(axis.get_major_locator()(), dtype=float)
    labels = axis.get_major_formatter().format_ticks(locs)
    slack = (hi - lo) * 1e-10  # as the axis itself keeps a tick on the edge of its view
    keep = (locs >= lo - slack) & (locs <= hi + slack)
    return locs[keep], [label for label, k in zip(labels, keep, strict=True) if k]


class _Tiles:
    """Texts as pixels: each (style, string, quarter-pixel phase) rasterised once by matplotlib
    onto a transparent scratch canvas, then blended onto a canvas wherever it goes.

    A text set on its baseline from its left end (a legend's label, a title) is put together
    from its runs, each digit alone and the letters between, each run where it starts in the
    string: a month's new figures ("rent that moved tokens $22,123") then reuse the pixels of
    the words and digits already drawn instead of rasterising the whole text again. Where a run
    starts is measured once per shape of the text (its digits as zeros): every digit is as wide
    as another.
    """

    def __init__(self, size_px: tuple[int, int], dpi: float) -> None:
        w, h = size_px
        fig = Figure(figsize=(2 * w / dpi, 2 * h / dpi), dpi=dpi, facecolor="none")
        self._canvas = FigureCanvasAgg(fig)
        self._canvas.get_renderer().clear()
        self._fig = fig
        self._origin = (w, h)  # every text is anchored mid-canvas: room on every side
        self._style_of: dict[tuple, int] = {}  # a look -> its number
        self._styles: list[Text] = []  # each look's text on the scratch canvas
        self._tiles: dict[tuple, tuple] = {}
        self._starts: dict[tuple, list[tuple[int, float]]] = {}

    def style(self, text: Text) -> int:
        """A number for ``text``'s look (font, colour, alignment, rotation)."""
        look = (text.get_fontproperties().copy(), mcolors.to_rgba(text.get_color()),
                text.get_ha(), text.get_va(), text.get_rotation(), text.get_rotation_mode(),
                text.get_linespacing(), text.get_antialiased())
        if look not in self._style_of:
            self._style_of[look] = len(self._styles)
            self._styles.append(self._fig.text(
                *self._origin, "", transform=IdentityTransform(), fontproperties=look[0],
                color=look[1], ha=look[2], va=look[3], rotation=look[4], rotation_mode=look[5],
                linespacing=look[6], antialiased=look[7]))
        return self._style_of[look]

    def _tile(self, style: int, value: str, qx: int, qy: int) -> tuple:
        """``value`` anchored ``qx``, ``qy`` quarter pixels right of and below a pixel's
        corner: where its pixels start from that corner (rows, columns), their opacity and
        their colour times it (as the blend wants them), or None for a blank."""
        key = (style, value, qx, qy)
        if key not in self._tiles:
            text = self._styles[style]
            ox, oy = self._origin
            text.set_text(value)
            text.set_position((ox + qx / _PHASES, oy - qy / _PHASES))
            renderer = self._canvas.get_renderer()
            text.draw(renderer)
            # Its pixels lie in its box (a few pixels of margin for the antialiased edges).
            box = text.get_window_extent(renderer)
            scratch = np.asarray(renderer.buffer_rgba())
            h, w = scratch.shape[:2]
            r0, c0 = max(0, int(h - box.y1) - 4), max(0, int(box.x0) - 4)
            region = scratch[r0:min(h, int(h - box.y0) + 5), c0:min(w, int(box.x1) + 5)]
            rows = np.flatnonzero(region[..., 3].any(axis=1))
            cols = np.flatnonzero(region[..., 3].any(axis=0))
            if rows.size == 0:  # blank: nothing to paste
                tile = None
            else:
                pixels = region[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
                alpha = pixels[..., 3:4].astype(np.uint16)
                tile = (int(r0 + rows[0] - (h - oy)), int(c0 + cols[0] - ox), alpha,
                        pixels[..., :3] * alpha + 127)
            region[...] = _CLEAR  # as the renderer clears: ready for the next text
            if len(self._tiles) >= 8192:  # a learner's afternoon of knob turns, bounded
                self._tiles.clear()
            self._tiles[key] = tile
        return self._tiles[key]

    def _runs(self, style: int, value: str) -> list[tuple[str, float]]:
        """``value`` cut before and after each digit, with where each run starts (pixels
        right of where the text starts)."""
        shape = _shape(value)
        key = (style, shape)
        if key not in self._starts:
            cuts = [k for k in range(1, len(shape)) if shape[k] == "0" or shape[k - 1] == "0"]
            renderer = self._canvas.get_renderer()

            def width(text: str) -> float:  # ink, from a digit's left edge to another's right
                return renderer.get_text_width_height_descent(text, font, False)[0]

            font = self._styles[style].get_fontproperties()

            # "0" + the text up to the cut + "0", less "00": the advance up to the cut.
            starts = [width("0" + shape[:k] + "0") - width("00") for k in cuts]
            self._starts[key] = list(zip([0, *cuts], [0.0, *starts], strict=True))
        starts = self._starts[key]
        ends = [k for k, _ in starts[1:]] + [len(value)]
        return [(value[k:end], dx) for (k, dx), end in zip(starts, ends, strict=True)]

    def paste(self, canvas: np.ndarray, style: int, value: str, xy) -> None:
        """Blend ``value`` in ``style`` onto ``canvas`` (rows top down, RGBA), anchored at
        ``xy`` (pixels, y up), to the nearest quarter pixel."""
        text = self._styles[style]
        if (text.get_ha() == "left" and text.get_va() == "baseline"
                and text.get_rotation() == 0 and _DIGIT.search(value)):
            for run, dx in self._runs(style, value):
                self._paste(canvas, style, run, xy[0] + dx, xy[1])
        else:
            self._paste(canvas, style, value, xy[0], xy[1])

    def _paste(self, canvas: np.ndarray, style: int, value: str, x: float, y: float) -> None:
        h, w = canvas.shape[:2]
        col, qx = divmod(int(round(x * _PHASES)), _PHASES)
        row, qy = divmod(int(round((h - y) * _PHASES)), _PHASES)
        tile = self._tile(style, value, qx, qy)
        if tile is None:
            return
        dr, dc, alpha, tinted = tile
        r0, c0 = row + dr, col + dc
        r1, c1 = r0 + alpha.shape[0], c0 + alpha.shape[1]
        if r0 < 0 or c0 < 0 or r1 > h or c1 > w:  # off the edge: the part on the canvas
            if r1 <= 0 or c1 <= 0 or r0 >= h or c0 >= w:
                return
            inside = (slice(max(0, -r0), alpha.shape[0] - max(0, r1 - h)),
                      slice(max(0, -c0), alpha.shape[1] - max(0, c1 - w)))
            alpha, tinted = alpha[inside], tinted[inside]
            r0, c0, r1, c1 = max(0, r0), max(0, c0), min(h, r1), min(w, c1)
        region = canvas[r0:r1, c0:c1, :3]
        region[...] = (region * (255 - alpha) + tinted) // 255


class MonthPlot:
    """The two panels of one month on a figure of ``size_in`` inches at ``dpi`` (the
    walkthrough's: 8 x 5.4 at 80, 640 x 432 pixels). :meth:`png` redraws for a month."""

    def __init__(self, size_in=(8.0, 5.4), dpi: int = 80) -> None:
        self.fig = Figure(figsize=size_in, dpi=dpi)
        self.canvas = FigureCanvasAgg(self.fig)
        self._tiles = _Tiles(self.canvas.get_width_height(), dpi)
        self._built = None  # what the panels were last built for (see _build)
        self._frames: dict[tuple, tuple] = {}  # key -> pixels, title and x label anchors
        self._legends: dict[tuple, tuple] = {}  # key -> rows, columns, pixels, label anchors
        self._last: tuple | None = None  # the last month's picture and PNG
        self.full_draws = 0  # matplotlib draws of a whole frame (a test watches them)
        self._lock = threading.Lock()

    # ----- building: plots.py draws the panels; redraws change them in place --------------
    def _build(self, month, key: tuple) -> None:
        """Fresh panels drawn by plots.py for ``month``; then what a month changes is taken
        out of the frame, to be changed in place and drawn by each redraw."""
        self.fig.clear()
        b, p = self.bill_ax, self.pool_ax = month_panels(self.fig)
        plots.bill_split(month, b)
        plots.pool_cards(month, p)
        pool = plots.pool_picture(month)
        self._bars = list(b.patches)  # one per bill_picture(...).bars, in order
        self._cards = list(p.patches)  # the cards' bars, best measured first
        self._dots, self._median = p.collections[0], p.lines[0]
        self._spines = [s for ax in (b, p) for s in ax.spines.values() if s.get_visible()]
        self._legend_of = {"bill": b.get_legend(), "pool": p.get_legend()}
        self._title, self._xlabel = _child_text(p, pool.title), p.xaxis.get_label()
        tiles = self._tiles
        self._style = {"total": tiles.style(b.texts[0]), "title": tiles.style(self._title),
                       "xlabel": tiles.style(self._xlabel)}
        self._style.update({name: tiles.style(legend.get_texts()[0])
                            for name, legend in self._legend_of.items()})
        # Tick labels and marks as each axis draws them (its first tick shows how).
        self._axes = {"bill_x": b.xaxis, "pool_y": p.yaxis}
        if pool.xticks:
            self._axes["pool_x"] = p.xaxis
        self._tick_at, self._marks = {}, {}
        for name, axis in self._axes.items():
            tick = axis.get_major_ticks()[0]
            self._style[name] = tiles.style(tick.label1)
            self._tick_at[name] = tick.label1.get_transform()
            marks = Line2D([], [])
            marks.update_from(tick.tick1line)
            marks.set_figure(self.fig)
            self._marks[name] = marks
        # Left out of the frame: what a month changes, drawn by each redraw.
        for artist in (*b.patches, *b.texts, *p.patches, *p.collections, *p.lines,
                       *self._spines, *self._legend_of.values()):
            artist.set_animated(True)
        for text in (self._title, self._xlabel, *self._legend_of["bill"].get_texts(),
                     *self._legend_of["pool"].get_texts()):
            text.set_color("none")  # laid out in the frame (and the legends), not drawn
        b.tick_params(axis="x", colors="none")
        p.tick_params(axis="both", colors="none")
        b.get_ylim()  # settle the bill's rows' range now: redraws draw without the axes
        self._built = key

    def _frame(self, key: tuple) -> tuple:
        if key not in self._frames:
            self.canvas.draw()  # the animated artists are left out
            self.full_draws += 1
            pixels = np.asarray(self.canvas.buffer_rgba()).copy()
            self._frames[key] = (pixels, _anchor(self._title), _anchor(self._xlabel))
        return self._frames[key]

    def _legend(self, name: str, labels: list[str], frame_key: tuple,
                canvas: np.ndarray) -> tuple:
        """The legend's swatches for labels of this shape, drawn once onto the frame."""
        key = (frame_key, name, tuple(_shape(label) for label in labels))
        if key not in self._legends:
            legend = self._legend_of[name]
            for text, label in zip(legend.get_texts(), labels, strict=True):
                text.set_text(label)  # transparent: only the layout counts
            renderer = self.canvas.get_renderer()
            legend.draw(renderer)
            box = legend.get_window_extent(renderer)
            h, w = canvas.shape[:2]
            r0, r1 = max(0, int(h - box.y1) - 2), min(h, int(h - box.y0) + 3)
            c0, c1 = max(0, int(box.x0) - 2), min(w, int(box.x1) + 3)
            self._legends[key] = (slice(r0, r1), slice(c0, c1), canvas[r0:r1, c0:c1].copy(),
                                  [_anchor(t) for t in legend.get_texts()])
        return self._legends[key]

    # ----- a redraw ----------------------------------------------------------------------
    def png(self, month) -> bytes:
        """The month's picture as PNG bytes. One redraw at a time: a kernel may handle two
        widget messages at once, in two threads (JupyterLab sends them to subshells)."""
        with self._lock:
            return self._png(month)

    def _png(self, month) -> bytes:
        bill, pool = plots.bill_picture(month), plots.pool_picture(month)
        seen = (bill, tuple(pool.order), tuple(pool.true), tuple(pool.measured), pool.colours,
                pool.wrong, pool.median, pool.ylim, pool.xticks, pool.xlabel, pool.title,
                pool.median_label)
        if self._last is not None and self._last[0] == seen:
            return self._last[1]
        build = (len(bill.bars), bool(pool.xticks))
        if self._built != build:
            self._build(month, build)
        b, p = self.bill_ax, self.pool_ax
        n = pool.order.size
        b.set_xlim(*bill.xlim)
        p.set_xlim(-0.6, n - 0.4)
        p.set_ylim(*pool.ylim)
        ticks = {"bill_x": _ticks(b.xaxis, *bill.xlim), "pool_y": _ticks(p.yaxis, *pool.ylim)}
        if pool.xticks:
            ticks["pool_x"] = (np.arange(n, dtype=float), list(pool.xticks))
        widest = max((_shape(label) for label in ticks["pool_y"][1]), key=len, default="")
        frame_key = (build, widest)
        pixels, title_at, xlabel_at = self._frame(frame_key)

        canvas = np.asarray(self.canvas.buffer_rgba())
        canvas[...] = pixels
        texts = []  # (style, text, anchor): pasted last, over what matplotlib draws
        for name, labels in (("bill", [bar[4] for bar in bill.bars]),
                             ("pool", [t.get_text() for t in
                                       self._legend_of["pool"].get_texts()[:-1]]
                              + [pool.median_label])):
            rows, cols, swatches, anchors = self._legend(name, labels, frame_key, canvas)
            canvas[rows, cols] = swatches
            texts += [(self._style[name], label, xy)
                      for label, xy in zip(labels, anchors, strict=True)]

        renderer = self.canvas.get_renderer()
        for rect, (_row, left, width, colour, _label) in zip(self._bars, bill.bars,
                                                             strict=True):
            rect.set_x(left)
            rect.set_width(width)
            rect.set_facecolor(colour)
            rect.draw(renderer)
        while len(self._cards) < n:  # a bigger pool than any before: one more bar like them
            rect = Rectangle((0.0, 0.0), 0.8, 0.0)
            rect.update_from(self._cards[0])
            p.add_patch(rect)
            rect.set_animated(True)
            self._cards.append(rect)
        for i, (rect, height, colour, wrong) in enumerate(
                zip(self._cards[:n], pool.true, pool.colours, pool.wrong, strict=True)):
            rect.set_x(i - 0.8 / 2)
            rect.set_height(height)
            rect.set_facecolor(colour)
            rect.set_hatch("////" if wrong else None)
            rect.set_edgecolor("white" if wrong else "none")
            rect.draw(renderer)
        self._median.set_ydata([pool.median, pool.median])
        self._median.draw(renderer)
        for spine in self._spines:
            spine.draw(renderer)
        for name, (locs, labels) in ticks.items():
            zeros = np.zeros_like(locs)
            xy = np.column_stack([zeros, locs] if name == "pool_y" else [locs, zeros])
            self._marks[name].set_data(xy[:, 0], xy[:, 1])
            self._marks[name].draw(renderer)
            texts += [(self._style[name], label, at) for label, at in
                      zip(labels, self._tick_at[name].transform(xy), strict=True)]
        self._dots.set_offsets(np.column_stack([np.arange(n), pool.measured]))
        self._dots.draw(renderer)
        texts += [(self._style["total"], text, b.transData.transform((x, row)))
                  for x, row, text in bill.totals]
        texts += [(self._style["title"], pool.title, title_at),
                  (self._style["xlabel"], pool.xlabel, xlabel_at)]

        canvas = np.asarray(self.canvas.buffer_rgba())
        for style, text, xy in texts:
            self._tiles.paste(canvas, style, text, xy)
        self._last = (seen, png(canvas))
        return self._last[1]
