"""Print how the simulator serves one online validation row, request by request: each request's
user, send, first token and end, in the order sent (docs/serving-validation.md, online rows).

    .venv/bin/python tools/trace_online_row.py nim-h100-70b-fp8-tp2-u50-500-2000-ttft [--first N]
        [--staggered]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from schedatrix.errors import InputError
from schedatrix.serving.published.rows import PUBLISHED
from schedatrix.serving.studies.validation import online_lengths, online_run, replay


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("row", help="an online row's id (docs/serving-validation.md)")
    ap.add_argument("--first", type=int, default=100, help="requests to print (default 100)")
    ap.add_argument("--staggered", action="store_true", help="users' starts spread evenly")
    args = ap.parse_args(argv)
    online = {r.id: r for r in PUBLISHED if r.online}
    if args.row not in online:
        print(f"row: {args.row!r} is not an online row; e.g. {next(iter(online))}",
              file=sys.stderr)
        return 2
    if args.first < 1:
        print(f"--first: {args.first}; must be at least 1", file=sys.stderr)
        return 2
    row = online[args.row]
    try:
        run = online_run(row, staggered=args.staggered)
    except InputError as e:
        print(e, file=sys.stderr)
        return 2
    ttft_ms = (run.first_token_s - run.arrival_s) * 1e3
    inp, out = online_lengths(row)
    within = f" (each within {row.spread:.0%})" if row.spread else ""
    print(f"{row.id}: {row.users} users, {row.requests} requests, {row.input_tokens} in / "
          f"{row.output_tokens} out{within}; published {row.value:,.1f} {row.unit}")
    print(f"{'request':>7} {'user':>4} {'in':>6} {'out':>6} {'sent s':>9} {'first s':>9} "
          f"{'TTFT ms':>9} {'end s':>9}")
    for i in np.argsort(run.arrival_s, kind="stable")[:args.first]:
        print(f"{i:7d} {i % row.users:4d} {inp[i]:6d} {out[i]:6d} {run.arrival_s[i]:9.3f} "
              f"{run.first_token_s[i]:9.3f} {ttft_ms[i]:9.1f} {run.done_s[i]:9.3f}")
    print(f"mean TTFT over all {len(ttft_ms)} requests: {ttft_ms.mean():,.1f} ms; median "
          f"{np.median(ttft_ms):,.1f} ms")
    if not args.staggered:
        what = {"online_ttft": f"{row.statistic} TTFT", "online_itl": f"{row.statistic} ITL",
                "online_tok_s": "output tok/s"}[row.kind]
        print(f"the row's figure ({what}, as {row.client or 'its client'} computes it): "
              f"{replay(row):,.1f} {row.unit}, published {row.value:,.1f} {row.unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
