"""Challenge 1: the score of one card, in million tokens per dollar."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .constants import SECONDS_PER_MONTH
from .inputs import is_real, shown

__all__ = ["score"]


def score(true_tok_s, rent_per_month):
    """Million tokens a card serves per dollar of rent over one month.

    ``score = true_tok_s x 2,628,000 s / rent_per_month / 1,000,000``.

    Parameters
    ----------
    true_tok_s : float or array of float
        The card's serving rate in tokens per second (>= 0).
    rent_per_month : float or array of float
        The card's rent in dollars per month (> 0).

    Returns
    -------
    float, or an ndarray broadcast from the two inputs.

    >>> round(score(10_000, 2_600), 3)
    10.108
    """
    rate = _reals("true_tok_s", true_tok_s, "finite and >= 0")
    rent = _reals("rent_per_month", rent_per_month, "finite and > 0")
    if not np.all(np.isfinite(rate)) or np.any(rate < 0):
        raise InputError(f"true_tok_s must be finite and >= 0, got {true_tok_s!r}")
    if not np.all(np.isfinite(rent)) or np.any(rent <= 0):
        raise InputError(f"rent_per_month must be finite and > 0, got {rent_per_month!r}")
    result = rate * SECONDS_PER_MONTH / rent / 1_000_000
    return float(result) if result.ndim == 0 else result


def _reals(name: str, value, allowed: str) -> np.ndarray:
    """A real number or an array of them as float64: the numbers :class:`~.plan.Plan` takes
    (no bool, no string, no None: ``score("10000", 2600)`` and ``score(True, True)`` are
    refused as Plan refuses them)."""
    if is_real(value):
        return np.asarray(float(value))
    if isinstance(value, (str, bytes, bool, np.bool_)) or value is None:
        raise InputError(f"{name} must be {allowed} (a number or an array of numbers), got "
                         f"{shown(value)}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):   # ragged nesting
        raise InputError(f"{name} must be {allowed}, got {value!r}") from None
    if arr.dtype.kind == "O" or not isinstance(value, np.ndarray):
        bad = [v for v in np.asarray(value, dtype=object).ravel() if not is_real(v)]
        if bad:
            raise InputError(f"{name} must be {allowed} (numbers), got an element "
                             f"{shown(bad[0])}")
    elif arr.dtype.kind not in "iuf":
        raise InputError(f"{name} must be {allowed} (numbers), got an array of {arr.dtype}")
    return arr.astype(float)
