#!/usr/bin/env python3
"""Replay every published measurement of schedatrix/serving/published/rows.py on the simulator
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


def _ids(test) -> str:
    return ", ".join(f"`{c.row.id}`" for c in test.checks)


def table(checks: list | None = None) -> str:
    """The page's tables: every row's check (``checks``, or a fresh run of them), the per-kind
    bias, the worst tests, the sources and the measurements not replayed."""
    sys.path.insert(0, str(ROOT))
    from schedatrix.serving.published.lora_rows import LORA_UNREPLAYED
    from schedatrix.serving.published.rows import UNREPLAYED
    from schedatrix.serving.published.spec_rows import SPEC_UNREPLAYED
    from schedatrix.serving.validation.replay import (
        LEAN_LIMIT,
        SHARE_AIM,
        kind_of,
        summarize,
        tests,
        validate,
    )

    checks = validate() if checks is None else checks
    found = tests(checks)
    shared = {c.row.id: t for t in found if len(t.checks) > 1 for c in t.checks}
    lines = ["| row | kind | engine | setup | published | model | ratio | band | in band |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in checks:
        r = c.row
        if r.fitted:
            mark = f"fitted here ({r.calibrates}), not counted"
        else:
            mark = "yes" if c.within else "**no**" + (" (why: below)" if r.known_miss else "")
            if r.id in shared:
                mark += "; one setup with " + ", ".join(
                    f"`{o.row.id}`" for o in shared[r.id].checks if o.row.id != r.id) + \
                    f" (counted once, {shared[r.id].error:+.1%})"
        lines.append(f"| `{r.id}` | {kind_of(r)} | {r.engine} | {r.setup()} | "
                     f"{_fmt(r.value)} {r.unit} | {_fmt(c.model)} {r.unit} | {c.ratio:.2f} | "
                     f"±{r.band:.0%} | {mark} |")
    inside = sum(t.within for t in found)
    fitted = sum(c.row.fitted for c in checks)
    lines += ["", f"{len(checks)} rows: {fitted} fitted (not counted), "
              f"{len(checks) - fitted - len(found)} sharing a setup with another (counted "
              f"once); {len(found)} tests, **{inside} in band ({inside / len(found):.0%}; aim "
              f"{SHARE_AIM:.0%})**.", "",
              "Per kind (tests of one setup counted once; signed error = model / published - "
              "1, so a positive error is a latency too long or a throughput too high; a kind "
              f"fails when its mean leans beyond ±{LEAN_LIMIT:.0%}):", "",
              "| kind | tests | in band | mean signed error | leans | worst |",
              "|---|---|---|---|---|---|"]
    for k in summarize(checks):
        if k.n:
            lines.append(f"| {k.kind} | {k.n} | {k.in_band:.0%} | {k.mean_error:+.1%} | "
                         f"{'**yes**' if k.leans else 'no'} | {_ids(k.worst)} "
                         f"({k.worst.error:+.0%}) |")
        else:
            lines.append(f"| {k.kind} | 0 | - | - | - | (no row yet) |")
    lines += ["", "The worst tests:", "", "| test | kind | setup | signed error | in band |",
              "|---|---|---|---|---|"]
    for t in sorted(found, key=lambda t: -abs(t.error))[:10]:
        lines.append(f"| {_ids(t)} | {kind_of(t.row)} | {t.row.setup()} | {t.error:+.1%} | "
                     f"{'yes' if t.within else '**no**'} |")
    whys: dict[str, list[str]] = {}
    for c in checks:
        if c.row.known_miss and not c.within:
            whys.setdefault(c.row.known_miss, []).append(f"`{c.row.id}` ({c.ratio:.2f})")
    lines += ["", "Why rows miss, where the numbers say it (these rows stay in the count):", ""]
    lines += [f"- {', '.join(ids)}: {why}" for why, ids in whys.items()]
    lines += ["", "Sources:", ""]
    by_source: dict[str, list[str]] = {}
    for c in checks:
        by_source.setdefault(c.row.source, []).append(c.row.id)
    for source, ids in by_source.items():
        lines.append(f"- {source}: " + ", ".join(f"`{i}`" for i in ids))
    lines += ["", "Published measurements not replayed, and what the model lacks for them:", "",
              "| measurement | source | why not |", "|---|---|---|"]
    lines += [f"| {what} | {where} | {why} |" for what, where, why in UNREPLAYED
              + LORA_UNREPLAYED + SPEC_UNREPLAYED]
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
