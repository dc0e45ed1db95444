"""Challenge 1: the score of one card, in million tokens per dollar."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .constants import SECONDS_PER_MONTH

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
    rate = np.asarray(true_tok_s, dtype=float)
    rent = np.asarray(rent_per_month, dtype=float)
    if not np.all(np.isfinite(rate)) or np.any(rate < 0):
        raise InputError(f"true_tok_s must be finite and >= 0, got {true_tok_s!r}")
    if not np.all(np.isfinite(rent)) or np.any(rent <= 0):
        raise InputError(f"rent_per_month must be finite and > 0, got {rent_per_month!r}")
    result = rate * SECONDS_PER_MONTH / rent / 1_000_000
    return float(result) if result.ndim == 0 else result
