"""AIPerf's per-request export (``profile_export.jsonl``) read as measured requests.

The schema is AIPerf's ``MetricRecordInfo`` (``aiperf/common/models/record_models.py``; the
fields documented in its ``docs/tutorials/working-with-profile-exports.md``): one JSON object a
line, each with

- ``metadata``: ``request_start_ns`` (epoch nanoseconds, when AIPerf sent the request),
  ``benchmark_phase`` (only ``profiling`` rows are measurements; warm-up rows are skipped),
  ``was_cancelled``;
- ``metrics``: name -> ``{"value": ..., "unit": ...}``; read here: ``input_sequence_length``
  (``error_isl`` on a failed row), ``output_sequence_length`` (or ``output_token_count``),
  ``time_to_first_token``, ``inter_chunk_latency`` (a list: the gaps between consecutive
  streamed responses) and ``request_latency``, in the unit each names (ns, us, ms, s);
- ``error``: null, or ``{"code", "type", "message"}`` for a failed request.

A request's chunk times are its send + TTFT, then each ICL gap after the last; a row without
ICL (a non-streaming request) spreads its output tokens evenly from TTFT to its latency's end.
Send times count from the file's first send. Pure Python.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ...errors import InputError
from .measure import ERROR, OK, Measured

__all__ = ["looks_like_aiperf", "read_aiperf"]

_UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}


def looks_like_aiperf(first: object) -> bool:
    """Whether a file's first JSON object is an AIPerf record."""
    return isinstance(first, dict) and "metadata" in first and "metrics" in first


def _metric(metrics: dict, name: str, where: str, seconds: bool = True):
    m = metrics.get(name)
    if m is None:
        return None
    if not isinstance(m, dict) or "value" not in m:
        raise InputError(f"{where}: metric {name} must be {{value, unit}}, got {m!r}")
    value, unit = m["value"], m.get("unit")
    if not seconds:
        return value
    if unit not in _UNIT_S:
        raise InputError(f"{where}: metric {name} in unit {unit!r}; allowed: "
                         f"{', '.join(_UNIT_S)}")
    scale = _UNIT_S[unit]
    values = value if isinstance(value, list) else [value]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                or v < 0:
            raise InputError(f"{where}: metric {name}: a number >= 0, got {v!r}")
    return [v * scale for v in value] if isinstance(value, list) else value * scale


def _count(metrics: dict, names: tuple[str, ...], where: str) -> int | None:
    for name in names:
        v = _metric(metrics, name, where, seconds=False)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
                raise InputError(f"{where}: metric {name}: a token count >= 0, got {v!r}")
            return int(v)
    return None


def read_aiperf(lines: list[str], p: Path) -> list[Measured]:
    """The profiling rows of an AIPerf export (its lines) as measured requests."""
    rows = []
    for k, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{p}: line {k}"
        try:
            r = json.loads(line)
        except ValueError as err:
            raise InputError(f"{where}: not JSON ({err})") from None
        if not looks_like_aiperf(r) or not isinstance(r["metadata"], dict) or \
                not isinstance(r["metrics"] or {}, dict):
            raise InputError(f"{where}: an AIPerf record needs metadata and metrics objects")
        if r["metadata"].get("benchmark_phase", "profiling") != "profiling":
            continue
        start = r["metadata"].get("request_start_ns")
        if isinstance(start, bool) or not isinstance(start, int | float):
            raise InputError(f"{where}: metadata.request_start_ns must be a number, got "
                             f"{start!r}")
        rows.append((where, start, r["metrics"] or {}, r.get("error")))
    if not rows:
        raise InputError(f"{p}: AIPerf's export has no profiling records")
    t0 = min(start for _, start, _, _ in rows)
    out = []
    for i, (where, start, metrics, error) in enumerate(rows):
        sent = (start - t0) * 1e-9
        n_in = _count(metrics, ("input_sequence_length", "error_isl"), where) or 1
        n_out = _count(metrics, ("output_sequence_length", "output_token_count"), where)
        m = Measured(i, 0, max(n_in, 1), max(n_out or 1, 1), sent_s=sent)
        ttft = _metric(metrics, "time_to_first_token", where)
        if error is not None or ttft is None:
            e = error if isinstance(error, dict) else {}
            m.state = ERROR
            m.error = (f"{e.get('type') or 'error'}: {e.get('message') or 'no first token'}"
                       + (f" (code {e['code']})" if e.get("code") is not None else ""))
            out.append(m)
            continue
        gaps = _metric(metrics, "inter_chunk_latency", where)
        first = sent + ttft
        if gaps is not None:
            m.chunk_s = [first, *(first + np.cumsum(gaps)).tolist()]
        else:
            latency = _metric(metrics, "request_latency", where)
            n = max(n_out or 1, 1)
            end = sent + latency if latency is not None and n > 1 else first
            m.chunk_s = np.linspace(first, max(end, first), n).tolist()
        m.state, m.usage_tokens = OK, max(n_out or len(m.chunk_s), 1)
        out.append(m)
    return out
