"""GuideLLM's report (``benchmarks.json``) read as measured requests.

The schema is GuideLLM's ``GenerativeBenchmarksReport`` (``src/guidellm/benchmark/schemas/
report.py``; its ``docs/guides/outputs.md``): ``{"metadata", "config", "benchmarks": [...]}``,
each benchmark one load (a sweep writes several: pick one with ``--benchmark N``) holding
``requests`` grouped by status, ``successful``, ``errored`` and ``incomplete``, each request a
``GenerativeRequestStats`` (``src/guidellm/schemas/request_stats.py``):

- ``prompt_tokens``, ``output_tokens`` (the server's counts);
- ``info.timings``: ``request_start``, ``first_token_iteration``, ``last_token_iteration``
  (epoch seconds); where they are missing, the computed fields ``request_start_time``,
  ``time_to_first_token_ms`` and ``inter_token_latency_ms`` (or GuideLLM 0.2's ``start_time``,
  ``first_token_time`` and ``last_token_time``);
- ``info.error`` on an errored request.

GuideLLM keeps no time per token: a request's output tokens are spread evenly from its first
token to its last, so its gaps are its mean ITL (an ITL p95 over them is narrower than one
over every gap a per-token client records). Send times count from the benchmark's first send;
an incomplete request is unfinished. Pure Python.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...errors import InputError
from .measure import ERROR, OK, UNFINISHED_STATE, Measured

__all__ = ["looks_like_guidellm", "read_guidellm"]

_STATES = (("successful", OK), ("errored", ERROR), ("incomplete", UNFINISHED_STATE))


def looks_like_guidellm(data: object) -> bool:
    """Whether a JSON document is a GuideLLM report."""
    return isinstance(data, dict) and isinstance(data.get("benchmarks"), list)


def _num(x, where: str) -> float | None:
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        raise InputError(f"{where}: a number, got {x!r}")
    return float(x)


def read_guidellm(data: dict, p: Path, benchmark: int | None = None) -> list[Measured]:
    """Benchmark ``benchmark`` (1-based; None: the only one) of a GuideLLM report."""
    benches = data["benchmarks"]
    if not benches:
        raise InputError(f"{p}: GuideLLM's report holds no benchmarks")
    if benchmark is None:
        if len(benches) > 1:
            raise InputError(f"{p}: GuideLLM's report holds {len(benches)} benchmarks (a "
                             f"sweep); choose one with --benchmark 1 to {len(benches)}")
        benchmark = 1
    if not 1 <= benchmark <= len(benches):
        raise InputError(f"--benchmark {benchmark}: GuideLLM's report {p} holds "
                         f"{len(benches)} benchmark(s), 1 to {len(benches)}")
    b = benches[benchmark - 1]
    reqs = b.get("requests") if isinstance(b, dict) else None
    if not isinstance(reqs, dict) or not any(isinstance(reqs.get(k), list) for k, _ in _STATES):
        raise InputError(f"{p}: benchmark {benchmark} has no requests.successful list (run "
                         "GuideLLM without sample_size=0, which strips them)")
    rows = []
    for key, state in _STATES:
        for j, r in enumerate(reqs.get(key) or []):
            where = f"{p}: benchmark {benchmark}, requests.{key}[{j}]"
            if not isinstance(r, dict):
                raise InputError(f"{where}: a request must be an object")
            timings = (r.get("info") or {}).get("timings") or {}
            start = _num(timings.get("request_start", r.get("request_start_time",
                                                            r.get("start_time"))), where)
            if start is None:
                raise InputError(f"{where}: needs info.timings.request_start or "
                                 "request_start_time")
            rows.append((where, state, start, timings, r))
    if not rows:
        raise InputError(f"{p}: benchmark {benchmark} has no requests")
    t0 = min(row[2] for row in rows)
    out = []
    for i, (where, state, start, timings, r) in enumerate(rows):
        n_in = int(r.get("prompt_tokens") or 1)
        n_out = int(r.get("output_tokens") or 0)
        m = Measured(i, 0, max(n_in, 1), max(n_out, 1), sent_s=start - t0, state=state)
        if state != OK:
            m.error = str((r.get("info") or {}).get("error") or
                          ("cut off before its end" if state == UNFINISHED_STATE else "error"))
            out.append(m)
            continue
        first = _num(timings.get("first_token_iteration", r.get("first_token_time")), where)
        last = _num(timings.get("last_token_iteration", r.get("last_token_time")), where)
        if first is None:
            ttft_ms = _num(r.get("time_to_first_token_ms"), where)
            if ttft_ms is None:
                raise InputError(f"{where}: a successful request needs "
                                 "info.timings.first_token_iteration or time_to_first_token_ms")
            first = start + ttft_ms / 1000
            itl_ms = _num(r.get("inter_token_latency_ms"), where) or 0.0
            last = first + itl_ms / 1000 * max(n_out - 1, 0)
        last = first if last is None or n_out < 2 else max(last, first)
        a = first - t0
        m.chunk_s = np.linspace(a, last - t0, max(n_out, 1)).tolist()
        m.usage_tokens = max(n_out, 1)
        out.append(m)
    return out
