"""The design page: candidate deployments compared on one load, side by side, with a verdict.

A thin layer over :func:`schedatrix.serving.studies.compare.compare` and
:func:`~schedatrix.serving.studies.compare.compare_models`: the knobs give the model, the GPU, the
load (rate, burstiness, lengths), the SLOs, the runs and which candidates of
:data:`~.serving_knobs.DESIGN_MENU` to try. Comparing is heavy (every design, every seed), so
it waits for a button and moves a progress bar run by run; turning a knob afterwards marks the
shown result as stale. The result: the comparison's summary (the cheapest design meeting the
SLOs, or none; whether anything distributed is needed), a table of every figure, and cost
against p95 TTFT. A second button repeats the designs for 3B, 8B and 70B models.

Tests set knob values, call :meth:`DesignApp.compare` and read :meth:`DesignApp.text`.
Widgets carry CSS classes (``sx-d-summary``, ...) for the browser test.
"""

from __future__ import annotations

import html
import io
import re

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ...errors import InputError
from ...serving.load.workload import generate
from ...serving.perf.catalog import GPUS, MODELS
from ...serving.reports.plot_text import label_points, plain_ticks
from ...serving.reports.report import marked_cheapest, point_face
from ...serving.studies.acceptance import Outcome, interval
from ...serving.studies.compare import Comparison, compare, compare_models
from .serving_app import seconds_text
from .serving_knobs import (
    DESIGN_MENU,
    LENGTHS,
    TPOT_SLOS,
    TTFT_SLOS,
    Setting,
    designs_for,
    load_of,
    menu_label,
)

__all__ = ["DesignApp", "design_page", "SIZES", "PAGE_INTRO"]

#: The model sizes the second button compares.
SIZES = ("llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b")
#: The page's opening words (the Voila page and the notebook cell that shows it).
PAGE_INTRO = (
    "# schedatrix: which serving design?\n\n"
    "Describe a load and its SLOs, pick candidate deployments, and compare them on the same "
    "arrivals over several seeds: latency (TTFT, ITL, TPOT), goodput, KV cache use and cost "
    "per million tokens side by side, the cheapest design that meets the SLOs in every run, "
    "and whether anything distributed is needed at all. The load is synthetic: read the "
    "figures as a model's answer, not as production SLO performance."
)
_TAG = re.compile(r"<[^>]+>")
_STYLE = """<style>
.sx-d-table {overflow-x: auto;}
.sx-d-table table {border-collapse: collapse; font-size: 0.9em;}
.sx-d-table th, .sx-d-table td {border-bottom: 1px solid #d0d7de; padding: 2px 8px;
  white-space: nowrap;
  text-align: right;}
.sx-d-table td:first-child, .sx-d-table th:first-child {text-align: left;}
.sx-d-pass {color: #1a7f37; font-weight: 600;}
.sx-d-fail {color: #cf222e;}
.sx-d-best {background: #fff8c5;}
</style>"""


def _verdict_cell(o: Outcome) -> str:
    if o.status is None:
        return "no verdict"
    if o.status == "undecided":     # few seeds: what they point to, not a verdict
        return f"undecided ({o.label()})"
    if o.passed:
        return "<span class='sx-d-pass'>PASS" + ("+" if o.room_to_spare else "") + "</span>"
    return "<span class='sx-d-fail'>FAIL</span>"


