"""``schedatrix audit NOTE TRACE...``: the audit on the command line.

Bad input raises :class:`~schedatrix.errors.InputError`; ``schedatrix.cli`` prints it as one
line and exits with status 2. A finished audit exits 0 whatever its verdict.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import InputError
from .routing import DEFAULT_ROUTE_BELOW
from .window import DEFAULT_GAP_S

__all__ = ["add_audit_parser", "run"]


def add_audit_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``audit`` subcommand to an argparse subparsers object (sets ``func``)."""
    p = subparsers.add_parser(
        "audit", help="audit a serving fleet: a fleet note and a request trace in, a report out",
        description="Efficiency audit of a serving fleet: reads the fleet note (TOML) and the "
                    "sanitized request traces, writes report.md, PNG figures and audit.json "
                    "into --out, and prints a short verdict.")
    p.add_argument("note", metavar="NOTE", help="the fleet note, a TOML file (docs/audit.md)")
    p.add_argument("traces", metavar="TRACE", nargs="+",
                   help="request traces: generic CSV / JSON lines, Azure LLM 2023, Mooncake, "
                        "BurstGPT (.gz allowed)")
    p.add_argument("--pool-of", metavar="FILE=POOL", action="append", default=[],
                   help="the pool of every request in FILE (for traces without a pool column)")
    p.add_argument("--out", metavar="DIR", default="audit-report",
                   help="where the report goes (default: audit-report)")
    p.add_argument("--bucket", metavar="SECONDS", type=int, default=60,
                   help="time bucket, whole seconds (default 60)")
    p.add_argument("--headroom", metavar="SHARE", default="0.10",
                   help="headroom over demand, a share (0.10) or a percentage (10%%); "
                        "default 10%%")
    p.add_argument("--delay", metavar="BUCKETS", type=int, default=1,
                   help="autoscaler reaction delay in buckets (default 1)")
    p.add_argument("--replica-rps", metavar="POOL=RPS", action="append", default=[],
                   help="per-replica capacity in requests/s, overriding the note")
    p.add_argument("--capacity", choices=("simulate", "assume"), default="simulate",
                   help="a per-replica capacity the note leaves blank: ask the serving "
                        "simulator where it knows the model and GPU (default), or assume the "
                        "first-pass figure")
    p.add_argument("--no-drift", action="store_true",
                   help="simulated capacities at one steady rate, without the pool's own "
                        "per-bucket rate swings (kept by default), for comparison")
    p.add_argument("--route-below", metavar="TOKENS", type=int, default=DEFAULT_ROUTE_BELOW,
                   help="routing what-if: move the large pool's requests under this many "
                        f"input tokens to the small pool (default {DEFAULT_ROUTE_BELOW})")
    p.add_argument("--no-route", action="store_true", help="skip the routing what-if")
    p.add_argument("--route-from", metavar="POOL", help="what-if source pool (default: large)")
    p.add_argument("--route-to", metavar="POOL", help="what-if target pool (default: small)")
    p.add_argument("--gap", metavar="SECONDS", type=int, default=DEFAULT_GAP_S,
                   help="an empty stretch longer than this (no request in any pool) is a gap, "
                        f"left out of the window with a warning (default {DEFAULT_GAP_S})")
    p.add_argument("--cluster", metavar="ADDRESS|local",
                   help="tally the trace files in parallel on Ray: 'local' starts it on this "
                        "machine, an address (auto, HOST:PORT, ray://HOST:10001) joins a "
                        "cluster; needs pip install 'schedatrix[cluster]'")
    p.add_argument("--json", action="store_true",
                   help="print every figure as JSON (audit.json) instead of the verdict; no "
                        "progress bar")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def _pairs(values: list[str], flag: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        key, sep, val = v.rpartition("=")
        if not sep or not key or not val:
            raise InputError(f"{flag} {v!r}: write it as {flag} NAME=VALUE")
        out.append((key, val))
    return out


def _headroom(text: str) -> float:
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise InputError(f"--headroom {text!r}: a share (0.10) or a percentage (10%)") from None


def run(args: argparse.Namespace) -> int:
    """Run the audit from parsed arguments; return the exit status."""
    # here, not at the top: every `schedatrix` command builds this parser, and only the audit
    # needs the readers and the report's matplotlib (seconds of a command's start)
    from tqdm import tqdm

    from .audit import Settings, audit_files
    from .note import load_note
    from .report import json_text, prepare_out, verdict, write_report

    note = load_note(args.note)
    traces = [Path(t) for t in args.traces]
    pools: dict[Path, str] = {}
    for file, pool in _pairs(args.pool_of, "--pool-of"):
        match = [t for t in traces if str(t) == file or t.name == file
                 or t.resolve() == Path(file).resolve()]
        if not match:
            raise InputError(f"--pool-of {file}={pool}: {file} is not one of the traces "
                             f"({', '.join(str(t) for t in traces)})")
        for t in match:
            if pools.get(t, pool) != pool:
                raise InputError(f"--pool-of {file}={pool}: {t} is already given to pool "
                                 f"{pools[t]}; a trace's requests go to one pool")
            pools[t] = pool
    rps = {}
    for pool, value in _pairs(args.replica_rps, "--replica-rps"):
        try:
            rps[pool] = float(value)
        except ValueError:
            raise InputError(f"--replica-rps {pool}={value}: requests/s must be a number > 0"
                             ) from None
    settings = Settings(headroom=_headroom(args.headroom), delay_buckets=args.delay,
                        replica_rps=rps, route_below=None if args.no_route else args.route_below,
                        route_from=args.route_from, route_to=args.route_to, gap_s=args.gap,
                        capacity=args.capacity, drift=not args.no_drift)
    prepare_out(args.out)  # a bad destination stops the audit before the reading
    files = [(t, pools.get(t)) for t in traces]
    quiet = args.quiet or args.json or not sys.stderr.isatty()
    with tqdm(unit=" rows", unit_scale=True, desc="reading traces", file=sys.stderr,
              delay=1.0, disable=quiet) as bar:
        if args.cluster:
            from .cluster import RayRunner  # noqa: PLC0415 - Ray is an optional extra

            with RayRunner(args.cluster, on_progress=bar.update) as runner:
                audit = audit_files(note, files, settings, args.bucket, run=runner)
        else:
            audit = audit_files(note, files, settings, args.bucket, on_progress=bar.update)
    for line in audit.warnings:
        print(f"warning: {line}", file=sys.stderr)
    paths = write_report(audit, args.out)
    if args.json:
        print(json_text(audit))
        return 0
    for line in verdict(audit):
        print(line)
    from .placement import objective_text, plan_pools
    print("Placement: " + plan_pools(audit).sentence(objective_text(audit)))
    print(f"Report: {paths['markdown']} (figures and audit.json beside it)")
    return 0
