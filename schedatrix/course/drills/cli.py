"""``schedatrix drills``: print a set of fleet or serving interview drills, with or without the
answer key (a thin layer over :mod:`.drills` and :mod:`.serving_drills`)."""

from __future__ import annotations

import argparse

from ...errors import InputError
from .fleet import drill_set
from .kit import format_drill_set
from .serving import format_serving_drills, serving_drill_set

__all__ = ["add_drills_parser"]


def _run(args) -> int:
    if args.first < 0:
        raise InputError(f"--first must be a whole number >= 0, got {args.first}")
    if args.serving:
        print(format_serving_drills(serving_drill_set(args.first, args.count),
                                    answers=args.answers), end="")
        return 0
    print(format_drill_set(drill_set(args.first, args.count), answers=args.answers), end="")
    return 0


def add_drills_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``drills``: print a set of interview drills (and with ``--answers``, the key)."""
    p = subparsers.add_parser(
        "drills",
        help="print a set of interview drills (same numbers, same drills, everywhere)",
        description="Print drills FIRST .. FIRST+COUNT-1: a month each and five questions "
        "drawn from a bank of ten kinds (score, evictions, median test, wrong evictions, run "
        "set, idle bill, bill, convergence, failing check and knob, reading a signature). "
        "--answers appends the answer key, with the command that replays each month.",
    )
    p.add_argument("--first", type=int, default=1, help="first drill number (default 1)")
    p.add_argument("--count", type=int, default=5, help="how many drills (default 5)")
    p.add_argument("--answers", action="store_true", help="append the answer key")
    p.add_argument("--serving", action="store_true",
                   help="serving drills instead: a replica and three questions each, from 14 "
                   "kinds (its KV cache, batch, decode step, all-reduces and SLOs; queues, "
                   "goodput, the prefix cache, the split's KV move, recovery; MoE and FP8)")
    p.set_defaults(func=_run)
    return p
