"""What the serving plots put on their axes (cost.png, series.png, recovery.png, the design
page's plot): labels clear of each other, legends off the data, ticks as plain numbers, and
the decision record's recovery column showing every run."""

from __future__ import annotations

import dataclasses
import re
from functools import cache

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from schedatrix.course.apps.design_app import cost_figure
from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.cluster.faults import parse_fault
from schedatrix.serving.load.requests import SLOClass
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.reports.decision_record import decision_record, plot_recovery
from schedatrix.serving.reports.plot_text import boxes_overlap, label_points, plain_ticks
from schedatrix.serving.reports.report import plot_cost, plot_series
from schedatrix.serving.studies.accept import FaultCriteria, accept
from schedatrix.serving.studies.acceptance import Criteria
from schedatrix.serving.studies.compare import compare

CHAT = SLOClass("chat", 1.0, priority=0, ttft_s=1.0, tpot_s=0.1)


def box(artist, renderer):
    b = artist.get_window_extent(renderer)
    return (b.x0, b.y0, b.x1, b.y1)


def text_box(label, renderer):
    """A label's words (not its line back to the point), where they are drawn."""
    from matplotlib.text import Text
    label.update_positions(renderer)
    b = Text.get_window_extent(label, renderer)
    return (b.x0, b.y0, b.x1, b.y1)


def assert_clear(labels, renderer):
    boxes = [text_box(t, renderer) for t in labels]
    for i in range(len(boxes)):
        for j in range(i):
            assert not boxes_overlap(boxes[i], boxes[j]), (labels[i].get_text(),
                                                           labels[j].get_text())


def annotations(ax):
    from matplotlib.text import Annotation
    return [t for t in ax.texts if isinstance(t, Annotation)]


def test_labels_of_points_close_together_do_not_overlap():
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    xs = [0.30, 0.32, 0.34, 0.36, 1.0, 0.31]
    ys = [0.64, 0.64, 0.65, 0.64, 0.5, 0.66]
    names = ["2 x TP2", "4 x TP1", "2 x TP1 PP2", "split P2:D2", "3 x TP1", "2 x TP8"]
    ax.scatter(xs, ys)
    ax.set_xscale("log")
    ax.margins(0.2)
    fig.tight_layout()
    renderer = FigureCanvasAgg(fig).get_renderer()
    labels = label_points(ax, xs, ys, names)
    assert [t.get_text() for t in labels] == names
    assert_clear(labels, renderer)
    frame = box(ax, renderer)
    for t in labels:
        b = text_box(t, renderer)
        assert frame[0] <= b[0] and b[2] <= frame[2] and frame[1] <= b[1] and b[3] <= frame[3]


def test_plain_ticks_never_write_powers_of_ten():
    fig = Figure()
    ax = fig.subplots()
    ax.plot([0.2, 6.0], [1, 2])
    ax.set_xscale("log")
    plain_ticks(ax.xaxis)
    FigureCanvasAgg(fig).draw()
    shown = [t.get_text() for t in ax.get_xticklabels(which="both") if t.get_text()]
    assert shown and not any("times" in s or "^" in s for s in shown)
    assert {"0.2", "1", "5"} <= set(shown)


@cache
def comparison():
    """Five designs, three of them close together on cost and p95 TTFT."""
    load = Load(rate_rps=6.0, input_len="lognormal:600,0.6", output_len="lognormal:100,0.6",
                classes=(CHAT,))
    designs = [Design(replicas=r, name=f"{r} x TP1") for r in (1, 2, 3)] + \
        [Design(tp=2, name="1 x TP2"), Design(tp=2, replicas=2, name="2 x TP2")]
    return compare(designs, lambda s: generate(load, s, duration_s=60), runs=1)


def test_cost_png_and_the_design_page_label_every_design_clear_of_the_others():
    c = comparison()
    for fig in (plot_cost(c), cost_figure(c)):
        (ax,) = fig.axes
        renderer = FigureCanvasAgg(fig).get_renderer()
        labels = annotations(ax)
        assert sorted(t.get_text() for t in labels) == sorted(o.design.name for o in c.outcomes)
        assert_clear(labels, renderer)
        legend = ax.get_legend()
        if legend is not None:      # the design page's star: no label under it
            for t in labels:
                assert not boxes_overlap(text_box(t, renderer), box(legend, renderer))


@cache
def decided():
    """The same runs judged by a looser rule, under which one run meeting decides a pass (its
    lower bound at 50% confidence is 0.5, above 0.4): a decided cheapest to mark."""
    load = Load(rate_rps=6.0, input_len="lognormal:600,0.6", output_len="lognormal:100,0.6",
                classes=(CHAT,))
    designs = [o.design for o in comparison().outcomes]
    return compare(designs, lambda s: generate(load, s, duration_s=60), runs=1,
                   criteria=Criteria(run_share=0.4, confidence=0.5))


