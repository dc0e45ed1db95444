#!/usr/bin/env python3
"""Speed of the serving simulator, with the plain reference beside the fast one.

1. The Azure conversation hour (19,366 requests, ../shared/traces) on 4 replicas of
   Llama 3.1 8B on A100s: read + simulate + figures (target: under 1 CPU s).
2. A 1,000,000-request synthetic load (Poisson, 40 req/s, lognormal lengths) on 16 replicas
   of the same, in a fresh process so its peak memory is its own (targets: under 10 CPU s,
   1 GB), and the plain reference beside it: the reference and the fast simulator on the first
   --reference-requests (20,000) of the same arrivals, their CPU seconds and the ratio.
3. The reference and the fast simulator on the same arrivals: time, iterations, events per
   second, the speed-up, and whether their figures agree.
4. With --sweep (only this section): one grid (schedatrix/examples/serving-sweep.toml) in 1
   process, in N local processes and on a local Ray instance (its start-up timed apart), and
   whether the three tables are identical.

    .venv/bin/python benchmarks/bench_serving.py [--requests 1000000] [--repeat 3]
        [--reference-requests 20000] [--baseline REV]
    .venv/bin/python benchmarks/bench_serving.py --sweep [--workers N] [--grid GRID.toml]

``--baseline REV`` (a git revision: ``main``, a tag, a commit) runs sections 1 and 2 with that
revision's package too (``git archive`` into a temporary folder, in fresh processes with
PYTHONPATH on it; these sections' code is this tree's) and prints each figure beside this
tree's: "this tree | REV". Sections 1 and 2 always run in fresh processes, each package in its
own, one after the other.

The memo of runs (``schedatrix.serving.sim.memo``) is off: each repeat simulates again.
Times are CPU seconds of this process (best of --repeat) and wall seconds; the machine may be
shared, so the wall figure can be higher than the CPU one (section 2's verdict reads the CPU
seconds). On a shared machine the CPU seconds rise too (caches and cores shared): compare two
versions in one session, side by side, rather than with figures taken on another day.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AZURE = (ROOT.parent / "shared" / "traces" / "azure-llm-2023"
         / "AzureLLMInferenceTrace_conv_2023.csv")


def _timed(fn, repeat):
    best_cpu = best_wall = float("inf")
    out = None
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        out = fn()
        best_cpu = min(best_cpu, time.process_time() - c)
        best_wall = min(best_wall, time.perf_counter() - w)
    return out, best_cpu, best_wall


def _peak_mb() -> float:
    """This process's peak resident memory: VmHWM (its own since exec), else ru_maxrss (which
    on Linux keeps the peak of the process it was forked from)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _memo_off():
    """The memo of runs off (an older package may have none)."""
    try:
        from schedatrix.serving.sim import memo
    except ImportError:
        return contextlib.nullcontext()
    return memo.off() if hasattr(memo, "off") else contextlib.nullcontext()


def _million_load(n: int):
    from schedatrix.serving.load.workload import Load, generate
    load = Load(rate_rps=40.0, input_len="lognormal:800,0.8", output_len="lognormal:150,0.8")
    return generate(load, seed=1, requests=n)


def _design(replicas: int):
    from schedatrix.serving.cluster.deployment import Design
    return Design(model="llama-3.1-8b", gpu="a100-80gb", replicas=replicas)


# -- what runs in a fresh process: one JSON line ------------------------------------------------
def azure_child(repeat: int) -> dict:
    from schedatrix.serving.figures.metrics import figures
    from schedatrix.serving.load.replay import replay
    from schedatrix.serving.sim.simulate import simulate

    def job():
        req = replay(AZURE)
        run = simulate(req, _design(4))
        return req, run, figures(run)

    (req, run, f), cpu, wall = _timed(job, repeat)
    return {"requests": len(req), "cpu_s": cpu, "wall_s": wall, "events": run.events,
            "iterations": run.iterations, "ttft_p95": f.ttft_p95, "itl_p95": f.itl_p95}


