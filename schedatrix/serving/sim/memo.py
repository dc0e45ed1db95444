"""Runs this process has simulated, kept by what the simulator reads.

A run is a pure function of its inputs: the requests (arrivals, lengths, classes, prefix
hashes, the seed the router draws from), the design, the faults and the recovery settings.
A lesson that serves the same arrivals on the same design twice (a design it compared in
one section and looks at again in the next, or the same runs judged under another TPOT SLO)
gets the first run back instead of simulating it again.

The key leaves out what the simulator never reads, so that runs judged differently share:
a design's name and price, and each class's TPOT threshold (it only judges a run; a class's
TTFT threshold is read when the design sheds by TTFT, and kept). The requests a run holds are
the caller's own, so a run judged under a stricter SLO is judged by its thresholds.

A custom router (it may keep state) is never kept, and neither is a load whose faults or
settings can't be hashed, nor requests holding arrays of Python objects. Threads may simulate
at once (a lock guards the kept runs). Every run handed out is a copy: changing one changes
no other. The memo holds at most :data:`MAX_REQUESTS` requests' worth of runs (about 200
bytes a request: 175 for the run's copy, the rest for the requests it holds), dropping the
oldest first. :func:`off` turns it off (the benchmarks time the simulator, not the memo);
:func:`clear` empties it; :func:`stats` says how it has done.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import threading
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np

from ..replica.lora import ADAPTER_META

__all__ = ["key", "get", "put", "clear", "off", "MAX_REQUESTS", "stats"]

#: The most requests the kept runs may hold together (about 60 MB). Lesson 09, the longest,
#: gets all 82 of its repeated runs from it at this bound, as at twice it.
MAX_REQUESTS = 300_000

_RUNS: OrderedDict = OrderedDict()
_held = 0
_on = True
_hits = 0
_misses = 0
_saved_s = 0.0
_lock = threading.Lock()     # an app's redraw may simulate on a thread of its own


def _digest(requests) -> str | None:
    """A hash of everything the simulator reads from ``requests``."""
    h = hashlib.blake2b(digest_size=20)
    for name in ("arrival_s", "input_tokens", "output_tokens", "class_id", "hash_offsets",
                 "hash_values"):
        a = getattr(requests, name)
        if a is None:
            h.update(b"-")
            continue
        a = np.ascontiguousarray(a)
        if a.dtype.hasobject:      # its bytes would be addresses, not values: not kept
            return None
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    adapters = requests.meta.get(ADAPTER_META)     # a load's own LoRA adapters
    if adapters is not None:
        h.update(b"lora:" + np.ascontiguousarray(adapters, dtype=np.int64).tobytes())
    classes = tuple((c.name, c.share, c.priority, c.ttft_s) for c in requests.classes)
    meta = (requests.meta.get("seed", 0), requests.meta.get("hash_block_tokens"))
    h.update(repr((classes, requests.closed_loop, meta)).encode())
    return h.hexdigest()


def key(requests, design, implementation: str, faults, resilience) -> tuple | None:
    """The run's key, or None when it can't be kept."""
    if not _on:
        return None
    knobs = tuple((f.name, getattr(design, f.name)) for f in dataclasses.fields(design)
                  if f.name not in ("name", "price_per_gpu_hour"))
    digest = _digest(requests)
    if digest is None:
        return None
    k = (implementation, knobs, tuple(faults), resilience, digest)
    try:
        hash(k)
    except TypeError:
        return None
    return k


def get(k: tuple | None, requests):
    """A copy of the kept run (holding ``requests``), or None."""
    global _hits, _misses, _saved_s
    if k is None:
        return None
    with _lock:
        kept = _RUNS.get(k)
        if kept is None:
            _misses += 1
            return None
        run, cost_s = kept
        _hits += 1
        _saved_s += cost_s
        _RUNS.move_to_end(k)
    return copy.deepcopy(run, {id(run.requests): requests})


def put(k: tuple | None, run, cost_s: float = 0.0) -> None:
    """Keep a copy of ``run`` under ``k`` (nothing when ``k`` is None); ``cost_s``: the CPU
    seconds it took, counted as saved at each hit."""
    global _held
    n = len(run.requests)
    if k is None or n > MAX_REQUESTS:
        return
    kept = (copy.deepcopy(run, {id(run.requests): run.requests}), cost_s)
    with _lock:
        if k in _RUNS:
            return
        _RUNS[k] = kept
        _held += n
        while _held > MAX_REQUESTS:
            _, (old, _) = _RUNS.popitem(last=False)
            _held -= len(old.requests)


def clear() -> None:
    """Forget every kept run."""
    global _held, _hits, _misses, _saved_s
    with _lock:
        _RUNS.clear()
        _held = _hits = _misses = 0
        _saved_s = 0.0
_lock = threading.Lock()     # an app's redraw may simulate on a thread of its own


def stats() -> dict:
    """How the memo has done: runs kept, requests they hold, hits, misses and the CPU
    seconds the hits' runs took when they were simulated."""
    return {"runs": len(_RUNS), "requests": _held, "hits": _hits, "misses": _misses,
            "saved_s": round(_saved_s, 3)}


@contextmanager
def off():
    """Simulate every run inside the block, keeping none (for timing the simulator)."""
    global _on
    was, _on = _on, False
    try:
        yield
    finally:
        _on = was
