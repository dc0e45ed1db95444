"""What the serving plots write on their axes: point labels that do not overlap, and tick
labels as plain numbers.

Matplotlib leaves both to the caller: ``annotate`` puts every label at the same offset, so
points close together get labels on top of each other, and a log axis spanning less than a
decade labels its minor ticks ``6x10^0``. Call :func:`label_points` once the figure's layout
is final (after ``tight_layout``): it measures the labels where they will be drawn.
"""

from __future__ import annotations

import math

__all__ = ["label_points", "plain_ticks", "boxes_overlap"]

#: Where a label may go, in points from its point, with its alignment; tried in this order.
_SPOTS = [((5, 3), "left", "bottom"), ((5, -3), "left", "top"), ((-5, 3), "right", "bottom"),
          ((-5, -3), "right", "top"), ((0, 7), "center", "bottom"), ((0, -7), "center", "top"),
          ((5, 13), "left", "bottom"), ((5, -13), "left", "top"), ((-5, 13), "right", "bottom"),
          ((-5, -13), "right", "top"), ((0, 19), "center", "bottom"), ((0, -19), "center", "top"),
          ((14, 0), "left", "center"), ((-14, 0), "right", "center")]


def boxes_overlap(a, b) -> bool:
    """Whether two display-space boxes (x0, y0, x1, y1) overlap."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _area(a, b) -> float:
    wide = min(a[2], b[2]) - max(a[0], b[0])
    high = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, wide) * max(0.0, high)


def _renderer(fig):
    canvas = fig.canvas
    if not hasattr(canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        canvas = FigureCanvasAgg(fig)
    return canvas.get_renderer()


def label_points(ax, xs, ys, names, fontsize: float = 8, avoid=(), **text) -> list:
    """Label each point (data coordinates) with its name at the first spot of :data:`_SPOTS`
    where the label stays inside the axes and overlaps no label placed before it, no point
    and none of the artists in ``avoid`` (a legend, say); where every spot overlaps
    something, at the spot that overlaps least. Returns the annotations. Call it after the
    figure's final layout."""
    from matplotlib.text import Text
    renderer = _renderer(ax.figure)
    frame = ax.get_window_extent(renderer)
    frame = (frame.x0, frame.y0, frame.x1, frame.y1)
    at = ax.transData.transform(list(zip(xs, ys, strict=True))) if len(xs) else []
    pad = ax.figure.dpi / 72 * 4            # a marker's half-width, in pixels
    points = [(x - pad, y - pad, x + pad, y + pad) for x, y in at]
    placed, out = [], []
    for artist in avoid:
        box = artist.get_window_extent(renderer)
        placed.append((box.x0, box.y0, box.x1, box.y1))
    for k, name in enumerate(names):
        best = None
        for offset, ha, va in _SPOTS:
            far = abs(offset[0]) > 5 or abs(offset[1]) > 7     # a line back to its point
            label = ax.annotate(name, (xs[k], ys[k]), xytext=offset, textcoords="offset points",
                                ha=ha, va=va, fontsize=fontsize, **text,
                                arrowprops={"arrowstyle": "-", "lw": 0.6, "color": "#888888",
                                            "shrinkA": 1, "shrinkB": 3} if far else None)
            label.update_positions(renderer)
            box = Text.get_window_extent(label, renderer)      # the words, not the line
            box = (box.x0, box.y0, box.x1, box.y1)
            outside = max(0.0, frame[0] - box[0]) + max(0.0, box[2] - frame[2]) + \
                max(0.0, frame[1] - box[1]) + max(0.0, box[3] - frame[3])
            cost = sum(_area(box, b) for b in placed) + \
                sum(_area(box, p) for j, p in enumerate(points) if j != k) + outside * 1e3
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, label, box)
            else:
                label.remove()
            if cost == 0:
                break
        placed.append(best[2])
        out.append(best[1])
    return out


def plain_ticks(axis, minor: bool = True) -> None:
    """Label ``axis``'s ticks as plain numbers (0.2, 1, 50), never ``6x10^0`` or ``10^-1``;
    on a log axis the minor ticks 2 and 5 of each decade are labelled too while the axis
    spans at most three decades (``minor``)."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))

    def minor_label(v, _pos):
        low, high = sorted(axis.get_view_interval())
        wide = low <= 0 or math.log10(high / low) > 3
        text = f"{v:g}"
        return "" if wide or not minor or text.lstrip("0.")[:1] not in ("2", "5") else text

    axis.set_minor_formatter(FuncFormatter(minor_label))
