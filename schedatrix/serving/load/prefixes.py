"""Shared-prefix loads: long documents (or system prompts) that many requests start with, each
request carrying its document's prefix-cache block hashes as Mooncake's ``hash_ids`` do.

One builder, :func:`with_documents`, turns requests and the document each asks about into a
shared-prefix load: the prompt grows by the whole document and the request carries one hash per
block of it, so every request about one document shares its block hashes. Two arrival shapes
feed it:

- :func:`shared_prefix_load`: an open-loop stream at ``rate_rps`` (arrivals, question and answer
  lengths from :func:`.workload.generate`), each request about one of ``documents`` documents
  drawn with weights ``1 / rank^popularity`` (0: every document equally often; 1: Zipf, a hot
  document), from its own seeded stream (lesson 10);
- :func:`document_sessions`: each document asked about in a few turns seconds apart (the load
  the routing exercise is graded on, and the one docs/serving.md measures the routers on).

:func:`hashed_prompts` instead hashes each request's own prompt, sharing nothing: what vLLM
V1's prefix cache (on by default) sees of a load without common prefixes, where the one hit is
a preempted request finding its own blocks again when it is recomputed (lesson 10).

Both are synthetic; the same seed gives the same requests on every machine.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...errors import InputError
from ..numbers import check_int, check_real
from .requests import Requests, SLOClass
from .workload import Load, generate

__all__ = ["shared_prefix_load", "document_sessions", "with_documents", "hashed_prompts",
           "HASH_BASE",
           "DOCUMENT_BLOCKS", "HASH_BLOCK_TOKENS", "OWN_HASH_BASE"]

#: Block hashes of document d are HASH_BASE + d x blocks + b (b = 0 .. blocks - 1) in
#: :func:`shared_prefix_load`.
HASH_BASE = 1_000_000
#: Prefix-cache hash blocks per document in :func:`document_sessions`.
DOCUMENT_BLOCKS = 6
#: Tokens per hash block (Mooncake's 512).
HASH_BLOCK_TOKENS = 512
#: The first hash :func:`hashed_prompts` gives (far from the documents' hashes).
OWN_HASH_BASE = 10**12


def with_documents(base: Requests, asked: np.ndarray, blocks: int, block_tokens: int,
                   hash_base: int, hash_stride: int, **meta) -> Requests:
    """``base`` with each request's prompt preceded by the document it asks about (``asked[i]``,
    ``blocks`` blocks of ``block_tokens`` tokens) and carrying that document's block hashes,
    ``hash_base + hash_stride x asked[i] + b`` for b = 0 .. blocks - 1. ``meta`` joins
    ``base.meta``."""
    asked = np.asarray(asked)
    values = (hash_base + asked[:, None] * hash_stride + np.arange(blocks)[None, :]).ravel()
    offsets = np.arange(len(base) + 1, dtype=np.int64) * blocks
    return replace(base, input_tokens=base.input_tokens + blocks * block_tokens,
                   hash_offsets=offsets, hash_values=values.astype(np.int64),
                   meta=dict(base.meta, hash_block_tokens=block_tokens, **meta))


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
    out = with_documents(base, doc, blocks, block_tokens, HASH_BASE, blocks, document=doc,
                         documents=documents, popularity=popularity)
    return replace(out, source=f"shared-prefix: {documents} documents of {document_tokens} "
                               "tokens")


def document_sessions(sessions: int = 400, turns: int = 4, seed: int = 3) -> Requests:
    """``sessions`` documents asked about ``turns`` times each, sorted by arrival: each session
    is one document of 3,072 tokens (six blocks of 512) plus a question of 50 to 299 tokens; its
    turns arrive 5 to 20 s apart, starting in the first 200 s; answers are 20 to 119 tokens.
    With 400 sessions there are more documents than one replica's KV cache holds, so where a
    turn is routed decides whether its document is still in cache. Session s's blocks hash to
    ``10_000 + 10 s + b`` for b = 0..5; the same ``seed`` gives the same requests on every
    machine."""
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
    question = rng.integers(50, 300, n)
    out = rng.integers(20, 120, n)
    base = Requests(arrival, question.astype(np.int64), out.astype(np.int64),
                    np.zeros(n, np.int16), meta={"seed": int(seed)})
    return with_documents(base, session, DOCUMENT_BLOCKS, HASH_BLOCK_TOKENS, 10_000, 10)


def hashed_prompts(base: Requests, block_tokens: int = 16) -> Requests:
    """``base`` with every full block of ``block_tokens`` tokens of each prompt hashed, each
    request's hashes its own (no two requests share one), as vLLM V1 hashes every prompt for
    its prefix cache (16-token blocks by default). Prompts, lengths and arrivals unchanged."""
    block_tokens = check_int("block_tokens", block_tokens, 1, 10**6)
    if base.hash_offsets is not None:
        raise InputError("hashed_prompts: the requests already carry prefix hashes")
    blocks = np.asarray(base.input_tokens, dtype=np.int64) // block_tokens
    offsets = np.concatenate([[0], np.cumsum(blocks)]).astype(np.int64)
    values = OWN_HASH_BASE + np.arange(offsets[-1], dtype=np.int64)
    return replace(base, hash_offsets=offsets, hash_values=values,
                   meta=dict(base.meta, hash_block_tokens=block_tokens))
