"""What ``serving capacity --out DIR`` writes: result.json (the command's JSON), report.md (its
lines and every rate the search tried) and capacity.png (the share within every SLO against the
rate tried, the attainment needed and the goodput marked)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["write_capacity_report", "plot_capacity"]


def plot_capacity(data: dict):
    """The search's tries: share of requests within every SLO against the rate tried."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    tried = sorted(data["tried"], key=lambda t: t["rate_rps"])
    xs = [t["rate_rps"] for t in tried]
    ys = [100 * t["attained"] for t in tried]
    ax.plot(xs, ys, color="0.6", lw=1, zorder=1)
    for ok in (True, False):
        pts = [(t["rate_rps"], 100 * t["attained"]) for t in tried if t["passed"] == ok]
        if pts:
            ax.scatter(*zip(*pts, strict=True), color="C2" if ok else "C3", zorder=2,
                       label="meets the attainment" if ok else "misses it")
    ax.axhline(100 * data["attainment"], color="0.3", ls=":", lw=1,
               label=f"attainment needed ({data['attainment']:.0%})")
    if data["max_rate_rps"]:
        ax.axvline(data["max_rate_rps"], color="C0", ls="--", lw=1,
                   label=f"goodput {data['max_rate_rps']:.3g} requests/s")
    ax.set_xscale("log")
    ax.set_xlabel("request rate tried (requests/s)")
    ax.set_ylabel("requests within every SLO (%)")
    ax.set_ylim(0, 102)
    ax.set_title(data["design"], fontsize=9, loc="left")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def write_capacity_report(out: str | Path, data: dict, lines: list[str]) -> list[Path]:
    """Write the three files into ``out`` (created); return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
    rows = ["| rate tried (requests/s) | within every SLO | meets |", "|---|---|---|"]
    rows += [f"| {t['rate_rps']:.4g} | {t['attained']:.1%} | {'yes' if t['passed'] else 'no'} |"
             for t in sorted(data["tried"], key=lambda t: t["rate_rps"])]
    (out / "report.md").write_text("# Capacity: DistServe's goodput\n\n" +
                                   "\n".join(f"- {line}" for line in lines) +
                                   "\n\n![the search's tries](capacity.png)\n\n" +
                                   "\n".join(rows) + "\n")
    plot_capacity(data).savefig(out / "capacity.png", dpi=110)
    return [out / "report.md", out / "capacity.png", out / "result.json"]
