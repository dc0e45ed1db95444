"""A prefix-heavy load: long documents, each asked about several times.

Each session is one document of 3,072 tokens (six prefix-cache hash blocks of 512 tokens)
plus a short question of 50 to 299 tokens; its turns arrive 5 to 20 s apart, starting in the
first 200 s; answers are 20 to 119 tokens. With 400 sessions there are more documents than
one replica's KV cache holds, so where a turn is routed decides whether its document is still
in cache. This is the load docs/serving.md measures the routers on (routing, stage 3), and
the one the routing exercise is graded on.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .numbers import check_int
from .requests import Requests

__all__ = ["document_sessions", "DOCUMENT_BLOCKS", "HASH_BLOCK_TOKENS"]

#: Prefix-cache hash blocks per document.
DOCUMENT_BLOCKS = 6
#: Tokens per hash block (Mooncake's 512).
HASH_BLOCK_TOKENS = 512


def document_sessions(sessions: int = 400, turns: int = 4, seed: int = 3) -> Requests:
    """``sessions`` documents asked about ``turns`` times each, sorted by arrival; the same
    ``seed`` gives the same requests on every machine. Session s's blocks hash to
    ``10_000 + 10 s + b`` for b = 0..5."""
    sessions = check_int("sessions", sessions, 1, 100_000)
    turns = check_int("turns", turns, 1, 1_000)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a whole number >= 0, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    start = rng.uniform(0, 200, sessions)
    arrival = (start[:, None] + np.cumsum(rng.uniform(5, 20, (sessions, turns)), 1)).ravel()
    session = np.repeat(np.arange(sessions), turns)
    order = np.argsort(arrival, kind="stable")
    arrival, session = arrival[order], session[order]
    n = len(arrival)
    inp = DOCUMENT_BLOCKS * HASH_BLOCK_TOKENS + rng.integers(50, 300, n)
    out = rng.integers(20, 120, n)
    values = (10_000 + session[:, None] * 10 + np.arange(DOCUMENT_BLOCKS)).ravel()
    offsets = np.arange(n + 1) * DOCUMENT_BLOCKS
    return Requests(arrival, inp.astype(np.int64), out.astype(np.int64), np.zeros(n, np.int16),
                    hash_offsets=offsets, hash_values=values.astype(np.int64),
                    meta={"hash_block_tokens": HASH_BLOCK_TOKENS, "seed": int(seed)})
