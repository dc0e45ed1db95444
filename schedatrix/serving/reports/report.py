"""What a run or a comparison says: JSON, a terminal table, Markdown with PNG plots.

GPU utilization-like figures (KV cache use, link busy share) are only ever shown beside the
latency figures, never alone (the source's boundary), and a synthetic load is labelled.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import InputError
from ..scenarios.scenario import Scenario
from ..studies.acceptance import interval
from ..studies.compare import Comparison
from ..studies.outcome_json import FIGURE_KEYS, design_json, finite
from .plot_text import label_points, plain_ticks

__all__ = ["FIGURE_KEYS", "COLUMNS", "ALL_COLUMNS", "design_json", "comparison_json", "table",
           "markdown", "write_report", "plot_series", "plot_cost", "marked_cheapest",
           "series_style", "PALETTE"]


def marked_cheapest(c: Comparison):
    """The design a plot marks as the cheapest, and the words that say which it is: the
    cheapest decided pass ("the cheapest passing"); while none is decided, the cheapest design
    whose runs so far lean to a pass ("the cheapest leaning to pass, undecided": indicative
    only); (None, "") when neither."""
    if c.cheapest is not None:
        return c.cheapest, "the cheapest passing"
    if c.cheapest_indicative is not None:
        return c.cheapest_indicative, "the cheapest leaning to pass, undecided"
    return None, ""


def point_face(o, full: str, pale: str, empty: str) -> str:
    """A design's point on a cost plot: ``full`` when it passes (decided), ``pale`` while its
    runs so far lean to a pass (pass?), ``empty`` otherwise (FAIL, fail?, no verdict)."""
    if o.passed:
        return full
    if o.status == "undecided" and o.decision.indicative:
        return pale
    return empty


def _goodput_json(c: Comparison, o) -> dict:
    g = c.goodput.get(o.design.name)
    if g is None:
        return {}
    return {"goodput_distserve": {"max_rate_rps": finite(g.max_rate_rps),
                                  "rate_per_gpu": finite(g.rate_per_gpu),
                                  "attainment": g.attainment, "attained": finite(g.attained)}}


def comparison_json(comparisons: dict[str, Comparison], scenario: Scenario) -> dict:
    """The whole answer: the first comparison's designs, its summary, and (with several
    models) the cheapest design per model."""
    main = next(iter(comparisons.values()))
    first = main.outcomes[0] if main.outcomes else None
    result = {
        "scenario": scenario.source or "(flags)",
        "load": scenario.load.describe(),
        "synthetic": first.synthetic if first else True,
        "runs": scenario.runs if not (first and first.deterministic) else 1,
        "max_runs": scenario.max_runs,
        "seed": scenario.seed,
        "criteria": {"attainment": scenario.criteria.attainment,
                     "spare": scenario.criteria.spare, "kv_spare": scenario.criteria.kv_spare,
                     "run_share": scenario.criteria.run_share,
                     "confidence": scenario.criteria.confidence},
        "designs": [{**design_json(o), **_goodput_json(main, o)} for o in main.outcomes],
        "skipped": [{"name": n, "reason": r} for n, r in main.skipped],
        "cheapest": main.cheapest.design.name if main.cheapest else None,
        "cheapest_indicative": main.cheapest_indicative.design.name
        if main.cheapest_indicative else None,
        "no_distributed_design_needed": main.no_distributed_needed,
        "summary": main.summary(),
    }
    if len(comparisons) > 1:
        result["models"] = {
            m: {"cheapest": c.cheapest.design.name if c.cheapest else None,
                "cheapest_gpus": c.cheapest.design.gpus if c.cheapest else None,
                "cheapest_cost_per_mtok": finite(interval(c.cheapest.cost_per_mtok())[0])
                if c.cheapest else None,
                "summary": c.summary(),
                "designs": [design_json(o) for o in c.outcomes],
                "skipped": [{"name": n, "reason": r} for n, r in c.skipped]}
            for m, c in comparisons.items()}
    return result


# -- text --------------------------------------------------------------------------------------

def _ms(v) -> str:
    return "-" if v is None or v != v else f"{v * 1000:,.0f}" if v >= 0.1 else f"{v * 1000:.1f}"


def _verdict(o) -> str:
    return o.label()


#: The columns :func:`table` can show: heading -> the cell of an outcome. Latency first, then
#: goodput, attainment, KV use (never alone), cost, verdict.
COLUMNS = {
    "GPUs": lambda o: str(o.design.gpus),
    "TTFT p50/p95 ms": lambda o: f"{_ms(o.mean('ttft_p50'))} / {_ms(o.mean('ttft_p95'))}",
    "TTFT p95 ms": lambda o: _ms(o.mean("ttft_p95")),
    "ITL p50/p95 ms": lambda o: f"{_ms(o.mean('itl_p50'))} / {_ms(o.mean('itl_p95'))}",
    "ITL p95 ms": lambda o: _ms(o.mean("itl_p95")),
    "TPOT p95 ms": lambda o: _ms(o.mean("tpot_p95")),
    "queue p95 ms": lambda o: _ms(o.mean("queue_p95")),
    "goodput/s": lambda o: f"{o.mean('goodput_rps'):.2f}",
    "in SLO": lambda o: f"{o.mean('slo_attainment'):.1%}",
    "KV peak": lambda o: f"{interval(o.kv_peak_share)[0]:.0%}",
    "$/M tok": lambda o: f"{interval(o.cost_per_mtok())[0]:.3f}",
    "verdict": _verdict,
}
#: Every column, in order (the command line's and the report's table).
ALL_COLUMNS = ("GPUs", "TTFT p50/p95 ms", "ITL p50/p95 ms", "TPOT p95 ms", "queue p95 ms",
               "goodput/s", "in SLO", "KV peak", "$/M tok", "verdict")


def table(c: Comparison, columns: tuple[str, ...] = ALL_COLUMNS) -> str:
    """A plain-text table, one row per design, of ``columns`` (headings of :data:`COLUMNS`);
    with DistServe's goodput searched (:func:`.compare.with_goodput`), its two columns come
    after ``goodput/s`` (or before ``in SLO``, or last)."""
    unknown = [k for k in columns if k not in COLUMNS]
    if unknown:
        raise InputError(f"columns: unknown {', '.join(map(repr, unknown))}; allowed: "
                         f"{', '.join(COLUMNS)}")
    if "KV peak" in columns and not any(k.startswith(("TTFT", "ITL", "TPOT")) for k in columns):
        raise InputError("columns: 'KV peak' is shown only beside a latency column (TTFT, ITL "
                         "or TPOT): a cache's use says nothing alone")
    cells = {k: COLUMNS[k] for k in columns}
    head = list(columns)
    if c.goodput:
        attain = next(iter(c.goodput.values())).attainment
        at = (head.index("goodput/s") + 1 if "goodput/s" in head
              else head.index("in SLO") if "in SLO" in head else len(head))
        pair = (f"max rps @{attain:.0%}", "per GPU")
        head[at:at] = pair

        def capacity(o, i):
            g = c.goodput.get(o.design.name)
            return "-" if g is None else f"{(g.max_rate_rps, g.rate_per_gpu)[i]:.3g}"

        cells[pair[0]] = lambda o: capacity(o, 0)
        cells[pair[1]] = lambda o: capacity(o, 1)
    head = ["design", *head]
    rows = [head] + [[o.design.name, *(cells[k](o) for k in head[1:])] for o in c.outcomes]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if "verdict" in columns and any(o.status == "undecided" for o in c.outcomes):
        lines.append(VERDICT_KEY)
    return "\n".join(lines)


#: Under a table with an undecided design: what its marks mean.
VERDICT_KEY = ("(pass? / fail?: undecided, what the runs so far point to; PASS / FAIL: decided "
               "on the share of runs that meet the SLOs; + room to spare)")


def _runs_line(c: Comparison, scenario: Scenario) -> str:
    counts = sorted({len(o.runs) for o in c.outcomes})
    text = "-" if not counts else str(counts[0]) if len(counts) == 1 else \
        f"{counts[0]} to {counts[-1]}"
    if scenario.runs == "auto":
        text += (f" (runs auto: doubled until each design is decided, at most "
                 f"{scenario.max_runs})")
    return text


def markdown(comparisons: dict[str, Comparison], scenario: Scenario,
             plots: dict[str, str] | None = None) -> str:
    main = next(iter(comparisons.values()))
    plots = plots or {}
    first = main.outcomes[0] if main.outcomes else None
    lines = ["# Serving design comparison", ""]
    if first and first.synthetic:
        lines += ["> **Synthetic load.** These figures come from a model of the load and of "
                  "the hardware; they are not production SLO performance.", ""]
    lines += [f"- Scenario: `{scenario.source or '(command-line flags)'}`",
              f"- Load: {scenario.load.describe()}",
              f"- Runs: {_runs_line(main, scenario)} (seeds from {scenario.seed})"
              + (" - a replayed trace is the same every run" if first and first.deterministic
                 else ""),
              f"- Acceptance: a run meets the SLOs when every class with SLOs has at least "
              f"{scenario.criteria.attainment:.0%} of its requests within its TTFT and TPOT "
              f"thresholds; a design passes when at least {scenario.criteria.run_share:.0%} "
              f"of runs meet them at {scenario.criteria.confidence:.0%} confidence (one-sided "
              f"Clopper-Pearson bound), fails when at most, and is undecided in between", ""]
    classes = first.classes if first else ()
    if classes:
        lines += ["| class | share | priority | TTFT SLO | TPOT SLO |", "|---|---|---|---|---|"]
        for cl in classes:
            lines.append(f"| {cl.name} | {cl.share:.0%} | {cl.priority} | "
                         f"{'-' if cl.ttft_s is None else f'{cl.ttft_s:g} s'} | "
                         f"{'-' if cl.tpot_s is None else f'{cl.tpot_s:g} s'} |")
        lines.append("")
    lines += ["## Answer", "", main.summary(), ""]
    lines += ["## Designs side by side", "",
              "Latency in milliseconds (p50 / p95); KV peak and cost beside them, never alone.",
              "", "```", table(main), "```", ""]
    for o in main.outcomes:
        lines += [f"### {o.design.name}", "", o.verdict(), ""]
        if o.rejections():
            lines += [o.rejections() + ".", ""]
        if len(o.runs) > 1:
            lines += ["| figure | mean | 95% interval |", "|---|---|---|"]
            for k in ("ttft_p95", "itl_p95", "tpot_p95", "queue_p95", "goodput_rps",
                      "slo_attainment"):
                m, lo, hi = interval(o.values(k))
                lines.append(f"| {k} | {m:.4g} | {lo:.4g} to {hi:.4g} |")
            lines.append("")
        if len(o.classes) > 1:
            lines += ["| class | TTFT p95 | TPOT p95 | in SLO | goodput/s |",
                      "|---|---|---|---|---|"]
            for c, cl in enumerate(o.classes):
                lines.append(f"| {cl.name} | {_ms(o.mean('ttft_p95', c))} ms | "
                             f"{_ms(o.mean('tpot_p95', c))} ms | "
                             f"{o.mean('slo_attainment', c):.1%} | "
                             f"{o.mean('goodput_rps', c):.2f} |")
            lines.append("")
    for n, r in main.skipped:
        lines += [f"- {n}: not run ({r})"]
    if len(comparisons) > 1:
        lines += ["## How the answer moves with model size", "",
                  "| model | cheapest design meeting the SLOs | GPUs | $/M tok |",
                  "|---|---|---|---|"]
        for m, c in comparisons.items():
            best = c.cheapest
            lines.append(f"| {m} | {best.design.name if best else 'none'} | "
                         f"{best.design.gpus if best else '-'} | "
                         f"{f'{interval(best.cost_per_mtok())[0]:.3f}' if best else '-'} |")
        lines.append("")
    for title, name in plots.items():
        lines += [f"![{title}]({name})", ""]
    return "\n".join(lines)


# -- plots -------------------------------------------------------------------------------------

#: The series' colours: Paul Tol's "muted" scheme, nine colours chosen to stay apart for
#: readers with any common colour vision (matplotlib's C0..C9 put nine thin lines in hues
#: close enough to be told apart only by hovering).
PALETTE = ("#332288", "#CC6677", "#117733", "#88CCEE", "#882255", "#44AA99", "#999933",
           "#AA4499", "#DDCC77")
#: Line styles and markers beside the colours, so two series never look alike even in grey
#: or where their colours are near: k takes colour k mod 9, style k mod 4 and marker k mod 9,
#: so no two of the first 36 series share a colour and a style.
_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">")


def series_style(k: int, points: int = 40) -> dict:
    """The line style of the ``k``-th series of a plot of ``points`` points: its colour, line
    style and marker (one every eighth of the series, each series' markers shifted so two
    never sit at the same x)."""
    every = max(1, points // 8)
    return {"color": PALETTE[k % len(PALETTE)], "ls": _STYLES[k % len(_STYLES)],
            "marker": _MARKERS[k % len(_MARKERS)], "markersize": 4.5,
            "markevery": (k % every, every)}


def plot_series(c: Comparison, ax_ttft=None, ax_good=None, ax_queue=None, ax_kv=None):
    """p95 TTFT, goodput, waiting requests and KV use per window, one line per design, each
    in its own colour, line style and marker (:func:`series_style`): the cheapest design
    meeting the SLOs drawn bold (while none is decided, the cheapest leaning to a pass,
    labelled undecided), the others thin; the legend beside the panels, not over them."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    fig = None
    if ax_ttft is None:
        fig = Figure(figsize=(10, 7.5))
        axes = fig.subplots(2, 2, sharex=True)
        ax_ttft, ax_good, ax_queue, ax_kv = axes.ravel()
    marked, words = marked_cheapest(c)
    best = marked.design.name if marked is not None else None
    for k, o in enumerate(c.outcomes):
        s = o.series
        if s is None:
            continue
        mid = s.start_s + s.window_s / 2
        bold = o.design.name == best
        style = {**series_style(k, len(mid)), "lw": 2.4 if bold else 1.1,
                 "zorder": 3 if bold else 2}
        label = o.design.name + (f" ({words})" if bold else "")
        ax_ttft.plot(mid, s.ttft_p95, label=label, **style)
        ax_good.plot(mid, s.goodput_rps, **style)
        ax_queue.plot(mid, s.waiting, **style)
        ax_kv.plot(mid, s.kv_share * 100, **style)
    ax_ttft.set_ylabel("p95 TTFT (s)")
    ax_ttft.set_yscale("log")
    plain_ticks(ax_ttft.yaxis)
    ax_good.set_ylabel("goodput (requests/s in SLO)")
    ax_queue.set_ylabel("waiting for first prefill")
    ax_queue.set_yscale("symlog", linthresh=1)
    ax_queue.set_ylim(bottom=0)
    plain_ticks(ax_queue.yaxis, minor=False)
    ax_queue.yaxis.set_major_locator(_integer_symlog_locator())
    ax_kv.set_ylabel("KV cache in use (%, peak)")
    ax_good.set_ylim(bottom=0)
    ax_kv.set_ylim(bottom=0)
    ax_kv.yaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in (ax_queue, ax_kv):
        ax.set_xlabel("time (s)")
    if fig is not None:
        handles, labels = ax_ttft.get_legend_handles_labels()
        rows = -(-len(labels) // 4)
        fig.tight_layout(rect=(0, 0.03 + 0.028 * rows, 1, 1))
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)) or 1,
                   fontsize=8, frameon=False)
    else:
        ax_ttft.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def _integer_symlog_locator():
    """Ticks 0, 1, 10, 100, ... on a symlog axis of counts (no fractions of a request)."""
    from matplotlib.ticker import FixedLocator
    return FixedLocator([0] + [10 ** k for k in range(0, 9)])


