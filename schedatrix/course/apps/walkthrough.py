"""The fleet-month walkthrough: knobs, readouts and plots as an ipywidgets app.

A thin layer: every figure comes from :func:`schedatrix.simulate`, every picture from
:mod:`schedatrix.course.figures.plots` (the month's redrawn in place by :mod:`.month_plot`), every
sentence from :mod:`schedatrix.fleet.explain`.
:meth:`Walkthrough.update` is the one path from knobs to readout; tests set a knob's
``.value`` and read the readout widgets' ``.value``, no browser needed. Readout widgets
carry stable CSS classes (``sx-bill``, ``sx-signature``, ...) so a browser test can find
them on the page.
"""

from __future__ import annotations

import base64
import html
import io
import re
import threading

import ipywidgets as widgets
from matplotlib.figure import Figure

from ...fleet.cards import CARD_CLASSES
from ...fleet.constants import CONVERGENCE_FLOOR, UNMET_CAP, WRONG_EVICTION_CAP
from ...fleet.explain import money, pct, rate
from ...fleet.month import Month, simulate
from ...fleet.odds import KnobStep, knob_steps, mattered_vs_noise
from ...fleet.plan import Plan
from ...fleet.presets import PRESETS
from ...fleet.run_set import SHAPES
from ...fleet.window import NAMED_WINDOWS
from ...text import wrap
from ..figures import plots
from ..figures.month_plot import MonthPlot
from ..live import page_text

__all__ = ["Walkthrough", "walkthrough", "READOUTS", "next_seed"]

#: Readout name -> the CSS class its widget carries on the page.
READOUTS = {
    "bill": "sx-bill",
    "warm": "sx-warm",
    "delivered": "sx-delivered",
    "unmet": "sx-unmet",
    "idle": "sx-idle",
    "churn": "sx-churn",
    "score": "sx-score",
    "convergence": "sx-convergence",
    "lamps": "sx-lamps",
    "signature": "sx-signature",
    "verdict": "sx-verdict",
    "sentences": "sx-sentences",
}

_NO_PRESET = "(pick a month)"
_TAG = re.compile(r"<[^>]+>")
_MATTERED_MONTHS = 400
_STYLE = """<style>
.sx-card {border: 1px solid #d0d7de; border-radius: 6px; padding: 2px 8px; margin: 2px;}
.sx-figure {font-size: 1.35em; font-weight: 600; line-height: 1.3em; white-space: nowrap;}
.sx-label {color: #57606a; font-size: 0.85em; line-height: 1.2em;}
.sx-lamp {display: inline-block; margin-right: 10px;}
.sx-dot {display: inline-block; width: 0.8em; height: 0.8em; border-radius: 50%;
         margin-right: 4px; vertical-align: -0.05em;}
.sx-verdict {font-size: 1.02em;}
</style>"""


def next_seed(seed: int) -> int:
    """The next lottery draw after ``seed``: a fixed scramble, so a sequence of "new draw"
    presses is the same on every machine (and never stuck on one seed)."""
    return (seed * 6364136223846793005 + 1442695040888963407) % (2**31 - 1)


def _figure(label: str, value: str) -> str:
    return (f"<div class='sx-label'>{html.escape(label)}</div>"
            f"<div class='sx-figure'>{html.escape(value)}</div>")


def _lamp(name: str, ok: bool) -> str:
    colour = "#2da44e" if ok else "#cf222e"
    word = "passes" if ok else "fails"
    return (f"<span class='sx-lamp' title='{name} {word}'><span class='sx-dot' "
            f"style='background:{colour}'></span>{name} <b>{word}</b></span>")


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    return buf.getvalue()


