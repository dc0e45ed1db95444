"""Benchmark: the readable reference against the vectorised engine on the same months.

Runs 10,000 months of a 32-card pool (the walkthrough's knobs, seeds 0..9,999) through the
pure-Python reference (``schedatrix.simulate``, one month at a time) and through
``schedatrix.simulate_many`` (all at once), checks both give the same bills, and prints
both throughputs and their ratio. Targets on a 2-core machine: the engine at least
500,000 months per second and at least 30 times the reference.

    python benchmarks/bench_engine.py [--months 10000] [--cards 32] [--repeat 7]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

import schedatrix as sx


def best_of(fn, repeat: int) -> tuple[float, float]:
    """Best and median wall time of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--months", type=int, default=10_000)
    parser.add_argument("--cards", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    plan = sx.Plan(cards=args.cards)
    months = args.months

    def reference():
        return [sx.simulate(plan.with_knobs(seed=s)).bill for s in range(months)]

    def engine():
        return sx.simulate_many(plan, months, 0).bill

    same = np.array_equal(np.array(reference()), engine())
    ref_best, ref_median = best_of(reference, max(1, args.repeat // 3))
    eng_best, eng_median = best_of(engine, args.repeat)

    print(f"schedatrix {sx.__version__}, numpy {np.__version__}, Python "
          f"{platform.python_version()}, {platform.machine()}")
    print(f"{months:,} months of {args.cards} cards, same seeds, same bills: {same}")
    print(f"{'':<28}{'best':>12}{'median':>12}{'months/s (best)':>18}")
    for name, best, median in (("reference (pure Python)", ref_best, ref_median),
                               ("engine (simulate_many)", eng_best, eng_median)):
        print(f"{name:<28}{best * 1e3:>10.1f}ms{median * 1e3:>10.1f}ms{months / best:>18,.0f}")
    print(f"engine / reference speed-up: {ref_best / eng_best:,.0f}x (targets: engine >= "
          f"500,000 months/s and >= 30x)")


if __name__ == "__main__":
    main()
