"""Challenge 3: the eviction policy (worst measured score first) and how to judge it."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np

from ..errors import InputError

__all__ = ["evict_count", "evict_worst", "wrong_evictions"]



def evict_count(share: float, n: int) -> int:
    """How many of ``n`` cards an eviction share evicts: floor(share x n), never round.

    20% of 24 cards evicts 4 (the bargain shortfall's bill proves floor). The share is taken
    as the decimal it prints as, so 29% of 100 cards is 29 (in binary floating point
    0.29 x 100 is 28.999999999999996), and a share below 1 always leaves a card.
    """
    if not (isinstance(share, (int, float)) and math.isfinite(share) and 0 <= share < 1):
        raise InputError(f"share must be a fraction in [0, 1), got {share!r}")
    return math.floor(Decimal(repr(float(share))) * n)


def evict_worst(scores, share: float) -> np.ndarray:
    """Indices of the floor(share x n) lowest scores, worst first (ties: lower index first).

    Parameters
    ----------
    scores : sequence of float, shape (n,)
        Each card's measured score (any unit: only the order matters).
    share : float
        Fraction of the pool to evict, in [0, 1).

    Returns
    -------
    ndarray of int, shape (floor(share x n),)
    """
    values = np.asarray(scores, dtype=float)
    if values.ndim != 1:
        raise InputError(f"scores must be one-dimensional, got shape {values.shape}")
    if np.any(np.isnan(values)):
        raise InputError("scores must not contain NaN")
    k = evict_count(share, values.size)
    return np.argsort(values, kind="stable")[:k].astype(int)


def wrong_evictions(true_tok_s, evicted) -> int:
    """How many evicted cards were healthy: true rate at or above the whole pool's median.

    The median is over all n cards, before eviction (numpy's median: the mean of the two
    middle rates when n is even).
    """
    rates = np.asarray(true_tok_s, dtype=float)
    index = np.asarray(evicted, dtype=int)
    if rates.ndim != 1 or rates.size == 0:
        raise InputError(f"true_tok_s must be a non-empty 1-D sequence, got shape {rates.shape}")
    if index.size and (index.min() < 0 or index.max() >= rates.size):
        raise InputError(f"evicted indices must lie in [0, {rates.size}), got {index.tolist()}")
    return int(np.count_nonzero(rates[index] >= np.median(rates)))
