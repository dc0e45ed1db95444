"""The audit's report: Markdown with PNG figures and the same figures as JSON, plus a verdict.

Figures are drawn on :class:`matplotlib.figure.Figure` objects (the Agg canvas, no pyplot
state), so writing a report never opens a window; the lesson shows the same figures inline.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..errors import InputError
from ..fleet.constants import CONVERGENCE_FLOOR, UNMET_CAP
from .audit import Audit, PoolAudit
from .needs import POLICY_NAMES, Policy
from .placement import objective_text, plan_pools

__all__ = ["verdict", "markdown", "to_json", "plot_demand", "plot_replicas", "plot_bill",
           "write_report", "prepare_out", "json_text", "FIGURES", "MAX_SERIES"]

#: The report's figures: file name -> (title, function).
FIGURES = ("demand.png", "replicas.png", "bill.png")
#: audit.json carries the per-bucket series up to this many pieces (buckets, or runs of empty
#: buckets); above, they are left out (null) so the report's memory stays bounded.
MAX_SERIES = 100_000
#: The figures draw at most this many steps: above, each step is the maximum of a group.
MAX_STEPS = 4000


def _pct(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"


def _num(x: float | None, fmt: str = ",.2f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _when(t_s: float) -> str:
    """Epoch times as UTC, trace-relative ones as seconds."""
    if t_s >= 1e8:
        return datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"t = {t_s:,.1f} s"


def _buckets(a: Audit) -> int:
    return int(a.window.n_buckets.sum()) if a.window is not None else len(a.duration_s)


def _stretches(a: Audit) -> str:
    gaps = len(a.window.gaps) if a.window is not None else 0
    return "" if not gaps else f" in {gaps + 1} stretches (gaps left out)"


def _money(a: Audit, gpu_hours: float) -> str:
    p = a.note.price_per_gpu_hour
    return f"{gpu_hours:,.2f} GPU-h" + ("" if p is None else f" (${gpu_hours * p:,.2f})")


def _check(ok: bool) -> str:
    return "passes" if ok else "FAILS"


def verdict(a: Audit) -> list[str]:
    """A short verdict, a few plain lines, for the terminal and the top of the report."""
    lines = [
        f"Fleet of {a.note.gpu_count} x {a.note.gpu_type}, {len(a.pools)} pools, "
        f"{sum(p.n_requests for p in a.pools):,} requests over {a.window_s / 3600:.2f} h"
        f"{_stretches(a)}.",
        f"Capacity: {_pct(a.unmet_share)} of demand unmet by the configured fleet "
        f"(cap {UNMET_CAP:.0%}, fleet and every pool): {_check(a.capacity_ok)}"
        + ("." if a.capacity_ok else " (over the cap: " + ", ".join(
            p.config.pool_id for p in a.pools if not p.sizing.configured.capacity_ok) + ")."),
        f"Convergence: the ideal fleet bills {_pct(a.convergence)} of the configured fleet "
        f"(floor {CONVERGENCE_FLOOR:.0%}): {_check(a.convergence_ok)}.",
        f"Provisioned {_money(a, a.gpu_hours)}, ideal {_money(a, a.ideal_gpu_hours)}, "
        f"idle {_money(a, a.idle_gpu_hours)}.",
    ]
    for p in a.pools:
        c = p.sizing.configured
        lines.append(
            f"  {p.config.pool_id}: peak {p.peak_rps:.2f} req/s needs "
            f"{int(p.sizing.needed.max(initial=0))} replicas (max {p.config.max_replicas}), "
            f"unmet {_pct(c.unmet_share)}, convergence {_pct(c.convergence)}"
            + {"assumed": " [capacity assumed]", "simulated": " [capacity simulated]"}.get(
                p.replica_rps_source, ""))
    if a.routing is not None:
        r = a.routing
        before = sum(s.ideal.gpu_hours for s in r.before.values())
        after = sum(s.ideal.gpu_hours for s in r.after.values())
        lines.append(
            f"Routing what-if: {r.source} requests under {r.threshold_tokens:,} input tokens "
            f"({_pct(r.moved_share)}) to {r.target}: ideal {before:,.2f} -> {after:,.2f} GPU-h, "
            f"{r.target} unmet {_pct(r.after[r.target].configured.unmet_share)} at its "
            "configured capacity.")
    if a.note.beyond_first_pass:
        lines.append("Beyond the standard first pass: " + "; ".join(a.note.beyond_first_pass))
    return lines


def _window_time(a: Audit) -> tuple[np.ndarray, str]:
    """Each piece's start in window time (gaps left out) and the axis label, in minutes,
    hours or days from the window's start."""
    x = np.concatenate([[0.0], np.cumsum(a.duration_s)[:-1]])
    span = a.window_s
    unit, scale = (("minutes", 60) if span <= 3 * 3600 else ("hours", 3600)
                   if span <= 3 * 86_400 else ("days", 86_400))
    gaps = " (gaps left out)" if _stretches(a) else ""
    return x / scale, f"{unit} from window start{gaps} ({a.bucket_s} s buckets)"


