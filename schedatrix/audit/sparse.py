"""Counters keyed by an integer (a second, a bucket and bin), holding only the keys that occur.

Memory grows with the distinct keys seen (at most one per request), never with the span of
the keys: a trace whose arrivals are a year apart costs what its requests cost. Each key holds
int64 columns that add up (counts, token sums) and columns that keep their minimum (the first
row's code). Blocks of keys are grouped as they arrive and merged lazily, so a stream of
mostly sorted arrivals costs about one pass.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Counts", "group"]

_BIG = np.iinfo(np.int64).max


def group(keys: np.ndarray, sums: list[np.ndarray], mins: list[np.ndarray] = (),
          maxs: list[np.ndarray] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Group equal keys: (sorted unique keys, values) where values[:, j] is the sum of
    ``sums[j]`` (int64 arrays), then the minimum of each of ``mins``, then the negated maximum
    of each of ``maxs`` (so a :class:`Counts` keeps it as a minimum) over each key's rows. A
    sum of None counts the rows."""
    n = len(keys)
    width = len(sums) + len(mins) + len(maxs)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros((0, width), np.int64)
    lo, hi = int(keys.min()), int(keys.max())
    span = hi - lo + 1
    out = []
    # dense: one bincount per column over the keys' range, while float sums stay exact
    exact = all(s is None or int(np.abs(s).max()) * n < 2**53 for s in sums)
    if exact and span <= 4 * n + 4096:
        rel = keys - lo
        counts = np.bincount(rel, minlength=span)
        present = np.flatnonzero(counts)
        for s in sums:
            if s is None:
                out.append(counts[present])
            else:
                out.append(np.bincount(rel, weights=s, minlength=span)[present]
                           .astype(np.int64))
        for m in mins:
            first = np.full(span, _BIG, dtype=np.int64)
            np.minimum.at(first, rel, m)
            out.append(first[present])
        for m in maxs:
            last = np.full(span, -_BIG, dtype=np.int64)
            np.maximum.at(last, rel, m)
            out.append(-last[present])
        return present + lo, np.column_stack(out) if out else np.zeros((len(present), 0))
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sk)) + 1])
    for s in sums:
        if s is None:
            out.append(np.diff(np.append(starts, n)))
        else:
            out.append(np.add.reduceat(np.asarray(s, dtype=np.int64)[order], starts))
    for m in mins:
        out.append(np.minimum.reduceat(np.asarray(m, dtype=np.int64)[order], starts))
    for m in maxs:
        out.append(-np.maximum.reduceat(np.asarray(m, dtype=np.int64)[order], starts))
    return sk[starts], np.column_stack(out)


class Counts:
    """Sparse int64 counters: `n_sum` columns that add up, then `n_min` that keep the least.

    ``add(keys, values)`` takes a block grouped by :func:`group`; ``items()`` returns every
    key seen (sorted) and its columns; ``merge(other)`` adds another store's counts.
    """

    def __init__(self, n_sum: int, n_min: int = 0):
        self.n_sum, self.n_min = n_sum, n_min
        self.keys = np.zeros(0, np.int64)
        self.values = np.zeros((0, n_sum + n_min), np.int64)
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.n_pending = 0

    def add(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Add grouped keys (sorted, unique) and their values (rows x columns)."""
        if len(keys) == 0:
            return
        self.pending.append((keys, values))
        self.n_pending += len(keys)
        if self.n_pending > max(len(self.keys), 1 << 16):
            self._compact()

    def _compact(self) -> None:
        if not self.pending:
            return
        keys = np.concatenate([self.keys] + [k for k, _ in self.pending])
        values = np.concatenate([self.values] + [v for _, v in self.pending])
        self.pending, self.n_pending = [], 0
        if len(keys) > 1 and not (np.diff(keys) > 0).all():
            order = np.argsort(keys, kind="stable")
            keys, values = keys[order], values[order]
            starts = np.concatenate([[0], np.flatnonzero(np.diff(keys)) + 1])
            merged = np.empty((len(starts), values.shape[1]), np.int64)
            if self.n_sum:
                merged[:, : self.n_sum] = np.add.reduceat(values[:, : self.n_sum], starts)
            if self.n_min:
                merged[:, self.n_sum:] = np.minimum.reduceat(values[:, self.n_sum:], starts)
            keys, values = keys[starts], merged
        self.keys, self.values = keys, values

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """Every key seen, sorted, and its columns (rows x (n_sum + n_min))."""
        self._compact()
        return self.keys, self.values

    def merge(self, other: Counts) -> None:
        """Add another store's counts (its minimum columns take the least of both)."""
        keys, values = other.items()
        self.add(keys, values)

    def __len__(self) -> int:
        return len(self.items()[0])

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.values.nbytes + sum(
            k.nbytes + v.nbytes for k, v in self.pending)

    def __getstate__(self):
        self._compact()
        return self.__dict__

    def __setstate__(self, state):
        self.__dict__.update(state)
