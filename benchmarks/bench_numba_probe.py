#!/usr/bin/env python3
"""What a numba-compiled event loop would cost and give: a probe for issue 39's compiled core.

Not the engine. A toy event loop of the fast engine's shape (one server, one request at a
time, prompts prefilled in chunks of a token budget, each decode a closed-form stretch, events
in a heap of tuples, the waiting queue a heap) runs the same Poisson load twice: compiled by
numba (``@njit(cache=True)``) and as the same function in plain Python (numba's ``py_func``).
It prints, each in a fresh process so that nothing is warm by accident:

1. numba's import time;
2. the first call with an empty cache (compilation) and with the cache that call wrote (what
   a lesson's kernel would wait for on every start after the first);
3. the loop's CPU seconds for N requests, compiled and plain, and their ratio; the two give
   the same first-token and end times to the bit.

    pip install numba          # not a dependency of schedatrix
    python benchmarks/bench_numba_probe.py [--requests 1000000]

The numbers decide whether the engine's core is worth porting to numba (issue 39, item 1):
the compile cost grows with the function (a port of the fast engine is some ten times this
loop), the per-event speed-up is what the port could at best reach (docs/serving.md, Speed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

LOOP = textwrap.dedent('''
    import heapq
    import numpy as np
    from numba import njit


    @njit(cache=True)
    def run(arrival, inp, out, a, b, prefill_token_s, budget):
        n = arrival.shape[0]
        first = np.full(n, np.nan)
        done = np.full(n, np.nan)
        heap = [(0.0, 0, 0, 0)]           # (t, kind, seq, request): kind 1 start, 2 chunk, 3 end
        heap.pop()
        waiting = [(0.0, 0)]              # (arrival, request)
        waiting.pop()
        left = np.zeros(n, np.int64)
        seq = nxt = 0
        busy = False
        cur = -1
        while True:
            if nxt < n and (len(heap) == 0 or arrival[nxt] <= heap[0][0]):
                t = arrival[nxt]
                heapq.heappush(waiting, (t, nxt))
                nxt += 1
                if not busy:
                    busy = True
                    seq += 1
                    heapq.heappush(heap, (t, 1, seq, -1))
                continue
            if len(heap) == 0:
                break
            t, kind, _, i = heapq.heappop(heap)
            if kind == 1:
                if cur < 0:
                    if len(waiting) == 0:
                        busy = False
                        continue
                    cur = heapq.heappop(waiting)[1]
                    left[cur] = inp[cur]
                seq += 1
                if left[cur] > 0:
                    c = min(left[cur], budget)
                    left[cur] -= c
                    heapq.heappush(heap, (t + c * prefill_token_s + a, 2, seq, cur))
                else:
                    k = out[cur] - 1
                    s0 = inp[cur] + 1
                    heapq.heappush(heap, (t + k * a + b * (k * s0 + k * (k - 1) / 2), 3,
                                          seq, cur))
            else:
                if kind == 2 and left[i] == 0:
                    first[i] = t
                elif kind == 3:
                    done[i] = t
                    cur = -1
                seq += 1
                heapq.heappush(heap, (t, 1, seq, -1))
        return first, done
''')

CHILD = textwrap.dedent('''
    import json, sys, time
    started = time.perf_counter()
    import numba  # noqa: F401
    imported = time.perf_counter() - started
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from toy_loop import run
    n, plain = int(sys.argv[2]), sys.argv[3] == "plain"
    rng = np.random.default_rng(1)
    arrival = np.cumsum(rng.exponential(1 / 0.4, n))
    inp, out = rng.integers(100, 3000, n), rng.integers(10, 300, n)
    args = (0.006, 1e-7, 5e-5, 2048)
    first_s = None
    if not plain:
        c = time.perf_counter()
        run(arrival[:10], inp[:10], out[:10], *args)
        first_s = time.perf_counter() - c
    fn = run.py_func if plain else run
    c = time.process_time()
    first, done = fn(arrival, inp, out, *args)
    cpu = time.process_time() - c
    print(json.dumps({"import_s": imported, "first_call_s": first_s, "cpu_s": cpu,
                      "digest": float(np.nansum(first) + np.nansum(done))}))
''')


def _refuse(message: str) -> int:
    """Bad input or a missing package: one line on stderr, exit status 2."""
    print(f"bench_numba_probe: {message}", file=sys.stderr)
    return 2


def _child(folder: Path, n: int, kind: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "cache")}
    done = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(n), kind],
                          capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"bench_numba_probe: the {kind} run failed: "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    if not 100 <= args.requests <= 100_000_000:
        return _refuse(f"--requests {args.requests:,}: allowed 100 to 100,000,000")
    try:
        import numba
    except ImportError:
        return _refuse("needs numba (pip install numba); schedatrix does not depend on it")
    n = args.requests
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "toy_loop.py").write_text(LOOP)
        cold = _child(folder, n, "compiled")
        warm = _child(folder, n, "compiled")
        plain = _child(folder, n, "plain")
    print(f"numba {numba.__version__}, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"import numba:                   {warm['import_s']:.2f} s "
          f"(cold {cold['import_s']:.2f} s)")
    print(f"first call, empty cache:        {cold['first_call_s']:.2f} s (compilation)")
    print(f"first call, cache written:      {warm['first_call_s']:.2f} s")
    print(f"{n:,} requests, compiled:    {warm['cpu_s']:.3f} CPU s "
          f"({warm['cpu_s'] / n * 1e6:.2f} us a request)")
    print(f"{n:,} requests, plain Python: {plain['cpu_s']:.3f} CPU s "
          f"({plain['cpu_s'] / n * 1e6:.2f} us a request)")
    print(f"plain / compiled:               {plain['cpu_s'] / warm['cpu_s']:.0f}x; same times: "
          f"{'yes' if plain['digest'] == warm['digest'] else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
