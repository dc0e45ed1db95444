"""Three serving drill kinds of lesson 15, posed on the drill's replica: speculative decoding's
gain at the replica's batch, the KV cache a replica's LoRA slots take, and the copy back of a
prefix from a CPU tier of the KV cache.

Each kind is ``kind(replica, r: random.Random) -> Question``: everything drawn from ``r`` (only
``random()``, as the other drills), every number the answer is computed from printed in the
prompt or in the drill's facts (the replica's model, GPU and tensor parallelism), the answer
the library's (tests/test_serving_drills.py checks it against :mod:`schedatrix.serving.perf`
and runs each setup through the simulator). ``KINDS`` maps each kind's id to it.
"""

from __future__ import annotations

import random

from ...serving.perf.model import PerfModel
from ...serving.perf.pcie import h2d_gb_s
from ...serving.perf.spec_decode import SpecDecode, SpecPerfModel
from .question import Question

__all__ = ["spec_gain", "lora_slots", "tier_copy", "KINDS", "SPEC_CHOICES",
           "LORA_RANKS_DRAWN", "LORA_SLOTS_DRAWN", "TIER_PREFIXES"]

#: (method, K, acceptance rate) the speculation kind draws: vLLM's example K per method and
#: acceptance rates around the published ones (docs/serving-calibration.md).
SPEC_CHOICES = (("eagle", 3, 0.4), ("eagle", 3, 0.57), ("eagle", 3, 0.7), ("eagle", 5, 0.6),
                ("ngram", 5, 0.5), ("ngram", 5, 0.7), ("ngram", 3, 0.8))
#: The adapters' ranks and the slots (vLLM's max_loras) the LoRA kind draws.
LORA_RANKS_DRAWN = (8, 16, 32, 64)
LORA_SLOTS_DRAWN = (1, 2, 4, 8, 16)
#: The cached prefixes the CPU tier kind draws, tokens (whole hash blocks of 512).
TIER_PREFIXES = (1024, 1536, 2048, 3072, 4096, 6144, 8192)
#: Tokens of a prompt past its cached prefix (and of room for its output within the context).
_TAIL = 512


def _pick(r: random.Random, options):
    return options[int(r.random() * len(options))]


def _kv_token_bytes(m) -> int:
    """One token's BF16 KV over the whole model: K and V, every layer, every KV head."""
    return 2 * m.layers * m.kv_heads * m.head_dim * 2


def _steps_ms(rep, spec: SpecDecode) -> tuple[float, float]:
    """The replica's plain decode step and its speculating step, ms, rounded as printed."""
    base = PerfModel(rep.model, rep.gpu.name, tp=rep.tp)
    ctx = rep.batch * (rep.context + 1)
    plain = base.iteration_s((), rep.batch, ctx)
    spec_step = SpecPerfModel(base, spec).iteration_s((), rep.batch, ctx)
    return round(plain * 1e3, 2), round(spec_step * 1e3, 2)


def spec_gain(rep, r: random.Random) -> Question:
    """How many times faster a sequence's tokens come with speculation at the replica's batch:
    tokens a step, (1 - a^(K+1)) / (1 - a), times the plain step over the speculating one."""
    method, k, a = _pick(r, SPEC_CHOICES)
    spec = SpecDecode(method, k, a)
    plain, step = _steps_ms(rep, spec)
    tokens = (1 - a ** (k + 1)) / (1 - a)
    gain = tokens * plain / step
    who = "EAGLE's head" if method == "eagle" else "an n-gram lookup"
    return Question(
        "spec_gain",
        f"The replica speculates: {who} drafts K = {k} tokens a sequence, and each drafted token "
        f"is accepted with probability {a:g} when those before it were. Decoding {rep.batch} "
        f"sequences of {rep.context:,} tokens of context, a plain decode step takes {plain:.2f} "
        f"ms and a speculating one (drafts and the verification of K + 1 tokens) {step:.2f} "
        "ms. How many times faster does a sequence's text come with speculation (its tokens "
        "a second with it over without)?",
        gain, "figure",
        f"Tokens a step: (1 - {a:g}^{k + 1}) / (1 - {a:g}) = {tokens:.3f}; each step takes "
        f"{step:.2f} / {plain:.2f} = {step / plain:.3f} plain steps; {tokens:.3f} / "
        f"{step / plain:.3f} = {gain:.2f} times.",
        "A step yields its accepted drafts plus one token of the model's own: sum the chances "
        "that the first, second, ... drafted tokens are all accepted. Then weigh the tokens by "
        "what the longer step costs.",
        unit="x", rel_tolerance=0.01,
    )


