"""Fit the model's host and front-end terms to a user's per-request measurements.

``schedatrix serving calibrate`` hands over what a benchmark client measured on a deployment
(one :class:`Observed` per results file: each completed request's send time, prompt and output
tokens, TTFT and TPOT, in seconds) and the design that was measured. Each file's requests are
replayed on the design at their send times, so the simulated requests meet the same queue the
measured ones met; then, on the fitting rows:

1. **host step** (``host_step_s``): the host's seconds per iteration, found by bisection so that
   the median of simulated - measured TPOT is 0 (TPOT grows with the host step; ingress and
   egress do not move it). Where TPOT does not move with it (async scheduling hides a host
   shorter than the GPU's step), it is not identified and the engine's own is kept;
2. **client path**: the TTFT left over (measured - simulated) regressed on prompt tokens by
   least squares: the intercept is the front end plus the first token's delivery (written as
   ``front_end_s``), the slope the tokenization per prompt token; each at least 0. Where the
   prompts are all about one length the slope is not identified and the design's is kept.

The two are fitted in turn, twice, each with the other's latest terms; the client path's
regression is repeated four times on its own residuals (the terms move the queue a little),
then polished by Nelder-Mead on the mean absolute TTFT error (a request's wait for the next
iteration jumps as its arrival moves, which biases the regression a little). One row in
``held_out_every`` (every fourth by default) is held out of both and reports the fit's error:
the median relative error of TTFT and TPOT per request, before (the design as given) and after.
Pure: no printing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design
from ..load.requests import DEFAULT_CLASS, Requests
from ..perf.client_path import ClientPath
from ..perf.user_calibration import UserCalibration
from ..sim.simulate import simulate

__all__ = ["Observed", "CalibrationFit", "calibrate", "HOST_MAX_S", "MIN_ROWS"]

#: The bisection's range of the host step (seconds).
HOST_MAX_S = 0.1
#: Completed requests a fit needs at least (fitting and held-out rows together).
MIN_ROWS = 12
#: TPOT must move at least this share of a host step's change to identify it.
_MIN_SLOPE = 0.2
#: Rounds of (host step, client path), and steps of the client path's fit in each.
_ROUNDS, _PATH_STEPS = 2, 4
#: Simulations the client path's polish may take.
_REFINE_EVALS = 80
#: Prompt lengths must spread at least this much (coefficient of variation) to fit the slope.
_MIN_SPREAD = 0.1


@dataclass(frozen=True)
class Observed:
    """One file's completed requests (arrays of one length; seconds and tokens)."""

    source: str
    sent_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray          # NaN for a request of one output token


@dataclass(frozen=True)
class CalibrationFit:
    """The fitted calibration, the fit's errors and what could not be fitted."""

    calibration: UserCalibration
    errors: dict
    notes: tuple[str, ...]
    rows: int
    held_out: int


def _load(o: Observed, classes) -> tuple[Requests, np.ndarray]:
    order = np.argsort(o.sent_s, kind="stable")
    t = o.sent_s[order] - o.sent_s[order[0]]
    return Requests(t, o.prompt_tokens[order].astype(np.int64),
                    np.maximum(o.output_tokens[order], 1).astype(np.int64),
                    np.zeros(len(t), dtype=np.int16), tuple(classes), synthetic=False,
                    source=o.source), order


