"""Two serving drill kinds of lesson 15, posed on the drill's replica: speculative decoding's
gain at the replica's batch, and the copy back of a prefix from a CPU tier of the KV cache.

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

__all__ = ["spec_gain", "tier_copy", "KINDS", "SPEC_CHOICES", "TIER_PREFIXES"]

#: (method, K, acceptance rate) the speculation kind draws: vLLM's example K per method and
#: acceptance rates around the published ones (docs/serving-calibration.md).
SPEC_CHOICES = (("eagle", 3, 0.4), ("eagle", 3, 0.57), ("eagle", 3, 0.7), ("eagle", 5, 0.6),
                ("ngram", 5, 0.5), ("ngram", 5, 0.7), ("ngram", 3, 0.8))
#: The cached prefixes the CPU tier kind draws, tokens (whole hash blocks of 512).
TIER_PREFIXES = (1024, 1536, 2048, 3072, 4096, 6144, 8192)
#: Tokens of a prompt past its cached prefix (and of room for its output within the context).
_TAIL = 512


def _pick(r: random.Random, options):
    return options[int(r.random() * len(options))]


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
    kv = 2 * m.layers * m.kv_heads * m.head_dim * 2
    per_gpu = kv / tp
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
KINDS = {"spec_gain": spec_gain, "tier_copy": tier_copy}
