#!/usr/bin/env python3
"""What compiling the fast simulator's modules as they are buys: the plain tree beside a copy of
it whose hot modules Cython compiled unchanged (no types added), on the same load, each in a
fresh process: CPU seconds of the simulation (best of --repeat) and whether every output array
is the same to the bit.

    .venv/bin/pip install cython        # not a dependency of the project: this probe's alone
    .venv/bin/python benchmarks/bench_compiled.py [--requests 100000] [--repeat 2]

The load is bench_serving.py's million-request one, cut to --requests (Poisson at 40 requests a
second, lognormal lengths, 16 replicas of Llama 3.1 8B on A100s). The compiled copy lives in a
temporary folder; nothing in the tree is changed. Needs Cython and a C compiler; without either
it says so in one line and exits 2. Issue 39's question: whether a compiled core can be had
without rewriting the engine (measured 2026-12-07 on the 2-core machine: no; see the closing
note of that day and docs/serving.md, Speed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The modules every event of the fast simulator passes through.
HOT = ("serving/sim/engine.py", "serving/sim/events.py", "serving/replica/scheduler.py",
       "serving/replica/kv_cache.py", "serving/figures/record.py")

CHILD = r"""
import hashlib, json, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
from bench_serving import _design, _memo_off, _million_load
import schedatrix.serving.sim.engine as engine
from schedatrix.serving.sim.simulate import simulate
req = _million_load({n})
best = float("inf")
with _memo_off():
    for _ in range({repeat}):
        c = time.process_time()
        run = simulate(req, _design(16))
        best = min(best, time.process_time() - c)
h = hashlib.sha256()
for k, v in sorted(vars(run).items()):
    if isinstance(v, np.ndarray):
        h.update(k.encode())
        h.update(np.ascontiguousarray(v).tobytes())
print(json.dumps({{"cpu_s": best, "events": run.events, "hash": h.hexdigest(),
                  "compiled": engine.__file__.endswith((".so", ".pyd"))}}))
"""


def _refuse(message: str) -> int:
    print(f"bench_compiled: {message}", file=sys.stderr)
    return 2


def _child(pythonpath: Path, n: int, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    code = CHILD.format(bench=str(ROOT / "benchmarks"), n=n, repeat=repeat)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    if not 1_000 <= args.requests <= 1_000_000:
        return _refuse(f"--requests {args.requests}: allowed 1,000 to 1,000,000")
    if not 1 <= args.repeat <= 10:
        return _refuse(f"--repeat {args.repeat}: allowed 1 to 10")
    try:
        import Cython  # noqa: F401
    except ImportError:
        return _refuse("Cython is not installed here (.venv/bin/pip install cython): "
                       "nothing measured")
    if shutil.which(os.environ.get("CC", "cc")) is None:
        return _refuse("no C compiler (cc) on the PATH: nothing measured")
    with tempfile.TemporaryDirectory(prefix="bench-compiled-") as tmp:
        copy = Path(tmp) / "schedatrix"
        shutil.copytree(ROOT / "schedatrix", copy,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        files = [str(copy / f) for f in HOT]
        built = subprocess.run([sys.executable, "-m", "Cython.Build.Cythonize", "-i", "-3",
                                "-q", *files], cwd=tmp, capture_output=True, text=True)
        if built.returncode:
            return _refuse("Cython could not build the modules: "
                           + (built.stderr.strip().splitlines() or ["no message"])[-1])
        print(f"{args.requests:,} requests (bench_serving.py's load), 16 x 8B / A100, "
              f"CPU seconds of the simulation, best of {args.repeat}, fresh processes")
        plain = _child(ROOT, args.requests, args.repeat)
        compiled = _child(Path(tmp), args.requests, args.repeat)
    if not compiled["compiled"] or plain["compiled"]:
        return _refuse("the compiled copy was not the one imported: nothing compared")
    print(f"  plain Python (this tree)        {plain['cpu_s']:7.2f} s  "
          f"{plain['events']:,} events")
    print(f"  Cython, modules compiled as is  {compiled['cpu_s']:7.2f} s  "
          f"{compiled['cpu_s'] / plain['cpu_s']:.2f}x the plain time")
    same = plain["hash"] == compiled["hash"]
    print(f"  every output array the same to the bit: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
