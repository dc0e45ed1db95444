"""Per-request results a benchmark client wrote, read back, and put beside the simulation of
the same load (``schedatrix serving measured``).

Formats read:

- **schedatrix**: ``serving bench``'s own, a ``--out`` folder (its ``requests.json``), that file,
  or the object ``--json`` printed (its ``requests``); every run's requests are pooled;
- **vllm**: the JSON file vLLM's ``bench serve --save-result --save-detailed`` writes: per
  request ``input_lens``, ``output_lens``, ``ttfts`` (seconds), ``itls`` (a list of seconds per
  request) and ``errors`` (empty for a success), and the run's ``duration`` (seconds). Its
  requests carry no send times, so figures that need them (queue time, requests in the system)
  are not given, and the rates divide by its ``duration``;
- **aiperf**: AIPerf's per-request export, ``profile_export.jsonl`` (:mod:`.aiperf_export`);
- **guidellm**: GuideLLM's report, ``benchmarks.json``, one benchmark of it
  (:mod:`.guidellm_report`).

A folder is read for the first of ``requests.json``, ``profile_export.jsonl`` and
``benchmarks.json`` it holds; a file's format is told from its content. Each request becomes a
:class:`~.measure.Measured` (its chunk times rebuilt from TTFT and
its gaps), so the figures are computed by the code that computes ``serving run``'s
(:func:`~schedatrix.serving.figures.metrics.figures`). Pure Python: no extra needed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import InputError
from ..figures.metrics import figures
from ..load.requests import DEFAULT_CLASS, Requests
from .aiperf_export import looks_like_aiperf, read_aiperf
from .guidellm_report import looks_like_guidellm, read_guidellm
from .measure import ERROR, OK, Measured, as_run

__all__ = ["Results", "read_results", "FOLDER_FILES", "measured_figures", "COMPARED", "compare"]

#: The figures put side by side (seconds, requests per second, shares).
COMPARED = ("completed", "failed", "ttft_p50", "ttft_p95", "itl_p50", "itl_p95", "tpot_p50",
            "tpot_p95", "e2e_p50", "goodput_rps", "slo_attainment")


@dataclass
class Results:
    """What a client measured: its format, each request, and the run's duration when the file
    gives it (vLLM's) rather than send times."""

    source: str
    format: str
    measured: list[Measured]
    duration_s: float | None = None


#: What a folder of results is read for, in this order.
FOLDER_FILES = ("requests.json", "profile_export.jsonl", "benchmarks.json")
_FORMATS = ("schedatrix's bench, vLLM's bench serve --save-result --save-detailed, AIPerf's "
            "profile_export.jsonl, GuideLLM's benchmarks.json")


def read_results(path: str | Path, benchmark: int | None = None) -> Results:
    """The per-request results in ``path`` (a file, or a client's output folder);
    ``benchmark`` picks one benchmark of a GuideLLM report (1-based)."""
    p = Path(path)
    if p.is_dir():
        p = next((p / f for f in FOLDER_FILES if (p / f).is_file()), p / FOLDER_FILES[0])
    if not p.is_file():
        raise InputError(f"RESULTS {str(path)!r}: no such file (one of {_FORMATS}, or the "
                         "folder holding it)")
    try:
        text = p.read_text()
    except UnicodeDecodeError as err:
        raise InputError(f"RESULTS {str(path)!r}: not text ({err})") from None
    try:
        data = json.loads(text)
    except ValueError as err:
        lines = text.splitlines()
        first = next((x for x in lines if x.strip()), "")
        try:
            head = json.loads(first)
        except ValueError:
            head = None
        if looks_like_aiperf(head):
            return Results(str(p), "aiperf", read_aiperf(lines, p))
        raise InputError(f"RESULTS {str(path)!r}: not JSON, nor JSON lines of AIPerf's "
                         f"records ({err})") from None
    if looks_like_aiperf(data):                       # a one-line export
        return Results(str(p), "aiperf", read_aiperf([text], p))
    if isinstance(data, dict) and "requests" in data and "bench" in data:
        data = data["requests"]
    if isinstance(data, list):
        return Results(str(p), "schedatrix", _from_bench(data, p))
    if isinstance(data, dict) and "ttfts" in data:
        return _from_vllm(data, p)
    if isinstance(data, dict) and any(k in data for k in ("input_lens", "mean_ttft_ms")):
        raise InputError(f"RESULTS {str(path)!r}: vLLM's result without per-request figures; "
                         "run vllm bench serve with --save-result --save-detailed")
    if looks_like_guidellm(data):
        return Results(str(p), "guidellm", read_guidellm(data, p, benchmark))
    if isinstance(data, dict) and "request_latency" in data and "records" not in data:
        raise InputError(f"RESULTS {str(path)!r}: AIPerf's aggregate export "
                         "(profile_export_aiperf.json) has no per-request figures; give its "
                         "profile_export.jsonl")
    raise InputError(f"RESULTS {str(path)!r}: not a format read here ({_FORMATS})")


def _number(x, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) or x < 0:
        raise InputError(f"{where}: a number of seconds >= 0, got {x!r}")
    return float(x)


def _from_bench(runs: list, p: Path) -> list[Measured]:
    if runs and isinstance(runs[0], dict):
        runs = [runs]                         # one run's rows
    out: list[Measured] = []
    for k, rows in enumerate(runs):
        if not isinstance(rows, list):
            raise InputError(f"{p}: run {k} must be a list of requests")
        for j, r in enumerate(rows):
            where = f"{p}: run {k}, request {j}"
            try:
                state, sent = r["state"], r["sent_s"]
                m = Measured(len(out), int(r["class_id"]), int(r["prompt_tokens"]),
                             int(r["max_tokens"]), state=state, error=r.get("error", ""))
            except (KeyError, TypeError, ValueError):
                raise InputError(f"{where}: needs state, sent_s, class_id, prompt_tokens and "
                                 "max_tokens (serving bench's requests.json)") from None
            if sent is not None:
                m.sent_s = _number(sent, where + ", sent_s")
                if r.get("ttft_s") is not None:
                    t = m.sent_s + _number(r["ttft_s"], where + ", ttft_s")
                    m.chunk_s = [t, *(t + np.cumsum(r.get("itl_s") or [])).tolist()]
                if state == OK:
                    m.usage_tokens = int(r.get("output_tokens") or len(m.chunk_s))
            out.append(m)
    return out


def _from_vllm(data: dict, p: Path) -> Results:
    ttfts, itls = data.get("ttfts"), data.get("itls")
    ins, outs = data.get("input_lens"), data.get("output_lens")
    errors = data.get("errors") or [""] * len(ttfts or [])
    if not all(isinstance(x, list) for x in (ttfts, itls, ins, outs, errors)) or \
            len({len(ttfts), len(itls), len(ins), len(outs), len(errors)}) != 1:
        raise InputError(f"{p}: vLLM's ttfts, itls, input_lens, output_lens and errors must be "
                         "lists of one length")
    duration = _number(data.get("duration"), f"{p}: duration")
    if not duration > 0:
        raise InputError(f"{p}: duration must be above 0, got {duration!r}")
    out = []
    for i, (ttft, gaps, n_in, n_out, err) in enumerate(zip(ttfts, itls, ins, outs, errors,
                                                           strict=True)):
        m = Measured(i, 0, max(int(n_in), 1), max(int(n_out), 1), sent_s=0.0)
        if err or not ttft:
            m.state, m.error = ERROR, str(err or "no output")
        else:
            t = _number(ttft, f"{p}: ttfts[{i}]")
            m.chunk_s = [t, *(t + np.cumsum(gaps or [])).tolist()]
            m.state, m.usage_tokens = OK, int(n_out)
        out.append(m)
    return Results(str(p), "vllm", out, duration)


def measured_figures(results: Results, classes=(DEFAULT_CLASS,)) -> list[dict]:
    """The figures of what was measured: overall, then per class (``classes``: the scenario's,
    by index; every request of another client's file is its first), as ``serving run``'s JSON
    has them."""
    ms = results.measured
    n = len(ms)
    classes = tuple(classes)
    cls = np.array([m.class_id for m in ms], dtype=np.int16)
    if n and cls.max() >= len(classes):
        raise InputError(f"{results.source}: requests of class {int(cls.max())}, but the "
                         f"scenario has {len(classes)} class(es)")
    # the record's own arrival times are the measured sends (as_run); these are nominal
    req = Requests(np.zeros(n),
                   np.array([m.prompt_tokens for m in ms], dtype=np.int64),
                   np.array([m.max_tokens for m in ms], dtype=np.int64), cls, classes,
                   synthetic=False, source=results.source)
    run = as_run(req, ms)
    out = []
    for c in (None, *range(len(classes))):
        f = figures(run, c).as_dict()
        if results.duration_s is not None:
            # no send times: the rates over the client's duration; what needs them, unknown
            d = results.duration_s
            met = f["slo_attainment"] * f["arrived"]
            f.update(throughput_rps=f["completed"] / d, goodput_rps=met / d,
                     throughput_tok_s=None, run_throughput_tok_s=None, e2e_mean=f["e2e_mean"],
                     mean_in_system=None, span_s=d, load_span_s=None)
        out.append(f)
    return out


def compare(measured: dict, simulated: dict) -> dict:
    """Per figure of :data:`COMPARED`: measured, simulated and the distance (measured /
    simulated - 1; None where either is unknown or the simulated one is 0)."""
    out = {}
    for k in COMPARED:
        a, b = measured.get(k), simulated.get(k)
        dist = None if a is None or b is None or b == 0 else a / b - 1
        out[k] = {"measured": a, "simulated": b, "distance": dist}
    return out
