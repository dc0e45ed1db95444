"""Two serving drill kinds of lesson 13, drawn among the serving drills: the expert
weights a mixture-of-experts decode step reads, and the weights an FP8 replica holds per GPU.

Each kind is ``kind(r: random.Random) -> Question``: everything drawn from ``r`` (only
``random()``, as the other drills), every number the answer is computed from printed in the
prompt, the answer equal to the library's (tests/test_expert_drills.py checks it against
:mod:`schedatrix.serving.perf`). ``KINDS`` maps each kind's id to it; the serving drills
(:mod:`schedatrix.course.drills.serving`) draw both among their kinds.
"""

from __future__ import annotations

import random

from ...serving.perf.catalog import BYTES_PER_PARAM, MODELS
from ...serving.perf.model import allowed_tp
from .question import Question

__all__ = ["expert_reads", "fp8_weights", "KINDS"]

_MOE = ("mixtral-8x7b", "qwen3-30b-a3b")
_DENSE = ("llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b")
_BATCHES = (1, 2, 3, 4, 8, 16, 32)
#: GPUs with FP8 tensor cores, where an FP8 replica of every dense model here at TP >= 2 (and
#: the small ones at TP1) fits.
_FP8_GPUS = ("h100-80gb", "h200")


def _pick(r: random.Random, options):
    return options[int(r.random() * len(options))]


def expert_reads(r: random.Random) -> Question:
    """GB of routed-expert weights a decode step of ``n`` requests reads, all layers, BF16,
    under uniform routing: E x (1 - (1 - k/E)^n) experts a layer, each 3 x hidden x expert
    FFN weights of 2 bytes."""
    m = MODELS[_pick(r, _MOE)]
    n = _pick(r, _BATCHES)
    e, k = m.experts, m.experts_per_token
    one_mb = m.expert_params * BYTES_PER_PARAM / 1e6          # one expert of one layer
    touched = e * (1 - (1 - k / e) ** n)
    gb = touched * one_mb * m.layers / 1e3
    return Question(
        "expert_reads",
        f"{m.name}: {m.layers} layers, each with {e} experts of {one_mb:,.3f} MB (BF16); the "
        f"router sends each token to {k} of them, every expert equally likely. A decode step "
        f"runs {n} request{'s' if n > 1 else ''} (one token each). How many GB of expert "
        "weights does it read, on average, over all the layers?",
        gb, "figure",
        f"A layer's expert is missed by all {n} tokens with probability (1 - {k}/{e})^{n}, so "
        f"{e} x (1 - (1 - {k}/{e})^{n}) = {touched:.3f} experts a layer are read; x "
        f"{one_mb:,.3f} MB x {m.layers} layers = {gb:.2f} GB.",
        "Count the distinct experts the batch touches (an expert two tokens pick is read "
        "once), in expectation: E minus the experts no token picks.",
        unit="GB", rel_tolerance=0.01,
    )


def fp8_weights(r: random.Random) -> Question:
    """GB of weights each GPU of a TP replica holds in FP8: the decoder's weights at 1 byte,
    the embedding and the LM head (once when tied) at 2, an even share a GPU, on a GPU with
    FP8 tensor cores (the A100 has none) where the replica fits."""
    m = MODELS[_pick(r, _DENSE)]
    gpu = _pick(r, _FP8_GPUS)
    tps = [t for t in allowed_tp(m) if t <= m.kv_heads]
    tp = _pick(r, tps if m.params < 20e9 else [t for t in tps if t >= 2])
    emb = m.embedding_params
    gb = ((m.params - emb) * 1 + emb * BYTES_PER_PARAM) / tp / 1e9
    tied = "one matrix, shared" if m.tied_embeddings else "two matrices"
    return Question(
        "fp8_weights",
        f"{m.name} has {m.params / 1e9:g} billion weights; its embedding and LM head are "
        f"{m.vocab:,} x {m.hidden:,} ({tied}). In an FP8 checkpoint the decoder's weights take "
        "1 byte each and the embedding and LM head stay in BF16 (2 bytes). How many GB of "
        f"weights does each GPU of a TP{tp} replica on {gpu} hold?",
        gb, "figure",
        f"Embedding and head: {emb / 1e9:.3f} billion weights x 2 bytes; the other "
        f"{(m.params - emb) / 1e9:.3f} billion x 1 byte; together "
        f"{gb * tp:.2f} GB, over {tp} GPU{'s' if tp > 1 else ''}: {gb:.2f} GB each.",
        "FP8 halves the decoder's bytes, not all of them: count the BF16 embedding and head "
        "apart, then share the total evenly over the tensor-parallel GPUs.",
        unit="GB", rel_tolerance=0.01,
    )


#: The kinds by id, for the serving drills' registry.
KINDS = {"expert_reads": expert_reads, "fp8_weights": fp8_weights}
