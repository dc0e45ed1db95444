"""The fault timeline: pick which replica fails, when and for how long; then watch recovery.

A thin layer over the simulator's fault schedule (:mod:`schedatrix.serving.cluster.faults`) and its
recovery figures (:mod:`schedatrix.serving.figures.recovery`). The knobs (the fault's kind, its
target as buttons to click, when it strikes, how long it stays down) redraw the timeline at once:
one row per replica, the fault's downtime, the router's health-check delay, the restart.
The run itself is heavy (the load twice: without the fault and with it; the run without it
once per load and design), so it waits for the Run button and moves a progress bar; then the
windowed p95 TTFT and goodput of both runs are drawn with the fault marked, and the fault's
figures (retried, failed, lost, goodput lost, p95 TTFT during the fault, recovery time against
the run without the fault, its noise floor and the verdict) are shown.

:func:`fault_study` is the pure part (the two runs and their figures); tests set a knob's
``.value``, call :meth:`FaultApp.run` and read :meth:`FaultApp.text`, no browser needed.
Widgets carry CSS classes (``sx-f-...``) so a browser test finds them on the page.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from ...errors import InputError
from ...serving.cluster.deployment import Design, build
from ...serving.cluster.faults import Fault, Resilience, check_faults
from ...serving.figures.metrics import Figures, figures
from ...serving.figures.record import Run
from ...serving.figures.recovery import FaultFigures, fault_figures, windowed
from ...serving.load.requests import Requests, SLOClass
from ...serving.load.workload import Load, generate
from ...serving.perf.catalog import model
from ...serving.sim.simulate import simulate

__all__ = ["FaultApp", "FaultStudy", "fault_study", "fault_app", "FAULT_LOAD",
           "FAULT_DESIGN", "INTERACTIVE"]

INTERACTIVE = SLOClass("interactive", 1.0, priority=0, ttft_s=1.0, tpot_s=0.06)
#: The lesson's load: a chat service at 8 requests/s, a little bursty.
FAULT_LOAD = Load(rate_rps=8.0, burstiness=0.7, input_len="lognormal:900,0.8",
                  output_len="lognormal:150,0.7", classes=(INTERACTIVE,))
#: The lesson's fleet: three replicas of Llama 3.1 8B on A100s, least-work routing.
FAULT_DESIGN = Design(model="llama-3.1-8b", gpu="a100-80gb", replicas=3, router="least-work")
_TAG = re.compile(r"<[^>]+>")
_STYLE = """<style>
.sx-f-figures td, .sx-f-figures th {padding: 1px 10px 1px 0; text-align: left; white-space: nowrap;}
.sx-f-error {color: #cf222e;}
</style>"""


@dataclass
class FaultStudy:
    """One fault on one load: the run without it (``baseline``), the run with it, the
    fault's figures and both runs' windowed (starts, p95 TTFT, goodput) series."""

    fault: Fault
    baseline: Run
    run: Run
    figures: FaultFigures
    overall: Figures
    series: tuple
    baseline_series: tuple


@lru_cache(maxsize=8)
def _baseline(requests: Requests, design: Design) -> Run:
    """``simulate(requests, design)``, kept for the last few loads and designs: a lesson studies
    many faults (and resiliences) on one load, and every study is measured against this run.
    Requests is frozen and compares by identity, so a load is the same object, and its run the
    same, for as long as it is kept."""
    return simulate(requests, design)


def fault_study(requests: Requests, design: Design, fault: Fault,
                resilience: Resilience | None = None, window_s: float = 10.0,
                on_step=None) -> FaultStudy:
    """Serve ``requests`` on ``design`` without and with ``fault``; ``on_step()`` is called
    after each of the two runs and after the figures (three steps). The run without the fault
    does not depend on the fault or the resilience, so studies of one load object on one
    design share it (it is simulated once)."""
    resilience = resilience or Resilience()
    check_faults((fault,), build(design).layout)
    tick = on_step or (lambda: None)
    base = _baseline(requests, design)
    tick()
    run = simulate(requests, design, faults=(fault,), resilience=resilience)
    tick()
    figs = fault_figures(run, base, window_s)
    first = float(np.min(requests.arrival_s))
    # window edges on the fault's time, as the recovery time's windows are
    start = fault.at_s - window_s * max(0, int(np.ceil((fault.at_s - first) / window_s)))
    end = float(np.nanmax(np.where(np.isnan(run.done_s), run.arrival_s, run.done_s)))
    study = FaultStudy(fault, base, run, figs[0], figures(run), windowed(run, start, end, window_s),
                       windowed(base, start, end, window_s))
    tick()
    return study


def restart_s(design: Design, resilience: Resilience) -> float:
    """Seconds a restarted replica takes before it serves (engine start, weights per GPU at
    the restart's rate, compile, graph capture, warm-up: ``resilience.restart``)."""
    return resilience.restart.total_s(model(design.model).weight_bytes / design.gpus_per_replica)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    return buf.getvalue()


class FaultApp:
    """The fault timeline app. ``FaultApp().ui`` is the widget; it also displays itself when it
    ends a notebook cell. ``duration_s``: the load's length; ``seed``: its draw."""

    def __init__(self, design: Design = FAULT_DESIGN, load: Load = FAULT_LOAD,
                 duration_s: float = 300.0, seed: int = 0,
                 resilience: Resilience | None = None, window_s: float = 10.0,
                 plots_on: bool = True):
        self.design, self.load, self.duration_s, self.seed = design, load, duration_s, seed
        self.resilience = resilience or Resilience()
        self.window_s, self.plots_on = window_s, plots_on
        self.layout = build(design).layout
        self.study: FaultStudy | None = None
        self.error = ""
        self.redraws = 0
        self._requests: Requests | None = None
        self._timeline = None
        self._build()
        for knob in self.knobs.values():
            knob.observe(self._on_knob, names="value")
        self.run_button.on_click(lambda _b: self.run())
        self.ui = widgets.VBox([
            widgets.HTML(_STYLE),
            widgets.HTML(f"<b>The fleet</b>: {html.escape(design.name)} of "
                         f"{html.escape(design.model)} on {html.escape(design.gpu)} "
                         f"({len(self.layout.replicas)} replicas on "
                         f"{len(self.nodes())} node{'s' * (len(self.nodes()) != 1)}), "
                         f"{duration_s:g} s of synthetic load at {load.rate_rps:g} requests/s."),
            self.knobs["kind"], self.knobs["target"], self.knobs["at_s"], self.knobs["down_s"],
            self.timeline, self.plan,
            widgets.HBox([self.run_button, self.progress]), self.error_box, self.result,
            self.image])
        self.redraw_timeline()

    # ----- building ---------------------------------------------------------------------
    def nodes(self) -> list[int]:
        return sorted({n for r in self.layout.replicas for n in r.nodes})

    def _build(self) -> None:
        style = {"description_width": "150px"}
        buttons = {"description_width": "150px", "button_width": "180px"}
        last = int(self.duration_s - 60)
        self.knobs = {
            "kind": widgets.ToggleButtons(
                options=[("worker crash", "worker"), ("node failure", "node"),
                         ("drain (planned restart)", "drain")],
                value="worker", description="Fault", style=buttons),
            "target": widgets.ToggleButtons(options=self._targets("worker"), value=0,
                                            description="Which replica", style=buttons),
            "at_s": widgets.IntSlider(value=min(120, last), min=30, max=last, step=10,
                                      description="Strikes at (s)", continuous_update=False,
                                      style=style, layout=widgets.Layout(width="520px")),
            "down_s": widgets.IntSlider(value=30, min=10, max=120, step=10,
                                        description="Down for (s)", continuous_update=False,
                                        style=style, layout=widgets.Layout(width="520px")),
        }
        for name, knob in self.knobs.items():
            knob.add_class(f"sx-f-knob-{name.replace('_', '-')}")
        self.timeline = widgets.Image(format="png", layout=widgets.Layout(width="720px"))
        self.timeline.add_class("sx-f-timeline")
        self.plan = widgets.HTML()
        self.plan.add_class("sx-f-plan")
        self.run_button = widgets.Button(description="Run with this fault", icon="play",
                                         layout=widgets.Layout(width="260px"))
        self.run_button.add_class("sx-f-run")
        self.progress = widgets.IntProgress(value=0, min=0, max=3,
                                            layout=widgets.Layout(width="200px"))
        self.progress.add_class("sx-f-progress")
        self.error_box = widgets.HTML()
        self.error_box.add_class("sx-f-error-box")
        self.result = widgets.HTML()
        self.result.add_class("sx-f-result")
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="720px",
                                                                      display="none"))
        self.image.add_class("sx-f-plot")

    def _targets(self, kind: str) -> list[tuple[str, int]]:
        if kind == "node":
            return [(f"node {n}", n) for n in self.nodes()]
        return [(f"replica {r}", r) for r in range(len(self.layout.replicas))]

    # ----- knobs -> fault ---------------------------------------------------------------
    def fault(self) -> Fault:
        """The fault the knobs describe now."""
        k = self.knobs
        return Fault(k["kind"].value, int(k["target"].value), float(k["at_s"].value),
                     float(k["down_s"].value))

    def _on_knob(self, change) -> None:
        if change["owner"] is self.knobs["kind"]:
            options = self._targets(change["new"])
            target = self.knobs["target"]
            if [v for _, v in target.options] != [v for _, v in options]:
                old = target.value
                target.options = options
                keep = [v for _, v in options]
                target.value = old if old in keep else keep[0]
        self.study = None
        self.result.value = ""
        self.progress.value = 0
        self.image.layout.display = "none"
        self.redraw_timeline()

    def hit_replicas(self, fault: Fault) -> list[int]:
        if fault.kind == "node":
            return [r for r, p in enumerate(self.layout.replicas) if fault.target in p.nodes]
        return [fault.target]

    def plan_text(self, fault: Fault) -> str:
        """What the fault will do, in words (before the run)."""
        hit = self.hit_replicas(fault)
        who = ", ".join(str(r) for r in hit)
        back = fault.at_s + fault.down_s + restart_s(self.design, self.resilience)
        left = len(self.layout.replicas) - len(hit)
        if fault.kind == "drain":
            return (f"Replica {who} takes nothing new from {fault.at_s:g} s, finishes what it "
                    f"holds, then restarts: back {fault.down_s:g} s after it empties plus "
                    f"{restart_s(self.design, self.resilience):.1f} s to restart. "
                    f"Nothing should be lost.")
        noticed = fault.at_s + self.resilience.health_check_s
        where = (f"retries the lost requests on the {left} replica{'s' * (left != 1)} left"
                 if left else "has no replica left: retries wait, and fail once a request's "
                 "retry budget is spent")
        return (f"Replica{'s' * (len(hit) != 1)} {who} crash{'es' * (len(hit) == 1)} at "
                f"{fault.at_s:g} s; the router notices at {noticed:g} s (health checks every "
                f"{self.resilience.health_check_s:g} s) and {where}; back at {back:.1f} s "
                f"({fault.down_s:g} s down plus {restart_s(self.design, self.resilience):.1f} s "
                f"restarting).")

    def redraw_timeline(self) -> None:
        """The timeline of the fault the knobs describe (cheap: no simulation)."""
        self.redraws += 1
        fault = self.fault()
        if self.plots_on:
            self.timeline.value = self._timeline_png(fault)
        # the plan after the picture: a page that shows the new plan has the new picture too
        self.plan.value = f"<p class='sx-f-plan-text'>{html.escape(self.plan_text(fault))}</p>"

    def _timeline_png(self, fault: Fault) -> bytes:
        """The timeline's picture. The figure is built once (one row per replica, three bars
        each: unnoticed, down, restarting); a redraw moves the bars and renders it."""
        if self._timeline is None:
            self._timeline = self._timeline_figure()
        fig, bars, title = self._timeline
        hit = set(self.hit_replicas(fault))
        check = self.resilience.health_check_s
        load_s = restart_s(self.design, self.resilience)
        if fault.kind == "drain":     # draining, then restarting: one bar
            spans = ((fault.at_s, fault.down_s, "#f2a93b"), (0, 0, None), (0, 0, None))
        else:
            spans = ((fault.at_s, check, "#8c2d2d"),
                     (fault.at_s + check, fault.down_s - check, "#c8443b"),
                     (fault.at_s + fault.down_s, load_s, "#f2a93b"))
        for r, row in enumerate(bars):
            for bar, (left, width, color) in zip(row, spans, strict=True):
                bar.set_visible(r in hit and width > 0)
                bar.set_x(left)
                bar.set_width(max(width, 0.0))
                if color:
                    bar.set_color(color)
        label = ("drain: empties, then restarts" if fault.kind == "drain" else
                 "dark: crashed, router unaware; red: down; orange: restarting")
        title.set_text(f"{fault.text()}  ({label})")
        return _png(fig)

    def _timeline_figure(self):
        from matplotlib.figure import Figure
        n = len(self.layout.replicas)
        fig = Figure(figsize=(9, 0.5 + 0.42 * n))
        ax = fig.subplots()
        bars = []
        for r in range(n):
            ax.barh(r, self.duration_s, color="#d8e6f3", height=0.6)
            bars.append([ax.barh(r, 0.0, left=0.0, height=0.6)[0] for _ in range(3)])
        ax.set_yticks(range(n), [f"replica {r}" for r in range(n)], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, self.duration_s)
        ax.set_xlabel("time (s)", fontsize=8)
        ax.tick_params(labelsize=8)
        title = ax.set_title(" ", fontsize=9, loc="left")
        fig.tight_layout()
        return fig, bars, title

    # ----- heavy: the run ---------------------------------------------------------------
    def requests(self) -> Requests:
        if self._requests is None:
            self._requests = generate(self.load, self.seed, duration_s=self.duration_s)
        return self._requests

    def run(self) -> FaultStudy | None:
        """Serve the load without and with the fault (the progress bar moves at each step);
        show the fault's figures and the recovery plot. Returns the study, or None when the
        simulator refuses the fault (its message is shown)."""
        self.progress.max, self.progress.value = 3, 0
        self.error_box.value, self.error = "", ""

        def tick() -> None:
            self.progress.value += 1

        try:
            study = fault_study(self.requests(), self.design, self.fault(), self.resilience,
                                self.window_s, tick)
        except InputError as e:
            self.error = str(e)
            self.error_box.value = f"<p class='sx-f-error'>{html.escape(str(e))}</p>"
            return None
        self.study = study
        self.result.value = figures_table(study)
        if self.plots_on:
            self.image.value = _png(recovery_figure(study))
            self.image.layout.display = ""
        return study

    # ----- reading (tests) ----------------------------------------------------------------
    def text(self, name: str) -> str:
        """The text of ``plan``, ``result`` or ``error``, without HTML tags."""
        value = {"plan": self.plan, "result": self.result, "error": self.error_box}[name].value
        return " ".join(html.unescape(_TAG.sub(" ", value)).split())

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.ui._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):
            what = "The fault timeline: run this cell (or Run All) to pick a fault and run it."
            bundle["text/plain"] = what
            bundle["text/html"] = f"<p><i>{html.escape(what)}</i></p>"
        return bundle


