"""A lesson's progress bar for a long loop: live while the cell runs, one finished line after.

tqdm's own bar ends on the elapsed time and a rate ("[00:15<00:00, 19.52it/s]"), which differ
from run to run, so a stored bar never matched a fresh one and its cell had to skip nbval's
output check; a widget bar (``tqdm.auto``) is stored as its first frame, "0%". This bar is
text on standard output and prints counts only (``mixed pools: 100%|##########| 300/300``):
nbval reads a stream as a page shows it (a carriage return overwrites its line), so a fresh
run's last frame is the stored line, and the cell's output is checked like any other. Execute
a lesson with streams coalesced (nbclient's ``coalesce_streams``, as ``jupyter nbconvert
--execute --ExecutePreprocessor.coalesce_streams=True``) to store that one finished line
rather than every refresh.
"""

from __future__ import annotations

import sys

from tqdm import tqdm

__all__ = ["BAR_FORMAT", "progress"]

#: The bar's text: what it counts, the share done, the bar and the counts; no time, no rate.
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}"


def progress(iterable=None, *, total: int | None = None, desc: str) -> tqdm:
    """A text progress bar on standard output, as tqdm takes them (an iterable to wrap, or a
    ``total`` to ``update`` towards, then ``close``), whose last frame is the same every run."""
    return tqdm(iterable, total=total, desc=desc, file=sys.stdout, bar_format=BAR_FORMAT,
                ascii=True, mininterval=0.5)
