"""Published measurements of many LoRA adapters on one base model the model is held to (facts
carried over from their source, none measured here), joined to :data:`.rows.UNREPLAYED` for
those it cannot set up.

Each row is kind ``lora_ratio``: a served load replayed as its benchmark generated it, the
figure the load's throughput (completed requests over the time from the benchmark's start to
the last response, requests per second) with ``adapters`` adapters over the same load's
throughput on the base model alone (no adapter). A ratio of one system's two runs: the
engine's own speed cancels, the cost of the adapters stays.

The source, S-LoRA's artifact (its paper's A100-80GB synthetic runs, setting S2), gives every
row below: Llama-7B (``huggyllama/llama-7b``, the catalog's ``llama-2-7b`` shape) on one
A100-80GB, requests at 10 a second (Poisson) for 300 s, prompt and output lengths uniform on
8 to 511 tokens, each request's adapter uniform over the N adapters (its power law of
exponent 1), the adapters of ranks 64, 32, 16 and 8 in turn, adapting q, k, v and o. The
replay draws the same requests (the benchmark's seeded generator, seed 42), runs every adapter
at rank 64 (as vLLM pads each to ``max_lora_rank``) on the attention's modules, with as many
slots as adapters and every adapter in host memory (S-LoRA keeps them all there and never makes
a request wait for a slot), with no CUDA graphs (S-LoRA's LightLLM launches its kernels from
Python), on vLLM 0.10's profile: S-LoRA's own engine has none, which ``known_miss`` says where
it shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rows import THROUGHPUT_BAND, Published

__all__ = ["LoraPublished", "LORA_PUBLISHED", "LORA_UNREPLAYED", "SLORA_BASE_RPS",
           "is_lora"]

_SLORA = ("https://github.com/S-LoRA/S-LoRA/blob/2a2786b9dff40300ccc21b878ab8a14dad9244f3/"
          "benchmarks/paper/synthetic/slora/synthetic_num_adapters_a100-80_S2_slora.jsonl "
          "(S-LoRA's artifact: 'throughput' of each num_adapters, 0 = the base model; its "
          "workload: benchmarks/trace.py, exp_suite.py 'a100-80-S2-num-adapter')")
#: S-LoRA's throughput of that load on the base model (``num_adapters`` 0), requests/s.
SLORA_BASE_RPS = 9.6412283365101
_ENGINE_MISS = ("vLLM 0.10's profile, replayed for S-LoRA's engine, has room at 10 req/s with "
                "or without adapters (S-LoRA's base model kept up, mean first token 0.92 s; its "
                "runs with adapters fell behind, 26-37 s), so with 1 to 50 adapters the literal "
                "replay's ratio stays within 1.5% of 1. Saturated (validation/lora_regime.py: 3 x "
                "the rate, where the ratio no longer moves), one adapter costs the model 3% of "
                "its throughput against S-LoRA's 20%; the model's cost grows with the distinct "
                "adapters a batch reads (21% at 200 adapters of S-LoRA's mean rank, the "
                "published 22%) where S-LoRA paid about 20% at any number: the model lacks a "
                "cost of serving adapters at all that S-LoRA's kernels had")


@dataclass(frozen=True)
class LoraPublished(Published):
    """A published ratio of a load's throughput with ``adapters`` LoRA adapters to the base
    model's on the same load (see the module's setup)."""

    adapters: int = 0
    rank: int = 64
    targets: str = "attention"
    rate_rps: float = 10.0
    duration_s: float = 300.0
    length_range: tuple = (8, 512)
    seed: int = 42

    def setup_key(self) -> tuple:
        return super().setup_key() + (self.adapters, self.rank, self.targets, self.rate_rps)

    @property
    def band(self) -> float:
        return THROUGHPUT_BAND

    def trace(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The requests S-LoRA's benchmark sends for this row (its benchmarks/trace.py
        ``generate_requests``, NumPy's legacy generator seeded as it seeds it): ``(arrival_s,
        input_tokens, output_tokens, adapter)``, arrivals gamma-spaced at ``rate_rps`` (cv 1:
        Poisson), lengths uniform on ``length_range``, each request's adapter ``int(power(1)
        x N)`` (uniform over the N). The draws come in the same order whatever N, so the base
        model's run takes the same arrivals and lengths, without the adapters."""
        rs = np.random.RandomState(self.seed)
        total = int(self.rate_rps * self.duration_s)
        adapter = (rs.power(1.0, total) * max(self.adapters, 1)).astype(np.int64)
        low, high = self.length_range
        inp = rs.randint(low, high, total).astype(np.int64)
        out = rs.randint(low, high, total).astype(np.int64)
        arrival = np.cumsum(rs.gamma(1.0, 1.0 / self.rate_rps, total))
        return arrival, inp, out, adapter

    def setup(self) -> str:
        low, high = self.length_range
        graphs = "" if self.cuda_graphs else ", no CUDA graphs"
        return (f"{self.framework}: {self.model} on {self.tp} x {self.gpu}, {self.rate_rps:g} "
                f"req/s for {self.duration_s:g} s, {low} to {high - 1} in and out, "
                f"{self.adapters} adapter{'s' if self.adapters > 1 else ''} (rank "
                f"{self.rank}, {self.targets}) over none, "
                f"throughput{graphs}")


