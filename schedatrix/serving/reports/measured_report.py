"""What ``serving measured --out DIR`` writes: report.md (the table the command prints) and
result.json (its ``--json`` object)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["write_measured_report"]


def write_measured_report(out: str | Path, data: dict, lines: list[str]) -> list[Path]:
    """Write the two files into ``out`` (created); return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text("# Measured beside simulated\n\n"
                                   "Distance: measured / simulated - 1.\n\n```\n"
                                   + "\n".join(lines) + "\n```\n")
    (out / "result.json").write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
    return [out / "report.md", out / "result.json"]