def million_child(n: int) -> dict:
    from schedatrix.serving.figures.metrics import figures
    from schedatrix.serving.sim.simulate import simulate
    c, w = time.process_time(), time.perf_counter()
    req = _million_load(n)
    gen = time.perf_counter() - w
    run = simulate(req, _design(16))
    f = figures(run)
    return {"requests": n, "cpu_s": time.process_time() - c, "wall_s": time.perf_counter() - w,
            "generate_s": gen, "events": run.events, "iterations": run.iterations,
            "peak_rss_mb": _peak_mb(), "ttft_p95": f.ttft_p95, "itl_p95": f.itl_p95,
            "completed": f.completed}


def prefix_child(n: int, m: int) -> dict:
    """The reference and the fast simulator on the first m of the n-request load's arrivals
    (simulate only, CPU seconds)."""
    from schedatrix.serving.sim.simulate import simulate
    full = _million_load(n)
    req = dataclasses.replace(full, arrival_s=full.arrival_s[:m],
                              input_tokens=full.input_tokens[:m],
                              output_tokens=full.output_tokens[:m],
                              class_id=full.class_id[:m], meta=dict(full.meta))
    del full
    design = _design(16)
    out = {"requests": m}
    for impl in ("reference", "fast"):
        c = time.process_time()
        run = simulate(req, design, impl)
        out[f"{impl}_cpu_s"] = time.process_time() - c
        out[f"{impl}_iterations"] = run.iterations
    return out


def child(args) -> None:
    import schedatrix
    kind = args.child
    with _memo_off():
        if kind == "azure":
            r = azure_child(args.repeat)
        elif kind == "million":
            r = million_child(args.requests)
        else:
            r = prefix_child(args.requests, args.reference_requests)
    r["package"] = str(Path(schedatrix.__file__).resolve().parents[1])
    print(json.dumps(r))


# -- the parent: runs the children, prints the figures side by side ------------------------------
class Package:
    """A package to measure: this tree's, or a revision's unpacked in a temporary folder."""

    def __init__(self, label: str, root: Path):
        self.label, self.root = label, root

    def run(self, *args) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.root)] + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                              env=env, cwd=self.root)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise SystemExit(f"bench_serving: {self.label}: {' '.join(args)} failed: {last}")
        r = json.loads(done.stdout.strip().splitlines()[-1])
        if Path(r["package"]) != self.root.resolve():
            raise SystemExit(f"bench_serving: {self.label}: measured the package at "
                             f"{r['package']}, not {self.root} (PYTHONPATH lost?)")
        return r


def baseline_package(rev: str, tmp: Path) -> Package:
    """``rev``'s schedatrix package, unpacked under tmp (exits 2 if git does not know rev)."""
    ok = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                         f"{rev}^{{commit}}"], capture_output=True, text=True)
    if ok.returncode != 0:
        print(f"bench_serving: --baseline: {rev!r} is not a git revision of {ROOT} "
              "(allowed: a branch, a tag or a commit)", file=sys.stderr)
        raise SystemExit(2)
    commit = ok.stdout.strip()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "schedatrix"],
                             capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
    return Package(rev if commit.startswith(rev) else f"{rev} ({commit[:7]})", tmp)


def _cols(values, width=30) -> str:
    return " | ".join(f"{v:<{width}}" for v in values).rstrip()


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def azure_hour(packages, repeat: int) -> None:
    if not AZURE.exists():
        print(f"1. Azure hour: skipped ({AZURE} is absent: it lives in ../shared)")
        return
    rs = [p.run("--child", "azure", "--repeat", str(repeat)) for p in packages]
    print(f"1. Azure conversation hour: {rs[0]['requests']:,} requests on 4 x Llama 3.1 8B / "
          f"A100 (best of {repeat})")
    if len(packages) > 1:
        print(f"   {'':34s}{_cols(p.label for p in packages)}")
    print(f"   {'read + simulate + figures, CPU:':34s}"
          + _cols(f"{r['cpu_s']:.2f} s ({r['wall_s']:.2f} s wall)" for r in rs))
    print(f"   {'target < 1 s CPU:':34s}" + _cols(_verdict(r["cpu_s"] < 1) for r in rs))
    print(f"   {'events / iterations:':34s}"
          + _cols(f"{r['events']:,} / {r['iterations']:,}" for r in rs))
    print(f"   {'TTFT p95, ITL p95:':34s}"
          + _cols(f"{r['ttft_p95'] * 1000:.0f} ms, {r['itl_p95'] * 1000:.1f} ms" for r in rs))


