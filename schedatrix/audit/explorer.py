"""The lesson's live audit: widgets for headroom, per-replica capacity and routing threshold.

A thin layer: every change re-runs :func:`~.audit.run_audit` on one tally (milliseconds; the
trace is read once) and redraws the verdict, the replicas figure and the routing table.
"""

from __future__ import annotations

import ipywidgets as widgets
from IPython.display import Markdown, display

from .audit import Settings, run_audit
from .report import plot_replicas, verdict
from .tally import Tally

__all__ = ["explorer", "routing_table"]


def routing_table(audit) -> str:
    """The routing what-if as a small Markdown table (empty when there is none)."""
    r = audit.routing
    if r is None:
        return ""
    rows = [f"Moving **{r.moved_share:.1%}** of {r.source} (input < {r.threshold_tokens:,} "
            f"tokens) to {r.target}:", "",
            "| pool | peak replicas needed | ideal GPU-h | unmet at configured capacity |",
            "|---|---|---|---|"]
    for pid in (r.source, r.target):
        b, a = r.before[pid], r.after[pid]
        rows.append(f"| {pid} | {b.needed.max(initial=0)} -> {a.needed.max(initial=0)} | "
                    f"{b.ideal.gpu_hours:.2f} -> {a.ideal.gpu_hours:.2f} | "
                    f"{b.configured.unmet_share:.1%} -> {a.configured.unmet_share:.1%} |")
    return "\n".join(rows)


def explorer(tally: Tally) -> widgets.VBox:
    """Sliders over one tally: headroom, each pool's requests/s per replica, the threshold."""
    note = tally.note
    style = {"description_width": "190px"}
    layout = widgets.Layout(width="520px")
    headroom = widgets.IntSlider(10, 0, 50, 5, description="headroom (%)",
                                 continuous_update=False, style=style, layout=layout)
    rps = {p.pool_id: widgets.FloatSlider(p.replica_rps, min=0.5, max=20, step=0.5,
                                          description=f"{p.pool_id}: req/s per replica",
                                          continuous_update=False, style=style, layout=layout)
           for p in note.pools}
    threshold = widgets.SelectionSlider(
        options=[e for e in tally.edges if e <= 20_000], value=1000 if 1000 in tally.edges
        else tally.edges[0], description="route below (input tokens)", continuous_update=False,
        style=style, layout=layout)

    def show(headroom_pct, route_below, **rates):
        audit = run_audit(tally, Settings(headroom=headroom_pct / 100, replica_rps=rates,
                                          route_below=route_below))
        lines = (f"- {line.strip()}" for line in verdict(audit))
        # A dollar sign renders as itself, not as the start of LaTeX math in JupyterLab.
        display(Markdown("\n".join(lines).replace("$", "<span>&#36;</span>")))
        display(plot_replicas(audit))
        display(Markdown(routing_table(audit)))

    out = widgets.interactive_output(show, {"headroom_pct": headroom, "route_below": threshold,
                                            **rps})
    return widgets.VBox([headroom, *rps.values(), threshold, out])