class _Fitter:
    def __init__(self, observed: list[Observed], design: Design, held_out_every: int,
                 implementation: str, classes):
        self.design, self.implementation = design, implementation
        self.loads = []
        for o in observed:
            req, order = _load(o, classes)
            self.loads.append((req, o.ttft_s[order], o.tpot_s[order], o.prompt_tokens[order]))
        n = sum(len(r) for r, *_ in self.loads)
        self.test = np.arange(n) % held_out_every == held_out_every - 1
        self.ttft = np.concatenate([x[1] for x in self.loads])
        self.tpot = np.concatenate([x[2] for x in self.loads])
        self.prompt = np.concatenate([x[3] for x in self.loads]).astype(float)

    def simulated(self, host_s: float | None, path: ClientPath):
        """Per request: simulated TTFT and TPOT on the design with these terms."""
        d = replace(self.design, client_path=path,
                    host_ms=None if host_s is None else host_s * 1000)
        ttft, tpot = [], []
        for req, *_ in self.loads:
            run = simulate(req, d, self.implementation)
            first = run.first_token_s - req.arrival_s
            out = req.output_tokens
            with np.errstate(invalid="ignore", divide="ignore"):
                tp = np.where(out > 1, (run.done_s - run.first_token_s) / (out - 1), np.nan)
            ttft.append(first)
            tpot.append(tp)
        return np.concatenate(ttft), np.concatenate(tpot)

    def tpot_gap(self, host_s: float, path: ClientPath) -> float:
        """Median simulated - measured TPOT over the fitting rows."""
        _, tpot = self.simulated(host_s, path)
        d = (tpot - self.tpot)[~self.test]
        d = d[np.isfinite(d)]
        return float(np.median(d)) if len(d) else 0.0

    def errors(self, host_s, path) -> dict:
        ttft, tpot = self.simulated(host_s, path)
        out = {}
        for name, rows in (("fit", ~self.test), ("held_out", self.test)):
            for k, sim, meas in (("ttft", ttft, self.ttft), ("tpot", tpot, self.tpot)):
                rel = np.abs(sim[rows] / meas[rows] - 1)
                rel = rel[np.isfinite(rel)]
                out[f"{k}_{name}"] = float(np.median(rel)) if len(rel) else None
        return out


def _slope(f: _Fitter, h: float, path: ClientPath, step: float = 5e-4) -> float:
    """How much the median TPOT gap moves per second of host step around ``h``."""
    lo = max(h - step, 0.0)
    return (f.tpot_gap(h + step, path) - f.tpot_gap(lo, path)) / (h + step - lo)


_NOT_IDENTIFIED = ("host step not identified: the simulated TPOT hardly moves with it there "
                   "(async scheduling hides a host shorter than the GPU's step); the engine's "
                   "is kept")


def _fit_host(f: _Fitter, path: ClientPath, notes: list) -> float | None:
    lo, hi = 0.0, HOST_MAX_S
    tol = 0.01 * float(np.nanmedian(f.tpot[~f.test]))
    g_lo = f.tpot_gap(lo, path)
    if g_lo >= -tol:
        if _slope(f, lo, path) < _MIN_SLOPE:
            notes.append(_NOT_IDENTIFIED)
            return None
        notes.append("host step at its bound 0: the model is slower per token than measured "
                     "even with no host time (its GPU terms are too slow for this deployment, "
                     "and no GPU-efficiency knob is fitted)")
        return 0.0
    if f.tpot_gap(hi, path) <= 0:
        notes.append(f"host step at its bound {HOST_MAX_S:g} s: the deployment is far slower "
                     "per token than the model")
        return hi
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2
        if f.tpot_gap(mid, path) < 0:
            lo = mid
        else:
            hi = mid
    mid = (lo + hi) / 2
    if _slope(f, mid, path) < _MIN_SLOPE:
        notes.append(_NOT_IDENTIFIED)
        return None
    return mid


def _fit_path(f: _Fitter, host_s, path: ClientPath, fit_slope: bool) -> ClientPath:
    ttft, _ = f.simulated(host_s, path)
    rows = ~f.test & np.isfinite(ttft) & np.isfinite(f.ttft)
    r, x = (f.ttft - ttft)[rows], f.prompt[rows]
    c0, k = path.front_end_s + path.egress_s, path.tokenize_s_per_token
    if fit_slope:
        a, b = np.linalg.lstsq(np.column_stack([np.ones_like(x), x]), r, rcond=None)[0]
        if k + b < 0:                     # no negative tokenization: the intercept alone
            b = -k
            a = float(np.mean(r - b * x))
        c0, k = c0 + a, k + b
    else:
        c0 = c0 + float(np.median(r))
    c0 = max(float(c0), 0.0)
    return ClientPath(front_end_s=min(c0, 1.0), tokenize_s_per_token=min(max(float(k), 0.0),
                                                                          1.0))