class Walkthrough:
    """The walkthrough app. ``Walkthrough().ui`` is the widget to display; a Walkthrough also
    displays itself when it is the last value of a notebook cell."""

    def __init__(self, plan: Plan | None = None, plots_on: bool = True) -> None:
        plan = Plan() if plan is None else plan
        self.plots_on = plots_on
        self._holding = False
        self._updating = threading.RLock()
        self.updates = 0
        self.month: Month | None = None
        self.steps: list[KnobStep] | None = None
        self._build_knobs(plan)
        self._build_readouts()
        self._build_plots()
        self.ui = self._layout()
        for knob in self.knobs.values():
            knob.observe(self._on_knob, names="value")
        self.preset.observe(self._on_preset, names="value")
        self.new_draw.on_click(self._on_new_draw)
        self.measure.on_click(lambda _b: self.measure_mattered())
        self.update()

    # ----- building ---------------------------------------------------------------------
    def _build_knobs(self, plan: Plan) -> None:
        style = {"description_width": "120px"}
        wide = widgets.Layout(width="380px")
        slider = {"continuous_update": False, "style": style, "layout": wide}
        self.knobs = {
            "cards": widgets.IntSlider(value=plan.cards, min=1, max=128, step=1,
                                       description="Cards", **slider),
            "card_class": widgets.Dropdown(
                options=[(c.label, c.key) for c in CARD_CLASSES.values()],
                value=plan.card_class, description="Card class", style=style, layout=wide),
            "demand": widgets.IntSlider(value=int(plan.demand_tok_s), min=5_000, max=200_000,
                                        step=1_000, description="Demand (tok/s)",
                                        **slider),
            "headroom": widgets.IntSlider(value=round(plan.headroom * 100), min=0, max=50,
                                          step=1, description="Headroom (%)", **slider),
            "shape": widgets.Dropdown(options=list(SHAPES), value=plan.shape,
                                      description="Demand shape", style=style, layout=wide),
            "window": widgets.Dropdown(options=list(NAMED_WINDOWS), value=plan.window,
                                       description="Score window", style=style, layout=wide),
            "evict": widgets.IntSlider(value=round(plan.evict_share * 100), min=0, max=60,
                                       step=1, description="Evict share (%)", **slider),
            "seed": widgets.BoundedIntText(value=plan.seed, min=0, max=2**63 - 1,
                                           description="Lottery draw", style=style,
                                           layout=widgets.Layout(width="220px")),
        }
        for name, knob in self.knobs.items():
            knob.add_class(f"sx-knob-{name}")
        self.new_draw = widgets.Button(description="New lottery draw", icon="random",
                                       layout=widgets.Layout(width="170px"))
        self.new_draw.add_class("sx-new-draw")
        options = [(_NO_PRESET, "")] + [
            (f"{p.name}" + (f"  (fix of {p.fixes})" if p.fixes else ""), p.name)
            for p in PRESETS.values()
        ]
        self.preset = widgets.Dropdown(options=options, value="",
                                       description="Famous month", style=style,
                                       layout=wide)
        self.preset.add_class("sx-preset")
        self.story = widgets.HTML()
        self.story.add_class("sx-story")

    def _build_readouts(self) -> None:
        self.readouts = {}
        for name, css in READOUTS.items():
            w = widgets.HTML()
            w.add_class(css)
            if name not in ("verdict", "sentences", "lamps", "signature"):
                w.add_class("sx-card")
            self.readouts[name] = w

    def _build_plots(self) -> None:
        self.month_image = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
        self.month_image.add_class("sx-month-plot")
        self.mattered_image = widgets.Image(
            format="png", layout=widgets.Layout(width="560px", display="none"))
        self.mattered_image.add_class("sx-mattered-plot")
        self.measure = widgets.Button(description="Measure which knobs mattered",
                                      layout=widgets.Layout(width="240px"))
        self.measure.add_class("sx-measure")
        self.progress = widgets.IntProgress(value=0, min=0, max=1, description="",
                                            layout=widgets.Layout(width="240px"))
        self.mattered_note = widgets.HTML()
        self.mattered_note.add_class("sx-mattered-note")
        self._month_plot = MonthPlot() if self.plots_on else None

    def _layout(self) -> widgets.Widget:
        r = self.readouts
        head = widgets.HTML(_STYLE + "<h3 style='margin:4px 0'>One fleet month, live</h3>")
        knobs = widgets.VBox([
            widgets.HTML("<b>The pool</b>"), self.knobs["cards"], self.knobs["card_class"],
            widgets.HTML("<b>The demand</b>"), self.knobs["demand"], self.knobs["headroom"],
            self.knobs["shape"],
            widgets.HTML("<b>The score</b>"), self.knobs["window"], self.knobs["evict"],
            widgets.HBox([self.knobs["seed"], self.new_draw]),
            widgets.HTML("<b>Famous months</b>"), self.preset, self.story,
        ], layout=widgets.Layout(width="400px", min_width="400px"))
        grid = widgets.GridBox(
            [r[k] for k in ("bill", "warm", "delivered", "unmet", "idle", "churn", "score",
                            "convergence")],
            layout=widgets.Layout(grid_template_columns="repeat(2, 210px)"),
        )
        readout = widgets.VBox([grid, r["lamps"], r["signature"]],
                               layout=widgets.Layout(width="440px"))
        # A narrow notebook puts the readout under the knobs instead of squeezing the knobs.
        top = widgets.HBox([knobs, readout], layout=widgets.Layout(flex_flow="row wrap"))
        mattered = widgets.VBox([
            widgets.HTML("<b>Mattered vs noise</b>: which knobs move the bill more than the "
                         "lottery does on its own?"),
            widgets.HBox([self.measure, self.progress]), self.mattered_note,
            self.mattered_image,
        ])
        return widgets.VBox([head, top, r["verdict"], r["sentences"], self.month_image,
                             mattered])

    # ----- the knobs and the plan ---------------------------------------------------------
    def plan(self) -> Plan:
        """The plan the knobs describe now."""
        k = self.knobs
        return Plan(
            cards=k["cards"].value,
            card_class=k["card_class"].value,
            demand_tok_s=float(k["demand"].value),
            headroom=k["headroom"].value / 100,
            shape=k["shape"].value,
            window=k["window"].value,
            evict_share=k["evict"].value / 100,
            seed=int(k["seed"].value),
        )

    def set_plan(self, plan: Plan) -> None:
        """Turn every knob to ``plan`` at once (one update, not one per knob)."""
        k = self.knobs
        self._holding = True
        try:
            k["cards"].value = plan.cards
            k["card_class"].value = plan.card_class
            k["demand"].value = int(round(plan.demand_tok_s))
            k["headroom"].value = round(plan.headroom * 100)
            k["shape"].value = plan.shape
            k["window"].value = plan.window
            k["evict"].value = round(plan.evict_share * 100)
            k["seed"].value = plan.seed
        finally:
            self._holding = False
        self.update()

    def load(self, name: str) -> None:
        """Load a famous month (a preset name) into the knobs."""
        self.preset.value = name

    def _on_knob(self, _change) -> None:
        if not self._holding:
            if self.preset.value:
                # The knobs no longer show the famous month: say so in the picker.
                self._holding = True
                try:
                    self.preset.value = ""
                finally:
                    self._holding = False
            self.update()

    def _on_preset(self, change) -> None:
        name = change["new"]
        if not name:
            self.story.value = ""
            return
        if self._holding:
            return
        p = PRESETS[name]
        self.story.value = f"<i>{html.escape(p.story)}</i>"
        self.set_plan(p.plan)

    def _on_new_draw(self, _button) -> None:
        self.knobs["seed"].value = next_seed(int(self.knobs["seed"].value))

    # ----- the one path from knobs to readout ---------------------------------------------
    def update(self) -> Month:
        """Simulate the knobs' plan and refresh every readout and the month's plots. One
        update at a time, the latest knobs last: a kernel may handle two widget messages at
        once, in two threads (JupyterLab sends them to subshells), and the readouts and the
        picture must show one month."""
        with self._updating:
            return self._update()

    def _update(self) -> Month:
        m = simulate(self.plan())
        self.month = m
        self.updates += 1
        r = self.readouts
        r["bill"].value = _figure("the month's pool bill (run rent plus churn fees)",
                                  money(m.bill))
        r["warm"].value = _figure("cards warm in the run set", f"{m.warm} of {m.cards}")
        r["delivered"].value = _figure(
            "tok/s delivered against demanded",
            f"{rate(m.delivered_tok_s)} of {rate(m.demand_tok_s)}")
        r["unmet"].value = _figure(f"unmet demand, cap {pct(UNMET_CAP, 0)}",
                                   pct(m.unmet_share, 2))
        r["idle"].value = _figure("billed idle: warm cards beyond the demand",
                                  money(m.idle_bill))
        r["churn"].value = _figure(
            f"churn fees: {m.evicted} card{'s' if m.evicted != 1 else ''} evicted",
            money(m.churn_fees))
        r["score"].value = _figure(
            f"million tokens per dollar (ideal {m.ideal_mtok_per_dollar:.3f})",
            f"{m.mtok_per_dollar:.3f}")
        r["convergence"].value = _figure(
            f"converged: ideal bill {money(m.ideal_bill)} / bill, floor "
            f"{pct(CONVERGENCE_FLOOR, 0)}", pct(m.convergence))
        r["lamps"].value = "".join([
            _lamp("capacity", m.capacity_ok), _lamp("convergence", m.convergence_ok),
            _lamp(f"evictions ({m.wrong_evictions} of {m.evicted} wrong, cap "
                  f"{pct(WRONG_EVICTION_CAP, 0)})", m.evictions_ok),
        ])
        r["signature"].value = (
            "<span class='sx-label'>signature (capacity, convergence, evictions)</span> "
            f"<span class='sx-figure'>{m.signature}</span>")
        r["verdict"].value = f"<p><b>The month's verdict.</b> {html.escape(m.verdict)}</p>"
        items = "".join(f"<li>{html.escape(s)}</li>" for s in m.sentences)
        r["sentences"].value = f"<ul style='margin-top:0'>{items}</ul>"
        if self.steps is not None:
            self.mattered_note.value = ("<i>The knobs moved since the last measurement: "
                                        "press the button to measure again.</i>")
        if self.plots_on:
            self.redraw()
        return m

    def redraw(self) -> None:
        """Redraw the bill split and the pool's cards for the current month (in place: see
        :mod:`.month_plot`)."""
        self.month_image.value = self._month_plot.png(self.month)

    def measure_mattered(self, months: int = _MATTERED_MONTHS) -> list[KnobStep]:
        """One step of each knob over ``months`` lottery draws, each month paired with the
        unchanged plan's month on the same draw, with the progress bar moving step by step;
        then the mattered-vs-noise plot."""
        plan = self.plan()
        self.progress.max = len(knob_steps(plan)) + 1
        self.progress.value = 0

        def advance(n: int) -> None:
            self.progress.value += n

        out = mattered_vs_noise(plan, months, 0, progress=advance)
        self.steps = out
        moved = sum(s.mattered for s in out)
        small = sum(s.real and not s.beats_luck for s in out)
        noise = len(out) - moved - small
        self.mattered_note.value = html.escape(
            f"Over {months} lottery draws one month's luck moves the bill by "
            f"{money(out[0].noise)} (its standard deviation). Of {len(out)} knob steps, "
            f"{moved} moved the mean bill by more than that, {small} by a real amount "
            f"smaller than one month's luck, and {noise} by nothing the paired months tell "
            "apart from zero.")
        if self.plots_on:
            fig = Figure(figsize=(6.5, 0.32 * len(out) + 1.2))
            ax = fig.subplots()
            plots.mattered_vs_noise(out, ax)
            fig.subplots_adjust(left=0.36, right=0.95, top=0.9, bottom=0.2)
            self.mattered_image.value = _png(fig)
            self.mattered_image.layout.display = ""
        return out

    # ----- reading the readout (tests, benchmark) -----------------------------------------
    def text(self, name: str) -> str:
        """A readout's text without its HTML tags."""
        return self.text_of(self.readouts[name])

    @staticmethod
    def text_of(widget: widgets.HTML) -> str:
        """An HTML widget's text without its tags."""
        return " ".join(html.unescape(_TAG.sub(" ", widget.value)).split())

    def static_html(self) -> str:
        """The app's current month as plain HTML: the knobs' settings, every readout, the
        checks, the verdict, the sentences and the month's plot. A notebook opened without
        running shows this in place of the live widgets (plain tags only: JupyterLab strips
        the styles of an untrusted notebook's output)."""
        p, m = self.plan(), self.month
        knobs = (f"{p.cards} {p.card_class} cards, {rate(p.demand_tok_s)} tok/s {p.shape}"
                 + (f" +{pct(p.headroom, 0)} headroom" if p.shape == "steady" else "")
                 + f", {p.window} window, {pct(p.evict_share, 0)} evicted, lottery draw "
                 f"{p.seed}")
        rows = "".join(f"<tr><td>{page_text(label)}</td><td><b>{page_text(value)}</b></td></tr>"
                       for label, value in self._still_rows(m))
        items = "".join(f"<li>{page_text(s)}</li>" for s in m.sentences)
        image = ""
        if self.plots_on and self.month_image.value:
            data = base64.b64encode(bytes(self.month_image.value)).decode()
            image = f"<img src='data:image/png;base64,{data}' width='640'>"
        return (f"<div><h3>One fleet month (a still picture)</h3><p><i>Run this cell (or Run "
                f"All) to turn the knobs. Shown: {page_text(knobs)}.</i></p><table>{rows}"
                f"</table><p><b>The month's verdict.</b> {page_text(m.verdict)}</p>"
                f"<ul>{items}</ul>{image}</div>")

    def _still_rows(self, m: Month) -> list[tuple[str, str]]:
        lamp = {True: "passes", False: "FAILS"}
        return [
            ("the month's pool bill", money(m.bill)),
            ("cards warm in the run set", f"{m.warm} of {m.cards}"),
            ("tok/s delivered against demanded",
             f"{rate(m.delivered_tok_s)} of {rate(m.demand_tok_s)}"),
            (f"unmet demand, cap {pct(UNMET_CAP, 0)}", pct(m.unmet_share, 2)),
            ("billed idle", money(m.idle_bill)),
            (f"churn fees ({m.evicted} evicted)", money(m.churn_fees)),
            ("million tokens per dollar",
             f"{m.mtok_per_dollar:.3f} (ideal {m.ideal_mtok_per_dollar:.3f})"),
            ("converged (ideal bill / bill)", pct(m.convergence)),
            ("checks", ", ".join(f"{name} {lamp[ok]}" for name, ok in m.checks.items())),
            ("signature", m.signature),
        ]

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.ui._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):
            # What a page without the live kernel shows instead of the widget tree.
            bundle["text/html"] = self.static_html()
            bundle["text/plain"] = wrap("The fleet-month walkthrough (run this cell to bring it "
                                       "to life): " + self.text("verdict"))
        return bundle


def walkthrough(plan: Plan | None = None) -> Walkthrough:
    """Build the walkthrough (the opening state by default); display it by ending a cell
    with it."""
    return Walkthrough(plan)

