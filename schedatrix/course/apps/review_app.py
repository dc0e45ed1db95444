"""The review app: a scenario's designs through acceptance, behind a button with progress.

A thin layer over :func:`schedatrix.serving.studies.accept.accept`: the knobs pick which of the
scenario's designs to review, over how many seeds, and the recovery limit; acceptance is heavy
(every design, every seed, without and with the faults), so it waits for the Run button and
moves a progress bar run by run. The result: the chosen design (the cheapest accepted) and,
for every design, its cost, p95 TTFT with its 95% interval, recovery times, and what stood in
its way. Turning a knob afterwards marks the result as stale.

Tests set knob values, call :meth:`ReviewApp.review` and read :meth:`ReviewApp.text`.
Widgets carry CSS classes (``sx-r-...``) for a browser test.
"""

from __future__ import annotations

import dataclasses
import html
import math
import re
from pathlib import Path

import ipywidgets as widgets

from ...examples import path as example_path
from ...serving.scenarios.scenario import Scenario, load_scenario
from ...serving.studies.accept import Accepted, accept, chosen
from ...serving.studies.acceptance import interval
from ...serving.studies.run_share import fewest_runs

__all__ = ["ReviewApp", "review_app", "EXAMPLE", "NO_LIMIT", "recovery_choices"]

#: The scenario the lesson reviews.
EXAMPLE = example_path("serving-accept.toml")
#: The recovery limit's "no limit" choice. A dropdown shows nothing for a value of None (it
#: reads as "nothing picked"), so "no limit" is infinity here and None to :func:`accept`.
NO_LIMIT = math.inf
_TAG = re.compile(r"<[^>]+>")


def recovery_choices(limit: float | None) -> list[tuple[str, float]]:
    """The recovery limit's choices: no limit, 30 to 120 s, and the scenario's own limit
    (kept as it is when it is none of those)."""
    seconds = {30.0, 60.0, 90.0, 120.0} | ({float(limit)} if limit is not None else set())
    return [("no limit", NO_LIMIT)] + [(f"{s:g} s", s) for s in sorted(seconds)]
_STYLE = """<style>
.sx-r-table td, .sx-r-table th {padding: 1px 10px 1px 0; text-align: left; white-space: nowrap;}
.sx-r-yes {color: #1a7f37; font-weight: 600;}
.sx-r-no {color: #cf222e;}
</style>"""


