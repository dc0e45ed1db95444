"""Challenge 2: the whole-card greedy that sizes the run set, and the targets it covers."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .constants import JUMPY_PEAK

__all__ = ["SHAPES", "greedy_run_set", "shape_target"]

#: The demand shapes, which are the run-set policies.
SHAPES = ("steady", "lazy", "jumpy")


def greedy_run_set(rates_tok_s, target_tok_s: float) -> np.ndarray:
    """Indices of the shortest highest-rate-first prefix whose rates sum to >= the target.

    Cards are sorted by rate, highest first (ties: lower index first). When no prefix reaches
    the target, every card runs. O(n log n) for the sort, O(n) for the scan.

    Parameters
    ----------
    rates_tok_s : sequence of float, shape (n,)
    target_tok_s : float
        Tokens per second the run set must cover (``inf`` keeps every card).

    Returns
    -------
    ndarray of int, the chosen indices in the order they were taken.
    """
    rates = np.asarray(rates_tok_s, dtype=float)
    if rates.ndim != 1:
        raise InputError(f"rates_tok_s must be one-dimensional, got shape {rates.shape}")
    if np.any(np.isnan(rates)) or np.isnan(target_tok_s):
        raise InputError("rates_tok_s and target_tok_s must not be NaN")
    order = np.argsort(-rates, kind="stable")
    covered = np.cumsum(rates[order]) >= target_tok_s
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
