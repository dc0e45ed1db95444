"""Fit a trace: its rate over time, burstiness and lengths, and a synthetic load that
reproduces them, compared side by side with the trace.

How the synthetic load is built from a trace of N requests over S seconds (first arrival at 0):

- rate: N / S requests/s, times a multiplier per window of ``window_s`` seconds (a ``Burst``
  per window: that window's rate over the mean), so the rate profile follows the trace's;
- burstiness: the gamma shape 1 / CV^2, with CV measured *within* the rate profile (the
  trace's arrivals mapped to operational time by the profile, as the generator maps back).
  The trace's raw CV also holds the swings of its rate over the hour; measuring it after the
  profile keeps those swings from being counted twice. Both are reported;
- lengths: ``"paired"`` (default) draws whole (input, output) pairs from the trace, so the
  percentiles and the input/output relation are the trace's; ``"lognormal"`` fits a lognormal
  to each side (median = exp(mean log), sigma = std log), drawn independently and capped at
  the trace's largest: smaller to write down, but it loses the pairing and misses the tails
  of a distribution that is not lognormal.

``figures`` measures any Requests the same way, so the trace and the synthetic run are
compared by one code path. The synthetic run is labelled synthetic; the trace keeps its label.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from ...errors import InputError
from .arrivals import Arrivals, Burst
from .lengths import LogNormal, PairedLengths
from .requests import Requests
from .workload import Load, generate

__all__ = ["LoadFigures", "Fit", "figures", "fit", "PERCENTILES"]

PERCENTILES = (50, 90, 95, 99)
#: The smallest CV a fitted load takes (burstiness 1e6: all but clockwork), for a trace whose
#: gaps are all equal.
MIN_CV = 1e-3


@dataclass(frozen=True, eq=False)
class LoadFigures:
    """What a load looks like: counts, rate per window, gap variability, length percentiles.

    span_s : from 0 to the last arrival (or the span given); rate_rps = requests / span_s
    window_start_s, window_rate_rps : each window's start and its requests / its length
    cv : coefficient of variation (std / mean, population) of the gaps between arrivals
    burstiness : 1 / cv^2, the gamma shape with that CV
    input_pct, output_pct : {50: p50, 90: ..., 95: ..., 99: ...} tokens (numpy's linear)
    log_corr : correlation of log input and log output tokens
    """

    requests: int
    span_s: float
    rate_rps: float
    window_s: float
    window_start_s: np.ndarray
    window_rate_rps: np.ndarray
    cv: float
    burstiness: float
    input_pct: dict[int, float]
    output_pct: dict[int, float]
    log_corr: float
    synthetic: bool


def _check_window(window_s) -> float:
    if isinstance(window_s, bool) or not isinstance(window_s, Real) or not (
            math.isfinite(window_s) and window_s > 0):
        raise InputError(f"window_s {window_s!r}: must be a finite number of seconds > 0")
    return float(window_s)


def figures(requests: Requests, window_s: float = 60.0,
            span_s: float | None = None) -> LoadFigures:
    """The figures of an open-loop load (at least 3 requests), windows from 0 s."""
    window_s = _check_window(window_s)
    if requests.closed_loop is not None:
        raise InputError("fit: a closed-loop load has no arrival times to measure")
    n = len(requests)
    if n < 3:
        raise InputError(f"fit: {n} requests; need at least 3 to measure gaps")
    t = requests.arrival_s
    span = float(t[-1]) if span_s is None else float(span_s)
    if not span > 0:
        raise InputError("fit: every request arrives at 0 s; no rate to measure")
    starts = np.arange(0.0, span, window_s)
    lengths = np.minimum(starts + window_s, span) - starts
    counts = np.bincount(np.minimum((t // window_s).astype(np.int64), len(starts) - 1),
                         minlength=len(starts))
    gaps = np.diff(t)
    cv = float(np.std(gaps) / np.mean(gaps)) if np.mean(gaps) > 0 else math.inf
    inp, out = requests.input_tokens, requests.output_tokens
    return LoadFigures(
        requests=n, span_s=span, rate_rps=n / span, window_s=window_s,
        window_start_s=starts, window_rate_rps=counts / lengths, cv=cv,
        burstiness=1 / cv**2 if cv > 0 else math.inf,
        input_pct={p: float(np.percentile(inp, p)) for p in PERCENTILES},
        output_pct={p: float(np.percentile(out, p)) for p in PERCENTILES},
        log_corr=_log_corr(inp, out), synthetic=requests.synthetic)


def _log_corr(a: np.ndarray, b: np.ndarray) -> float:
    la, lb = np.log(a), np.log(b)
    if np.std(la) == 0 or np.std(lb) == 0:
        return math.nan
    return float(np.corrcoef(la, lb)[0, 1])


@dataclass(frozen=True, eq=False)
class Fit:
    """A trace's figures, the synthetic load fitted to them, and a run of that load.

    trace, synthetic : the figures of the trace and of one generated run (seed ``seed``,
        over the trace's span, measured on the trace's windows)
    local_cv : the gaps' CV within the rate profile; load.burstiness = 1 / local_cv^2
    load : the synthetic Load; lengths : "paired" or "lognormal"
    """

    trace: LoadFigures
    synthetic: LoadFigures
    local_cv: float
    load: Load
    lengths: str
    seed: int

    def rows(self) -> list[tuple[str, float, float]]:
        """(figure, trace, synthetic) rows, for a table or a plot."""
        a, b = self.trace, self.synthetic
        rows = [("requests", a.requests, b.requests), ("rate_rps", a.rate_rps, b.rate_rps)]
        for q in (10, 50, 90):
            rows.append((f"window_rate_p{q}_rps", float(np.percentile(a.window_rate_rps, q)),
                         float(np.percentile(b.window_rate_rps, q))))
        rows += [("cv", a.cv, b.cv), ("burstiness", a.burstiness, b.burstiness)]
        for side in ("input", "output"):
            for p in PERCENTILES:
                rows.append((f"{side}_p{p}", getattr(a, f"{side}_pct")[p],
                             getattr(b, f"{side}_pct")[p]))
        rows.append(("log_corr_input_output", a.log_corr, b.log_corr))
        return rows

    def as_dict(self) -> dict:
        """Plain data (JSON-ready): the rows, the window rates side by side, the load."""
        return {
            "window_s": self.trace.window_s, "lengths": self.lengths, "seed": self.seed,
            "local_cv": self.local_cv, "load": self.load.describe(),
            "rows": [{"figure": f, "trace": x, "synthetic": y} for f, x, y in self.rows()],
            "window_start_s": self.trace.window_start_s.tolist(),
            "trace_window_rate_rps": self.trace.window_rate_rps.tolist(),
            "synthetic_window_rate_rps": self.synthetic.window_rate_rps.tolist(),
        }


def fit(trace: Requests, window_s: float = 60.0, lengths: str = "paired",
        seed: int = 0) -> Fit:
    """Fit ``trace`` (an open-loop Requests, e.g. ``replay(path)``): see the module docstring.
    ``lengths``: "paired" or "lognormal"; ``seed`` seeds the synthetic run compared."""
    if lengths not in ("paired", "lognormal"):
        raise InputError(f"lengths {lengths!r}: allowed: paired, lognormal")
    t_fig = figures(trace, window_s)
    span = t_fig.span_s
    mult = t_fig.window_rate_rps / t_fig.rate_rps
    ends = np.minimum(t_fig.window_start_s + t_fig.window_s, span)
    bursts = tuple(Burst(float(s), float(e), float(m))
                   for s, e, m in zip(t_fig.window_start_s, ends, mult, strict=True))
    profile = Arrivals(t_fig.rate_rps, 1.0, bursts)
    gaps = np.diff(profile.operational(trace.arrival_s))
    local_cv = float(np.std(gaps) / np.mean(gaps))
    if lengths == "paired":
        length_knobs = {"pairs": PairedLengths.from_requests(trace)}
    else:
        length_knobs = {
            "input_len": _lognormal(trace.input_tokens), "max_input_tokens":
            int(trace.input_tokens.max()), "output_len": _lognormal(trace.output_tokens),
            "max_output_tokens": int(trace.output_tokens.max())}
    load = Load(rate_rps=t_fig.rate_rps, burstiness=1 / max(local_cv, MIN_CV)**2, bursts=bursts,
                **length_knobs)
    synthetic = generate(load, seed, duration_s=span)
    s_fig = figures(synthetic, window_s, span_s=span)
    return Fit(t_fig, s_fig, local_cv, load, lengths, seed)


def _lognormal(tokens: np.ndarray) -> LogNormal:
    logs = np.log(tokens)
    return LogNormal(float(np.exp(np.mean(logs))), float(np.std(logs)))
