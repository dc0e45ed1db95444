"""Published measurements of a CPU tier for the KV cache (vLLM's offloading connector, LMCache,
TensorRT-LLM's offloaded reuse): the one replayed, and why the others are not (their model or
GPU not in the catalog, or the figure read only as an "up to" with no row behind it).

The one replayed is Figure 1 of vLLM's post on its offloading connector: one request alone,
Llama-3.1-8B-Instruct on one H100 80GB HBM3, vLLM at commit 2a1776b7 (between 0.13 and 0.14,
its offloading connector with the fixes the post names), FlashAttention, GPU prefix caching off
so that every hit comes from the CPU tier, 16-token blocks, tokenization off; the time to the
first token of a prompt of 1,000 to 100,000 tokens computed on the GPU ("GPU Compute") and with
its KV loaded from CPU memory ("Load from CPU"). The figure is a plot without a table, so its
points were read off its pixels: each marker's centre, between the two gridlines around it
(every 1,000 ms, 106.4 pixels apart in the 1,999 x 1,114 image), to about a pixel, 10 ms
(:data:`FIGURE1_READING_MS`; tools/read_figure_points.py prints this table from the figure,
and reads a plot drawn with known values to within 1.5 pixels). A point whose reading error is
more than half its band (15% of a latency) is not a row: the "Load from CPU" points from 1,000
to 40,000 tokens (14 to 128 ms), listed in :data:`OFFLOAD_UNREPLAYED`; at 1,000 tokens the "GPU
Compute" marker lies under the other. Where 0 lies is itself uncertain by a pixel (the light
gridline and the darker axis line drawn over it are a pixel apart): the points are read with
the two taken as one line.
:mod:`.rows` makes the rows (``first_token`` for the GPU's, ``cpu_tier_ttft`` for the CPU
tier's); the CPU tier's terms are held to their own sources too (docs/serving-calibration.md,
"A CPU tier for the KV cache").
"""

from __future__ import annotations

__all__ = ["OFFLOAD_POST", "FIGURE1_TTFT_MS", "FIGURE1_READING_MS", "FIGURE2_PREFILL_TOK_S",
           "OFFLOAD_UNREPLAYED"]

OFFLOAD_POST = ("https://github.com/vllm-project/vllm-project.github.io/blob/"
                "5ffe2dd543a30f34309d71d8374803612223e9fb/_posts/"
                "2026-01-08-kv-offloading-connector.md ('Inside vLLM's New Offloading "
                "Connector', Figure 1 and 'Evaluation Setup'; "
                "https://blog.vllm.ai/2026/01/08/kv-offloading-connector.html)")

#: Figure 1, read off its pixels: ``(prompt tokens, GPU Compute ms, Load from CPU ms)``, the
#: second None where the point is too small for its reading error (the module's docstring).
FIGURE1_TTFT_MS: tuple[tuple[int, float, float | None], ...] = (
    (10_000, 268, None), (20_000, 637, None), (30_000, 1101, None), (40_000, 1652, None),
    (50_000, 2290, 156), (60_000, 3018, 193), (70_000, 3849, 221), (80_000, 4781, 250),
    (90_000, 5739, 278), (100_000, 6844, 312),
)
#: How far a point read off Figure 1 may lie from the plotted value, ms (about a pixel).
FIGURE1_READING_MS = 10.0

#: Figure 2, read the same way (its gridlines every 50,000 tokens/s, 103.4 pixels apart):
#: prefill throughput of 10,000 prompts of 512 tokens sent at once, prompt tokens a second,
#: without the connector (its dashed line) and with it where nothing is found in CPU memory
#: (0% hits); within about 500 tokens/s. The points above 0% are not rows: the post does not say
#: how a hit rate was made, and at 100% the prompts' KV (671 GB) would not fit its 500 GB of DRAM
#: at once.
FIGURE2_PREFILL_TOK_S = {"without": 43_932.0, "with, 0% hits": 42_093.0}

#: Published measurements of a CPU KV tier not replayed, each with what it lacks.
OFFLOAD_UNREPLAYED: tuple[tuple[str, str, str], ...] = (
    ("vLLM's KV offloading connector, Figure 1's 'Load from CPU' points at 1,000 to 40,000 "
     "tokens (read as 14, 42, 71, 99 and 128 ms)", OFFLOAD_POST,
     "read off the plot to about 10 ms, more than half the band of a latency of that size"),
    ("vLLM's KV offloading connector, Figure 2 from 10% to 100% CPU hits: prefill throughput "
     "of 10,000 prompts of 512 tokens (read as 46,585 to 389,320 tokens/s)", OFFLOAD_POST,
     "the post does not say how a hit rate was made (which prompts, which blocks), and at 100% "
     "the prompts' KV, 671 GB, is more than its 500 GB of DRAM holds at once"),
    ("vLLM's KV offloading connector, Figures 5 and 6 (Llama-3.2-1B-Instruct, DMA against a "
     "copy kernel) and 3 and 4 (PCIe copies by block size)", OFFLOAD_POST,
     "Llama 3.2 1B is not in the catalog; the copy micro-benchmarks time the link, which the "
     "tier's PCIe rate stands for (docs/serving-calibration.md)"),
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