def test_series_png_keeps_its_legend_off_the_panels_and_the_cheapest_bold():
    # one run decides nothing: the bold line is the cheapest leaning to pass, and says so;
    # under a rule that one run decides, it is the decided cheapest
    c = comparison()
    assert c.cheapest is None and c.cheapest_indicative is not None
    cases = ((c, c.cheapest_indicative, "the cheapest leaning to pass, undecided"),
             (decided(), decided().cheapest, "the cheapest passing"))
    for comp, best, words in cases:
        fig = plot_series(comp)
        renderer = FigureCanvasAgg(fig).get_renderer()
        (legend,) = fig.legends
        assert all(not boxes_overlap(box(legend, renderer), box(ax, renderer))
                   for ax in fig.axes)
        widths = {line.get_label(): line.get_linewidth() for line in fig.axes[0].lines}
        name = best.design.name
        assert widths[f"{name} ({words})"] > max(
            w for label, w in widths.items() if not label.startswith(name))
        assert sum(w == widths[f"{name} ({words})"] for w in widths.values()) == 1
    FigureCanvasAgg(fig).draw()
    queue = fig.axes[2]
    assert all(float(v).is_integer() for v in queue.get_yticks())   # requests, not fractions
    for ax in fig.axes:
        for t in ax.get_yticklabels(which="both"):
            assert "times" not in t.get_text() and "^" not in t.get_text()


@cache
def accepted():
    load = Load(rate_rps=6.0, input_len="lognormal:600,0.6", output_len="lognormal:100,0.6",
                classes=(CHAT,))
    faults = (parse_fault("worker:0@60+20"), parse_fault("drain:1@90+10"))
    return accept([Design(replicas=2), Design(replicas=3)],
                  lambda s: generate(load, s, duration_s=150), faults, runs=3,
                  criteria=Criteria(), fault_criteria=FaultCriteria(max_recovery_s=20))


def test_the_decision_record_shows_every_runs_recovery_and_marks_those_over_the_limit():
    # it showed the first three of six values, run 1's crash and drain and run 2's crash, so
    # the run that refused a design ("70 s") was behind "..."
    results = accepted()
    record = decision_record(results, "test", "load", Criteria(),
                             FaultCriteria(max_recovery_s=20), True)
    assert "recovery vs baseline (noise floor), each run (worker:0@60+20; drain:1@90+10)" \
        in record
    for a in results:
        row = next(line for line in record.splitlines() if line.startswith(f"| {a.design.name} |"))
        cell = row.split(" | ")[-2]
        faults = cell.split("; ")
        assert len(faults) == 2
        for j, text in enumerate(faults):
            shown = text.split(", ")
            assert len(shown) == 3
            for k, value in enumerate(shown):
                f = a.fault_figures[k][j]
                r, floor = f.recovery_s, f.noise_floor_s
                plain = ("never" if r is None else f"{r:.3g} s") + \
                    f" (floor {'never' if floor is None else f'{floor:.3g} s'})"
                if not f.measurable:
                    plain = "no damage: " + plain
                over = r is None or (f.measurable and r > 20)
                assert value == (f"**{plain}**" if over else plain), (a.design.name, j, k)
        refused = [why for why in a.reasons() if "recovered" in why]
        assert len(refused) == len(re.findall(r"\*\*", cell)) // 2


def test_recovery_png_writes_plain_seconds_and_marks_each_recovery():
    a = accepted()[1]
    fig = plot_recovery(a)
    FigureCanvasAgg(fig).draw()
    for t in fig.axes[0].get_yticklabels(which="both"):
        assert "times" not in t.get_text() and "^" not in t.get_text()
    title = fig.axes[0].get_title(loc="left")
    for f, x in zip(a.faults, a.fault_figures[0], strict=True):
        r, floor = x.recovery_s, x.noise_floor_s
        said = f"floor {'never' if floor is None else f'{floor:.3g} s'}"
        if x.measurable:
            assert f"{f.text()} in {'never' if r is None else f'{r:.3g} s'} ({said})" in title
        else:
            assert f"{f.text()} no measurable damage ({said})" in title
    dashed = [line for line in fig.axes[0].lines if line.get_linestyle() == "--"]
    assert len(dashed) == sum(x.recovery_s is not None for x in a.fault_figures[0])
    dotted = [line for line in fig.axes[0].lines if line.get_linestyle() == ":"]
    assert len(dotted) == sum(bool(x.noise_floor_s) for x in a.fault_figures[0])
    # the paired baseline is drawn beside the faulted run, on the same windows
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert "without the faults (the paired baseline)" in labels and "with them" in labels


@pytest.mark.parametrize("n", [1, 9, 13])
def test_series_legend_fits_any_number_of_designs(n):
    c = comparison()
    many = dataclasses.replace(c, outcomes=[dataclasses.replace(
        c.outcomes[k % len(c.outcomes)], design=c.outcomes[k % len(c.outcomes)].design.with_(
            name=f"design {k}")) for k in range(n)])
    fig = plot_series(many)
    renderer = FigureCanvasAgg(fig).get_renderer()
    (legend,) = fig.legends
    assert len(legend.get_texts()) == n
    lb = box(legend, renderer)
    assert lb[0] >= 0 and lb[1] >= 0 and lb[2] <= fig.bbox.width and lb[3] <= fig.bbox.height
    assert all(not boxes_overlap(lb, box(ax, renderer)) for ax in fig.axes)