def plot_demand(a: Audit, fig: Figure | None = None) -> Figure:
    """Requests/s per bucket for each pool, with the configured capacity and its maximum."""
    fig = fig or Figure(figsize=(9, 2.6 * len(a.pools)))
    axes = fig.subplots(len(a.pools), 1, sharex=True, squeeze=False)[:, 0]
    x, label = _window_time(a)
    for ax, p in zip(axes, a.pools, strict=True):
        s = p.sizing
        xs, rate, cap = _steps(x, s.rate_rps, s.configured.replicas * p.replica_rps)
        ax.step(xs, rate, where="post", label="demand (req/s)", color="C0")
        ax.step(xs, cap, where="post", color="C1", label="configured capacity")
        ax.axhline(p.config.max_replicas * p.replica_rps, color="C3", ls="--",
                   label=f"maximum ({p.config.max_replicas} replicas)")
        ax.set_ylabel("requests/s")
        ax.set_ylim(bottom=0)  # a rate is never negative: no tick below zero
        ax.set_title(f"{p.config.pool_id}: {', '.join(p.config.models)}", fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel(label)
    fig.tight_layout()
    return fig


def plot_replicas(a: Audit, fig: Figure | None = None) -> Figure:
    """Replicas needed (with headroom) vs provisioned by the configured fleet, per pool."""
    fig = fig or Figure(figsize=(9, 2.6 * len(a.pools)))
    axes = fig.subplots(len(a.pools), 1, sharex=True, squeeze=False)[:, 0]
    x, label = _window_time(a)
    for ax, p in zip(axes, a.pools, strict=True):
        xs, need, prov = _steps(x, p.sizing.needed, p.sizing.configured.replicas)
        ax.step(xs, need, where="post", label="needed", color="C2")
        ax.step(xs, prov, where="post", label="provisioned", color="C1")
        ax.set_ylabel("replicas")
        # Replicas are counted: whole-number ticks from zero (never 0.8, 1.2 or -1), and a
        # band above the peak for the legend.
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        peak = max(1.0, float(np.max(need)), float(np.max(prov)))
        ax.set_ylim(0, max(peak + 1, 1.25 * peak))
        ax.set_title(f"{p.config.pool_id}: headroom {a.settings.headroom:.0%}, "
                     f"{p.replica_rps:g} req/s per replica", fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel(label)
    fig.tight_layout()
    return fig


def _plans(p: PoolAudit) -> list[tuple[str, Policy]]:
    return [("configured", p.sizing.configured)] + [
        (POLICY_NAMES[k], v) for k, v in p.sizing.policies.items()]


def plot_bill(a: Audit, fig: Figure | None = None) -> Figure:
    """The bill split per pool and plan: GPU-hours (or dollars) that moved requests vs idle."""
    fig = fig or Figure(figsize=(9, 3.2))
    axes = fig.subplots(1, len(a.pools), squeeze=False, sharey=True)[0]
    price = a.note.price_per_gpu_hour
    unit, scale = ("dollars", price) if price is not None else ("GPU-hours", 1.0)
    for ax, p in zip(axes, a.pools, strict=True):
        plans = _plans(p)
        busy = [(r.gpu_hours - r.idle_gpu_hours) * scale for _, r in plans]
        idle = [r.idle_gpu_hours * scale for _, r in plans]
        labels = ["configured", "max\nwarm", "average\n+ headroom", "ideal"]
        ax.bar(labels, busy, color="C0", label="moved requests")
        ax.bar(labels, idle, bottom=busy, color="C7", label="idle")
        ax.set_title(p.config.pool_id, fontsize=10)
        ax.tick_params(axis="x", labelsize=7)
    axes[0].set_ylabel(unit)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def _series(a: Audit, values: np.ndarray) -> list | None:
    """A per-piece series for audit.json, or None above `MAX_SERIES` pieces."""
    return None if len(a.duration_s) > MAX_SERIES else values.tolist()


def _steps(x: np.ndarray, *ys: np.ndarray) -> tuple[np.ndarray, ...]:
    """At most `MAX_STEPS` steps to draw: each the first x and the largest y of a group."""
    if len(x) <= MAX_STEPS:
        return (x, *ys)
    starts = np.linspace(0, len(x), MAX_STEPS, endpoint=False).astype(np.int64)
    return (x[starts], *(np.maximum.reduceat(y, starts) for y in ys))


def _policy_json(r: Policy, a: Audit) -> dict:
    p = a.note.price_per_gpu_hour
    return {"gpu_hours": r.gpu_hours, "idle_gpu_hours": r.idle_gpu_hours,
            "dollars": None if p is None else r.gpu_hours * p,
            "idle_dollars": None if p is None else r.idle_gpu_hours * p,
            "unmet_share": r.unmet_share, "convergence": r.convergence,
            "capacity_ok": r.capacity_ok, "convergence_ok": r.convergence_ok,
            "replicas": _series(a, r.replicas)}


def to_json(a: Audit) -> dict:
    """Every figure of the audit, and the per-bucket series behind the report's figures."""
    pools = {}
    for p in a.pools:
        s = p.sizing
        pools[p.config.pool_id] = {
            "role": p.config.role, "models": list(p.config.models),
            "capacity": p.config.capacity_text, "gpus_per_replica": p.config.gpus_per_replica,
            "replica_rps": p.replica_rps, "replica_rps_assumed": p.replica_rps_assumed,
            "replica_rps_source": p.replica_rps_source, "replica_rps_basis": p.replica_rps_basis,
            "requests": p.n_requests, "mean_rps": p.mean_rps, "peak_rps": p.peak_rps,
            "mean_tok_s": p.mean_tok_s,
            "input_tokens": vars(p.input_tokens), "output_tokens": vars(p.output_tokens),
            "peak_to_average": p.peak_to_average, "peak_to_average_1s": p.peak_to_average_1s,
            "dispersion_1s": p.dispersion_1s,
            "needed_gpu_hours": s.needed_gpu_hours,
            "configured": _policy_json(s.configured, a),
            "policies": {k: _policy_json(v, a) for k, v in s.policies.items()},
            "mtok_per_dollar": p.mtok_per_dollar(),
            "mtok_per_dollar_ideal": p.mtok_per_dollar("ideal"),
            "latency": [vars(x) for x in p.latency],
            "error_share": p.error_share,
            "unchecked_objectives": list(p.unchecked_objectives),
            "replica_rates": [vars(x) for x in p.replica_rates],
            "series": None if len(a.duration_s) > MAX_SERIES else {
                "rate_rps": s.rate_rps.tolist(), "tok_s": (p.tokens / a.duration_s).tolist(),
                "needed": s.needed.tolist(), "provisioned": s.configured.replicas.tolist()},
        }
    out = {
        "fleet": {"gpus": a.note.gpu_count, "gpu_type": a.note.gpu_type,
                  "price_per_gpu_hour": a.note.price_per_gpu_hour,
                  "serving_stack": a.note.serving_stack, "routing": a.note.routing,
                  "trace_window": a.note.trace_window,
                  "beyond_first_pass": list(a.note.beyond_first_pass)},
        "settings": {"headroom": a.settings.headroom, "bucket_s": a.bucket_s,
                     "delay_buckets": a.settings.delay_buckets,
                     "route_below": a.settings.route_below},
        "window": {"start_s": a.t_start_s, "end_s": a.t_end_s, "seconds": a.window_s,
                   "bucket_start_s": _series(a, a.bucket_start_s),
                   "bucket_duration_s": _series(a, a.duration_s),
                   "bucket_count": (None if a.window is None else _series(a, a.window.n_buckets)),
                   "gaps": [] if a.window is None else [
                       {"before_s": g.before_s, "after_s": g.after_s, "seconds": g.seconds}
                       for g in a.window.gaps]},
        "files": [{"file": f, "format": fmt, "rows": n} for f, fmt, n in a.files],
        "gpu_hours": a.gpu_hours, "ideal_gpu_hours": a.ideal_gpu_hours,
        "idle_gpu_hours": a.idle_gpu_hours, "convergence": a.convergence,
        "unmet_share": a.unmet_share, "capacity_ok": a.capacity_ok,
        "convergence_ok": a.convergence_ok, "pools": pools, "notes": list(a.notes),
        "verdict": verdict(a), "routing": None,
    }
    placement = plan_pools(a)
    out["placement"] = {**placement.as_dict(),
                        "sentence": placement.sentence(objective_text(a))}
    if a.routing is not None:
        r = a.routing
        out["routing"] = {
            "threshold_tokens": r.threshold_tokens, "source": r.source, "target": r.target,
            "moved_requests": r.moved_requests, "moved_share": r.moved_share,
            **{when: {k: {"needed_peak": int(v.needed.max(initial=0)),
                          "needed_gpu_hours": v.needed_gpu_hours,
                          "ideal": _policy_json(v.ideal, a),
                          "configured": _policy_json(v.configured, a)} for k, v in d.items()}
               for when, d in (("before", r.before), ("after", r.after))}}
    return out


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(r) + " |" for r in rows])


