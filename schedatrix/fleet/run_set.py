"""Challenge 2: the whole-card greedy that sizes the run set, and the targets it covers."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .constants import JUMPY_PEAK
from .inputs import real_array, real_number

__all__ = ["SHAPES", "greedy_run_set", "shape_target"]

#: The demand shapes, which are the run-set policies.
SHAPES = ("steady", "lazy", "jumpy")


def greedy_run_set(rates_tok_s, target_tok_s: float) -> np.ndarray:
    """Indices of the shortest highest-rate-first prefix whose rates sum to >= the target.

    Cards are sorted by rate, highest first (ties: lower index first). When no prefix reaches
    the target, every card runs; a target of 0 takes the best card. O(n log n) for the sort,
    O(n) for the scan.

    Parameters
    ----------
    rates_tok_s : sequence of real numbers, shape (n,)
        Each card's rate in tokens per second, finite and >= 0: a list, tuple or array of
        any real type (Python or numpy). NaN, infinities, negative rates, bools, strings and
        other shapes are refused.
    target_tok_s : real number
        Tokens per second the run set must cover, >= 0 (``inf`` keeps every card); any real
        type. NaN, ``None`` and negative targets are refused.

    Returns
    -------
    ndarray of int, the chosen indices in the order they were taken.
    """
    rates = real_array("rates_tok_s", rates_tok_s, "a one-dimensional sequence of rates in tok/s")
    ok = np.isfinite(rates) & (rates >= 0)
    if not np.all(ok):
        raise InputError(f"rates_tok_s must be finite rates >= 0 tok/s, got "
                         f"{float(rates[~ok][0])!r} at index {int(np.flatnonzero(~ok)[0])}")
    target = real_number("target_tok_s", target_tok_s, "a number of tok/s >= 0 (inf: every card)",
                         lambda x: x >= 0)
    order = np.argsort(-rates, kind="stable")
    covered = np.cumsum(rates[order]) >= target
    count = int(np.argmax(covered)) + 1 if covered.any() else rates.size
    return order[:count].astype(int)


def shape_target(shape: str, demand_tok_s: float, headroom: float) -> float:
    """The tokens per second a shape sizes its run set to (and the ideal operator too).

    steady: average x (1 + headroom); lazy: the average; jumpy: the burst, 1.8 x average.
    Rounded to a millionth of a token per second so that 60,000 x 1.1 is 66,000 exactly.
    """
    if shape == "steady":
        return round(demand_tok_s * (1 + headroom), 6)
    if shape == "lazy":
        return float(demand_tok_s)
    if shape == "jumpy":
        return round(demand_tok_s * JUMPY_PEAK, 6)
    raise InputError(f"shape must be one of {', '.join(SHAPES)}, got {shape!r}")
