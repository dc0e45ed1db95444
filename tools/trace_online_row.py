"""Print how the simulator serves one online validation row, request by request: each request's
user, send, first token and end, in the order sent (docs/serving-validation.md, online rows).

    .venv/bin/python tools/trace_online_row.py nim-h100-70b-fp8-tp2-u50-500-2000-ttft [--first N]
        [--start together|even|random] [--per-user N]

``--start``: how the users' first sends are spread (validation.replay.STARTS; the row's replay
starts them together); ``--per-user N``: N requests a user instead of the row's, to see the
loop's steady state. It ends with the mean TTFT of each wave (the next ``users`` requests
sent: request i is the i-th sent).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from schedatrix.errors import InputError
from schedatrix.serving.published.rows import PUBLISHED
from schedatrix.serving.validation.replay import STARTS, online_lengths, online_run, replay


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("row", help="an online row's id (docs/serving-validation.md)")
    ap.add_argument("--first", type=int, default=100, help="requests to print (default 100)")
    ap.add_argument("--start", default="together", choices=STARTS,
                    help="how the users' first sends are spread (default together, the replay's)")
    ap.add_argument("--per-user", type=int, default=None,
                    help="requests a user (default: the row's)")
    args = ap.parse_args(argv)
    online = {r.id: r for r in PUBLISHED if r.online}
    if args.row not in online:
        print(f"row: {args.row!r} is not an online row; e.g. {next(iter(online))}",
              file=sys.stderr)
        return 2
    if args.first < 1:
        print(f"--first: {args.first}; must be at least 1", file=sys.stderr)
        return 2
    if args.per_user is not None and not 1 <= args.per_user <= 100:
        print(f"--per-user: {args.per_user}; must be 1 to 100", file=sys.stderr)
        return 2
    row = original = online[args.row]
    if args.per_user is not None:
        row = dataclasses.replace(row, requests=args.per_user * row.users)
    try:
        run = online_run(row, start=args.start)
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
        print(f"{i:7d} {run.user[i]:4d} {inp[i]:6d} {out[i]:6d} {run.arrival_s[i]:9.3f} "
              f"{run.first_token_s[i]:9.3f} {ttft_ms[i]:9.1f} {run.done_s[i]:9.3f}")
    print(f"mean TTFT over all {len(ttft_ms)} requests: {ttft_ms.mean():,.1f} ms; median "
          f"{np.median(ttft_ms):,.1f} ms")
    waves = -(-len(ttft_ms) // row.users)
    print(f"mean TTFT of each wave ({row.users} requests in the order sent), ms: " + ", ".join(
        f"{ttft_ms[k * row.users:(k + 1) * row.users].mean():,.0f}" for k in range(waves)))
    if args.start == "together" and row is original:
        what = {"online_ttft": f"{row.statistic} TTFT", "online_itl": f"{row.statistic} ITL",
                "online_tok_s": "output tok/s"}[row.kind]
        print(f"the row's figure ({what}, as {row.client or 'its client'} computes it): "
              f"{replay(row):,.1f} {row.unit}, published {row.value:,.1f} {row.unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
