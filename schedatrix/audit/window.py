"""The audit's window: the stretches of time the traces cover, cut into pieces of buckets.

- **Stretches and gaps.** The seconds that hold an arrival (any pool), in order; where two
  consecutive ones are more than ``gap_s`` apart (and more than a bucket), the empty time
  between them is a **gap**: it is left out of the window (nothing is billed there) and the
  audit says so. The window is the stretches from each one's first arrival's second to its
  last arrival's second.
- **Pieces.** Inside a stretch, buckets of ``bucket_s`` seconds aligned to multiples of
  ``bucket_s`` from time 0 (the edge buckets are partial). A bucket that holds an arrival is a
  piece of its own; a run of empty buckets is one piece (its rate is 0 all along), so the
  pieces number at most twice the buckets that hold arrivals: memory follows the requests,
  not the span or the bucket.
- **The autoscaler's delay.** A piece's autoscaler follows the need of the bucket ``delay``
  buckets earlier in its stretch (the stretch's first bucket before that: it starts sized). The
  pieces are cut again where that earlier bucket changes piece, so each piece follows exactly
  one: `delayed` holds its index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Window", "Gap", "make_window", "DEFAULT_GAP_S"]

#: An empty stretch longer than this (no request in any pool) is a gap, by default: an hour.
DEFAULT_GAP_S = 3600


@dataclass(frozen=True)
class Gap:
    """An empty stretch left out of the window: the seconds of the arrivals on either side,
    the last row of the second before and the first row of the second after (row codes,
    :func:`~.tally.row_code`)."""

    before_s: int
    after_s: int
    before_code: int
    after_code: int

    @property
    def seconds(self) -> int:
        """The gap's length: from the end of the second before to the start of the after."""
        return self.after_s - self.before_s - 1


@dataclass(frozen=True)
class Window:
    """The stretches the audit covers and their pieces (arrays of one value per piece)."""

    bucket_s: int
    first_s: np.ndarray       # each stretch's first second
    last_s: np.ndarray        # each stretch's last second
    first_bucket: np.ndarray  # each piece's first bucket (bucket index)
    n_buckets: np.ndarray     # buckets in each piece
    stretch: np.ndarray       # each piece's stretch
    duration_s: np.ndarray    # each piece's seconds inside the window
    delayed: np.ndarray       # the piece whose need each piece's autoscaler follows
    gaps: tuple[Gap, ...]

    @property
    def start_s(self) -> np.ndarray:
        """Each piece's first bucket's start, in seconds (before the window for the first)."""
        return self.first_bucket * self.bucket_s

    @property
    def seconds(self) -> int:
        """The window's length in seconds (gaps left out)."""
        return int((self.last_s - self.first_s + 1).sum())

    @property
    def span_s(self) -> int:
        """From the first arrival's second to the end of the last's, gaps included."""
        return int(self.last_s[-1] - self.first_s[0] + 1)

    def piece_of(self, bucket: np.ndarray) -> np.ndarray:
        """The piece each bucket index falls in (buckets that hold arrivals)."""
        return np.searchsorted(self.first_bucket, bucket, side="right") - 1


def _unique_sorted(a: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted array (np.unique hashes, slowly for millions here)."""
    if len(a) < 2:
        return a
    return a[np.concatenate([[True], a[1:] != a[:-1]])]


def make_window(seconds: np.ndarray, first_rows: np.ndarray, last_rows: np.ndarray,
                bucket_s: int, gap_s: int, delay_buckets: int) -> Window:
    """The window of the seconds that hold arrivals (sorted, unique, int64; `first_rows` and
    `last_rows` the row codes of the first and last row of each), for a bucket, a gap length
    and an autoscaler delay."""
    seconds = np.asarray(seconds, dtype=np.int64)
    limit = max(int(gap_s), bucket_s)
    cut = np.flatnonzero(np.diff(seconds) > limit)
    first_s = seconds[np.concatenate([[0], cut + 1])]
    last_s = seconds[np.concatenate([cut, [len(seconds) - 1]])]
    gaps = tuple(Gap(int(seconds[i]), int(seconds[i + 1]), int(last_rows[i]),
                     int(first_rows[i + 1])) for i in cut)
    seg_lo, seg_hi = first_s // bucket_s, last_s // bucket_s

    busy = _unique_sorted(seconds // bucket_s)
    busy_stretch = np.searchsorted(seg_lo, busy, side="right") - 1
    step = np.diff(busy)
    runs = np.flatnonzero((step > 1) & (busy_stretch[1:] == busy_stretch[:-1]))
    starts = _unique_sorted(np.sort(np.concatenate([busy, busy[runs] + 1]), kind="stable"))
    stretch = np.searchsorted(seg_lo, starts, side="right") - 1

    d = int(min(max(int(delay_buckets), 0), int((seg_hi - seg_lo).max()) + 1))
    if d:
        later = starts + d
        inside = later <= seg_hi[stretch]
        starts = _unique_sorted(np.sort(np.concatenate([starts, later[inside]]), kind="stable"))
        stretch = np.searchsorted(seg_lo, starts, side="right") - 1
    ends = np.append(starts[1:], 0)
    last_of_stretch = np.append(stretch[1:] != stretch[:-1], True)
    ends[last_of_stretch] = seg_hi[stretch[last_of_stretch]] + 1
    n_buckets = ends - starts
    source = np.maximum(starts - d, seg_lo[stretch])
    delayed = np.searchsorted(starts, source, side="right") - 1
    lo_s = np.maximum(starts * bucket_s, first_s[stretch])
    hi_s = np.minimum(ends * bucket_s, last_s[stretch] + 1)
    return Window(bucket_s, first_s, last_s, starts, n_buckets, stretch,
                  (hi_s - lo_s).astype(float), delayed, gaps)