def _s(v) -> str:
    if v is None:
        return "never (within the run)"
    if v != v:
        return "-"
    if v == float("inf"):
        return "inf (more than 5% failed)"
    return f"{v * 1000:,.0f} ms" if v < 1 else f"{v:,.2f} s"


def figures_table(study: FaultStudy) -> str:
    """The fault's figures as an HTML table."""
    f = study.figures

    def secs(v) -> str:
        return "never (within the run)" if v is None else f"{v:g} s"

    rows = [("requests retried", f"{f.retried:,}"),
            ("failed (retry budget spent)", f"{f.failed:,}"),
            ("lost", f"{f.lost:,}"),
            ("goodput lost (in SLO without the fault, not with it)", f"{f.goodput_lost:,}"),
            ("p95 TTFT, arrivals during the fault", _s(f.ttft_p95_during)),
            ("p95 TTFT, the 120 s before it", _s(f.pre_ttft_p95)),
            ("recovery time", secs(f.recovery_s)),
            ("noise floor (the run without the fault, read against its own level before)",
             secs(f.noise_floor_s)),
            ("recovery against the level before the fault", secs(f.pre_level_recovery_s)),
            ("verdict", "no measurable damage" if not f.measurable else "damage measured"),
            ("within SLO, whole run", f"{study.overall.slo_attainment:.1%}")]
    body = "".join(f"<tr><td>{html.escape(a)}</td><td><b>{html.escape(b)}</b></td></tr>"
                   for a, b in rows)
    return (f"<table class='sx-f-figures'><tr><th colspan='2'>{html.escape(f.fault)}</th></tr>"
            f"{body}</table>")


