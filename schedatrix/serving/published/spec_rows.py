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

A draft-model row (``spec_method`` ``draft``, the drafting catalog model in ``draft_model``)
would be replayed the same way, its acceptance solved from the length measured in its run; none
is published yet with a setup the model can state. :data:`SPEC_UNREPLAYED` lists every
draft-model measurement checked, each with what it lacks (most draft with Llama 3.2 1B, which
the catalog does not hold; none gives the acceptance length of its run beside a catalog pair on
a catalog GPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from .rows import LATENCY_BAND, Published

__all__ = ["SpecPublished", "SPEC_PUBLISHED", "SPEC_UNREPLAYED", "accept_from_length"]

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
    draft_model: str = ""

    def setup_key(self) -> tuple:
        return super().setup_key() + (self.spec_method, self.spec_tokens, self.head,
                                      self.draft_model)

    @property
    def band(self) -> float:
        return LATENCY_BAND

    def setup(self) -> str:
        who = f"draft {self.draft_model}" if self.spec_method == "draft" else \
            self.head or self.spec_method
        spec = ("no speculation" if self.spec_method == "none" else
                f"{who} K={self.spec_tokens}, acceptance length {self.accept_length:g}")
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

#: Published measurements of draft-model speculative decoding not replayed, each with what it
#: lacks (every one checked for a row: a catalog target and draft on a catalog GPU, the
#: acceptance length of the same run, and the same setup without speculation).
SPEC_UNREPLAYED: tuple[tuple[str, str, str], ...] = (
    ("vLLM V1's draft-model PR: acceptance lengths of Qwen3-32B drafted by Qwen3-1.7B on "
     "MT-Bench (K = 3, temperature 0 and 1), and its TPOT with and without a draft",
     "https://github.com/vllm-project/vllm/pull/24322",
     "Qwen3-32B and Qwen3-1.7B are not in the catalog; its Llama 3 check could not be read "
     "from the stored copy of the thread, so no Llama row was carried over"),
    ("vLLM's blog on speculative decoding (2024-10-17): Llama 3 70B on 4 x H100, ShareGPT, "
     "drafted by Qwama-0.5B: up to 1.5x at 1 QPS, 1.4x slower at high QPS",
     "https://github.com/vllm-project/vllm-project.github.io/blob/"
     "0a12f21577ceffd6ed1e741d62421a5eed62184b/_posts/2024-10-17-spec-decode.md",
     "its figures are plots only; Qwama-0.5B is not in the catalog; ShareGPT's length mix is "
     "not shipped; no acceptance rate is given"),
    ("NVIDIA's blog on Llama 3.3 70B with draft-target speculative decoding in TensorRT-LLM: "
     "51.14 to 181.74 output tok/s (3.55x) on H200",
     "https://developer.nvidia.com/blog/boost-llama-3-3-70b-inference-throughput-3x-with-"
     "nvidia-tensorrt-llm-speculative-decoding/",
     "only that summary figure could be read from the stored copy (not the table's draft "
     "models, draft length or lengths), and no acceptance rate is given: replaying it would "
     "mean fitting the acceptance to the speedup"),
    ("NVIDIA's blog \"TensorRT-LLM Speculative Decoding Boosts Inference Throughput by up to "
     "3.6x\": Llama 3.1 405B on 4 GPUs and Llama 3.1 70B on one, drafts of several sizes, "
     "TensorRT-LLM 0.14, FP8",
     "https://machinedaily.ai/tensorrt-llm-speculative-decoding-boosts-inference-throughput "
     "(a copy of NVIDIA's post)",
     "the copy keeps the text but not the tables; Llama 3.1 405B is not in the catalog; no "
     "acceptance rate is named"),
    ("vLLM's unified parallel drafting PR: PARD Llama 3.2 1B drafting Llama 3.3 70B in NVFP4 "
     "on one B200, K = 11: about 254 output tok/s, 3.10x over its baseline at batch 1",
     "https://github.com/vllm-project/vllm/pull/32887",
     "the B200 and NVFP4 are not in the catalog, nor is Llama 3.2 1B; PARD drafts all K "
     "tokens in one pass, which the draft model here does not"),
    ("SGLang's adaptive speculation PR: Llama 3.1 8B drafted by Llama 3.2 1B (STANDALONE, 3 "
     "steps) on one H20, 16 requests at concurrency 8, static against adaptive drafting",
     "https://github.com/sgl-project/sglang/pull/23519",
     "the H20 and Llama 3.2 1B are not in the catalog; it compares two ways of drafting, and "
     "its figures were not read beyond the setup"),
    ("Tenstorrent's speculative-decoding benchmark on vLLM: Llama 3.1 8B drafted by Llama 3.2 "
     "1B on an A100, ITL from 16-17 ms to 7-12 ms by prompt category",
     "https://github.com/tenstorrent/tt-inference-server/pull/3699",
     "Llama 3.2 1B is not in the catalog; the A100's memory and the vLLM version are not "
     "named; the figures are ranges its author calls not conclusive"),
    ("vLLM issue #8439: Llama 3.1 8B drafted by Llama 3.2 1B (K = 8) on one H100, 240 output "
     "tok/s", "https://github.com/vllm-project/vllm/issues/8439",
     "no run without speculation and no acceptance rate beside it; the load is not stated; "
     "Llama 3.2 1B is not in the catalog"),
    ("vLLM V0's draft-model optimisation: a 45% latency reduction",
     "https://github.com/vllm-project/vllm/issues/4630",
     "a screenshot only (no table to carry over); its models and load are not in the text"),
    ("vLLM's first draft-model PR (Anyscale): 30-50% lower latency by draft, target and "
     "dataset, e.g. Llama-2-13B drafted by llama-68m on 4 GPUs",
     "https://github.com/vllm-project/vllm/pull/2188",
     "a range with no row behind it; Llama-2-13B and llama-68m are not in the catalog"),
    ("vLLM PR #4840: benchmark_latency.py of OPT-30B drafted by OPT-125m at TP 1, 2 and 4 on "
     "A100s, 4.62, 6.10 and 6.23 s against 5.63, 3.60 and 2.42 s without",
     "https://github.com/vllm-project/vllm/pull/4840",
     "OPT models are not in the catalog; no acceptance rate is given"),
    ("vLLM issue #5239: Llama-2-70B-chat drafted by TinyLlama-1.1B (GPTQ) at TP 2, eager, "
     "K = 5: no faster than without", "https://github.com/vllm-project/vllm/issues/5239",
     "TinyLlama and GPTQ weights are not in the catalog; the figures are screenshots"),
    ("llama.cpp PR #27694: Llama-3.1-8B drafted by a 3B model in 4-bit GGUF, accepted length "
     "and throughput by temperature", "https://github.com/ggml-org/llama.cpp/pull/27694",
     "llama.cpp (no engine profile) with quantized drafts; the figures are the changes the PR "
     "makes (0% at temperature 0), not against decoding without a draft"),
    ("The vLLM draft-model PR's author's TP 2 sweep: Llama 3.3 70B in BF16 drafted by Llama "
     "3.2 1B at K = 3 to 8, and without speculation, vllm bench serve on InstructCoder at "
     "request rate C with at most C in flight (C = 1 to 64), a vLLM build of January 2026 "
     "(0.1.dev13107); each run prints its acceptance length beside TTFT and TPOT",
     "https://github.com/tomasruizt/vllm-scripts/tree/d94d714fa4e451591f628542a57bbc7f9c2d2619/"
     "online-throughput (tp2-llama70b.md and the k3 to k8 logs)",
     "the GPU is not named (an 80 GB card whose platform, the serve logs say, lacks GPU P2P, "
     "so vLLM's custom all-reduce was off); InstructCoder's length mix is not shipped (the "
     "outputs end at EOS); Llama 3.2 1B is not in the catalog"),
    ("'Speculative Decoding: Performance or Illusion?' (arXiv 2601.11580), Figure 1: the "
     "speedup at batch 1, 16, 64 and 128, K = 3, of n-gram, EAGLE and EAGLE-3 on Llama-3.1-8B "
     "(one H100) and of a Llama-3.2-1B draft and EAGLE on Llama-3-70B (TP 4), vLLM 0.10.1, on "
     "GSM8K, CNN/DailyMail, ShareGPT and InstructCoder",
     "https://arxiv.org/abs/2601.11580; its code and data: "
     "https://github.com/SpecDecode-Bench/simulator (data/llama3.1-8B) and "
     "https://github.com/SpecDecode-Bench/vllm (scripts/)",
     "a plot only; the acceptance of its K = 3 runs is not published (its simulator's data has, "
     "for Llama-3.1-8B, each request's tokens and the accepted length at each position with 20 "
     "drafts, from which K = 3's could follow); each batch is one prompt copied batch-size "
     "times, whose copies accept alike, where the model draws each sequence's acceptance "
     "apart; the 70B's draft, Llama 3.2 1B, is not in the catalog"),
    ("SGLang PR #10090 (standalone speculative decoding): Llama 3.1 70B drafted by Llama 3.2 "
     "1B at TP 4, 5 random prompts of about 1,024 in / 1,024 out one at a time: 63.87 output "
     "tok/s without, 173.38 with",
     "https://github.com/sgl-project/sglang/pull/10090",
     "the GPU is not named, nor the draft's steps and tree (SGLang's default drafts a tree, "
     "which the model's chain does not); the acceptance length (3.85) is one log line's, not "
     "the run's mean; Llama 3.2 1B is not in the catalog"),
)