def markdown(a: Audit) -> str:
    """The report as Markdown (figures referenced as PNG files beside it)."""
    n = a.note
    out = ["# Efficiency audit", ""]
    out += [f"- Fleet: {n.gpu_count} x {n.gpu_type}"
            + (f", serving stack {n.serving_stack}" if n.serving_stack else ""),
            f"- Trace window: {_when(a.t_start_s)} to {_when(a.t_end_s)} "
            f"({a.window_s / 3600:.2f} h{_stretches(a)}, {_buckets(a):,} buckets of "
            f"{a.bucket_s} s)"
            + (f"; the note says: {n.trace_window}" if n.trace_window else ""),
            "- Traces: " + ", ".join(f"{f} ({fmt}, {rows:,} rows)" for f, fmt, rows in a.files),
            f"- Headroom {a.settings.headroom:.0%}, autoscaler reaction delay "
            f"{a.settings.delay_buckets} bucket(s)"
            + (f", price ${n.price_per_gpu_hour:,.2f} per GPU-hour" if n.price_per_gpu_hour
               is not None else ", no price given (bills in GPU-hours)")]
    if n.routing:
        out.append(f"- Current routing (note): {n.routing}")
    out += ["", "## Verdict", ""] + [f"- {line.strip()}" for line in verdict(a)]
    placement = plan_pools(a)
    out += ["", "## The pools within the fleet's GPUs", "",
            placement.sentence(objective_text(a))]
    out += [""] + [f"- {x}" for x in placement.notes] if placement.notes else []
    if a.notes:
        out += ["", "## Notes and assumptions", ""] + [f"- {x}" for x in a.notes]
    out += ["", "![Demand and capacity per pool](demand.png)", "",
            "![Replicas needed vs provisioned](replicas.png)", "",
            "![The bill split](bill.png)"]
    for p in a.pools:
        c, s = p.config, p.sizing
        out += ["", f"## Pool {c.pool_id}: {', '.join(c.models)}", "",
                f"{c.capacity_text}; {p.replica_rps:.3g} requests/s per replica "
                f"({p.replica_rps_basis})",
                ""]
        out += _table(["demand", "value"], [
            ["requests", f"{p.n_requests:,}"],
            ["mean / peak requests/s (per bucket)", f"{p.mean_rps:.2f} / {p.peak_rps:.2f}"],
            ["mean tokens/s (input + output)", f"{p.mean_tok_s:,.0f}"],
            ["input tokens p50 / p90 / p95 / p99",
             " / ".join(f"{v:,.0f}" for v in vars(p.input_tokens).values())],
            ["output tokens p50 / p90 / p95 / p99",
             " / ".join(f"{v:,.0f}" for v in vars(p.output_tokens).values())],
            ["peak-to-average (buckets / seconds)",
             f"{p.peak_to_average:.2f} / {p.peak_to_average_1s:.2f}"],
            ["index of dispersion of per-second counts (Poisson = 1)", f"{p.dispersion_1s:.2f}"],
            ["replicas needed, peak", f"{int(s.needed.max(initial=0))}"],
            ["GPU-hours needed (unconstrained)", f"{s.needed_gpu_hours:,.2f}"],
            ["buckets needing more than the maximum",
             f"{int((s.needed > c.max_replicas).sum())} of {len(s.needed)}"],
        ])
        out += [""] + _table(
            ["plan", "GPU-h", "idle GPU-h"] + (["dollars", "idle $", "Mtok/$"]
                                              if n.price_per_gpu_hour is not None else [])
            + ["unmet (cap 5%)", "convergence (>= 80%)"],
            [[name, f"{r.gpu_hours:,.2f}", f"{r.idle_gpu_hours:,.2f}"]
             + ([f"{r.gpu_hours * n.price_per_gpu_hour:,.2f}",
                 f"{r.idle_gpu_hours * n.price_per_gpu_hour:,.2f}",
                 _num(r.served_tokens / (r.gpu_hours * n.price_per_gpu_hour) / 1e6
                      if r.gpu_hours * n.price_per_gpu_hour else None, ".3f")]
                if n.price_per_gpu_hour is not None else [])
             + [f"{_pct(r.unmet_share)} {'ok' if r.capacity_ok else 'FAIL'}",
                f"{_pct(r.convergence)} {'ok' if r.convergence_ok else 'FAIL'}"]
             for name, r in _plans(p)])
        if p.latency:
            out += [""] + _table(["latency", "p50", "p95", "p99", "objective", "measured", ""], [
                [x.metric.upper(), f"{x.p50_s:.3f} s", f"{x.p95_s:.3f} s", f"{x.p99_s:.3f} s",
                 x.objective or "none stated", _num(x.measured_s, ".3f"),
                 "" if x.met is None else ("met" if x.met else "MISSED")] for x in p.latency])
        if p.error_share is not None:
            out += ["", f"Error share (status column): {_pct(p.error_share)}"]
        for u in p.unchecked_objectives:
            out += ["", f"Objective not checked: {u}"]
        if p.replica_rates:
            out += [""] + _table(["replica", "requests/s", "vs pool mean"], [
                [r.replica, f"{r.rps:.3f}", f"{r.vs_mean:.2f}"] for r in p.replica_rates])
    if a.routing is not None:
        r = a.routing
        out += ["", "## Routing what-if", "",
                f"Send {r.source} requests with fewer than {r.threshold_tokens:,} input tokens "
                f"to {r.target}: {r.moved_requests:,} requests ({_pct(r.moved_share)} of "
                f"{r.source}).", ""]
        rows = []
        for pid in (r.source, r.target):
            b, f = r.before[pid], r.after[pid]
            rows.append([pid, f"{int(b.needed.max(initial=0))} -> {int(f.needed.max(initial=0))}",
                         f"{b.needed_gpu_hours:,.2f} -> {f.needed_gpu_hours:,.2f}",
                         f"{b.ideal.gpu_hours:,.2f} -> {f.ideal.gpu_hours:,.2f}",
                         f"{_pct(b.configured.unmet_share)} -> {_pct(f.configured.unmet_share)}"])
        out += _table(["pool", "peak replicas needed", "GPU-h needed", "ideal GPU-h",
                       "unmet at configured capacity"], rows)
    out += ["", "## How the figures are made", "",
            "Requests are counted in time buckets; a bucket's rate is its requests over the "
            "seconds it covers inside the trace window. Replicas needed = ceil(rate x (1 + "
            "headroom) / per-replica capacity). The configured fleet runs its fixed count, or "
            "follows need within its range one reaction delay late. Unmet = requests above "
            "replicas x capacity. Idle GPU-hours = provisioned GPU-hours x (1 - served / "
            "capacity). Convergence = ideal GPU-hours / plan GPU-hours, the ideal sizing every "
            "bucket within 1 to the pool's maximum. Percentiles are nearest-rank and exact. "
            "Full definitions: docs/audit.md in the schedatrix repository.", ""]
    return "\n".join(out)


