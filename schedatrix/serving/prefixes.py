"""A synthetic shared-prefix load: long documents (or system prompts) that many requests start
with, for routers that look at prefix caches when no trace with block hashes is at hand.

Each request is a question about one of ``documents`` documents: its prompt is the whole
document (``document_tokens``, whole hash blocks of ``block_tokens``) followed by a question
of its own, so every request about one document carries the same block hashes, as Mooncake's
``hash_ids`` do. Arrivals, question and answer lengths come from :func:`.load.generate` (an
open-loop stream at ``rate_rps``); which document each request asks about is drawn with
weights ``1 / rank^popularity`` (0: every document equally often; 1: Zipf, a few documents
take most requests), from its own seeded stream. The result is synthetic.

:func:`.prefix_load.document_sessions` is the other shape: each document asked about in a
few turns seconds apart (the load the routing exercise is graded on); this one is an
open-loop stream whose documents can be skewed (a hot document, lesson 10).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import InputError
from .load import Load, generate
from .numbers import check_int, check_real
from .requests import Requests, SLOClass

__all__ = ["shared_prefix_load", "HASH_BASE"]

#: Block hashes of document d are HASH_BASE + d x blocks + b (b = 0 .. blocks - 1).
HASH_BASE = 1_000_000


def shared_prefix_load(requests: int, rate_rps: float, documents: int,
                       document_tokens: int = 3072, popularity: float = 0.0,
                       question_len: str = "uniform:50-300", output_len: str = "uniform:20-120",
                       block_tokens: int = 512, burstiness: float = 1.0,
                       classes: tuple[SLOClass, ...] | None = None, seed: int = 0) -> Requests:
    """``requests`` questions arriving at ``rate_rps`` (requests per second), each about one
    of ``documents`` documents of ``document_tokens`` tokens (a multiple of ``block_tokens``);
    ``popularity``: the skew of the documents' shares (>= 0). Lengths in tokens, the length
    grammar of :mod:`.lengths`. Returns requests carrying prefix-block hashes
    (``meta["hash_block_tokens"] = block_tokens``) and each request's document
    (``meta["document"]``)."""
    requests = check_int("requests", requests, 1, 10**8)
    documents = check_int("documents", documents, 1, 10**7)
    block_tokens = check_int("block_tokens", block_tokens, 1, 10**6)
    document_tokens = check_int("document_tokens", document_tokens, block_tokens, 10**7)
    if document_tokens % block_tokens:
        raise InputError(f"document_tokens must be a multiple of block_tokens ({block_tokens}), "
                         f"got {document_tokens}")
    popularity = check_real("popularity", popularity, 0.0, 10.0)
    load = Load(rate_rps=rate_rps, burstiness=burstiness, input_len=question_len,
                output_len=output_len, **({"classes": classes} if classes else {}))
    base = generate(load, seed, requests=requests)
    weights = 1.0 / np.arange(1, documents + 1, dtype=float) ** popularity
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0x5EED, 7)))
    doc = rng.choice(documents, size=len(base), p=weights / weights.sum())
    blocks = document_tokens // block_tokens
    values = (HASH_BASE + doc[:, None] * blocks + np.arange(blocks)[None, :]).ravel()
    offsets = np.arange(len(base) + 1, dtype=np.int64) * blocks
    meta = dict(base.meta, hash_block_tokens=block_tokens, document=doc,
                documents=documents, popularity=popularity)
    return replace(base, input_tokens=base.input_tokens + document_tokens,
                   hash_offsets=offsets, hash_values=values.astype(np.int64), meta=meta,
                   source=f"shared-prefix: {documents} documents of {document_tokens} tokens")