def _refine_path(f: _Fitter, host_s, path: ClientPath, fit_slope: bool) -> ClientPath:
    """The client path polished by Nelder-Mead on the fitting rows' mean absolute TTFT error,
    from the regression's terms (a request's wait for the next iteration jumps as its arrival
    moves, which biases the regression a little)."""
    from scipy.optimize import minimize
    rows = ~f.test & np.isfinite(f.ttft)
    scale = np.array([1e-3, 1e-6])           # milliseconds and microseconds a token

    def terms(x):
        x = np.maximum(x, 0.0) * scale
        return ClientPath(front_end_s=min(float(x[0]), 1.0),
                          tokenize_s_per_token=float(x[1]) if fit_slope
                          else path.tokenize_s_per_token)

    def cost(x):
        ttft, _ = f.simulated(host_s, terms(x))
        r = np.abs(ttft - f.ttft)[rows]
        return float(np.mean(r[np.isfinite(r)]))

    x0 = np.array([path.front_end_s, path.tokenize_s_per_token]) / scale
    step = np.maximum(np.abs(x0) * 0.1, [0.2, 0.2])
    simplex = [x0, x0 + [step[0], 0], x0 + [0, step[1]]]
    best = minimize(cost, x0, method="Nelder-Mead",
                    options={"initial_simplex": simplex, "maxfev": _REFINE_EVALS,
                             "xatol": 1e-3, "fatol": 1e-7})
    return terms(best.x) if best.fun <= cost(x0) else path


def calibrate(observed: list[Observed], design: Design, held_out_every: int = 4,
              implementation: str = "fast", classes=(DEFAULT_CLASS,),
              source: str = "") -> CalibrationFit:
    """The calibration of ``design`` fitted to ``observed`` (see the module docstring)."""
    observed = [o for o in observed if len(o.sent_s)]
    n = sum(len(o.sent_s) for o in observed)
    if n < MIN_ROWS:
        raise InputError(f"RESULTS: {n} completed request(s) with send times; a calibration "
                         f"needs at least {MIN_ROWS}")
    if not isinstance(held_out_every, int) or held_out_every < 2:
        raise InputError(f"--held-out-every must be a whole number >= 2, got "
                         f"{held_out_every!r}")
    f = _Fitter(observed, design, held_out_every, implementation, classes)
    notes: list[str] = []
    x = f.prompt[~f.test]
    fit_slope = bool(np.std(x) > _MIN_SPREAD * np.mean(x))
    given = design.client()
    path = ClientPath(tokenize_s_per_token=0.0 if fit_slope else given.tokenize_s_per_token)
    if not fit_slope:
        notes.append("tokenization per prompt token not identified (the prompts are all "
                     "about one length); the design's is kept")
    host, round_notes = None, []
    for _ in range(_ROUNDS):
        round_notes = []
        host = _fit_host(f, path, round_notes)
        for _ in range(_PATH_STEPS):
            path = _fit_path(f, host, path, fit_slope)
    path = _refine_path(f, host, path, fit_slope)
    notes += round_notes
    before = f.errors(None if design.host_ms is None else design.host_ms / 1000, given)
    after = f.errors(host, path)
    errors = {**{f"{k}_before": v for k, v in before.items()},
              **{f"{k}_after": v for k, v in after.items()}}
    fit = {"rows": int((~f.test).sum()), "held_out_rows": int(f.test.sum()),
           "held_out_every": held_out_every, "error": "median |simulated / measured - 1| "
           "per request", **errors, "notes": notes}
    cal = UserCalibration(host, path, source=source, fit=fit)
    return CalibrationFit(cal, errors, tuple(notes), int((~f.test).sum()), int(f.test.sum()))
