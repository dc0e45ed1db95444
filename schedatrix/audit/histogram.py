"""Exact integer histograms: percentiles of a stream in bounded memory.

Token counts are integers and latencies are read to the millisecond, so a count per integer value
is exact; the array grows to the largest value seen, up to `cap` (values at or above `cap` share
the top bin, and a percentile that lands there reads as `cap`). Memory: 8 bytes x `cap` at most.
"""

from __future__ import annotations

import numpy as np

__all__ = ["IntHistogram"]


class IntHistogram:
    """Counts of non-negative integer values; `percentile` is nearest-rank (numpy's
    ``method="inverted_cdf"``): the smallest value with at least q% of the stream at or below."""

    def __init__(self, cap: int = 1 << 20):
        self.cap = int(cap)
        self.counts = np.zeros(0, dtype=np.int64)

    @property
    def n(self) -> int:
        """How many values were added."""
        return int(self.counts.sum())

    def add(self, values: np.ndarray) -> None:
        """Add an array of non-negative integers (values >= cap go to the top bin)."""
        if len(values) == 0:
            return
        v = np.minimum(np.asarray(values, dtype=np.int64), self.cap)
        add = np.bincount(v)
        if len(add) > len(self.counts):
            grown = np.zeros(len(add), dtype=np.int64)
            grown[: len(self.counts)] = self.counts
            self.counts = grown
        self.counts[: len(add)] += add

    def add_counts(self, counts: np.ndarray) -> None:
        """Add counts per value (counts[v] values equal to v; the top bin is `cap`)."""
        if len(counts) > len(self.counts):
            grown = np.zeros(len(counts), dtype=np.int64)
            grown[: len(self.counts)] = self.counts
            self.counts = grown
        self.counts[: len(counts)] += counts

    def merge(self, other: IntHistogram) -> None:
        """Add another histogram's counts (same cap)."""
        self.add_counts(other.counts)

    def percentile(self, q: float) -> float:
        """The nearest-rank q-th percentile (0 < q <= 100); NaN when empty."""
        n = self.n
        if n == 0:
            return float("nan")
        rank = max(1, int(np.ceil(q / 100 * n - 1e-9)))
        return float(np.searchsorted(np.cumsum(self.counts), rank))

    def mean(self) -> float:
        """Mean of the values (top-bin values count as `cap`); NaN when empty."""
        n = self.n
        return float(np.dot(np.arange(len(self.counts)), self.counts) / n) if n else float("nan")
