"""tools/read_figure_points.py, which read the offloading post's Figure 1 off its pixels
(schedatrix/serving/published/offload_rows.py): on a plot drawn here with known values, each
point comes back within about a pixel (the reading error offload_rows.py states)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from read_figure_points import _colour, main, read, scale  # noqa: E402

XS = [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
BLUE, ORANGE = "#1b9ed6", "#ec7030"


@pytest.fixture(scope="module")
def plot(tmp_path_factory):
    """A plot in the figure's style: light grey gridlines every 1,000 up to 8,000 across x 0 to
    100, two series of markers, the legend beside; ``(path, {colour: values})``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(3)
    truth = {BLUE: 0.66 * np.array(XS) ** 2 + 190 + rng.uniform(0, 50, len(XS)),
             ORANGE: 3.0 * np.array(XS) + 8 + rng.uniform(0, 5, len(XS))}
    fig, ax = plt.subplots(figsize=(10, 5.6), dpi=200)
    for colour, ys in truth.items():
        ax.plot(XS, ys, "o-", color=colour, markersize=5, label=colour, clip_on=False)
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 8000)
    ax.set_yticks(range(0, 8001, 1000))
    ax.grid(axis="y", color="#d9d9d9", linewidth=1.2)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.subplots_adjust(left=0.08, right=0.82)
    path = tmp_path_factory.mktemp("figure") / "plot.png"
    fig.savefig(path)
    plt.close(fig)
    return path, truth


def test_every_point_comes_back_within_about_a_pixel(plot):
    import matplotlib.image as mpimg

    path, truth = plot
    img = mpimg.imread(path)
    _, _, per_gridline, _ = scale(img, 8000, 100)
    pixel = 1000 / per_gridline                      # y's units in one pixel
    for colour, ys in truth.items():
        got = read(img, _colour(colour), XS, 8000, 100)
        hidden = [x for x, g in zip(XS, got, strict=True) if g is None]
        assert not hidden
        for x, want, g in zip(XS, ys, got, strict=True):
            assert abs(g - want) <= 1.5 * pixel, (colour, x, g, want)


def test_the_command_prints_the_table_and_refuses_bad_input(plot, capsys):
    path, _ = plot
    assert main([str(path), "--y-top", "8000", "--x-max", "100", "--x", "10", "100",
                 "--series", f"a={BLUE}", "--series", f"b={ORANGE}"]) == 0
    out = capsys.readouterr().out
    assert "half a pixel is" in out and len(out.strip().splitlines()) == 4
    assert main([str(path), "--y-top", "8000", "--x-max", "100", "--x", "10",
                 "--series", "a=#12345"]) == 2
    assert "#rrggbb" in capsys.readouterr().err
    assert main(["/no/such.png", "--y-top", "1", "--x-max", "1", "--x", "1",
                 "--series", f"a={BLUE}"]) == 2