def lora_slots(rep, r: random.Random) -> Question:
    """KV-cache tokens a replica's LoRA slots take out of each GPU's cache: ``max_loras``
    adapters of rank R on the attention's q, k, v and o projections (S-LoRA's adapters, vLLM's
    ``target_modules``), A (in x R) and B (R x out) on each at 2 bytes, the B of q, k and v and
    the A of o split over the TP GPUs, over a token's KV bytes on one GPU, rounded up."""
    m, tp = rep.model, rep.tp
    rank, slots = _pick(r, LORA_RANKS_DRAWN), _pick(r, LORA_SLOTS_DRAWN)
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    qkv = 3 * m.hidden * rank + rank * (q + 2 * kv) / tp
    o = q * rank / tp + rank * m.hidden
    adapter = (qkv + o) * m.layers * 2
    kv_gpu = _kv_token_bytes(m) / tp
    tokens = -int(-(slots * adapter) // kv_gpu)
    many = f"{slots} slots" if slots > 1 else "1 slot"
    return Question(
        "lora_slots",
        f"The replica serves LoRA adapters of rank R = {rank} on the attention's q, k, v and o "
        "projections: on each, A (in x R) and B (R x out) in BF16. q maps the hidden size to "
        "the query heads' dims, k and v each to the KV heads' dims, o the query heads' dims "
        "back; under tensor parallelism the B of q, k and v and the A of o are split over the "
        f"GPUs. vLLM keeps max_loras = {slots} adapters in HBM ({many}), taken out of the KV "
        "cache. How many tokens of KV cache do the slots take on each GPU?",
        tokens, "figure",
        f"q, k, v: 3 x {m.hidden:,} x {rank} + {rank} x ({q:,} + 2 x {kv:,}) / {tp}; o: {q:,} x "
        f"{rank} / {tp} + {rank} x {m.hidden:,}; ({qkv + o:,.0f}) x {m.layers} layers x 2 bytes "
        f"= {adapter / 1e6:,.2f} MB an adapter a GPU; x {slots} = {slots * adapter / 1e6:,.2f} "
        f"MB, over a token's {kv_gpu:,.0f} bytes of KV a GPU = {tokens:,} tokens.",
        "An adapter's bytes: in x R + R x out for each projection, times the layers and 2 "
        "bytes, each split matrix at its 1/TP share. Then divide the slots' bytes by what one "
        "token's KV (K and V, every layer) takes on one GPU.",
        unit="tokens", rel_tolerance=0.01,
    )


def tier_copy(rep, r: random.Random) -> Question | None:
    """Milliseconds a replica's GPUs take to copy a prompt's cached prefix back from the CPU
    tier: the prefix's KV bytes on one GPU (a token's bytes over the TP GPUs) over that GPU's
    PCIe rate, every GPU over its own link at once."""
    m, tp = rep.model, rep.tp
    prefixes = [p for p in TIER_PREFIXES if p + 2 * _TAIL <= m.max_context]
    if not prefixes:
        return None
    prefix = _pick(r, prefixes)
    gb_s = h2d_gb_s(rep.gpu.name)
    per_gpu = _kv_token_bytes(m) / tp
    ms = prefix * per_gpu / (gb_s * 1e9) * 1e3
    return Question(
        "tier_copy",
        f"The replica keeps a CPU tier for its KV cache (BF16 KV). A prompt of "
        f"{prefix + _TAIL:,} tokens finds its first {prefix:,} tokens' blocks in the tier, not "
        f"in HBM, and they are copied back instead of prefilled. Each GPU copies its own share "
        f"of the KV over its own PCIe link, all at once, at {gb_s:g} GB/s. How many "
        "milliseconds does the copy take?",
        ms, "figure",
        f"One token's KV: 2 (K and V) x {m.layers} layers x {m.kv_heads} KV heads x "
        f"{m.head_dim} dims x 2 bytes, over {tp} GPU{'s' if tp > 1 else ''}: {per_gpu:,.0f} "
        f"bytes a GPU; x {prefix:,} tokens / {gb_s:g} GB/s = {ms:.2f} ms.",
        "Only the prefix found in the tier is copied; each GPU moves its 1/TP share of every "
        "token's KV (all layers, K and V) over its own link. GB are 10^9 bytes.",
        unit="ms", rel_tolerance=0.01,
    )


#: The kinds by id, for the serving drills' registry.
KINDS = {"spec_gain": spec_gain, "lora_slots": lora_slots, "tier_copy": tier_copy}
