"""What the acceptance harness (:mod:`..studies.accept`) writes: the decision record, the
operations and recovery runbook, the JSON of every design's verdict and the recovery plot."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..cluster.faults import Fault
from ..figures.recovery import FaultFigures
from ..studies.accept import Accepted, FaultCriteria, chosen
from ..studies.acceptance import Criteria, interval
from ..studies.outcome_json import design_json
from .plot_text import plain_ticks

__all__ = ["decision_record", "runbook", "accept_json", "plot_recovery", "write_accept_report"]


def _fmt(v, unit=" s") -> str:
    if v is None:
        return "never"
    if isinstance(v, float) and not math.isfinite(v):
        return "-" if v != v else "inf"
    return f"{v:.3g}{unit}"


def _figures_of(figs: list[FaultFigures], fault: Fault) -> FaultFigures | None:
    """The figures of ``fault`` among one run's (None: not there)."""
    return next((x for x in figs if x.fault == fault.text()), None)


def _recovery_of(figs: list[FaultFigures], fault: Fault) -> float | None:
    """The recovery time of ``fault`` among one run's figures (None: never, or not there)."""
    f = _figures_of(figs, fault)
    return None if f is None else f.recovery_s


def _floor(f: FaultFigures) -> str:
    return "-" if not f.paired else _fmt(f.noise_floor_s)


def _reading(f: FaultFigures | None) -> str:
    """One fault's recovery in one run, its noise floor beside it: "40 s (floor 10 s)", or
    "no damage: 0 s (floor 10 s)" when there is no measurable damage."""
    if f is None:
        return "-"
    if f.paired and not f.measurable:
        return f"no damage: {_fmt(f.recovery_s)} (floor {_floor(f)})"
    return f"{_fmt(f.recovery_s)} (floor {_floor(f)})" if f.paired else _fmt(f.recovery_s)


def _refused(f: FaultFigures | None, fc: FaultCriteria) -> bool:
    """Whether this reading fails the recovery criterion (never, or over the limit)."""
    if f is None:
        return False
    if f.recovery_s is None:
        return fc.max_recovery_s is not None or fc.recovery_required
    return fc.max_recovery_s is not None and f.effective_recovery_s > fc.max_recovery_s


def _recovery_cell(a: Accepted, fc: FaultCriteria) -> str:
    """Every run's recovery time against its paired baseline with the noise floor beside it,
    fault by fault (faults apart by "; "), those over the limit (or never, when recovery is
    required) in bold: the runs that refused a design are the ones a reader must see."""
    if not a.fault_figures:
        return "-"
    cells = []
    for f in a.faults:
        runs = [_figures_of(figs, f) for figs in a.fault_figures]
        cells.append(", ".join(f"**{_reading(r)}**" if _refused(r, fc) else _reading(r)
                               for r in runs))
    return "; ".join(cells)


def _rule(fc: FaultCriteria) -> str:
    """How recovery is read, in words (the decision record's criteria)."""
    return (f"windowed p95 TTFT and goodput back within {fc.tolerance:.0%} of the paired "
            f"baseline's (the same arrivals without the faults) for {fc.hold} windows of "
            f"{fc.window_s:g} s; a fault whose recovery is within its noise floor (the "
            f"pre-fault-level rule read on the baseline at the fault's time) and that cost no "
            f"request its SLO did no measurable damage and meets it")


def _how_runs_decide(criteria: Criteria) -> str:
    return (f"A run meets the criteria above or not; what is decided is the share of runs (each "
            f"an independent seed) that meet them, without and with the faults: a design is "
            f"accepted when the one-sided {criteria.confidence:.0%} lower Clopper-Pearson bound "
            f"of each share is above {criteria.run_share:.0%}, refused when an upper bound is "
            f"below it, and undecided otherwise (more runs decide it).")


def _status_cell(a: Accepted) -> str:
    return {"pass": "yes", "fail": "no", None: "no verdict"}.get(
        a.status, "undecided (leans " + ("yes)" if _leans(a) else "no)"))


def _leans(a: Accepted) -> bool:
    return all(d.indicative for d in (a.outcome.decision, a.fault_decision) if d is not None)


