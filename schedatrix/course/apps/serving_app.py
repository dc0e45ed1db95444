"""The serving app: a load and a design as knobs; one run's figures and plots follow at once.

A thin layer over the simulator: the knobs make a :class:`~.serving_knobs.Setting`, which
becomes a load and a design (:mod:`.serving_knobs`); :meth:`ServingApp.update` generates the
load's first ``requests`` arrivals, serves them (:func:`schedatrix.serving.sim.simulate.simulate`),
reads the figures (:func:`schedatrix.serving.figures.metrics.figures`) and the verdict
(:class:`schedatrix.serving.studies.acceptance.Outcome`), and redraws each request's TTFT and TPOT.
Runs over several seeds (:func:`schedatrix.serving.studies.acceptance.evaluate`) wait for a button,
with a progress bar. A knob value the simulator refuses (a model that does not fit, a TP
degree the heads don't divide) shows the simulator's message instead of figures.

Tests set a knob's ``.value`` and read :meth:`ServingApp.text`, no browser needed. Readout
widgets carry CSS classes (``sx-s-ttft``, ...) so a browser test finds them on the page.
"""

from __future__ import annotations

import html
import math
import re
import threading

import ipywidgets as widgets
import numpy as np

from ...errors import InputError
from ...serving.figures.metrics import figures
from ...serving.figures.record import COMPLETED, Run
from ...serving.load.workload import generate
from ...serving.perf.catalog import GPUS, MODELS
from ...serving.sim.simulate import simulate
from ...serving.studies.acceptance import Criteria, Outcome, evaluate, interval
from ..figures.request_plot import RequestPlot
from .serving_knobs import (
    LENGTHS,
    SPLITS,
    TPOT_SLOS,
    TTFT_SLOS,
    Setting,
    design_of,
    load_of,
    outcome_of,
)

__all__ = ["ServingApp", "serving_app", "READOUTS", "KNOB_GROUPS", "seconds_text"]

#: Readout name -> CSS class of its widget.
READOUTS = {
    "ttft": "sx-s-ttft",
    "itl": "sx-s-itl",
    "tpot": "sx-s-tpot",
    "queue": "sx-s-queue",
    "goodput": "sx-s-goodput",
    "throughput": "sx-s-throughput",
    "kv": "sx-s-kv",
    "cost": "sx-s-cost",
    "verdict": "sx-s-verdict",
    "load": "sx-s-load",
}
#: Knob groups an app can show (the others keep their values, hidden).
KNOB_GROUPS = {
    "load": ("rate", "burstiness", "lengths"),
    "hardware": ("model", "gpu"),
    "parallelism": ("tp", "pp", "replicas", "split"),
    "scheduler": ("max_batch", "max_batched_tokens"),
    "slo": ("ttft_slo", "tpot_slo"),
    "seed": ("seed",),
}
_TAG = re.compile(r"<[^>]+>")
_STYLE = """<style>
.sx-s-card {border: 1px solid #d0d7de; border-radius: 6px; padding: 2px 8px; margin: 2px;}
.sx-s-figure {font-size: 1.25em; font-weight: 600; line-height: 1.3em; white-space: nowrap;}
.sx-s-label {color: #57606a; font-size: 0.85em; line-height: 1.2em;}
.sx-s-error {color: #cf222e;}
</style>"""


def seconds_text(s: float) -> str:
    """A duration for a readout: ms below 1 s (one decimal below 10 ms), else seconds."""
    if s is None or not math.isfinite(s):
        return "-"
    if s < 0.01:
        return f"{s * 1000:.1f} ms"
    if s < 1:
        return f"{s * 1000:.0f} ms"
    return f"{s:,.2f} s"


def _card(label: str, value: str) -> str:
    return (f"<div class='sx-s-label'>{html.escape(label)}</div>"
            f"<div class='sx-s-figure'>{html.escape(value)}</div>")


