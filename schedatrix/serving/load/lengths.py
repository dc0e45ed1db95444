"""Request lengths in tokens: the length grammar, its draws, and pairs drawn from a trace.

Grammar (one spec for input, one for output; ``parse_length`` reads it):

- ``N``: every request has N tokens (an integer >= 1)
- ``uniform:A-B``: an integer drawn evenly from A to B, both included (1 <= A <= B)
- ``lognormal:MEDIAN,SIGMA``: exp(log(MEDIAN) + SIGMA x Z), Z standard normal (MEDIAN > 0,
  SIGMA >= 0)
- ``exp:MEAN``: exponential with mean MEAN tokens (MEAN > 0)

A continuous draw (lognormal, exp) is rounded to the nearest integer (half to even, numpy's
``rint``) and then clipped to [1, max_tokens]; so ``exp:MEAN``'s mean is a little above MEAN
when MEAN is small (the draws below 0.5 become 1). ``max_tokens`` is the load's cap (e.g. a
model's context); a fixed or uniform spec above the cap is an error, not a clip.

``PairedLengths`` draws whole (input, output) pairs from a trace, so a long prompt keeps the
answer it had: a bootstrap of the trace's rows, with replacement.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import InputError

__all__ = ["Fixed", "Uniform", "LogNormal", "Exponential", "LengthDist", "PairedLengths",
           "parse_length", "draw_lengths", "GRAMMAR", "NO_CAP"]

#: What a length spec may be, for error messages.
GRAMMAR = "N, uniform:A-B, lognormal:MEDIAN,SIGMA or exp:MEAN (tokens)"
#: The cap when the load gives none: 2**31 - 1 tokens, i.e. no practical cap.
NO_CAP = 2**31 - 1


@dataclass(frozen=True)
class Fixed:
    """Every request has ``tokens`` tokens."""

    tokens: int

    def __str__(self) -> str:
        return str(self.tokens)


@dataclass(frozen=True)
class Uniform:
    """An integer drawn evenly from ``low`` to ``high`` tokens, both included."""

    low: int
    high: int

    def __str__(self) -> str:
        return f"uniform:{self.low}-{self.high}"


@dataclass(frozen=True)
class LogNormal:
    """exp(log(median) + sigma x Z) tokens, rounded and clipped (see the module docstring)."""

    median: float
    sigma: float

    def __str__(self) -> str:
        return f"lognormal:{self.median:g},{self.sigma:g}"


@dataclass(frozen=True)
class Exponential:
    """Exponential with mean ``mean`` tokens, rounded and clipped."""

    mean: float

    def __str__(self) -> str:
        return f"exp:{self.mean:g}"


LengthDist = Fixed | Uniform | LogNormal | Exponential

_INT = r"\s*(\d+)\s*"
_NUM = r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*"


def _bad(field: str, text: str, why: str = "") -> InputError:
    why = f" ({why})" if why else ""
    return InputError(f"{field} {text!r}: not a length spec{why}; allowed: {GRAMMAR}")


def parse_length(text: str | int, field: str = "length") -> LengthDist:
    """Parse a length spec (the grammar above). ``field`` names the parameter in errors,
    e.g. ``--input-len``. An int is read as a fixed length. Raises InputError."""
    if isinstance(text, bool):
        raise _bad(field, str(text))
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        raise _bad(field, repr(text), "give a string")
    s = text.strip().lower()
    kind, colon, rest = s.partition(":")
    if not colon:
        m = re.fullmatch(_INT, s)
        if not m:
            raise _bad(field, text)
        n = int(m.group(1))
        if n < 1:
            raise _bad(field, text, "a fixed length must be at least 1")
        return Fixed(n)
    if kind == "uniform":
        m = re.fullmatch(_INT + "-" + _INT, rest)
        if not m:
            raise _bad(field, text, "uniform takes two integers, uniform:A-B")
        a, b = int(m.group(1)), int(m.group(2))
        if not 1 <= a <= b:
            raise _bad(field, text, "uniform:A-B needs 1 <= A <= B")
        return Uniform(a, b)
    if kind == "lognormal":
        m = re.fullmatch(_NUM + "," + _NUM, rest)
        if not m:
            raise _bad(field, text, "lognormal takes a median and a sigma, lognormal:MEDIAN,SIGMA")
        median, sigma = float(m.group(1)), float(m.group(2))
        if not (median > 0 and math.isfinite(median) and math.isfinite(sigma)):
            raise _bad(field, text, "lognormal needs MEDIAN > 0 and a finite SIGMA >= 0")
        return LogNormal(median, sigma)
    if kind == "exp":
        m = re.fullmatch(_NUM, rest)
        if not m:
            raise _bad(field, text, "exp takes a mean, exp:MEAN")
        mean = float(m.group(1))
        if not (mean > 0 and math.isfinite(mean)):
            raise _bad(field, text, "exp needs MEAN > 0")
        return Exponential(mean)
    raise _bad(field, text, f"unknown kind {kind!r}")


def check_cap(dist: LengthDist, max_tokens: int, field: str) -> None:
    """Refuse a fixed or uniform spec that asks for more tokens than the cap."""
    top = dist.tokens if isinstance(dist, Fixed) else dist.high if isinstance(dist, Uniform) \
        else None
    if top is not None and top > max_tokens:
        raise InputError(f"{field} {str(dist)!r}: asks for {top} tokens, above the cap of "
                         f"{max_tokens}; lower the spec or raise the cap")


def draw_lengths(dist: LengthDist, n: int, rng: np.random.Generator,
                 max_tokens: int = NO_CAP) -> np.ndarray:
    """``n`` lengths (int64, in [1, max_tokens]) drawn in order from ``rng``."""
    if isinstance(dist, Fixed):
        return np.full(n, dist.tokens, dtype=np.int64)
    if isinstance(dist, Uniform):
        return rng.integers(dist.low, dist.high + 1, size=n, dtype=np.int64)
    if isinstance(dist, LogNormal):
        x = dist.median * np.exp(dist.sigma * rng.standard_normal(n))
    else:
        x = rng.exponential(dist.mean, size=n)
    return np.clip(np.rint(np.minimum(x, max_tokens)), 1, max_tokens).astype(np.int64)


@dataclass(frozen=True, eq=False)
class PairedLengths:
    """(input, output) token pairs to draw whole, with replacement (int64 arrays, each >= 1).

    ``source`` says where they come from (a trace's file name), for the load's description.
    """

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = "trace"

    def __post_init__(self):
        inp = np.asarray(self.input_tokens, dtype=np.int64)
        out = np.asarray(self.output_tokens, dtype=np.int64)
        if inp.ndim != 1 or inp.shape != out.shape or len(inp) == 0:
            raise InputError(f"paired lengths from {self.source}: need two equally long, "
                             f"non-empty arrays (got {inp.shape} and {out.shape})")
        if inp.min() < 1 or out.min() < 1:
            raise InputError(f"paired lengths from {self.source}: every length must be at "
                             "least 1 token")
        object.__setattr__(self, "input_tokens", inp)
        object.__setattr__(self, "output_tokens", out)

    @classmethod
    def from_requests(cls, requests) -> PairedLengths:
        """The pairs of a ``Requests`` record (e.g. a replayed trace, named by its file)."""
        trace = requests.meta.get("trace")
        return cls(requests.input_tokens, requests.output_tokens,
                   Path(trace).name if trace else requests.source or "requests")

    def __len__(self) -> int:
        return len(self.input_tokens)

    def __str__(self) -> str:
        return f"paired from {self.source} ({len(self):,} pairs)"

    def draw(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` pairs drawn with replacement, in order: (input, output) int64 arrays."""
        i = rng.integers(0, len(self), size=n)
        return self.input_tokens[i], self.output_tokens[i]