def json_text(a: Audit) -> str:
    """audit.json's text: every figure (:func:`to_json`), NaN and infinities as null."""
    return json.dumps(_clean(to_json(a)), indent=1, allow_nan=False)


def write_report(a: Audit, out_dir: str | Path) -> dict[str, Path]:
    """Write report.md, the PNG figures and audit.json into `out_dir`; return their paths."""
    out = prepare_out(out_dir)
    paths = {"markdown": out / "report.md", "json": out / "audit.json"}
    try:
        paths["markdown"].write_text(markdown(a), encoding="utf-8")
        paths["json"].write_text(json_text(a), encoding="utf-8")
        for name, plot in zip(FIGURES, (plot_demand, plot_replicas, plot_bill), strict=True):
            fig = plot(a)
            paths[name] = out / name
            fig.savefig(paths[name], dpi=110)
    except OSError as exc:
        raise InputError(f"report: can't write into {str(out)!r}: "
                         f"{exc.strerror or exc}") from None
    return paths


def prepare_out(out_dir: str | Path) -> Path:
    """Make sure the report can be written into `out_dir` (a folder, created if missing), so
    a bad destination stops the audit before any reading. Raises InputError."""
    if not str(out_dir).strip():
        raise InputError(f"--out {str(out_dir)!r}: name a folder for the report (a blank name "
                         "would write into the current folder)")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {str(out)!r} is a file, not a folder: name a folder for the "
                         "report")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".schedatrix-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"--out {str(out)!r}: can't write a report there "
                         f"({exc.strerror or exc})") from None
    return out


def _clean(x):
    """JSON-ready: numpy scalars to Python, NaN and infinities to null."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    if isinstance(x, np.integer | np.bool_):
        return x.item()
    if isinstance(x, float | np.floating):
        return float(x) if math.isfinite(x) else None
    return x