class ServingApp:
    """The serving app. ``ServingApp().ui`` is the widget; the app also displays itself when
    it ends a notebook cell. ``groups``: which knob groups to show (:data:`KNOB_GROUPS`)."""

    def __init__(self, setting: Setting | None = None, groups=tuple(KNOB_GROUPS),
                 plots_on: bool = True, seeds_runs: int = 5, seeds_requests: int = 1000):
        unknown = set(groups) - set(KNOB_GROUPS)
        if unknown:
            raise InputError(f"groups: unknown {sorted(unknown)}; allowed: "
                             f"{', '.join(KNOB_GROUPS)}")
        self.groups = tuple(groups)
        self.plots_on = plots_on
        self.seeds_runs, self.seeds_requests = seeds_runs, seeds_requests
        self.updates = 0
        self.run: Run | None = None
        self.outcome: Outcome | None = None
        self.seeds: Outcome | None = None
        self.error = ""
        self._holding = False
        self._updating = threading.RLock()
        self._build_knobs(setting or Setting())
        self._build_readouts()
        self._build_plot()
        self.ui = self._layout()
        for knob in self.knobs.values():
            knob.observe(self._on_knob, names="value")
        self.seeds_button.on_click(lambda _b: self.run_seeds())
        self.update()

    # ----- building ---------------------------------------------------------------------
    def _build_knobs(self, s: Setting) -> None:
        style = {"description_width": "150px"}
        wide = widgets.Layout(width="380px")
        drop = {"style": style, "layout": wide}
        slider = {"continuous_update": False, "style": style, "layout": wide}
        self.knobs = {
            "rate": widgets.FloatSlider(value=s.rate_rps, min=0.5, max=40, step=0.5,
                                        description="Rate (requests/s)", **slider),
            "burstiness": widgets.SelectionSlider(
                options=[("0.1", 0.1), ("0.25", 0.25), ("0.5", 0.5), ("1 (Poisson)", 1.0),
                         ("2", 2.0), ("4", 4.0)],
                value=s.burstiness, description="Burstiness", **slider),
            "lengths": widgets.Dropdown(options=[(v[0], k) for k, v in LENGTHS.items()],
                                        value=s.lengths, description="Lengths", **drop),
            "model": widgets.Dropdown(options=list(MODELS), value=s.model,
                                      description="Model", **drop),
            "gpu": widgets.Dropdown(options=list(GPUS), value=s.gpu, description="GPU",
                                    **drop),
            "tp": widgets.Dropdown(options=[1, 2, 4, 8], value=s.tp,
                                   description="Tensor parallel (TP)", **drop),
            "pp": widgets.Dropdown(options=[1, 2, 4], value=s.pp,
                                   description="Pipeline stages (PP)", **drop),
            "replicas": widgets.IntSlider(value=s.replicas, min=1, max=8,
                                          description="Replicas (DP)", **slider),
            "split": widgets.Dropdown(
                options=[("no split" if p == 0 else f"{p} prefill : {d} decode", (p, d))
                         for p, d in SPLITS],
                value=tuple(s.split), description="Prefill/decode split", **drop),
            "max_batch": widgets.SelectionSlider(
                options=[1, 2, 4, 8, 16, 32, 64, 128, 256], value=s.max_batch,
                description="Max batch (requests)", **slider),
            "max_batched_tokens": widgets.Dropdown(
                options=[512, 2048, 8192], value=s.max_batched_tokens,
                description="Token budget / step", **drop),
            "ttft_slo": widgets.Dropdown(options=TTFT_SLOS, value=s.ttft_slo_s,
                                         description="TTFT SLO", **drop),
            "tpot_slo": widgets.Dropdown(options=TPOT_SLOS, value=s.tpot_slo_s,
                                         description="TPOT SLO", **drop),
            "seed": widgets.BoundedIntText(value=s.seed, min=0, max=2**31 - 1,
                                           description="Load draw (seed)", style=style,
                                           layout=widgets.Layout(width="260px")),
        }
        self._fixed = {"requests": s.requests, "chunked_prefill": s.chunked_prefill}
        for name, knob in self.knobs.items():
            knob.add_class(f"sx-s-knob-{name.replace('_', '-')}")
        self.seeds_button = widgets.Button(
            description=f"Run {self.seeds_runs} seeds x {self.seeds_requests:,} requests",
            icon="play", layout=widgets.Layout(width="300px"))
        self.seeds_button.add_class("sx-s-seeds")
        self.progress = widgets.IntProgress(value=0, min=0, max=self.seeds_runs,
                                            layout=widgets.Layout(width="200px"))
        self.seeds_note = widgets.HTML()
        self.seeds_note.add_class("sx-s-seeds-note")

    def _build_readouts(self) -> None:
        self.readouts = {}
        for name, css in READOUTS.items():
            w = widgets.HTML()
            w.add_class(css)
            if name not in ("verdict", "load"):
                w.add_class("sx-s-card")
            self.readouts[name] = w
        self.error_box = widgets.HTML()
        self.error_box.add_class("sx-s-error-box")

    def _build_plot(self) -> None:
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="760px"))
        self.image.add_class("sx-s-plot")
        self._plot = RequestPlot(self._fixed["requests"]) if self.plots_on else None

    def _layout(self) -> widgets.Widget:
        titles = {"load": "The load", "hardware": "Model and GPU",
                  "parallelism": "Parallelism", "scheduler": "The replica's scheduler",
                  "slo": "The SLOs", "seed": "The draw"}
        column = []
        for group in self.groups:
            column.append(widgets.HTML(f"<b>{titles[group]}</b>"))
            column += [self.knobs[k] for k in KNOB_GROUPS[group]]
        knobs = widgets.VBox(column, layout=widgets.Layout(width="400px", min_width="400px",
                                                           flex="0 0 auto"))
        r = self.readouts
        grid = widgets.GridBox(
            [r[k] for k in ("ttft", "itl", "tpot", "queue", "goodput", "throughput", "kv",
                            "cost")],
            layout=widgets.Layout(grid_template_columns="repeat(2, 200px)"))
        readout = widgets.VBox([r["load"], grid, self.error_box])
        seeds = widgets.VBox([
            widgets.HTML("<b>Over several seeds</b>: the same design on fresh draws of the "
                         "load, longer runs, each figure's mean and 95% interval."),
            widgets.HBox([self.seeds_button, self.progress]), self.seeds_note])
        return widgets.VBox([widgets.HTML(_STYLE), widgets.HBox([knobs, readout]),
                             r["verdict"], self.image, seeds])

    # ----- knobs -> setting ---------------------------------------------------------------
    def setting(self) -> Setting:
        """The setting the knobs describe now."""
        k = self.knobs
        return Setting(
            rate_rps=float(k["rate"].value), burstiness=float(k["burstiness"].value),
            lengths=k["lengths"].value, model=k["model"].value, gpu=k["gpu"].value,
            tp=int(k["tp"].value), pp=int(k["pp"].value), replicas=int(k["replicas"].value),
            split=tuple(k["split"].value), max_batch=int(k["max_batch"].value),
            max_batched_tokens=int(k["max_batched_tokens"].value),
            chunked_prefill=self._fixed["chunked_prefill"],
            ttft_slo_s=k["ttft_slo"].value, tpot_slo_s=k["tpot_slo"].value,
            requests=self._fixed["requests"], seed=int(k["seed"].value))

    def set(self, **knobs) -> None:
        """Turn several knobs at once (one update): names as in :attr:`knobs`."""
        unknown = set(knobs) - set(self.knobs)
        if unknown:
            raise InputError(f"knobs: unknown {sorted(unknown)}; allowed: "
                             f"{', '.join(self.knobs)}")
        self._holding = True
        try:
            for name, value in knobs.items():
                self.knobs[name].value = value
        finally:
            self._holding = False
        self.update()

    def _on_knob(self, _change) -> None:
        if not self._holding:
            self.update()

    # ----- the one path from knobs to readout ---------------------------------------------
    def update(self) -> Outcome | None:
        """Serve the setting's load on its design once; refresh every readout and the plot.
        Returns the run's outcome, or None when the simulator refused a knob value. One
        update at a time, the latest knobs last: a kernel may handle two widget messages at
        once, in two threads (JupyterLab sends them to subshells), and the readouts and the
        picture must show one run."""
        with self._updating:
            return self._update()

    def _update(self) -> Outcome | None:
        self.updates += 1
        s = self.setting()
        self.knobs["replicas"].disabled = s.split != (0, 0)
        self.seeds = None
        self.seeds_note.value = ""
        self.progress.value = 0
        try:
            design = design_of(s)
            requests = generate(load_of(s), s.seed, requests=s.requests)
        except InputError as e:
            return self._refuse(str(e))
        run = simulate(requests, design)
        f = figures(run)
        self.run, self.error = run, ""
        self.outcome = o = outcome_of(run, design, Criteria(), overall=f)
        self.error_box.value = ""
        r = self.readouts
        span = float(np.max(requests.arrival_s))
        r["load"].value = (
            f"<span class='sx-s-label'>{len(requests):,} synthetic requests over "
            f"{span:,.0f} s on {html.escape(design.name)} ({html.escape(design.model)}, "
            f"{design.gpus} x {html.escape(design.gpu)})</span>")
        r["ttft"].value = _card("TTFT p50 / p95", f"{seconds_text(f.ttft_p50)} / "
                                f"{seconds_text(f.ttft_p95)}")
        r["itl"].value = _card("ITL p50 / p95", f"{seconds_text(f.itl_p50)} / "
                               f"{seconds_text(f.itl_p95)}")
        r["tpot"].value = _card("TPOT p50 / p95", f"{seconds_text(f.tpot_p50)} / "
                                f"{seconds_text(f.tpot_p95)}")
        r["queue"].value = _card("queue time p50 / p95", f"{seconds_text(f.queue_p50)} / "
                                 f"{seconds_text(f.queue_p95)}")
        r["goodput"].value = _card(f"goodput: {f.slo_attainment:.1%} of requests in SLO",
                                   f"{f.goodput_rps:.2f} req/s")
        rejected = f" ({f.rejected} rejected)" if f.rejected else ""
        r["throughput"].value = _card(f"output tokens/s{rejected}", f"{f.throughput_tok_s:,.0f}")
        r["kv"].value = _card(f"KV cache peak, {f.preemptions} preemptions",
                              f"{run.kv_peak_share:.0%}")
        cost = o.cost_per_mtok()[0]
        r["cost"].value = _card(f"{design.gpus} GPU{'s' * (design.gpus != 1)} at "
                                f"${design.price:.2f}/h: $ per M tokens",
                                f"{cost:,.3f}" if math.isfinite(cost) else "-")
        r["verdict"].value = f"<p><b>This run.</b> {html.escape(o.verdict())}</p>"
        if self.plots_on:
            self.redraw()
        return o

    def _refuse(self, message: str) -> None:
        self.run = self.outcome = None
        self.error = message
        self.error_box.value = (f"<div class='sx-s-error'><b>Not a design the simulator "
                                f"accepts:</b> {html.escape(message)}</div>")
        labels = {"ttft": "TTFT p50 / p95", "itl": "ITL p50 / p95", "tpot": "TPOT p50 / p95",
                  "queue": "queue time p50 / p95", "goodput": "goodput",
                  "throughput": "output tokens/s", "kv": "KV cache peak", "cost": "$ per M tokens"}
        for name in READOUTS:
            self.readouts[name].value = _card(labels[name], "-") if name in labels else ""
        if self.plots_on:
            self.image.layout.display = "none"
        return None

    def redraw(self) -> None:
        """Each completed request's TTFT and TPOT by arrival order, SLOs dashed (under the
        update lock: one picture is drawn at a time)."""
        with self._updating:
            self._redraw()

    def _redraw(self) -> None:
        run, s = self.run, self.setting()
        done = np.flatnonzero(run.status == COMPLETED)
        ttft = run.first_token_s[done] - run.arrival_s[done]
        out = run.requests.output_tokens[done]
        many = out >= 2
        tpot = (run.done_s[done][many] - run.first_token_s[done][many]) / (out[many] - 1)
        self.image.value = self._plot.png((done, ttft), (done[many], tpot), s.ttft_slo_s,
                                          s.tpot_slo_s)
        self.image.layout.display = ""

    # ----- heavy: several seeds -----------------------------------------------------------
    def run_seeds(self, runs: int | None = None, requests: int | None = None) -> Outcome | None:
        """The design on ``runs`` fresh draws of the load (seeds from the seed knob), each
        ``requests`` arrivals long; the progress bar moves run by run. Returns the outcome
        (every figure's mean and 95% interval), or None when the knobs are refused."""
        with self._updating:      # a knob turned meanwhile waits, then clears the table
            return self._run_seeds(runs, requests)

    def _run_seeds(self, runs: int | None, requests: int | None) -> Outcome | None:
        runs = self.seeds_runs if runs is None else runs
        requests = self.seeds_requests if requests is None else requests
        s = self.setting()
        try:
            design, load = design_of(s), load_of(s)
        except InputError as e:
            self.seeds_note.value = f"<span class='sx-s-error'>{html.escape(str(e))}</span>"
            return None
        self.progress.max, self.progress.value = runs, 0

        def tick() -> None:
            self.progress.value += 1

        o = evaluate(design, lambda seed: generate(load, seed, requests=requests), runs=runs,
                     seed=s.seed, on_run=tick)
        self.seeds = o
        self.seeds_note.value = seeds_table(o)
        return o

    # ----- reading (tests, benchmark) ---------------------------------------------------
    def text(self, name: str) -> str:
        """A readout's text without its HTML tags (``error`` for the refusal message)."""
        value = self.error_box.value if name == "error" else (
            self.seeds_note.value if name == "seeds" else self.readouts[name].value)
        return " ".join(html.unescape(_TAG.sub(" ", value)).split())

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.ui._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict) and "text/plain" in bundle:
            bundle["text/plain"] = ("The serving app: run this cell (or Run All) to bring it "
                                    "to life.")
        return bundle


