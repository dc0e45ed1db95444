"""What a sweep says: the table (CSV, and Parquet when pyarrow is installed), JSON, a text
summary per load, and the Pareto plot (cost per million output tokens against p95 TTFT).

CSV cells: numbers as Python writes them (the shortest text that reads back to the same
float), booleans ``True``/``False``, an empty cell for a figure that does not exist (no
completed request, no SLO). The same sweep gives the same bytes wherever it ran.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from ..reports.plot_text import label_points, plain_ticks
from .sweep import Point, Sweep

__all__ = ["csv_text", "write_csv", "write_parquet", "sweep_json", "summary_lines",
           "plot_pareto", "write_sweep", "parquet_available"]


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and not math.isfinite(v):
        return ""
    return str(v)


def csv_text(sweep: Sweep) -> str:
    """The table as CSV text: a header of column names, one row per task."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(sweep.columns)
    for r in sweep.rows:
        w.writerow([_cell(r.get(c)) for c in sweep.columns])
    return buf.getvalue()


def write_csv(sweep: Sweep, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(csv_text(sweep))
    return path


def parquet_available() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def _arrow_column(values: list):
    import pyarrow as pa
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.array(values, pa.bool_())
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.array(values, pa.int64())
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       for v in present):
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array([None if v is None else str(v) for v in values], pa.string())


def write_parquet(sweep: Sweep, path: str | Path) -> Path | None:
    """The table as Parquet (typed columns: integers, floats, booleans, text); None when
    pyarrow is not installed."""
    if not parquet_available():
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.table({c: _arrow_column([r.get(c) for r in sweep.rows])
                      for c in sweep.columns})
    path = Path(path)
    pq.write_table(table, path)
    return path


def _num(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def sweep_json(sweep: Sweep) -> dict:
    """The whole sweep: the grid, skipped design points, per load the designs' means over
    the seeds with the Pareto front and the cheapest passing design, and every row."""
    g = sweep.grid
    loads = {}
    for load in g.loads:
        pts = [p for p in sweep.points if p.load == load]
        best = sweep.cheapest(load)
        loads[load] = {
            "front": [p.design for p in pts if p.front],
            "cheapest_passing": best.design if best else None,
            "designs": [{"design": p.design, "gpus": p.gpus, "ttft_p95": _num(p.ttft_p95_s),
                         "cost_per_mtok": _num(p.cost_per_mtok), "passed": p.passed,
                         "status": p.status, "seeds_met": p.met,
                         "front": p.front, "seeds": p.seeds} for p in pts]}
    return {"grid": g.source, "runs": len(g.tasks), "designs": list(g.designs),
            "loads": list(g.loads), "seeds": list(g.seeds),
            "swept": {"design": list(g.design_keys), "load": list(g.load_keys)},
            "skipped": [{"design": n, "reason": r} for n, r in g.skipped],
            "synthetic": all(r.get("synthetic", True) for r in sweep.rows),
            "pareto": loads, "columns": sweep.columns,
            "rows": [{c: _num(r.get(c)) for c in sweep.columns} for r in sweep.rows]}


def _ms(v: float) -> str:
    return "-" if not math.isfinite(v) else f"{v * 1000:,.0f} ms"


def _usd(v: float) -> str:
    return "-" if not math.isfinite(v) else f"${v:,.3f}"


def summary_lines(sweep: Sweep) -> list[str]:
    """Per load: every design's mean p95 TTFT and cost, its verdict, the front marked."""
    lines = []
    for load in sweep.grid.loads:
        pts = [p for p in sweep.points if p.load == load]
        lines.append(f"load {load}:")
        width = max(len(p.design) for p in pts)
        for p in pts:
            verdict = {"pass": "PASS", "fail": "FAIL", None: "-"}.get(
                p.status, f"undecided, {p.met} of {p.seeds} seeds met")
            mark = "  front" if p.front else ""
            gpus = f"{p.gpus} GPU" + ("s" if p.gpus != 1 else " ")
            lines.append(f"  {p.design:{width}s}  {gpus:>8s}  p95 TTFT "
                         f"{_ms(p.ttft_p95_s):>10s}  {_usd(p.cost_per_mtok):>9s}/M tok  "
                         f"{verdict}{mark}")
        best = sweep.cheapest(load)
        if pts and pts[0].status is None:
            lines.append("  no verdict: no class sets a TTFT or TPOT threshold")
        else:
            lines.append(f"  cheapest passing: {best.design if best else 'none'}")
    return lines


def plot_pareto(sweep: Sweep):
    """One panel per load: cost per million output tokens against p95 TTFT (means over the
    seeds), one point per design, passing designs filled, the Pareto front joined."""
    from matplotlib.figure import Figure
    loads = sweep.grid.loads
    cols = min(3, len(loads))
    rows = math.ceil(len(loads) / cols)
    fig = Figure(figsize=(5.2 * cols, 4.2 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    panels = []
    for ax, load in zip(axes, loads, strict=False):
        pts = [p for p in sweep.points if p.load == load and math.isfinite(p.ttft_p95_s)
               and math.isfinite(p.cost_per_mtok)]
        panels.append((ax, pts, _panel(ax, pts)))
        ax.set_title(f"load {load}", fontsize=9)
    for ax in axes[len(loads):]:
        ax.set_visible(False)
    synthetic = all(r.get("synthetic", True) for r in sweep.rows)
    fig.suptitle("cost against p95 TTFT: filled = meets the SLOs in every seed, line = Pareto "
                 "front" + (" (synthetic load)" if synthetic else ""), fontsize=10)
    fig.tight_layout()
    for ax, pts, legend in panels:      # labels once the layout is final, clear of each other
        label_points(ax, [p.ttft_p95_s for p in pts], [p.cost_per_mtok for p in pts],
                     [p.design for p in pts], fontsize=7, avoid=[legend] if legend else ())
    return fig


def _panel(ax, pts: list[Point]):
    """One load's points and front (labelled later, once the layout is final); returns the
    legend, or None."""
    for p in pts:
        ax.scatter([p.ttft_p95_s], [p.cost_per_mtok], s=36, zorder=3,
                   facecolors="C0" if p.passed else "none",
                   edgecolors="C3" if p.front else "C0", linewidths=1.5 if p.front else 1)
    front = sorted((p for p in pts if p.front), key=lambda p: p.ttft_p95_s)
    legend = None
    if front:
        ax.step([p.ttft_p95_s for p in front], [p.cost_per_mtok for p in front], where="post",
                color="C3", lw=1, label="Pareto front", zorder=2)
        legend = ax.legend(fontsize=7, loc="best")
    ax.set_xscale("log")
    ax.margins(0.12)
    plain_ticks(ax.xaxis)
    ax.set_xlabel("p95 TTFT (s)")
    ax.set_ylabel("$ per million output tokens")
    return legend


def write_sweep(sweep: Sweep, out: str | Path) -> list[Path]:
    """Write sweep.csv, sweep.parquet (with pyarrow), sweep.json and pareto.png into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_csv(sweep, out / "sweep.csv")]
    pq = write_parquet(sweep, out / "sweep.parquet")
    if pq is not None:
        paths.append(pq)
    (out / "sweep.json").write_text(json.dumps(sweep_json(sweep), indent=1,
                                               allow_nan=False) + "\n")
    paths.append(out / "sweep.json")
    plot_pareto(sweep).savefig(out / "pareto.png", dpi=110)
    paths.append(out / "pareto.png")
    return paths