def is_lora(row) -> bool:
    """Whether ``row`` is a multi-LoRA row."""
    return isinstance(row, LoraPublished)


def _row(adapters: int, rps: float) -> LoraPublished:
    return LoraPublished(f"slora-a100-7b-s2-n{adapters}", _SLORA, "s-lora", "llama-2-7b",
                         "a100-80gb", 1, "lora_ratio", 0, 260, 260, rps / SLORA_BASE_RPS, "x",
                         f"S-LoRA, {rps:.3f} req/s with {adapters} adapters over "
                         f"{SLORA_BASE_RPS:.3f} on the base model; the engine replayed as "
                         "vLLM 0.10 (module docstring)", cuda_graphs=False,
                         known_miss=_ENGINE_MISS, engine="vllm-0.10", adapters=adapters)


#: ``(adapters, S-LoRA's throughput req/s)``, every run of the file with adapters.
_S2_A100 = ((1, 7.7372549118667315), (20, 7.925941011077295), (50, 7.836613462087337),
            (100, 7.741741765609332), (200, 7.517157218870266))

LORA_PUBLISHED: tuple[LoraPublished, ...] = tuple(_row(n, rps) for n, rps in _S2_A100)

#: Published measurements of multi-LoRA serving not replayed, each with what it lacks.
LORA_UNREPLAYED: tuple[tuple[str, str, str], ...] = (
    ("S-LoRA on A100-80GB, setting S4 (Llama-13B, 0 to 400 adapters, 6 req/s)",
     "https://github.com/S-LoRA/S-LoRA/blob/a0926aa46c8cc9f1375cf02a97040fd4b8a56a6b/benchmarks/"
     "paper/synthetic/slora/synthetic_num_adapters_a100-80_S4_slora.jsonl",
     "Llama-13B is not in the catalog"),
    ("vLLM 0.6.5's benchmark_throughput.py with one rank-8 adapter (max_loras 1 and 4) against "
     "the base model: 1,788 and 1,792 against 2,694 output tok/s, Llama-2-7B on one A100",
     "https://github.com/vllm-project/vllm/pull/11267",
     "ShareGPT's length mix, which is not shipped, and the A100's memory is not named"),
    ("Punica's text-generation throughput by adapter popularity (Distinct, Uniform, Skewed, "
     "Identical), Llama-2 7B to 70B on A100s",
     "https://arxiv.org/abs/2310.18547",
     "its figures are plots only (no table to carry over)"),
    ("SGLang PR #23047: bench_one_batch_server's base model against one adapter (with CUDA "
     "graphs, and an optimised LoRA path), Qwen3-30B-A3B on 4 x H200 (TP 4), 1,024 in / 2,048 "
     "out, batches of 1, 128 and 512",
     "https://github.com/sgl-project/sglang/pull/23047",
     "the model refuses LoRA on a mixture of experts; the adapter's rank and modules and the "
     "SGLang commit are not stated, and the table's rows could not be read from the stored "
     "copy of the thread"),
    ("TensorRT-LLM issue #2441: gptManagerBenchmark of Llama 3 8B on one H100, 1,000 requests "
     "of 128 in / 128 out, without adapters and with three random adapters",
     "https://github.com/NVIDIA/TensorRT-LLM/issues/2441",
     "the H100's variant, the engine's build (batch size, LoRA rank and modules) and version "
     "are not stated, and no figure could be read from the stored copy of the thread"),
    ("TensorRT-LLM PR #4884: trtllm-bench of Llama 3.1 8B in FP8 on one H100, 100 requests of "
     "128 in / 128 out at concurrency 2, with and without one adapter",
     "https://github.com/NVIDIA/TensorRT-LLM/pull/4884",
     "the adapter (a Llama-2-13B one) has no stated rank or modules, the version is not "
     "stated, and the table's rows could not be read from the stored copy of the thread"),
    ("vLLM PR #15655: V1's LoRA slowdown against the base model, Llama 3.1 8B on one H100 and "
     "on an L4, prompts of 128 to 8k tokens through GenAI-Perf",
     "https://github.com/vllm-project/vllm/pull/15655",
     "the H100 and L4 figures are heatmap images (no table to carry over); the output "
     "lengths, concurrency and adapters' rank are not stated in the text"),
)
