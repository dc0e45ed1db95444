"""Published measurements of a CPU tier for the KV cache (vLLM's offloading connector, LMCache,
TensorRT-LLM's offloaded reuse), and why none is replayed yet: each lacks a setup the model can
state (its model or GPU not in the catalog, or the figure read only as an "up to" with no row
behind it). :data:`OFFLOAD_ROWS` is where a row goes once one is found; the CPU tier's terms
are held instead to their own sources (docs/serving-calibration.md, "A CPU tier for the KV
cache")."""

from __future__ import annotations

__all__ = ["OFFLOAD_ROWS", "OFFLOAD_UNREPLAYED"]

#: Replayable rows of a CPU KV tier, :class:`~.published.Published` each (none found with a
#: complete setup).
OFFLOAD_ROWS: tuple = ()

#: Published measurements of a CPU KV tier not replayed, each with what it lacks.
OFFLOAD_UNREPLAYED: tuple[tuple[str, str, str], ...] = (
    ("vLLM's KV offloading connector (0.11 to 0.14): TTFT of prompts whose KV comes back from "
     "CPU memory 2x to 22x below recomputing it, H100",
     "https://blog.vllm.ai/2026/01/08/kv-offloading-connector.html",
     "read only as that range: the prompt lengths, model and load of each figure were not "
     "carried over, so no row can be set up"),
    ("LMCache's CPU offloading in vLLM 0.10.1.1: TTFT -58.8% on 20K-token multi-turn chat "
     "(GPUStack)",
     "https://docs.gpustack.ai/2.0/performance-lab/references/"
     "evaluating-lmcache-prefill-acceleration-in-vllm",
     "Qwen3-8B on an RTX 4090, neither in the catalog"),
    ("TensorRT-LLM KV cache reuse offloaded to CPU memory: TTFT up to 14x faster on x86 H100, "
     "28x on GH200 (NVIDIA's blog)",
     "https://forums.developer.nvidia.com/t/optimizing-time-to-first-token-with-fine-grained-"
     "kv-cache-blocks-real-time-reuse-and-efficient-eviction-algorithms/312692",
     "an \"up to\" figure whose model, prompt and turn gap were not carried over"),
    ("llm-d's tiered prefix cache guide: 100 GB CPU tier per 4 x H100 replica",
     "https://llm-d.ai/docs/guide/Installation/tiered-prefix-cache/cpu",
     "a recipe with no measured figure; its Qwen3-32B is not in the catalog"),
)
