"""``schedatrix serving sweep GRID.toml``: designs x loads x seeds in local processes or on Ray.

A thin layer over :mod:`.grid` (the file), :mod:`.sweep` (running it) and
:mod:`.sweep_report` (what it says). Bad input is one line, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from tqdm import tqdm

from ...errors import InputError
from ..intake.toml_tables import out_folder

__all__ = ["add_sweep_parser"]


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--workers must be a whole number, got {text!r}") \
            from None
    if not 1 <= n <= 4096:
        raise argparse.ArgumentTypeError(f"--workers must be from 1 to 4,096, got {text!r}")
    return n


def add_sweep_parser(sub) -> argparse.ArgumentParser:
    """Add ``sweep`` to the ``serving`` subcommands."""
    p = sub.add_parser(
        "sweep", help="designs x loads x seeds: a table and a Pareto plot",
        description="Run every (design, load, seed) of a grid file in local worker processes "
                    "or on a Ray cluster; write one row per run (every figure of the "
                    "simulator's JSON) as CSV (and Parquet with pyarrow) and a Pareto plot of "
                    "cost per million tokens against p95 TTFT. The same grid gives the same "
                    "table wherever it runs.")
    p.add_argument("grid", metavar="GRID.toml", help="a grid file (see docs/serving.md)")
    p.add_argument("--workers", type=_workers, metavar="N",
                   help="local worker processes (default: the CPUs this process may use; "
                        "1 = in this process); with --ray local, the local Ray's CPUs")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="run on Ray: 'local' starts Ray on this machine, 'auto' joins the "
                        "cluster this machine belongs to, or a cluster's address "
                        "(needs the extra: pip install 'schedatrix[cluster]')")
    p.add_argument("--out", metavar="DIR", type=out_folder,
                   help="write sweep.csv, sweep.parquet (with pyarrow), sweep.json and "
                        "pareto.png")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (every row, the Pareto fronts) instead")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_sweep)
    return p


def _cmd_sweep(args) -> int:
    from ..scenarios.grid import load_grid
    from .sweep import default_workers, run_sweep
    from .sweep_report import summary_lines, sweep_json, write_sweep
    if args.ray is not None and args.ray not in ("local",) and args.workers is not None:
        raise InputError(f"--workers: a Ray cluster ({args.ray}) runs as many tasks at once as "
                         f"it has CPUs; give --workers only without --ray or with --ray local")
    if args.ray is not None and not args.ray.strip():
        raise InputError("--ray: give 'local', 'auto' or a cluster's address")
    grid = load_grid(args.grid)
    workers = args.workers or default_workers()
    where = (f"Ray ({args.ray}" + (f", {workers} CPUs)" if args.ray == "local" else ")")
             if args.ray is not None else
             "this process" if workers == 1 else f"{workers} local processes")
    start = time.perf_counter()
    with tqdm(total=len(grid.tasks), desc="runs", unit="run", file=sys.stderr,
              disable=args.json or args.quiet, mininterval=1.0) as bar:
        sweep = run_sweep(grid, workers, args.ray, on_done=bar.update)
    wall_s = time.perf_counter() - start
    paths = write_sweep(sweep, args.out) if args.out else []
    if args.json:
        print(json.dumps(sweep_json(sweep), allow_nan=False))
        return 0
    print(f"sweep {grid.source}: {grid.describe()}, in {where}: {wall_s:.1f} s")
    if all(r.get("synthetic", True) for r in sweep.rows):
        print("(synthetic load: model results, not production SLO performance)")
    for name, reason in grid.skipped:
        print(f"  skipped {name}: {reason}")
    print()
    for line in summary_lines(sweep):
        print(line)
    if paths:
        print()
        print(f"table: {paths[0]} ({len(sweep.rows)} rows x {len(sweep.columns)} columns)")
        for p in paths[1:]:
            print(f"       {p}")
    return 0