def decision_record(results: list[Accepted], scenario_text: str, load_text: str,
                    criteria: Criteria, fc: FaultCriteria, synthetic: bool,
                    plots: dict[str, str] | None = None) -> str:
    """The decision record (Markdown): context, options, criteria, evidence, decision, why,
    boundaries."""
    pick = chosen(results)
    faults = results[0].faults if results else ()
    lines = ["# Decision record: serving design", ""]
    lines += ["## Context", "", f"- Scenario: `{scenario_text}`", f"- Load: {load_text}"]
    if synthetic:
        lines.append("- **The load is synthetic**: a model of traffic. These figures are model "
                     "results, not production SLO performance; confirm on real traffic.")
    classes = results[0].outcome.classes if results else ()
    for c in classes:
        lines.append(f"- Class `{c.name}` (priority {c.priority}): TTFT SLO "
                     f"{_fmt(c.ttft_s)}, TPOT SLO {_fmt(c.tpot_s)}")
    lines += [f"- Faults injected: {', '.join(f.text() for f in faults) or 'none'}", ""]
    lines += ["## Acceptance criteria", "",
              f"1. Without faults, every class with SLOs has at least "
              f"{criteria.attainment:.0%} of its requests within its TTFT and TPOT thresholds.",
              "2. With the faults, no request is lost: each one completes, is rejected with a "
              "reason, or fails after its retries."]
    if fc.fault_attainment is not None:
        lines.append(f"3. With the faults, at least {fc.fault_attainment:.0%} of requests "
                     f"meet their SLOs.")
    if fc.max_recovery_s is not None:
        lines.append(f"4. Every fault's recovery time ({_rule(fc)}) is at most "
                     f"{fc.max_recovery_s:g} s.")
    elif fc.recovery_required and faults:
        lines.append(f"4. The fleet recovers from every fault within the run ({_rule(fc)}); "
                     f"no time limit is set.")
    if len(faults) > 1:
        lines.append("- Overlapping faults share the goodput lost: each request that lost its "
                     "SLO is charged to the last fault struck before it ended in the baseline; "
                     "each fault's recovery is measured from its own strike.")
    lines += ["", _how_runs_decide(criteria)]
    recovery_head = "recovery vs baseline (noise floor), each run" + (
        f" ({'; '.join(f.text() for f in faults)})" if len(faults) > 1 else "")
    lines += ["", "## Options and evidence", "",
              "| design | GPUs | $/M tok | TTFT p95 (95% interval) | ITL p95 | goodput/s | "
              f"in SLO | KV peak | with faults: in SLO | {recovery_head} | accepted |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in results:
        o = a.outcome
        m, lo, hi = interval(o.values("ttft_p95"))
        rec_text = _recovery_cell(a, fc)
        under = interval([f.slo_attainment for f in a.with_faults])[0] if a.with_faults \
            else math.nan
        verdict = _status_cell(a)
        lines.append(
            f"| {a.design.name} | {a.design.gpus} | {interval(o.cost_per_mtok())[0]:.3f} | "
            f"{m * 1000:.0f} ms ({lo * 1000:.0f} to {hi * 1000:.0f}) | "
            f"{o.mean('itl_p95') * 1000:.1f} ms | {o.mean('goodput_rps'):.2f} | "
            f"{o.mean('slo_attainment'):.1%} | {interval(o.kv_peak_share)[0]:.0%} | "
            f"{'-' if under != under else f'{under:.1%}'} | {rec_text} | {verdict} |")
    lines += ["", "## Decision", ""]
    if pick is None:
        if results and results[0].status is None:
            lines.append("No decision: no class sets SLOs and no fault was injected, so nothing "
                         "can be accepted or refused (agree SLOs first).")
        elif any(a.status == "undecided" for a in results):
            lines.append("No design is accepted yet: the runs so far do not decide. Still "
                         "undecided:")
            for a in results:
                if a.status == "undecided":
                    lines.append(f"- {a.design.name}: " + "; ".join(a.undecided()))
            for a in results:
                if a.status == "fail":
                    lines.append(f"- {a.design.name} is refused: " + "; ".join(a.reasons()[:3]))
            lines.append("More runs decide it (`runs = \"auto\"` adds them until decided).")
        else:
            lines.append("No design is accepted. What stood in the way:")
            for a in results:
                lines.append(f"- {a.design.name}: " + "; ".join(a.reasons()[:3]))
    else:
        cost = interval(pick.outcome.cost_per_mtok())[0]
        lines.append(f"**{pick.design.name}** ({pick.design.gpus} GPUs, ${cost:.3f} per million "
                     f"output tokens at ${pick.design.price:.2f} per GPU-hour).")
        lines += ["", f"Why: it is the cheapest design shown to meet every criterion in at "
                      f"least {criteria.run_share:.0%} of runs ({criteria.confidence:.0%} "
                      f"confidence)."]
        cheaper = [a for a in results if interval(a.outcome.cost_per_mtok())[0] < cost]
        for a in cheaper:
            if a.status == "undecided":
                lines.append(f"- {a.design.name} is cheaper but still undecided: "
                             + "; ".join(a.undecided()))
            else:
                lines.append(f"- {a.design.name} is cheaper but not accepted: "
                             + "; ".join(a.reasons()[:3]))
        if pick.outcome.design.single_machine() and pick.outcome.room_to_spare:
            lines.append("- One replica on one machine meets the SLOs with room to spare: no "
                         "distributed design is needed.")
    lines += ["", "## Boundaries", "",
              "- Synthetic peak throughput is not production SLO performance: the load here "
              + ("is synthetic." if synthetic else "is a replayed trace."),
              "- Utilization (KV cache use) is shown only beside latency: it does not stand for "
              "user latency or reliability.",
              "- Without agreed SLOs there is no verdict.",
              "- The step times come from a performance model calibrated on profiled GPUs "
              "(docs/serving-calibration.md); its errors carry into every figure. "
              + MODEL_TTFT_CAVEAT, ""]
    for title, name in (plots or {}).items():
        lines += [f"![{title}]({name})", ""]
    return "\n".join(lines)


#: What the validation found of the model's TTFT under load (tests/test_serving_validation.py,
#: ``test_the_start_is_not_why_the_rows_below_the_knee_run_fast``, holds the figures).
MODEL_TTFT_CAVEAT = ("Held to published measurements (docs/serving-validation.md), its TTFT at "
                     "moderate load ran 28-50% short of a TensorRT-LLM deployment's: leave "
                     "room under a tight TTFT SLO.")


_RUNBOOK = {
    "worker": ("A worker (one replica) crashes.",
               "its running and queued requests are lost to it; requests sent to it before the "
               "router notices are lost too; all are retried elsewhere",
               "Confirm the router has taken it out (health checks); watch retries and the "
               "other replicas' queues; if requests fail, raise the retry budget or add spare "
               "capacity; a restart takes a minute or more (engine start, weights, CUDA "
               "graphs): keep the capacity to carry the load without the replica that long."),
    "node": ("A node fails: every replica with a GPU on it crashes (TP or PP groups spanning it "
             "too).",
             "every request on those replicas is lost and retried on the replicas left; with "
             "every replica on one node, nothing is left and retries can run out",
             "Spread replicas over nodes so one node is never the whole fleet; shed the lowest "
             "class while capacity is down; restart the node's replicas."),
    "link": ("A node's link to the others goes down or slows down.",
             "pipeline stages across it wait or slow down; KV moves of a prefill/decode split "
             "crossing it wait or slow down; TTFT and ITL rise on the replicas it touches",
             "Route away from replicas whose pipeline crosses the link; keep prefill and decode "
             "replicas of a split on the same node where possible; restore the link."),
    "drain": ("A replica is drained (a planned restart).",
              "it takes nothing new, finishes what it holds, then leaves (and comes back after "
              "its restart); nothing is lost",
              "Drain one replica at a time (a rolling restart) and only with spare capacity "
              "for its share of the load; wait until it is back before the next."),
}


def _ms(v) -> str:
    if v is None or v != v:
        return "-"
    return "inf (more than 5% failed)" if v == math.inf else f"{v * 1000:,.0f} ms"


def runbook(results: list[Accepted], plots: dict[str, str] | None = None) -> str:
    """The operations and recovery runbook (Markdown), per fault of the schedule, measured on
    the chosen (else the first) design with that fault alone, then with all of them."""
    pick = chosen(results) or (results[0] if results else None)
    lines = ["# Operations and recovery runbook", ""]
    if pick is None or not pick.faults:
        lines.append("No faults were injected: run `schedatrix serving accept` with a fault "
                     "schedule (`--fault worker:0@60+30`, ...) to measure recovery.")
        return "\n".join(lines) + "\n"
    res = pick.fault_figures[0][0] if pick.fault_figures and pick.fault_figures[0] else None
    lines += [f"Measured on design **{pick.design.name}**: each fault alone (first seed), and "
              f"the whole schedule over {len(pick.fault_figures)} run(s).", ""]
    if res is not None:
        total = res.goodput_lost_run if res.paired else res.goodput_lost
        lines += ["With every fault of the schedule (first run): "
                  f"{res.retried} requests retried, {res.failed} failed after their retries, "
                  f"{res.lost} lost, goodput lost {total} (requests within their "
                  f"SLOs without the faults but not with them).", ""]
    for f, solo in zip(pick.faults, pick.alone, strict=False):
        what, happens, do = _RUNBOOK[f.kind]
        rec = "never within the run" if solo.recovery_s is None else f"{solo.recovery_s:g} s"
        old = "never" if solo.pre_level_recovery_s is None else \
            f"{solo.pre_level_recovery_s:g} s"
        lines += [f"## {f.text()}", "", f"**What happens**: {what} In the simulator: {happens}.",
                  "", "**Symptoms and figures that move** (this fault alone):", "",
                  f"- p95 TTFT of requests arriving during it: {_ms(solo.ttft_p95_during)} "
                  f"(before it: {_ms(solo.pre_ttft_p95)})",
                  f"- requests retried: {solo.retried}; failed after their retries: "
                  f"{solo.failed}; lost: {solo.lost}; goodput lost: {solo.goodput_lost}",
                  f"- recovery time (windowed p95 TTFT and goodput back within "
                  f"{solo.tolerance:.0%} of the run without the fault, the same arrivals, for "
                  f"{solo.hold} windows of {solo.window_s:g} s): {rec}"]
        if solo.paired:
            lines += [f"- noise floor (what the run without the fault reads by the pre-fault-"
                      f"level rule at the same time): {_fmt(solo.noise_floor_s)}; the "
                      f"pre-fault-level rule on this run reads {old}",
                      f"- worst window against the run without the fault: p95 TTFT "
                      f"{_ms(solo.peak_ttft_p95_excess_s)} higher, goodput "
                      f"{_fmt(solo.peak_goodput_deficit_rps, ' requests/s')} lower",
                      f"- verdict: {solo.verdict()}"]
        if f.kind in ("worker", "node"):
            lines.append("- detection: the router stops sending to a crashed replica after its "
                         "health-check delay; the replica is back after its downtime plus "
                         "its restart (engine start, weights, compile, graph capture, warm-up)"
                         + (f" (here at {solo.until_s:g} s)" if solo.until_s else ""))
        tolerated = "nothing lost" + (
            ", nothing failed" if not solo.failed else f", but {solo.failed} requests failed")
        lines += [f"- what this design tolerates: {tolerated}", "",
                  f"**What to do**: {do}", ""]
    for title, name in (plots or {}).items():
        lines += [f"![{title}]({name})", ""]
    return "\n".join(lines)


def accept_json(results: list[Accepted]) -> dict:
    """Every design's verdict. Each fault's figures carry its recovery against the paired
    baseline (``recovery_s``), the noise floor (``noise_floor_s``), the pre-fault-level reading
    (``pre_level_recovery_s``), ``measurable`` and the ``verdict`` in words; ``recovery_rule``
    states the margin and the hold."""
    pick = chosen(results)
    fc = results[0].criteria if results else FaultCriteria()
    return {
        "chosen": pick.design.name if pick else None,
        "recovery_rule": {"against": "paired baseline: the same seed and arrivals without the "
                                     "faults", "window_s": fc.window_s,
                          "tolerance": fc.tolerance, "hold": fc.hold,
                          "noise_floor": "the pre-fault-level rule read on the baseline at "
                                         "the fault's time",
                          "overlapping_faults": "goodput lost charged to the last fault "
                                                "struck before the request ended in the "
                                                "baseline"},
        "designs": [{**design_json(a.outcome), "passed_without_faults": a.outcome.passed,
                     "passed": a.accepted, "accepted": a.accepted, "status": a.status,
                     "status_without_faults": a.outcome.status,
                     "undecided": a.undecided(), "reasons": a.reasons(),
                     "with_faults": [f.as_dict() for f in a.with_faults],
                     "faults": [[x.as_dict() for x in run] for run in a.fault_figures]}
                    for a in results],
    }


def plot_recovery(a: Accepted, ax=None):
    """Windowed p95 TTFT and goodput of the first faulted run, the faults marked."""
    from matplotlib.figure import Figure
    fig = None
    if ax is None:
        fig = Figure(figsize=(9, 5))
        ax = fig.subplots(2, 1, sharex=True)
    starts, p95, good = a.series
    if a.baseline_series is not None:
        s0, p0, g0 = a.baseline_series
        ax[0].plot(s0, p0, drawstyle="steps-post", color="#9a9a9a", lw=1,
                   label="without the faults (the paired baseline)")
        ax[1].plot(s0, g0, drawstyle="steps-post", color="#9a9a9a", lw=1)
    ax[0].plot(starts, p95, drawstyle="steps-post", color="C0", label="with them")
    ax[0].set_yscale("log")
    plain_ticks(ax[0].yaxis)
    ax[0].set_ylabel("p95 TTFT (s)")
    ax[1].plot(starts, good, drawstyle="steps-post", color="C0")
    ax[1].set_ylim(bottom=0)
    ax[1].set_ylabel("goodput (requests/s)")
    ax[1].set_xlabel("time (s)")
    for f in a.faults:
        for axis in ax:
            axis.axvspan(f.at_s, f.at_s + (f.down_s or 0), color="C3", alpha=0.15)
            axis.axvline(f.at_s, color="C3", lw=1)
    back = [(f, _figures_of(a.fault_figures[0], f)) for f in a.faults] if a.fault_figures \
        else []
    for f, ff in back:
        if ff is not None and ff.recovery_s is not None:
            for axis in ax:
                axis.axvline(f.at_s + ff.recovery_s, color="C2", lw=1, ls="--")
        if ff is not None and ff.paired and ff.noise_floor_s:
            for axis in ax:
                axis.axvline(f.at_s + ff.noise_floor_s, color="#9a9a9a", lw=1, ls=":")
    said = ", ".join(f"{f.text()} {_said(ff)}" for f, ff in back)
    ax[0].set_title(f"{a.design.name}, first run: faults shaded" + (
        f"; recovered (green, dashed), noise floor (grey, dotted): {said}" if said else ""),
        fontsize=9, loc="left")
    if a.baseline_series is not None:
        ax[0].legend(fontsize=8, frameon=False, loc="upper right")
    if fig is not None:
        fig.tight_layout()
    return fig


def _said(f: FaultFigures | None) -> str:
    if f is None:
        return "-"
    if f.paired and not f.measurable:
        return f"no measurable damage (floor {_floor(f)})"
    return f"in {_fmt(f.recovery_s)}" + (f" (floor {_floor(f)})" if f.paired else "")


def write_accept_report(results: list[Accepted], out: str | Path, scenario_text: str,
                        load_text: str, criteria: Criteria, fc: FaultCriteria,
                        synthetic: bool) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plots = {}
    pick = chosen(results) or (results[0] if results else None)
    if pick is not None and pick.series is not None:
        plot_recovery(pick).savefig(out / "recovery.png", dpi=110)
        plots["p95 TTFT and goodput through the faults"] = "recovery.png"
    (out / "decision-record.md").write_text(decision_record(results, scenario_text, load_text,
                                                            criteria, fc, synthetic, plots))
    (out / "runbook.md").write_text(runbook(results, plots))
    (out / "accept.json").write_text(json.dumps(accept_json(results), indent=2,
                                                allow_nan=False) + "\n")
    return [out / "decision-record.md", out / "runbook.md", out / "accept.json"] + \
        [out / p for p in plots.values()]
