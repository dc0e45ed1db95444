"""Benchmark: the readable reference against the vectorised engine on the same months.

Runs 10,000 months of a 32-card pool (the walkthrough's knobs, seeds 0..9,999) through the
pure-Python reference (``schedatrix.simulate``, one month at a time) and through
``schedatrix.simulate_many`` (all at once, on its default worker threads, and on one thread
for comparison), checks that every figure of every month is identical (exact equality, not
a tolerance), and prints both throughputs, their ratio and whether the engine met its
target: 1,000,000 months per second.

The machine's load is printed too, with the share of its cores each run got (process CPU
time over wall time) and the months per second of CPU time (the work done per core, which
the load hardly changes): on a shared machine the same code measures slower when other
work holds the cores, so run it several times and read the range.

    python benchmarks/bench_engine.py [--months 10000] [--cards 32] [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import schedatrix as sx
from schedatrix.fleet.draws import hashes
from schedatrix.fleet.engine import _STREAMS, _default_workers

TARGET_MONTHS_S = 1_000_000
#: Issue 39's target: the engine against the plain loop (the reference), per CPU-second.
TARGET_SPEEDUP = 100
#: The engine's fields that the reference's Month has too (Months.seed is the month's seed).
FIELDS = [
    "warm", "evicted", "wrong_evictions", "wrong_share", "bill", "run_rent", "churn_fees",
    "idle_bill", "delivered_tok_s", "run_true_tok_s", "unmet_share", "mtok_per_dollar",
    "ideal_bill", "ideal_cards", "ideal_delivered_tok_s", "ideal_mtok_per_dollar",
    "convergence", "median_true_tok_s", "capacity_ok", "convergence_ok", "evictions_ok",
]


def timed(fn, repeat: int):
    """Wall times of ``repeat`` runs (seconds), their CPU times, and the last result."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        cpu_start, start = time.process_time(), time.perf_counter()
        result = fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu_start)
    return walls, cpus, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--months", type=int, default=10_000)
    parser.add_argument("--cards", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=15, help="engine runs (reference: 2)")
    args = parser.parse_args()
    plan = sx.Plan(cards=args.cards)
    months = args.months
    workers = _default_workers()
    load_before = os.getloadavg()

    def reference():
        return [sx.simulate(plan.with_knobs(seed=s)) for s in range(months)]

    def engine():
        return sx.simulate_many(plan, months, 0)

    def engine_one_thread():
        return sx.simulate_many(plan, months, 0, workers=1)

    def draws_alone():
        # the engine's random draws for the same months, nothing else: one uint64 hash per
        # card and stream, in blocks of 1,000 months as the engine's own block size allows
        for start in range(0, months, 1_000):
            hashes(range(start, min(start + 1_000, months)), _STREAMS, args.cards)

    engine()  # warm up: threads started, scratch arrays made
    runs = {}
    runs["engine"] = timed(engine, args.repeat)
    runs["engine, 1 thread"] = timed(engine_one_thread, args.repeat)
    runs["draws alone"] = timed(draws_alone, args.repeat)
    runs["reference"] = timed(reference, 2)
    load_after = os.getloadavg()

    ref, many = runs["reference"][2], runs["engine"][2]
    same = all(
        np.array_equal(np.array([getattr(m, f) for m in ref]), getattr(many, f))
        for f in FIELDS
    ) and np.array_equal(runs["engine, 1 thread"][2].bill, many.bill)

    print(f"schedatrix {sx.__version__}, numpy {np.__version__}, Python "
          f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
          f"engine on {workers} thread{'s' * (workers > 1)}")
    print(f"load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after, "
          f"on {os.cpu_count()} cores")
    print(f"{months:,} months of {args.cards} cards, seeds 0..{months - 1}: every figure "
          f"identical to the reference: {same}")
    print(f"{'':<24}{'best':>10}{'median':>10}{'worst':>10}{'months/s best':>15}"
          f"{'median':>10}{'cores used':>12}{'months/CPU-s':>14}")
    labels = {"reference": "reference (pure Python)", "engine": "engine (simulate_many)",
              "engine, 1 thread": "engine, 1 thread"}
    for name in ("reference", "engine", "engine, 1 thread"):
        walls, cpus, _ = runs[name]
        best, median, worst = min(walls), statistics.median(walls), max(walls)
        print(f"{labels[name]:<24}{best * 1e3:>8.1f}ms{median * 1e3:>8.1f}ms{worst * 1e3:>8.1f}ms"
              f"{months / best:>15,.0f}{months / median:>10,.0f}{sum(cpus) / sum(walls):>12.2f}"
              f"{months / min(cpus):>14,.0f}")
    ref_best, eng_best = min(runs["reference"][0]), min(runs["engine"][0])
    eng_median = statistics.median(runs["engine"][0])
    ref_cpu, eng_cpu = min(runs["reference"][1]), min(runs["engine"][1])
    print(f"engine / reference speed-up: {ref_best / eng_best:,.0f}x (best wall time against "
          f"best), {ref_cpu / eng_cpu:,.0f}x per CPU-second")
    print("cores used: CPU time over wall time (other work on the machine lowers it); "
          "months/CPU-s: months per second of CPU time, the work per core whatever the load")
    one_cpu = min(runs["engine, 1 thread"][1])
    draws_cpu = min(runs["draws alone"][1])
    ratio = ref_cpu / one_cpu
    print(f"target {TARGET_SPEEDUP}x the plain loop (the reference), per CPU-second on one "
          f"thread: {'met' if ratio >= TARGET_SPEEDUP else 'missed'} ({ratio:,.0f}x)")
    print(f"what bounds it: the random draws alone (splitmix64 hashes of every card's three "
          f"streams) take {draws_cpu / one_cpu:.0%} of the one-thread engine's CPU time, "
          f"{months / draws_cpu:,.0f} months per CPU-second")
    rate = months / eng_best
    verdict = "met" if rate >= TARGET_MONTHS_S else "missed"
    print(f"target {TARGET_MONTHS_S:,} months/s: {verdict} (best {rate:,.0f}, median "
          f"{months / eng_median:,.0f} months/s)")


if __name__ == "__main__":
    main()
