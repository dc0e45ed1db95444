"""Challenge 3: the eviction policy (worst measured score first) and how to judge it."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np

from ..errors import InputError
from .inputs import is_real, is_whole, real_array, real_number, shown, whole_number

__all__ = ["evict_count", "evict_worst", "wrong_evictions"]



def evict_count(share: float, n: int) -> int:
    """How many of ``n`` cards an eviction share evicts: floor(share x n), never round.

    20% of 24 cards evicts 4 (the bargain shortfall's bill proves floor). The share is taken
    as the decimal it prints as, so 29% of 100 cards is 29 (in binary floating point
    0.29 x 100 is 28.999999999999996), and a share below 1 always leaves a card.

    ``share`` is any real number (Python's or numpy's) in [0, 1); ``n`` a whole number >= 0
    (an int or a numpy integer).
    """
    share = real_number("share", share, "a fraction in [0, 1)",
                        lambda x: math.isfinite(x) and 0 <= x < 1)
    n = whole_number("n", n, low=0)
    return math.floor(Decimal(repr(float(share))) * n)


def evict_worst(scores, share: float) -> np.ndarray:
    """Indices of the floor(share x n) lowest scores, worst first (ties: lower index first).

    Parameters
    ----------
    scores : sequence of real numbers, shape (n,)
        Each card's measured score (any unit: only the order matters); a list, tuple or
        array of any real type (Python or numpy). NaN, bools, strings and other shapes are
        refused.
    share : real number
        Fraction of the pool to evict, in [0, 1): a float, an int (0) or any numpy real.

    Returns
    -------
    ndarray of int, shape (floor(share x n),)
    """
    values = real_array("scores", scores, "a one-dimensional sequence of real numbers")
    if np.any(np.isnan(values)):
        raise InputError(f"scores must not contain NaN, got one at index "
                         f"{int(np.flatnonzero(np.isnan(values))[0])}")
    k = evict_count(share, values.size)
    return np.argsort(values, kind="stable")[:k].astype(int)


_EVICTED = "card indices (whole numbers from 0 to n - 1, each once) or a boolean mask of n cards"


def _evicted_indices(evicted, n: int) -> np.ndarray:
    """The evicted cards as indices: from indices (each once) or from a mask of n cards."""
    if isinstance(evicted, (str, bytes)) or evicted is None or is_real(evicted):
        raise InputError(f"evicted must be {_EVICTED}, got {shown(evicted)}")
    items = evicted if isinstance(evicted, np.ndarray) else list(evicted)
    arr = np.asarray(items)
    if arr.ndim != 1:
        raise InputError(f"evicted must be {_EVICTED}, got an array of shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=int)
    if arr.dtype.kind == "b":
        if not isinstance(evicted, np.ndarray) and not all(
                isinstance(v, (bool, np.bool_)) for v in items):
            raise InputError(f"evicted mixes bools and numbers: {evicted!r}; give indices "
                             "or a boolean mask")
        if arr.size != n:
            raise InputError(f"evicted as a boolean mask must have one entry per card ({n}), "
                             f"got {arr.size}")
        return np.flatnonzero(arr)
    if arr.dtype.kind == "O":
        bad = [v for v in items if not is_whole(v)]
        if bad:
            raise InputError(f"evicted must be {_EVICTED}, got {shown(bad[0])}")
        arr = np.array([int(v) for v in items])
    elif arr.dtype.kind not in "iu":  # floats (3.9 is no card), complex, strings ...
        first = next((v for v in items if not is_whole(v)), items[0])
        raise InputError(f"evicted must be {_EVICTED}, got {shown(first)}")
    elif not isinstance(evicted, np.ndarray) and any(isinstance(v, (bool, np.bool_))
                                                      for v in items):
        raise InputError(f"evicted mixes bools and numbers: {evicted!r}; give indices "
                         "or a boolean mask")
    outside = arr[(arr < 0) | (arr >= n)]
    if outside.size:
        raise InputError(f"evicted indices must lie in [0, {n}), got {int(outside[0])}")
    values, counts = np.unique(arr, return_counts=True)
    if np.any(counts > 1):
        raise InputError(f"evicted must name each card once, got {int(values[counts > 1][0])} "
                         f"{int(counts[counts > 1][0])} times")
    return arr.astype(int)


def wrong_evictions(true_tok_s, evicted) -> int:
    """How many evicted cards were healthy: true rate at or above the whole pool's median.

    The median is over all n cards, before eviction (numpy's median: the mean of the two
    middle rates when n is even).

    Parameters
    ----------
    true_tok_s : sequence of real numbers, shape (n,), n >= 1
        Every card's true rate in tokens per second: finite and >= 0 (NaN is refused).
    evicted : sequence of whole numbers, or a boolean mask of shape (n,)
        The evicted cards: indices in [0, n), each at most once (a card cannot leave twice;
        ints or numpy integers, not floats: 3.9 is no card), or a mask with True for each
        evicted card.

    Returns
    -------
    int, from 0 to the number evicted.
    """
    rates = real_array("true_tok_s", true_tok_s,
                       "a non-empty one-dimensional sequence of rates in tok/s")
    if rates.size == 0:
        raise InputError("true_tok_s must be a non-empty one-dimensional sequence of rates in "
                         "tok/s, got an empty one")
    if not np.all(np.isfinite(rates) & (rates >= 0)):
        bad = rates[~(np.isfinite(rates) & (rates >= 0))][0]
        raise InputError(f"true_tok_s must be finite rates >= 0 tok/s, got {float(bad)!r}")
    index = _evicted_indices(evicted, rates.size)
    return int(np.count_nonzero(rates[index] >= np.median(rates)))