def seeds_table(o: Outcome) -> str:
    """An HTML table of the runs' figures, each a mean with its 95% interval, and the
    verdict over all runs."""
    rows = [("TTFT p95", "ttft_p95", seconds_text), ("ITL p95", "itl_p95", seconds_text),
            ("TPOT p95", "tpot_p95", seconds_text), ("queue p95", "queue_p95", seconds_text),
            ("goodput (req/s)", "goodput_rps", lambda v: f"{v:.2f}"),
            ("within SLO", "slo_attainment", lambda v: f"{v:.1%}")]
    body = "".join(
        f"<tr><td>{label}</td><td>{fmt(m)}</td><td>{fmt(lo)} to {fmt(hi)}</td></tr>"
        for label, key, fmt in rows for m, lo, hi in [interval(o.values(key))])
    return (f"<table class='sx-s-seeds-table'><tr><th>figure</th><th>mean of "
            f"{len(o.runs)} runs</th><th>95% interval</th></tr>{body}</table>"
            f"<p>{html.escape(o.verdict())}</p>")


def serving_app(setting: Setting | None = None, groups=tuple(KNOB_GROUPS),
                **knobs) -> ServingApp:
    """The serving app at ``setting`` (with ``knobs`` overriding its fields); display it by
    ending a cell with it."""
    s = (setting or Setting()).with_(**knobs) if knobs else (setting or Setting())
    return ServingApp(s, groups)