def comparison_table(c: Comparison) -> str:
    """An HTML table of the comparison: latency first, then goodput, SLO share, KV use and
    cost beside them (never alone), and the verdict; the cheapest passing design marked."""
    best = c.cheapest
    head = ("design", "GPUs", "TTFT p50 / p95", "ITL p50 / p95", "TPOT p95", "goodput/s",
            "in SLO", "KV peak", "$/M tok", "verdict")
    rows = ["<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for o in c.outcomes:
        m = o.mean
        cost = interval(o.cost_per_mtok())[0]
        cells = (html.escape(o.design.name), str(o.design.gpus),
                 f"{seconds_text(m('ttft_p50'))} / {seconds_text(m('ttft_p95'))}",
                 f"{seconds_text(m('itl_p50'))} / {seconds_text(m('itl_p95'))}",
                 seconds_text(m("tpot_p95")), f"{m('goodput_rps'):.2f}",
                 f"{m('slo_attainment'):.1%}", f"{interval(o.kv_peak_share)[0]:.0%}",
                 f"{cost:,.3f}", _verdict_cell(o))
        mark = " class='sx-d-best'" if o is best else ""
        rows.append(f"<tr{mark}>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    crit = c.outcomes[0].criteria if c.outcomes else None
    key = ("" if crit is None else
           f"<p class='sx-d-key'><i>PASS: at least {crit.run_share:.0%} of runs meet the SLOs "
           f"({crit.confidence:.0%} confidence); undecided (pass? / fail?): too few runs to "
           f"tell, what they point to. PASS+: with room to spare "
           f"(p95 TTFT and TPOT at most {crit.spare:.0%} of their SLOs, KV cache at most "
           f"{crit.kv_spare:.0%} full). Highlighted: the cheapest design that passes.</i></p>")
    return "<table>" + "".join(rows) + "</table>" + key


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf)
    return buf.getvalue()


def cost_plot(c: Comparison) -> bytes:
    """PNG of :func:`cost_figure`."""
    return _png(cost_figure(c))


def cost_figure(c: Comparison) -> Figure:
    """Cost per million tokens against p95 TTFT, one point per design (filled: passes; pale:
    leans to a pass, undecided), each labelled with its name where no other label is; the
    cheapest passing design starred (while none is decided, the cheapest leaning to a pass,
    its star labelled undecided); the TTFT SLO dashed."""
    fig = Figure(figsize=(6.25, 3.5), dpi=96)     # 600 px wide: the page shows it 1:1
    ax = fig.subplots()
    xs, ys, names = [], [], []
    for o in c.outcomes:
        x, y = o.mean("ttft_p95"), interval(o.cost_per_mtok())[0]
        if not (x == x and y == y and x > 0 and y > 0):
            continue
        ax.scatter([x], [y], s=34, color=point_face(o, "#3b75af", "#b9cde3", "white"),
                   edgecolors="#3b75af")
        xs.append(x)
        ys.append(y)
        names.append(o.design.name)
    best, _ = marked_cheapest(c)
    legend = None
    if best is not None:
        star = "cheapest" if best is c.cheapest else "cheapest, undecided (pass?)"
        ax.scatter([best.mean("ttft_p95")], [interval(best.cost_per_mtok())[0]], s=170,
                   marker="*", color="#f2a93b", zorder=3, label=f"{star}: {best.design.name}")
    slo = c.outcomes[0].classes[0].ttft_s if c.outcomes else None
    if slo is not None:
        ax.axvline(slo, color="#c8443b", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.margins(0.15)
    for axis in (ax.xaxis, ax.yaxis):
        plain_ticks(axis)
    ax.tick_params(which="both", labelsize=9)
    ax.set_xlabel("p95 TTFT (s), mean over the runs", fontsize=10)
    ax.set_ylabel("$ per million output tokens", fontsize=10)
    ax.set_title("Filled: PASS; pale: pass? (undecided); dashed: the TTFT SLO", fontsize=10,
                 loc="left")
    if best is not None:
        legend = ax.legend(fontsize=9, frameon=False, loc="best")
    fig.tight_layout()
    label_points(ax, xs, ys, names, fontsize=8.5, avoid=[legend] if legend else ())
    return fig


class DesignApp:
    """The design page. ``DesignApp().ui`` is the widget; it also displays itself when it
    ends a notebook cell."""

    def __init__(self, setting: Setting | None = None, runs: int = 3, requests: int = 1000):
        s = setting or Setting(rate_rps=5.0)
        self.comparison: Comparison | None = None
        self.by_model: dict[str, Comparison] | None = None
        self.compares = 0
        style = {"description_width": "140px"}
        wide = widgets.Layout(width="360px")
        drop = {"style": style, "layout": wide}
        slider = {"continuous_update": False, "style": style, "layout": wide}
        self.knobs = {
            "model": widgets.Dropdown(options=list(MODELS), value=s.model,
                                      description="Model", **drop),
            "gpu": widgets.Dropdown(options=list(GPUS), value=s.gpu, description="GPU",
                                    **drop),
            "rate": widgets.FloatSlider(value=s.rate_rps, min=0.5, max=40, step=0.5,
                                        description="Rate (requests/s)", **slider),
            "burstiness": widgets.SelectionSlider(
                options=[("0.25", 0.25), ("0.5", 0.5), ("1 (Poisson)", 1.0), ("2", 2.0)],
                value=s.burstiness, description="Burstiness", **slider),
            "lengths": widgets.Dropdown(options=[(v[0], k) for k, v in LENGTHS.items()],
                                        value=s.lengths, description="Lengths", **drop),
            "ttft_slo": widgets.Dropdown(options=TTFT_SLOS, value=s.ttft_slo_s,
                                         description="TTFT SLO", **drop),
            "tpot_slo": widgets.Dropdown(options=TPOT_SLOS, value=s.tpot_slo_s,
                                         description="TPOT SLO", **drop),
            "runs": widgets.IntSlider(value=runs, min=1, max=5, description="Runs (seeds)",
                                      **slider),
            "requests": widgets.SelectionSlider(
                options=[250, 500, 1000, 2000], value=requests,
                description="Requests per run", **slider),
            "designs": widgets.SelectMultiple(
                options=[menu_label(k) for k in DESIGN_MENU],
                value=tuple(menu_label(k) for k in DESIGN_MENU), rows=len(DESIGN_MENU),
                description="Candidates", style=style, layout=widgets.Layout(width="360px")),
        }
        for name, knob in self.knobs.items():
            knob.add_class(f"sx-d-knob-{name}")
            knob.observe(self._on_knob, names="value")
        self.compare_button = widgets.Button(description="Compare designs", icon="play",
                                             button_style="primary",
                                             layout=widgets.Layout(width="200px"))
        self.compare_button.add_class("sx-d-compare")
        self.sizes_button = widgets.Button(description="Across model sizes (3B, 8B, 70B)",
                                           icon="play", layout=widgets.Layout(width="260px"))
        self.sizes_button.add_class("sx-d-sizes")
        self.progress = widgets.IntProgress(value=0, min=0, max=1,
                                            layout=widgets.Layout(width="260px"))
        self.progress.add_class("sx-d-progress")
        self.status = widgets.HTML("<i>Press <b>Compare designs</b> to run the candidates "
                                   "on the load.</i>")
        self.status.add_class("sx-d-status")
        self.summary = widgets.HTML()
        self.summary.add_class("sx-d-summary")
        self.table = widgets.HTML()
        self.table.add_class("sx-d-table")
        self.plot = widgets.Image(format="png", layout=widgets.Layout(width="600px",
                                                                       display="none"))
        self.plot.add_class("sx-d-plot")
        self.sizes = widgets.HTML()
        self.sizes.add_class("sx-d-models")
        self.compare_button.on_click(lambda _b: self.compare())
        self.sizes_button.on_click(lambda _b: self.compare_sizes())
        k = self.knobs
        knobs = widgets.VBox([
            widgets.HTML("<b>The load and its SLOs</b>"), k["rate"], k["burstiness"],
            k["lengths"], k["ttft_slo"], k["tpot_slo"],
            widgets.HTML("<b>Model and GPU</b>"), k["model"], k["gpu"],
            widgets.HTML("<b>The comparison</b>"), k["runs"], k["requests"], k["designs"],
        ], layout=widgets.Layout(width="390px", min_width="390px", flex="0 0 auto"))
        results = widgets.VBox([
            widgets.HBox([self.compare_button, self.sizes_button]), self.progress,
            self.status, self.summary, self.plot,
        ])
        self.ui = widgets.VBox([widgets.HTML(_STYLE), widgets.HBox([knobs, results]),
                                self.table, self.sizes])

    # ----- knobs -----------------------------------------------------------------------
    def setting(self) -> Setting:
        """The load and SLO knobs as a :class:`~.serving_knobs.Setting` (design knobs come
        from the candidates)."""
        k = self.knobs
        return Setting(rate_rps=float(k["rate"].value), burstiness=float(k["burstiness"].value),
                       lengths=k["lengths"].value, model=k["model"].value, gpu=k["gpu"].value,
                       ttft_slo_s=k["ttft_slo"].value, tpot_slo_s=k["tpot_slo"].value,
                       requests=int(k["requests"].value))

    def _on_knob(self, _change) -> None:
        if self.comparison is not None or self.by_model is not None:
            self.status.value = ("<i>The knobs moved since the last comparison: press a "
                                 "button to compare again.</i>")

    def _menu(self) -> list[dict]:
        chosen = set(self.knobs["designs"].value)
        menu = [k for k in DESIGN_MENU if menu_label(k) in chosen]
        if not menu:
            raise InputError("designs: pick at least one candidate design")
        return menu

    def _make_requests(self):
        s = self.setting()
        load = load_of(s)
        return lambda seed: generate(load, seed, requests=s.requests)

    def _progress(self, total: int):
        self.progress.max, self.progress.value = max(total, 1), 0

        def tick() -> None:
            self.progress.value += 1
        return tick

    # ----- the heavy work, behind buttons ---------------------------------------------
    def compare(self) -> Comparison | None:
        """Run the chosen candidates for the chosen model and GPU on the same arrivals, seed
        by seed; show the summary, the table and the plot. Returns the comparison (None
        when nothing could run)."""
        s, runs = self.setting(), int(self.knobs["runs"].value)
        try:
            designs, skipped = designs_for(s.model, s.gpu, self._menu())
            make = self._make_requests()
        except InputError as e:
            self.status.value = f"<span class='sx-d-fail'>{html.escape(str(e))}</span>"
            return None
        if not designs:
            self.status.value = ("<span class='sx-d-fail'>None of the chosen designs can "
                                 f"hold {html.escape(s.model)} on {html.escape(s.gpu)}: "
                                 + html.escape("; ".join(f"{n}: {r}" for n, r in skipped))
                                 + "</span>")
            self.comparison = None
            return None
        self.status.value = (f"<i>Comparing {len(designs)} designs x {runs} runs of "
                             f"{s.requests:,} requests...</i>")
        tick = self._progress(len(designs) * runs + runs)   # + the baseline, if one is added
        c = compare(designs, make, runs=runs, on_run=tick)
        c.skipped = skipped
        self.progress.value = self.progress.max
        self.comparison = c
        self.compares += 1
        self.status.value = (f"<i>{len(c.outcomes)} designs, {runs} run"
                             f"{'s' * (runs != 1)} each, {s.requests:,} requests a run, "
                             f"{html.escape(s.model)} on {html.escape(s.gpu)}.</i>")
        self.summary.value = f"<p><b>Answer.</b> {html.escape(c.summary())}</p>"
        skipped_note = "".join(f"<li>{html.escape(n)}: not run ({html.escape(r)})</li>"
                               for n, r in skipped)
        self.table.value = comparison_table(c) + (f"<ul>{skipped_note}</ul>" if skipped else "")
        self.plot.value = cost_plot(c)
        self.plot.layout.display = ""
        return c

    def compare_sizes(self) -> dict[str, Comparison] | None:
        """The chosen candidates for 3B, 8B and 70B models on the chosen GPU: the cheapest
        design meeting the SLOs for each, and why it moves."""
        s, runs = self.setting(), int(self.knobs["runs"].value)
        try:
            menu, make = self._menu(), self._make_requests()
        except InputError as e:
            self.status.value = f"<span class='sx-d-fail'>{html.escape(str(e))}</span>"
            return None
        per_model = [designs_for(m, s.gpu, menu)[0] for m in SIZES]
        tick = self._progress(sum(len(d) for d in per_model) * runs)
        base, _ = designs_for(s.model, s.gpu, menu)
        seed_designs = base or next(d for d in per_model if d)
        by_model = compare_models(seed_designs, list(SIZES), make, runs=runs, on_run=tick)
        self.progress.value = self.progress.max
        self.by_model = by_model
        rows = ["<tr><th>model</th><th>cheapest design meeting the SLOs</th><th>GPUs</th>"
                "<th>$/M tok</th><th>p95 TTFT</th><th>designs run</th></tr>"]
        for m, c in by_model.items():
            best = c.cheapest
            rows.append(
                f"<tr><td>{m}</td><td>{html.escape(best.design.name) if best else 'none'}"
                f"</td><td>{best.design.gpus if best else '-'}</td><td>"
                f"{f'{np.mean(best.cost_per_mtok()):,.3f}' if best else '-'}</td><td>"
                f"{seconds_text(best.mean('ttft_p95')) if best else '-'}</td><td>"
                f"{len(c.outcomes)} (+{len(c.skipped)} too small)</td></tr>")
        notes = "".join(f"<li><b>{m}</b>: {html.escape(c.summary())}</li>"
                        for m, c in by_model.items())
        self.sizes.value = ("<h4>Across model sizes</h4><div class='sx-d-table'><table>"
                            + "".join(rows) + f"</table></div><ul>{notes}</ul>")
        self.status.value = (f"<i>Model sizes compared on {html.escape(s.gpu)}, {runs} "
                             f"run{'s' * (runs != 1)} each.</i>")
        return by_model

    # ----- reading ---------------------------------------------------------------------
    def text(self, name: str) -> str:
        """The text of ``summary``, ``table``, ``status`` or ``sizes``, without HTML."""
        widget = {"summary": self.summary, "table": self.table, "status": self.status,
                  "sizes": self.sizes}[name]
        return " ".join(html.unescape(_TAG.sub(" ", widget.value)).split())

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.ui._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict) and "text/plain" in bundle:
            bundle["text/plain"] = ("The design page: run this cell to bring it to life.")
        return bundle


def design_page(setting: Setting | None = None, **knobs) -> DesignApp:
    """The design page's app (``knobs`` override the setting's fields); display it by
    ending a cell with it."""
    s = setting or Setting(rate_rps=5.0)
    return DesignApp(s.with_(**knobs) if knobs else s)
