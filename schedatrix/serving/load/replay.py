"""Replay a real trace as ``Requests``, read by the audit's trace readers.

Any format ``schedatrix.traces.reader.read_trace`` reads (Azure LLM inference 2023, Mooncake with
its ``hash_ids``, BurstGPT, generic CSV / JSON lines, gzipped or not) is read as one pool.
Arrivals are sorted (stably) and shifted so the first is at 0 s, then divided by ``speed``
(2 = twice as fast). A replay at speed 1 is real traffic (``synthetic=False``); a replay sped
up or slowed down is a what-if and is labelled synthetic, and so is a replay of the package's
own generated hour (``schedatrix/data/``, or a copy of it made by ``schedatrix examples``:
recognised byte for byte), which has the shape of a real trace but is not one.

A trace may hold 0-token requests (BurstGPT logs failed requests with 0 response tokens); a
request needs at least one token of each kind, so those are raised to 1 and counted in
``meta["raised_to_1"]`` (input, output), never silently.
"""

from __future__ import annotations

import math
from numbers import Real
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...examples import is_generated_trace
from .requests import Requests

__all__ = ["replay"]


def replay(path: str | Path, speed: float = 1.0, requests: int | None = None,
           duration_s: float | None = None) -> Requests:
    """The trace at ``path`` as Requests in one default class: arrivals from 0 s, divided by
    ``speed`` (> 0).

    ``requests`` keeps the first N arrivals, ``duration_s`` those before that time (after the
    speed-up). Raises InputError for an unreadable file or a bad row (file and line).
    """
    if isinstance(speed, bool) or not isinstance(speed, Real) or not (
            math.isfinite(speed) and speed > 0):
        raise InputError(f"speed {speed!r}: must be a finite number > 0 (2 = twice as fast)")
    path = Path(path)
    from ...traces.reader import read_trace  # pyarrow loads here, not with the simulator

    chunks = list(read_trace(path, None))
    if not chunks:
        raise InputError(f"trace {path.name}: no requests")
    t = np.concatenate([c.t_s for c in chunks])
    order = np.argsort(t, kind="stable")
    t = (t[order] - t[order[0]]) / speed
    keep = len(t) if requests is None else min(requests, len(t))
    if duration_s is not None:
        keep = min(keep, int(np.searchsorted(t, duration_s, side="left")))
    order, t = order[:keep], t[:keep]
    inp = np.concatenate([c.input_tokens for c in chunks])[order]
    out = np.concatenate([c.output_tokens for c in chunks])[order]
    raised = (int(np.sum(inp < 1)), int(np.sum(out < 1)))
    offsets = values = None
    if chunks[0].hash_offsets is not None:
        offsets, values = _reorder_csr(chunks, order)
    fmt = chunks[0].format_name
    speed_note = "" if speed == 1 else f", speed x{speed:g} (a what-if: labelled synthetic)"
    generated = is_generated_trace(path)
    if generated:
        speed_note += ", generated (not real traffic)"
    return Requests(
        arrival_s=t, input_tokens=np.maximum(inp, 1), output_tokens=np.maximum(out, 1),
        class_id=np.zeros(keep, dtype=np.int16), synthetic=speed != 1 or generated,
        source=f"trace {path.name} ({fmt}), {keep:,} requests{speed_note}",
        hash_offsets=offsets, hash_values=values,
        meta={"trace": str(path), "format": fmt, "speed": float(speed),
              "raised_to_1": raised, "generated": generated})


def _reorder_csr(chunks, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The chunks' hash lists joined into one CSR, rows taken in ``order``."""
    lengths = np.concatenate([np.diff(c.hash_offsets) for c in chunks])
    values = np.concatenate([c.hash_values for c in chunks])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    take = lengths[order]
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(take, out=offsets[1:])
    # index of every kept value: its row's start plus its position in the row
    pos = np.arange(offsets[-1]) - np.repeat(offsets[:-1], take)
    return offsets, values[np.repeat(starts[order], take) + pos].astype(np.int64)
