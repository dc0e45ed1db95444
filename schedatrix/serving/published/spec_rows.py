"""Published measurements of speculative decoding the model is held to (facts carried over from
their source, none measured here), joined to :data:`.published.PUBLISHED`.

Each row is kind ``spec_itl``: one request at a time (concurrency 1), ``input_tokens`` in and
``output_tokens`` out; the figure is the mean TPOT, (end - first token) / (output tokens - 1)
(milliseconds), with speculation as the row states (``spec_method``, ``spec_tokens``) or
without it (``spec_method`` ``none``: the same setup's baseline). A speculating row carries the
mean acceptance length its source measured in the same run (``accept_length``: tokens a
verification step yields); the replay solves the per-position acceptance rate from it
(:func:`accept_from_length`), so the row tests the step's time, not a guess of the draft's
quality: no constant of the model is fitted to these rows.

The source, vLLM issue #20780, gives every row below: Llama 3.1 8B at batch 1, EAGLE-1
(``yuhuili/EAGLE-LLaMA3.1-Instruct-8B``) and EAGLE-3 (``yuhuili/EAGLE3-LLaMA3.1-Instruct-8B``)
at K = 2 to 7 on MT-Bench, each K's acceptance length and TPOT, and the TPOT without
speculation. It does not name the GPU or the lengths: the same author's runs of this setup in
vLLM PR #16937 name one H100 (replayed on it); MT-Bench's single-turn prompts with Llama 3's
chat template are about 128 tokens and vLLM's MT-Bench loader asks for 256 out (replayed so).
vLLM was V1 of July 2025, scheduling synchronously (vLLM 0.10's profile). Both heads run as
the model's ``eagle`` proposer (one decoder layer, the target's LM head); EAGLE-3's wider input
(its fc over three hidden states, its attention over two) is not modelled, which ``known_miss``
says where it shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rows import LATENCY_BAND, Published

__all__ = ["SpecPublished", "SPEC_PUBLISHED", "accept_from_length"]

_ISSUE_20780 = ("https://github.com/vllm-project/vllm/issues/20780 (its AL and 'TPOT ms' "
                "tables, BS 1)")
_E3_MISS = ("EAGLE-3's head is replayed as EAGLE-1's; measured, its steps cost 1.0-2.4 ms more "
            "than EAGLE-1's at the same K (TPOT x AL), a cost the model does not carry")


@dataclass(frozen=True)
class SpecPublished(Published):
    """A published figure of a replica that speculates (or of its baseline, ``none``)."""

    spec_method: str = "none"
    spec_tokens: int = 0
    accept_length: float = 0.0
    head: str = ""

    def setup_key(self) -> tuple:
        return super().setup_key() + (self.spec_method, self.spec_tokens, self.head)

    @property
    def band(self) -> float:
        return LATENCY_BAND

    def setup(self) -> str:
        spec = ("no speculation" if self.spec_method == "none" else
                f"{self.head or self.spec_method} K={self.spec_tokens}, acceptance length "
                f"{self.accept_length:g}")
        return (f"{self.framework}: {self.model} on {self.tp} x {self.gpu}, one at a time, "
                f"{self.input_tokens:,} in / {self.output_tokens:,} out, {spec}, TPOT")


def accept_from_length(length: float, tokens: int) -> float:
    """The per-position acceptance rate ``a`` whose mean tokens a step,
    ``(1 - a^(K+1)) / (1 - a)``, is ``length`` at ``tokens`` = K (bisection; 1 <= length <= K+1)."""
    from ..perf.spec_decode import expected_tokens
    if not 1.0 <= length <= tokens + 1:
        raise ValueError(f"accept_length {length} outside 1 to K + 1 = {tokens + 1}")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if expected_tokens(mid, tokens) < length:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _row(head: str, k: int, length: float, tpot_ms: float, miss: str = "") -> SpecPublished:
    return SpecPublished(f"vllm-i20780-h100-8b-{head}-k{k}", _ISSUE_20780, "vllm",
                         "llama-3.1-8b", "h100-80gb", 1, "spec_itl", 1, 128, 256, tpot_ms, "ms",
                         "MT-Bench; the GPU from the author's PR #16937, lengths assumed "
                         "(module docstring)", known_miss=miss, spec_method="eagle",
                         spec_tokens=k, accept_length=length, head=head)


#: ``(K, EAGLE-1 acceptance length, EAGLE-3's, EAGLE-1 TPOT ms, EAGLE-3's)``, every K of the issue.
_I20780 = ((2, 2.1, 2.36, 4.37, 4.32), (3, 2.29, 2.79, 4.29, 4.09), (4, 2.39, 3.08, 4.48, 4.05),
           (5, 2.43, 3.32, 4.71, 4.13), (6, 2.45, 3.46, 4.94, 4.2), (7, 2.47, 3.54, 5.2, 4.29))

SPEC_PUBLISHED: tuple[SpecPublished, ...] = (
    SpecPublished("vllm-i20780-h100-8b-vanilla", _ISSUE_20780, "vllm", "llama-3.1-8b",
                  "h100-80gb", 1, "spec_itl", 1, 128, 256, 7.07, "ms",
                  "MT-Bench, no speculation (the issue's 'vanilla' column, one value for every "
                  "K); the GPU from the author's PR #16937, lengths assumed",
                  known_miss="the model's batch-1 step on the H100 (vLLM 0.10's host time "
                             "per iteration) is longer than this July 2025 build's"),
    *(_row("eagle1", k, l1, t1) for k, l1, _, t1, _ in _I20780),
    *(_row("eagle3", k, l3, t3, _E3_MISS) for k, _, l3, _, t3 in _I20780),
)
