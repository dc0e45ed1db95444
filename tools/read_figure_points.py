"""Read the markers of a line plot's series off its pixels: how the points of Figure 1 of vLLM's
post on its offloading connector were read (schedatrix/serving/published/offload_rows.py).

    .venv/bin/python tools/read_figure_points.py figure1.png --y-top 8000 \\
        --x-max 100 --x 1 10 20 30 40 50 60 70 80 90 100 \\
        --series "GPU Compute=#1b9ed6" --series "Load from CPU=#ec7030"

The plot's scale comes from its light-grey horizontal gridlines, evenly spaced from 0 (the
lowest) to ``--y-top`` (the highest), and from their length: they run from x = 0 to
``--x-max``. At each ``--x`` the series' marker is the run of its colour's pixels in a column
band about the marker's width; its centre, in gridline units, is the value. A marker hidden
under another series' marker, or missing, prints as ``-``; one that overlaps another series'
marker reads between the two, so check each point against the plot by eye. The figure itself
is the source's (not shipped here): fetch it from the post's repository.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def _colour(text: str) -> np.ndarray:
    text = text.strip().lstrip("#")
    if len(text) != 6:
        raise ValueError(f"colour {text!r}: give it as #rrggbb")
    return np.array([int(text[i:i + 2], 16) / 255 for i in (0, 2, 4)])


def scale(img: np.ndarray, y_top: float, x_max: float):
    """(value of a pixel row, x of a pixel column) from the plot's gridlines: a light grey line
    across at least half the image's width; the lowest is 0, the highest ``y_top``."""
    rgb = img[..., :3].astype(float)
    width = rgb.shape[1]
    grey = np.abs(rgb - rgb.mean(2, keepdims=True)).max(2) < 0.03
    light = grey & (rgb.mean(2) > 0.75) & (rgb.mean(2) < 0.95)
    ruled = grey & (rgb.mean(2) > 0.3) & (rgb.mean(2) < 0.95)   # gridlines, and the x axis
    rows = np.where(ruled.sum(1) > 0.5 * width)[0]
    rows = rows[(rows > 3) & (rows < rgb.shape[0] - 4)]     # not the image's own frame
    if len(rows) == 0:
        raise ValueError("no gridline found (a light grey line across half the image)")
    lines = [g.mean() for g in np.split(rows, np.where(np.diff(rows) > 1)[0] + 1)]
    if len(lines) < 2:
        raise ValueError("fewer than two gridlines: the plot's scale cannot be read")
    lines = sorted(lines)                            # rows from y_top down to 0
    gaps = np.diff(lines)
    if gaps.max() - gaps.min() > 3:
        raise ValueError(f"the gridlines found are not evenly spaced ({np.round(lines, 1)}): "
                         "a line is missing or a frame was taken for one")
    levels = np.linspace(y_top, 0.0, len(lines))
    y0, y_hi = lines[-1], lines[0]
    cols = np.where(light[int(round(lines[len(lines) // 2]))])[0]
    pieces = [q for q in np.split(cols, np.where(np.diff(cols) > 3)[0] + 1) if len(q) > 40]
    x0, x_end = pieces[0].min(), pieces[-1].max()    # the gridline, not the tick labels

    def value(row: float) -> float:
        """Between the two gridlines around it, as one reads a plot by hand (the lines'
        spacing varies by a pixel where the plot was drawn to whole pixels)."""
        return float(np.interp(row, lines, levels))

    def column(x: float) -> float:
        return x0 + (x_end - x0) * x / x_max

    return value, column, (y0 - y_hi) / (len(lines) - 1), y_top / (len(lines) - 1)


def read(img: np.ndarray, colour: np.ndarray, xs, y_top: float, x_max: float,
         half_width: int = 6, tolerance: float = 0.25) -> list[float | None]:
    """The value of ``colour``'s marker at each of ``xs`` (None where none is seen)."""
    value, column, _, _ = scale(img, y_top, x_max)
    rgb = img[..., :3].astype(float)
    mine = np.linalg.norm(rgb - colour, axis=2) < tolerance
    out = []
    for x in xs:
        c = int(round(column(x)))
        per_row = mine[:, max(c - half_width, 0):c + half_width + 1].sum(1)
        if per_row.max() < 3:
            out.append(None)
            continue
        # the marker's rows are as wide as the band; the line through it is a few pixels wide
        rows = np.where(per_row >= 0.6 * per_row.max())[0]
        rows = rows[np.abs(rows - np.median(rows)) < 3 * half_width]
        weights = per_row[rows]
        out.append(value(np.average(rows, weights=weights)) if weights.sum() else None)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("image", help="the figure, a PNG")
    ap.add_argument("--y-top", type=float, required=True, help="the highest gridline's value")
    ap.add_argument("--x-max", type=float, required=True, help="x where the gridlines end")
    ap.add_argument("--x", type=float, nargs="+", required=True, help="the markers' x values")
    ap.add_argument("--series", action="append", required=True,
                    help="NAME=#rrggbb, a series and its colour (repeat)")
    args = ap.parse_args(argv)
    try:
        import matplotlib.image as mpimg
        img = mpimg.imread(args.image)
        series = [(s.split("=", 1)[0], _colour(s.split("=", 1)[1])) for s in args.series]
        _, _, per_line, step = scale(img, args.y_top, args.x_max)
        print(f"gridlines every {per_line:.1f} px; half a pixel is "
              f"{step / per_line / 2:.3g} in y's units")
        print("x".rjust(8) + "".join(name.rjust(16) for name, _ in series))
        columns = [read(img, c, args.x, args.y_top, args.x_max) for _, c in series]
        for i, x in enumerate(args.x):
            print(f"{x:8g}" + "".join(
                (f"{col[i]:16.0f}" if col[i] is not None else "-".rjust(16)) for col in columns))
    except (OSError, ValueError, IndexError, ZeroDivisionError) as e:
        print(f"read_figure_points: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
