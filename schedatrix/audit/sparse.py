"""Counters keyed by an integer (a second, a bucket and bin), holding only the keys that occur.

Memory grows with the distinct keys seen (at most one per request), never with the span of
the keys: a trace whose arrivals are a year apart costs what its requests cost. Each key holds
int64 columns that add up (counts, token sums) and columns that keep their minimum (the first
row's code, and the last row's, negated). Blocks of keys are grouped as they arrive and merged
lazily, so a stream of mostly sorted arrivals costs about one pass.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Counts", "group"]

_BIG = np.iinfo(np.int64).max


def group(keys: np.ndarray, sums: list[np.ndarray | None], firsts: list[np.ndarray] = (),
          lasts: list[np.ndarray] = (), sorted_keys: bool | None = None,
          max_sum: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Group equal keys: (sorted unique keys, values) where values[:, j] is the sum of
    ``sums[j]`` (int64 arrays; None counts the rows), then the value of each of ``firsts`` at
    each key's first row, then the negated value of each of ``lasts`` at its last row (rows in
    order; negated so that a :class:`Counts` keeps the latest as a minimum).

    `sorted_keys` says whether the keys are known to be sorted (None: look); `max_sum` bounds
    the absolute value of every summed value, so float sums can be trusted exact without
    scanning for the largest."""
    n = len(keys)
    width = len(sums) + len(firsts) + len(lasts)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros((0, width), np.int64)
    out = []
    step = None
    if sorted_keys is not False and n > 1:
        step = np.diff(keys)
        if sorted_keys is None and not bool((step >= 0).all()):
            step = None
    if n == 1 or step is not None:  # sorted: a trace in arrival order
        starts = np.concatenate([[0], np.flatnonzero(step) + 1]) if n > 1 else np.zeros(1, int)
        ends = np.append(starts[1:], n) - 1
        for s in sums:
            out.append(np.diff(np.append(starts, n)) if s is None else
                       np.add.reduceat(np.asarray(s, dtype=np.int64), starts))
        out += [np.asarray(m, dtype=np.int64)[starts] for m in firsts]
        out += [-np.asarray(m, dtype=np.int64)[ends] for m in lasts]
        return keys[starts], np.column_stack(out)
    lo, hi = int(keys.min()), int(keys.max())
    span = hi - lo + 1
    # dense: one bincount per column over the keys' range, while float sums stay exact
    big = max_sum if max_sum is not None else max(
        (int(np.abs(s).max()) for s in sums if s is not None), default=0)
    if big * n < 2**53 and span <= 4 * n + 4096:
        rel = keys - lo
        counts = np.bincount(rel, minlength=span)
        present = np.flatnonzero(counts)
        for s in sums:
            if s is None:
                out.append(counts[present])
            else:
                out.append(np.bincount(rel, weights=s, minlength=span)[present]
                           .astype(np.int64))
        if firsts or lasts:
            row = np.arange(n)
            first = np.full(span, n, dtype=np.int64)
            np.minimum.at(first, rel, row)
            last = np.full(span, -1, dtype=np.int64)
            np.maximum.at(last, rel, row)
            out += [np.asarray(m, dtype=np.int64)[first[present]] for m in firsts]
            out += [-np.asarray(m, dtype=np.int64)[last[present]] for m in lasts]
        return present + lo, np.column_stack(out)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sk)) + 1])
    ends = np.append(starts[1:], n) - 1
    for s in sums:
        if s is None:
            out.append(np.diff(np.append(starts, n)))
        else:
            out.append(np.add.reduceat(np.asarray(s, dtype=np.int64)[order], starts))
    out += [np.asarray(m, dtype=np.int64)[order[starts]] for m in firsts]
    out += [-np.asarray(m, dtype=np.int64)[order[ends]] for m in lasts]
    return sk[starts], np.column_stack(out)


def _unsorted(keys: np.ndarray) -> bool:
    """Whether keys are not strictly increasing (so some repeat or come out of order)."""
    return len(keys) > 1 and not bool((keys[1:] > keys[:-1]).all())


class Counts:
    """Sparse int64 counters: `n_sum` columns that add up, then `n_min` that keep the least.

    ``add(keys, values)`` takes a block grouped by :func:`group`; ``items()`` returns every
    key seen (sorted) and its columns; ``merge(other)`` adds another store's counts.
    """

    def __init__(self, n_sum: int, n_min: int = 0):
        self.n_sum, self.n_min = n_sum, n_min
        self.keys = np.zeros(0, np.int64)
        self.values = np.zeros((0, n_sum + n_min), np.int64)
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []   # sorted, disjoint, in order
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.n_pending = 0

    def add(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Add grouped keys (sorted, unique) and their values (rows x columns). A block whose
        keys all follow the last ones seen (arrivals in order) is kept as it is; others are
        merged lazily."""
        if len(keys) == 0:
            return
        last = self.runs[-1][0][-1] if self.runs else (
            self.keys[-1] if len(self.keys) else None)
        if not self.pending and (last is None or keys[0] > last):
            self.runs.append((keys, values))
            return
        self.pending.append((keys, values))
        self.n_pending += len(keys)
        if self.n_pending > max(len(self.keys), 1 << 16):
            self._compact()

    def _compact(self) -> None:
        if not self.pending and not self.runs:
            return
        parts = [(self.keys, self.values), *self.runs, *self.pending]
        keys = np.concatenate([k for k, _ in parts])
        values = np.concatenate([v for _, v in parts])
        self.runs, self.pending, self.n_pending = [], [], 0
        if _unsorted(keys):
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
            k.nbytes + v.nbytes for k, v in self.runs + self.pending)

    def __getstate__(self):
        self._compact()
        return self.__dict__

    def __setstate__(self, state):
        self.__dict__.update(state)
