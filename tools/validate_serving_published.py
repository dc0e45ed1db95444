#!/usr/bin/env python3
"""Replay every published measurement of schedatrix/serving/perf/published.py on the simulator
and write the table of docs/serving-validation.md (between its markers); ``--check`` writes
nothing and exits 1 when the page's table differs from a fresh run.

    python tools/validate_serving_published.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "serving-validation.md"
BEGIN, END = "<!-- validate_serving_published.py: begin -->", \
    "<!-- validate_serving_published.py: end -->"


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.2f}"


def table(checks: list | None = None) -> str:
    """The page's table: every row's check (``checks``, or a fresh run of them)."""
    sys.path.insert(0, str(ROOT))
    from schedatrix.serving.perf.published import UNREPLAYED
    from schedatrix.serving.studies.validation import validate

    checks = validate() if checks is None else checks
    lines = ["| row | setup | published | model | ratio | band | in band |",
             "|---|---|---|---|---|---|---|"]
    for c in checks:
        r = c.row
        mark = ("fitted here (" + r.calibrates + ")") if r.calibrates else \
            ("yes" if c.within else "**no**" + (" (known miss, below)" if r.known_miss else ""))
        lines.append(f"| `{r.id}` | {r.setup()} | {_fmt(r.value)} {r.unit} | "
                     f"{_fmt(c.model)} {r.unit} | {c.ratio:.2f} | ±{r.band:.0%} | {mark} |")
    tested = [c for c in checks if not c.row.calibrates and not c.row.known_miss]
    misses = [c for c in checks if c.row.known_miss]
    worst = max(tested, key=lambda c: abs(c.ratio - 1))
    lat = [c for c in tested if c.row.band == 0.15]
    thr = [c for c in tested if c.row.band != 0.15]
    lines += ["", f"{len(tested)} rows tested ({len(checks) - len(tested) - len(misses)} fitted, "
              f"{len(misses)} known misses); "
              f"{sum(c.within for c in tested)} in band. Worst latency ratio "
              f"{max(lat, key=lambda c: abs(c.ratio - 1)).ratio:.2f}, worst throughput ratio "
              f"{max(thr, key=lambda c: abs(c.ratio - 1)).ratio:.2f} "
              f"(worst of all: `{worst.row.id}`, {worst.ratio:.2f}).", "",
              "Known misses (replayed and shown, not in the count; a test says when one comes "
              "into its band):", ""]
    lines += [f"- `{c.row.id}` ({c.ratio:.2f}): {c.row.known_miss}" for c in misses]
    lines += ["", "Sources:", ""]
    by_source: dict[str, list[str]] = {}
    for c in checks:
        by_source.setdefault(c.row.source, []).append(c.row.id)
    for source, ids in by_source.items():
        lines.append(f"- {source}: " + ", ".join(f"`{i}`" for i in ids))
    lines += ["", "Published measurements not replayed, and what the model lacks for them:", "",
              "| measurement | source | why not |", "|---|---|---|"]
    lines += [f"| {what} | {where} | {why} |" for what, where, why in UNREPLAYED]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    page = PAGE.read_text()
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    fresh = f"{head}{BEGIN}\n{table()}\n{END}{tail}"
    if args.check:
        same = fresh == page
        print("docs/serving-validation.md is up to date" if same else
              "docs/serving-validation.md differs from a fresh run: rerun without --check")
        return 0 if same else 1
    PAGE.write_text(fresh)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