def plot_cost(c: Comparison, ax=None):
    """Cost per million tokens against p95 TTFT, one point per design (passing ones filled),
    each labelled where it overlaps no other label."""
    from matplotlib.figure import Figure
    fig = None
    if ax is None:
        fig = Figure(figsize=(7, 4.4))
        ax = fig.subplots()
    xs, ys, names = [], [], []
    for o in c.outcomes:
        x = interval(o.values("ttft_p95"))[0]
        y = interval(o.cost_per_mtok())[0]
        if not (x == x and y == y and x > 0):
            continue
        ax.scatter([x], [y], facecolors=point_face(o, "C0", "#a9c4e0", "none"), edgecolors="C0",
                   zorder=3)
        xs.append(x)
        ys.append(y)
        names.append(o.design.name)
    ax.set_xlabel("p95 TTFT (s)")
    ax.set_xscale("log")
    ax.margins(0.12)
    plain_ticks(ax.xaxis)
    ax.set_ylabel("$ per million output tokens")
    ax.set_title("filled: PASS; pale: pass? (undecided)", fontsize=10, loc="left")
    if fig is not None:
        fig.tight_layout()
    label_points(ax, xs, ys, names)
    return fig


def write_report(comparisons: dict[str, Comparison], scenario: Scenario, out: str | Path) -> list:
    """Write report.md, the PNG plots and result.json into ``out``; return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    main = next(iter(comparisons.values()))
    plots = {}
    if main.outcomes:
        plot_series(main).savefig(out / "series.png", dpi=110)
        plot_cost(main).savefig(out / "cost.png", dpi=110)
        plots = {"p95 TTFT, goodput, queue and KV use over time": "series.png",
                 "cost against p95 TTFT": "cost.png"}
    (out / "report.md").write_text(markdown(comparisons, scenario, plots))
    (out / "result.json").write_text(json.dumps(comparison_json(comparisons, scenario),
                                                indent=2, allow_nan=False) + "\n")
    return [out / "report.md", out / "result.json"] + [out / p for p in plots.values()]