def million(packages, n: int, m: int) -> None:
    rs = [p.run("--child", "million", "--requests", str(n)) for p in packages]
    m = min(m, n)
    ps = [p.run("--child", "prefix", "--requests", str(n), "--reference-requests", str(m))
          for p in packages] if m > 0 else []
    print(f"2. {n:,}-request synthetic load (Poisson 40 req/s) on 16 x 8B / A100")
    print(f"   (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    if len(packages) > 1:
        print(f"   {'':34s}{_cols(p.label for p in packages)}")
    # judged on CPU seconds: on a shared machine the wall clock also counts other work
    print(f"   {'generate + simulate + figures:':34s}"
          + _cols(f"{r['cpu_s']:.1f} s CPU ({r['wall_s']:.1f} s wall)" for r in rs))
    print(f"   {'peak memory:':34s}" + _cols(f"{r['peak_rss_mb']:,.0f} MB" for r in rs))
    print(f"   {'targets < 10 s CPU, < 1 GB:':34s}"
          + _cols(f"{_verdict(r['cpu_s'] < 10)} (CPU), {_verdict(r['peak_rss_mb'] < 1024)} "
                  "(memory)" for r in rs))
    print(f"   {'events / iterations:':34s}"
          + _cols(f"{r['events']:,} / {r['iterations']:,}" for r in rs))
    print(f"   {'completed, TTFT p95:':34s}"
          + _cols(f"{r['completed']:,}, {r['ttft_p95'] * 1000:.0f} ms" for r in rs))
    if not ps:
        return
    print(f"   measured on the first {m:,} of these requests (simulate only):")
    print(f"   {'  reference engine:':34s}"
          + _cols(f"{r['reference_cpu_s']:.2f} s CPU, "
                  f"{r['reference_cpu_s'] / m * 1e6:,.0f} us a request" for r in ps))
    print(f"   {'  fast engine:':34s}"
          + _cols(f"{r['fast_cpu_s']:.2f} s CPU, {r['fast_cpu_s'] / m * 1e6:,.0f} us a request"
                  for r in ps))
    print(f"   {'  reference / fast, per request:':34s}"
          + _cols(f"{r['reference_cpu_s'] / r['fast_cpu_s']:.1f}x" for r in ps))
    same = all(r["reference_iterations"] == r["fast_iterations"] for r in ps)
    print(f"   {'  same iterations in both:':34s}{'yes' if same else 'NO'}")


def side_by_side(repeat: int) -> None:
    import numpy as np

    from schedatrix.serving.cluster.deployment import Design
    from schedatrix.serving.figures.metrics import figures
    from schedatrix.serving.load.workload import Load, generate
    from schedatrix.serving.sim.simulate import simulate
    load = Load(rate_rps=6.0, input_len="lognormal:800,0.8", output_len="lognormal:200,0.8")
    req = generate(load, seed=3, requests=3000)
    design = Design(replicas=2)
    ref, ref_cpu, ref_wall = _timed(lambda: simulate(req, design, "reference"), 1)
    fast, fast_cpu, fast_wall = _timed(lambda: simulate(req, design, "fast"), repeat)
    fa, fb = figures(ref).as_dict(), figures(fast).as_dict()
    same = all((fa[k] is None and fb[k] is None) or np.isclose(fa[k], fb[k], rtol=1e-9)
               for k in fa)
    print(f"3. Reference and fast on the same {len(req):,} arrivals (2 x 8B / A100), this tree")
    print(f"   reference: {ref_cpu:.2f} s CPU ({ref_wall:.2f} s wall), {ref.iterations:,} "
          f"iterations ({ref.iterations / ref_cpu:,.0f} iterations/s)")
    print(f"   fast:      {fast_cpu:.3f} s CPU ({fast_wall:.3f} s wall), {fast.events:,} events "
          f"({fast.events / fast_cpu:,.0f} events/s)")
    print(f"   speed-up {ref_cpu / fast_cpu:.1f}x (CPU); figures identical: "
          f"{'yes' if same else 'NO'}")


def sweep(grid_path: Path, workers: int) -> None:
    from schedatrix.serving.scenarios.grid import load_grid
    from schedatrix.serving.sweeps.sweep import ray_available, run_sweep
    from schedatrix.serving.sweeps.sweep_report import csv_text
    grid = load_grid(grid_path)
    print(f"4. Sweep {grid_path.name}: {grid.describe()} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")

    def timed(**kw):
        w = time.perf_counter()
        s = run_sweep(grid, **kw)
        return s, time.perf_counter() - w

    one, one_s = timed(workers=1)
    print(f"   {'1 process:':24s}{one_s:6.1f} s  ({len(grid.tasks) / one_s:.1f} runs/s)")
    many, many_s = timed(workers=workers)
    label = f"{workers} local processes:"
    print(f"   {label:24s}{many_s:6.1f} s  (speed-up {one_s / many_s:.2f}x)")
    same = csv_text(many) == csv_text(one)
    if not ray_available():
        print("   local Ray: skipped (ray is not installed: pip install 'schedatrix[cluster]')")
    else:
        import ray

        from schedatrix.serving.sweeps.sweep import start_ray
        w = time.perf_counter()
        start_ray("local", workers)
        start_s = time.perf_counter() - w
        try:
            on_ray, ray_s = timed(workers=workers, ray_address="local")
        finally:
            ray.shutdown()
        same = same and csv_text(on_ray) == csv_text(one)
        label = f"local Ray, {workers} CPUs:"
        print(f"   {label:24s}{ray_s:6.1f} s  (speed-up {one_s / ray_s:.2f}x), "
              f"plus {start_s:.1f} s to start Ray")
    print(f"   tables identical: {'yes' if same else 'NO'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--reference-requests", type=int, default=20_000,
                   help="section 2: the reference and the fast engine on this many of the "
                        "load's first arrivals (0: not run)")
    p.add_argument("--baseline", metavar="REV",
                   help="sections 1-2 also with this git revision's package, side by side")
    p.add_argument("--child", choices=("azure", "million", "prefix"), help=argparse.SUPPRESS)
    p.add_argument("--sweep", action="store_true", help="only the sweep section")
    p.add_argument("--workers", type=int, default=None,
                   help="processes / Ray CPUs for --sweep (default: the CPUs available)")
    p.add_argument("--grid", type=Path,
                   default=ROOT / "schedatrix" / "examples" / "serving-sweep.toml")
    args = p.parse_args()
    for name in ("requests", "repeat"):
        if getattr(args, name) < 1:
            p.exit(2, f"bench_serving: --{name}: {getattr(args, name)}; allowed: 1 or more\n")
    if args.reference_requests < 0:
        p.exit(2, f"bench_serving: --reference-requests: {args.reference_requests}; allowed: "
                  "0 or more\n")
    if args.child:
        child(args)
        return
    from schedatrix.serving.sim import memo
    with memo.off():    # every repeat simulates: the memo would hand back its first run
        run_sections(args)


def run_sections(args) -> None:
    if args.sweep:
        from schedatrix.serving.sweeps.sweep import default_workers
        sweep(args.grid, args.workers or default_workers())
        return
    with tempfile.TemporaryDirectory(prefix="bench-serving-") as tmp:
        packages = [Package("this tree", ROOT)]
        if args.baseline:
            packages.append(baseline_package(args.baseline, Path(tmp)))
        azure_hour(packages, args.repeat)
        million(packages, args.requests, args.reference_requests)
    side_by_side(args.repeat)


if __name__ == "__main__":
    main()
