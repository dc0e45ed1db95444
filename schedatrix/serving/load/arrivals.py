"""Open-loop arrival times: Poisson, gamma with a burstiness factor, and bursts by time warp.

Gaps between arrivals are gamma distributed exactly as vLLM's ``benchmark_serving`` draws
them: shape = burstiness, scale = 1 / (rate x burstiness); so the mean gap is 1 / rate and
its coefficient of variation is 1 / sqrt(burstiness). Burstiness 1 is Poisson (exponential
gaps); below 1 arrivals come in clumps, above 1 more evenly.

Bursts multiply the rate over [start_s, end_s). They work for any gap law by warping time:
the gamma process runs in "operational time" at the base rate, and operational time passes
``multiplier`` times faster than real time inside a burst (products where bursts overlap; a
multiplier of 0 is a silence). Within a burst the gaps keep their coefficient of variation.

The first arrival comes one gap after time 0 (an ordinary renewal process).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from ...errors import InputError

__all__ = ["Burst", "Arrivals", "MIN_RATE_RPS", "MAX_RATE_RPS"]

#: The rates a load may have, requests/s: arrivals then stay where a float keeps microseconds.
MIN_RATE_RPS, MAX_RATE_RPS = 1e-6, 1e7


def _positive(name: str, value, allow_zero: bool = False) -> float:
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        sign = ">= 0" if allow_zero else "> 0"
        raise InputError(f"{name} {value!r}: must be a finite number {sign}")
    return float(value)


@dataclass(frozen=True)
class Burst:
    """The arrival rate times ``multiplier`` (>= 0) over [start_s, end_s) seconds."""

    start_s: float
    end_s: float
    multiplier: float

    def __post_init__(self):
        _positive("burst start_s", self.start_s, allow_zero=True)
        _positive("burst end_s", self.end_s)
        _positive("burst multiplier", self.multiplier, allow_zero=True)
        if self.end_s <= self.start_s:
            raise InputError(f"burst [{self.start_s}, {self.end_s}): end_s must be after "
                             "start_s")


@dataclass(frozen=True)
class Arrivals:
    """An open-loop arrival process: ``rate_rps`` requests/s, gamma gaps of the given
    ``burstiness`` (> 0; 1 = Poisson), and ``bursts`` multiplying the rate for a while."""

    rate_rps: float
    burstiness: float = 1.0
    bursts: tuple[Burst, ...] = ()

    def __post_init__(self):
        rate = _positive("--rate", self.rate_rps)
        if not MIN_RATE_RPS <= rate <= MAX_RATE_RPS:
            # a request every 11.6 days at the least: slower, arrivals lie so far out that a
            # float's resolution swallows the latencies (at 1e-300 req/s TTFT read 0 s)
            raise InputError(f"--rate {self.rate_rps!r}: must be from {MIN_RATE_RPS:g} to "
                             f"{MAX_RATE_RPS:g} requests/s (times then keep microseconds)")
        _positive("--burstiness", self.burstiness)
        object.__setattr__(self, "bursts", tuple(self.bursts))
        for b in self.bursts:
            if not isinstance(b, Burst):
                raise InputError(f"bursts: {b!r} is not a Burst(start_s, end_s, multiplier)")

    def _profile(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Segment starts (real s), multipliers, and operational time at each start; the
        last segment runs to infinity at multiplier 1."""
        edges = np.unique(np.array([0.0] + [x for b in self.bursts
                                            for x in (b.start_s, b.end_s)]))
        mult = np.ones(len(edges))
        for b in self.bursts:
            mult[(edges >= b.start_s) & (edges < b.end_s)] *= b.multiplier
        op = np.concatenate([[0.0], np.cumsum(mult[:-1] * np.diff(edges))])
        return edges, mult, op

    def operational(self, t_s: np.ndarray) -> np.ndarray:
        """Operational time (seconds at the base rate) at real times ``t_s`` >= 0."""
        edges, mult, op = self._profile()
        j = np.searchsorted(edges, t_s, side="right") - 1
        return op[j] + (t_s - edges[j]) * mult[j]

    def real(self, op_s: np.ndarray) -> np.ndarray:
        """Real time at operational times ``op_s`` >= 0 (the inverse of ``operational``;
        silences, multiplier 0, are skipped)."""
        edges, mult, op = self._profile()
        j = np.searchsorted(op, op_s, side="right") - 1  # never a silent segment: see below
        return edges[j] + (op_s - op[j]) / mult[j]
    # A silent segment j has op[j] == op[j + 1], so side="right" always lands past it.

    def gaps(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` gaps in operational seconds, drawn in order (gamma, as vLLM draws them)."""
        return rng.gamma(self.burstiness, 1.0 / (self.rate_rps * self.burstiness), size=n)

    def times(self, rng: np.random.Generator, n: int | None = None,
              duration_s: float | None = None) -> np.ndarray:
        """Arrival times in seconds (float64, ascending): the first ``n``, or all before
        ``duration_s``. The gaps are drawn in order from ``rng``, so a run of duration D is
        a prefix of a longer one with the same generator seed."""
        if n is not None:
            return self.real(np.cumsum(self.gaps(n, rng)))
        horizon = float(self.operational(np.array([duration_s]))[0])
        parts, total = [], 0.0
        batch = max(1024, int(1.1 * horizon * self.rate_rps) + 64)
        while total <= horizon:
            op = total + np.cumsum(self.gaps(batch, rng))
            parts.append(op)
            total = op[-1]
        op = np.concatenate(parts)
        return self.real(op[op < horizon])