class ReviewApp:
    """The review app for ``scenario`` (a :class:`Scenario`, or a path to its TOML file)."""

    def __init__(self, scenario: Scenario | str | Path = EXAMPLE):
        self.scenario = load_scenario(scenario) if isinstance(scenario, str | Path) else \
            scenario
        self.results: list[Accepted] | None = None
        names = [d.name for d in self.scenario.designs]
        limit = self.scenario.fault_criteria.max_recovery_s
        style = {"description_width": "150px"}
        self.knobs = {
            "designs": widgets.SelectMultiple(options=names, value=tuple(names),
                                              rows=min(6, len(names)), description="Designs",
                                              style=style),
            # a fixed count of seeds, each a click (runs = "auto" starts from 3 seeds here);
            # up to the fewest runs that can accept at the scenario's run_share (14 at 0.8)
            "seeds": widgets.IntSlider(value=self.scenario.runs if isinstance(
                self.scenario.runs, int) else 3, min=1, max=max(24, fewest_runs(
                    self.scenario.criteria.run_share, self.scenario.criteria.confidence)),
                                       description="Seeds", style=style,
                                       continuous_update=False),
            "max_recovery": widgets.Dropdown(options=recovery_choices(limit),
                                             value=NO_LIMIT if limit is None else float(limit),
                                             description="Recovery at most", style=style),
        }
        for name, knob in self.knobs.items():
            knob.add_class(f"sx-r-knob-{name.replace('_', '-')}")
            knob.observe(self._stale, names="value")
        self.button = widgets.Button(description="Run the review", icon="play",
                                     layout=widgets.Layout(width="220px"))
        self.button.add_class("sx-r-run")
        self.button.on_click(lambda _b: self.review())
        self.progress = widgets.IntProgress(value=0, min=0, max=1,
                                            layout=widgets.Layout(width="220px"))
        self.progress.add_class("sx-r-progress")
        self.note = widgets.HTML()
        self.note.add_class("sx-r-note")
        self.result = widgets.HTML()
        self.result.add_class("sx-r-result")
        faults = ", ".join(f.text() for f in self.scenario.faults) or "none"
        self.ui = widgets.VBox([
            widgets.HTML(_STYLE),
            widgets.HTML(f"<b>The scenario</b>: {html.escape(self.scenario.load.describe())}; "
                         f"faults: {html.escape(faults)}."),
            *self.knobs.values(), widgets.HBox([self.button, self.progress]), self.note,
            self.result])

    def designs(self) -> list:
        pick = set(self.knobs["designs"].value)
        return [d for d in self.scenario.designs if d.name in pick]

    def _stale(self, _change) -> None:
        if self.results is not None:
            self.note.value = ("<i>The knobs have moved since this review: press Run the "
                               "review again.</i>")

    def review(self) -> list[Accepted] | None:
        """Accept the chosen designs over the seeds (the progress bar moves run by run); show
        the decision. Returns the results, or None when no design is picked."""
        designs = self.designs()
        self.note.value = ""
        if not designs:
            self.result.value = "<p class='sx-r-no'>Pick at least one design.</p>"
            return None
        sc = self.scenario
        runs = int(self.knobs["seeds"].value)
        limit = self.knobs["max_recovery"].value
        fc = dataclasses.replace(sc.fault_criteria,
                                 max_recovery_s=None if limit == NO_LIMIT else limit)
        self.progress.max = len(designs) * runs * (2 if sc.faults else 1)
        self.progress.value = 0

        def tick() -> None:
            self.progress.value += 1

        self.results = accept(designs, sc.make_requests(), sc.faults, runs, sc.seed, sc.criteria,
                              fc, sc.resilience, sc.implementation, on_run=tick)
        self.result.value = decision_html(self.results, runs)
        return self.results

    def text(self, name: str = "result") -> str:
        """The text of ``result`` or ``note``, without HTML tags."""
        value = {"result": self.result, "note": self.note}[name].value
        return " ".join(html.unescape(_TAG.sub(" ", value)).split())

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.ui._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):
            what = "The review app: run this cell (or Run All) to pick designs and run a review."
            bundle["text/plain"] = what
            bundle["text/html"] = f"<p><i>{html.escape(what)}</i></p>"
        return bundle


def decision_html(results: list[Accepted], runs: int) -> str:
    """The chosen design and every design's row, as HTML."""
    pick = chosen(results)
    undecided = any(a.status == "undecided" for a in results)
    head = (f"<p><b>Chosen: {html.escape(pick.design.name)}</b>, the cheapest design shown "
            f"to meet every criterion in enough of its {runs} run{'s' * (runs != 1)}.</p>"
            if pick else
            f"<p class='sx-r-no'><b>No design is accepted</b>: {runs} "
            f"run{'s' * (runs != 1)} leave some undecided; more seeds decide them.</p>"
            if undecided else "<p class='sx-r-no'><b>No design is accepted.</b></p>")
    rows = []
    for a in results:
        m, lo, hi = interval(a.outcome.values("ttft_p95"))
        rec = "; ".join(", ".join("never" if r is None else f"{r:g} s" for r in a.recovery(k))
                        for k in range(len(a.fault_figures))) or "-"
        verdict = ("<span class='sx-r-yes'>accepted</span>" if a.accepted else
                   f"<span class='sx-r-no'>undecided</span>: "
                   f"{html.escape('; '.join(a.undecided()[:2]))}"
                   if a.status == "undecided" else
                   "<span class='sx-r-no'>no verdict</span>" if a.accepted is None else
                   f"<span class='sx-r-no'>not accepted</span>: "
                   f"{html.escape('; '.join(a.reasons()[:2]))}")
        rows.append(f"<tr><td>{html.escape(a.design.name)}</td><td>{a.design.gpus}</td>"
                    f"<td>{interval(a.outcome.cost_per_mtok())[0]:.3f}</td>"
                    f"<td>{m * 1000:.0f} ms ({lo * 1000:.0f} to {hi * 1000:.0f})</td>"
                    f"<td>{html.escape(rec)}</td><td>{verdict}</td></tr>")
    return (head + "<table class='sx-r-table'><tr><th>design</th><th>GPUs</th><th>$/M tok</th>"
            "<th>p95 TTFT (95% interval)</th><th>recovery, by run</th><th>verdict</th></tr>"
            + "".join(rows) + "</table>")


def review_app(scenario: Scenario | str | Path = EXAMPLE) -> ReviewApp:
    """The review app; display it by ending a cell with it."""
    return ReviewApp(scenario)