def recovery_figure(study: FaultStudy):
    """Windowed p95 TTFT and goodput, without and with the fault, the fault shaded and the
    recovery marked."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 4.6))
    ax = fig.subplots(2, 1, sharex=True)
    (s0, p0, g0), (s1, p1, g1) = study.baseline_series, study.series
    ax[0].plot(s0, p0, drawstyle="steps-post", color="#9a9a9a", lw=1, label="without the fault")
    ax[0].plot(s1, np.where(np.isfinite(p1), p1, np.nan), drawstyle="steps-post",
               color="#3b75af", label="with it")
    window = study.figures.window_s
    for k, start in enumerate(s for s, p in zip(s1, p1, strict=True) if p == np.inf):
        ax[0].axvspan(start, start + window, color="#8c2d2d", alpha=0.45,
                      label="p95 infinite: more than 5% failed" if k == 0 else None)
    ax[0].set_yscale("log")
    ax[0].yaxis.set_major_formatter(lambda v, _pos: f"{v:g}")
    ax[0].yaxis.set_minor_formatter(
        lambda v, _pos: f"{v:g}" if f"{v:g}".lstrip("0.")[:1] in ("2", "5") else "")
    ax[0].set_ylabel("p95 TTFT (s)")
    ax[1].plot(s0, g0, drawstyle="steps-post", color="#9a9a9a", lw=1)
    ax[1].plot(s1, g1, drawstyle="steps-post", color="#3b75af")
    ax[1].set_ylabel("goodput (req/s)")
    ax[1].set_xlabel("time (s)")
    f = study.fault
    for a in ax:
        a.axvspan(f.at_s, f.at_s + (f.down_s or 0), color="#c8443b", alpha=0.15)
        a.axvline(f.at_s, color="#c8443b", lw=1)
    rec, floor = study.figures.recovery_s, study.figures.noise_floor_s
    if rec is not None:
        for a in ax:
            a.axvline(f.at_s + rec, color="#2f8f5b", lw=1, ls="--")
    if floor:
        for a in ax:
            a.axvline(f.at_s + floor, color="#9a9a9a", lw=1, ls=":")
    title = f"{f.text()}: fault shaded" + (
        ", no measurable damage" if not study.figures.measurable else
        f", recovered (green) {rec:g} s after it" if rec is not None
        else ", no recovery in the run") + (
        f"; noise floor (grey, dotted) {floor:g} s" if floor is not None else "")
    ax[0].set_title(title, fontsize=10, loc="left")
    ax[0].legend(fontsize=8, frameon=False, loc="upper right")
    fig.tight_layout()
    return fig


def fault_app(**kwargs) -> FaultApp:
    """The fault timeline app (keyword arguments as :class:`FaultApp`); display it by ending
    a cell with it."""
    return FaultApp(**kwargs)