def test_the_design_page_plot_reads_at_the_size_the_page_shows_it():
    """The design page drew its words at 7 pt on 80 dpi, shown 1:1 (8 pixels): every text is
    now at least 11 pixels high where the page shows it."""
    from schedatrix.course.apps.design_app import DesignApp
    c = comparison()      # one run: the star marks the cheapest leaning to pass, and says so
    fig = cost_figure(c)
    (legend_text,) = fig.axes[0].get_legend().get_texts()
    assert legend_text.get_text() == (
        f"cheapest, undecided (pass?): {c.cheapest_indicative.design.name}")
    (star,) = cost_figure(decided()).axes[0].get_legend().get_texts()
    assert star.get_text() == f"cheapest: {decided().cheapest.design.name}"
    shown = int(DesignApp().plot.layout.width.removesuffix("px")) / fig.bbox.width
    FigureCanvasAgg(fig).draw()
    (ax,) = fig.axes
    texts = [t for t in (ax._left_title, ax.xaxis.label, ax.yaxis.label,
                         *ax.get_xticklabels(which="both"), *ax.get_yticklabels(which="both"),
                         *ax.get_legend().get_texts(), *annotations(ax)) if t.get_text()]
    assert len(texts) > 12
    for t in texts:
        assert t.get_fontsize() * fig.dpi / 72 * shown >= 11, t.get_text()


def test_lesson_09s_gpu_counts_stay_clear_of_each_other_and_of_the_legend():
    from schedatrix.course.figures.model_sizes import model_sizes_figure
    from schedatrix.serving.studies.compare import compare_models

    load = Load(rate_rps=3.0, input_len="lognormal:600,0.6", output_len="lognormal:100,0.6",
                classes=(CHAT,))
    designs = [Design(replicas=r) for r in (1, 2)] + [Design(tp=2), Design(tp=2, replicas=2),
                                                       Design(tp=4), Design(tp=8)]
    by_model = compare_models(designs, ["llama-3.2-3b", "llama-3.1-8b"],
                              lambda s: generate(load, s, duration_s=30), runs=1)
    fig = model_sizes_figure(by_model, runs=1)
    renderer = FigureCanvasAgg(fig).get_renderer()
    for ax, c in zip(fig.axes, by_model.values(), strict=True):
        labels = annotations(ax)
        assert sorted(t.get_text() for t in labels) == sorted(str(o.design.gpus)
                                                               for o in c.outcomes)
        assert_clear(labels, renderer)
        frame = box(ax, renderer)
        legend = ax.get_legend()
        for t in labels:
            b = text_box(t, renderer)
            assert frame[0] <= b[0] and b[2] <= frame[2] and frame[1] <= b[1] and b[3] <= frame[3]
            if legend is not None:
                assert not boxes_overlap(b, box(legend, renderer))


def test_the_compare_reports_series_never_look_alike():
    from schedatrix.serving.reports.report import PALETTE, series_style

    looks = [(s["color"], s["ls"], s["marker"]) for s in map(series_style, range(36))]
    assert len(set(looks)) == 36                       # 36 series, 36 looks
    assert len({(c, ls) for c, ls, _ in looks}) == 36  # even without their markers
    assert len(set(PALETTE)) == 9 and len({s["color"] for s in map(series_style, range(9))}) == 9
    fig = plot_series(comparison())
    lines = [ln for ln in fig.axes[0].lines if not ln.get_label().startswith("_")]
    drawn = [(ln.get_color(), ln.get_linestyle(), ln.get_marker()) for ln in lines]
    assert len(drawn) == len(comparison().outcomes) and len(set(drawn)) == len(drawn)


def test_lesson_09s_panels_show_at_least_three_cost_ticks():
    """The 70B panel's costs spanned less than a decade, and its cost axis showed one or two
    ticks (2 and 5, the minor ones plain_ticks labels). A panel under a decade now labels every
    tick of it: at least three inside its view, plain numbers."""
    from schedatrix.course.figures.model_sizes import model_sizes_figure
    from schedatrix.serving.studies.compare import compare_models

    load = Load(rate_rps=3.0, input_len="lognormal:600,0.6", output_len="lognormal:100,0.6",
                classes=(CHAT,))
    narrow = [Design(tp=2), Design(tp=2, replicas=2), Design(tp=4)]    # costs 2 to 4.1
    by_model = compare_models(narrow, ["llama-3.2-3b", "llama-3.1-8b"],
                              lambda s: generate(load, s, duration_s=30), runs=1)
    fig = model_sizes_figure(by_model, runs=1)
    FigureCanvasAgg(fig).draw()
    for ax in fig.axes:
        low, high = ax.get_ylim()
        assert high / low < 10                      # the case: under a decade of costs
        shown = [t for t in ax.get_yticklabels(which="both")
                 if t.get_text() and low <= t.get_position()[1] <= high]
        assert len(shown) >= 3, [t.get_text() for t in shown]
        assert all(re.fullmatch(r"\d+(\.\d+)?", t.get_text()) for t in shown)
