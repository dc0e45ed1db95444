"""Published measurements of real deployments the performance model is held to: facts carried
over from their sources (each row names its address), none measured here.

Each row is a setup the simulator can replay (:mod:`schedatrix.serving.validation.replay`):

- ``first_token``: ``batch`` prompts of ``input_tokens`` at once, one output token each; the
  figure is the time to the first token (milliseconds);
- ``batch_latency``: ``batch`` requests at once, ``input_tokens`` in and ``output_tokens`` out
  each; the figure is the time until the last one finishes (milliseconds), as vLLM's
  ``benchmark_latency.py`` times one ``generate()`` call;
- ``batch_throughput``: the same batch; the figure is output tokens per second per GPU over
  the whole batch (prefill included), as TensorRT-LLM's ``gptSessionBenchmark`` reports;
- ``batch_rate``: the same, output tokens per second of the whole batch (lmdeploy's static
  benchmark);
- ``inter_token``: one request at a time (concurrency 1), ``input_tokens`` in and
  ``output_tokens`` out; the figure is its mean time between output tokens after the first
  (milliseconds), as NVIDIA's AIPerf reports ITL;
- ``prefill_rate``: ``batch`` prompts of ``input_tokens`` at once, one output token each (with
  ``kv_offload_gb`` > 0, a CPU tier of that size in which nothing is found); the figure is the
  prompt tokens over the time until the last request ends (tokens a second);
- ``cpu_tier_ttft``: one prompt of ``input_tokens`` alone, its KV copied back from the CPU tier
  of the KV cache (computed once before, then pushed out of HBM); the figure is its time to the
  first token (milliseconds);
- ``fp8_speedup``: the same batch run in BF16 and in FP8; the figure is the BF16 run's time over
  the FP8 run's (TensorRT-LLM's quantization blog);
- ``online_ttft`` and ``online_itl``: ``users`` clients in a closed loop (each sends its next
  request when its previous one ends, no think time), ``requests`` in all, ``input_tokens`` in
  and ``output_tokens`` out each; the figure is the time to first token, or the inter-token
  latency per request ((end - first token) / (output tokens - 1), AIPerf's ITL), in the
  source's ``statistic`` over the requests (``mean`` or ``median``), milliseconds. ``client``
  names the benchmark client whose definitions the figure follows: ``aiperf`` (the mean over
  the requests of each one's (end - first token) / (output tokens - 1)) or ``vllm-bench``
  (vLLM's ``bench serve``: TTFT per request, ITL over every gap between two streamed tokens of
  every request, pooled). ``spread`` > 0: each request's lengths are drawn uniformly within
  ``spread`` of the stated ones (vLLM's ``--random-range-ratio``);
- ``online_tok_s``: the same served load; the figure is its output tokens over the time from
  the first request's send to the last one's end (``bench serve``'s output throughput, tok/s).

``dtype`` is the precision the row ran in (``bf16``, or ``fp8``: FP8 weights and KV cache).
``known_miss`` says why a row misses its band when it does (shown on the page beside the row's
ratio); it takes nothing out of the count.

``engine`` names the profile of the engine that measured the row (``vllm-0.10``,
``tensorrt-llm``, ...; by default from ``framework``); ``framework`` is the project, shown in the
row's setup. ``validation.replay.engine_flags`` turns the engine into the simulator's settings:
vLLM's rows run vLLM's host time per iteration (:mod:`.host`); TensorRT-LLM's static rows
(``tensorrt-llm-0.9``: its performance page; ``tensorrt-llm``: its quantization blog's fixed
batch) and ``lmdeploy-0.1``'s are C++ sessions running a static batch with no scheduler between
steps, replayed with no host time; NIM's ``tensorrt-llm`` rows are a served load on its
in-flight batching. ``cuda_graphs`` False: the row ran without CUDA graphs (vLLM's
``enforce_eager``). ``band`` is the largest ratio error the validation accepts (latency 15%,
throughput 20%); ``calibrates`` names the term of the host's costs the row was fitted to
(``fitted``: shown, left out of the count, and a test checks the fit, not the model).
Two rows with one ``setup_key`` (same model, GPU, parallelism, batch, lengths, precision,
CUDA graphs and engine) count as one test.

``UNREPLAYED`` lists published measurements the model cannot set up yet, and why.
"""

from __future__ import annotations

from dataclasses import dataclass

from .offload_rows import (
    FIGURE1_READING_MS,
    FIGURE1_TTFT_MS,
    FIGURE2_PREFILL_TOK_S,
    OFFLOAD_POST,
    OFFLOAD_UNREPLAYED,
)

__all__ = ["Published", "PUBLISHED", "UNREPLAYED", "LATENCY_BAND", "THROUGHPUT_BAND",
           "ONLINE_TTFT_BAND"]

#: The widest accepted error, model over published minus 1, of a latency and a throughput row.
LATENCY_BAND = 0.15
THROUGHPUT_BAND = 0.20
#: An online row's time to first token under load: the client path outside the GPU and the
#: queue make it the loosest figure (issue 32: "online TTFT within 25%").
ONLINE_TTFT_BAND = 0.25

_TRT_DOC = ("https://github.com/NVIDIA/TensorRT-LLM/blob/v0.9.0/docs/source/performance.md "
            "(docs/source/performance.md: 'All data was generated using version 0.9.0')")
_PR10058 = "https://github.com/vllm-project/vllm/pull/10058 (its 'Benchmarks' table)"
_LMDEPLOY = ("https://github.com/InternLM/lmdeploy/blob/3e391df4673326f79363eebe030876861a9b7090"
             "/docs/en/benchmark/a100_fp16.md ('Static Inference Benchmark', v0.1.0a1)")
_VLLM_CI = ("https://buildkite.com/vllm/performance-benchmark/builds/9515 (vLLM's performance "
            "benchmark, latency tests: .buildkite/nightly-benchmarks/tests/latency-tests.json)")
_TRT_QUANT = ("https://github.com/NVIDIA/TensorRT-LLM/blob/2ee99e8abf59022addc0f6f48b9f5909a708b389"
              "/docs/source/blogs/quantization-in-TRT-LLM.md ('Speed up inference with SOTA "
              "quantization techniques in TRT-LLM')")
_VLLM_POST = ("https://github.com/vllm-project/vllm-project.github.io/blob/"
              "78672b0ff75843c0a043bcfdb411c0e1eedd0c03/_posts/2026-04-22-fp8-kvcache.md ('The "
              "State of FP8 KV-Cache and Attention Quantization in vLLM', 2026-04-22)")
#: The post's fitted line of the BF16 KV cache's ITL against the prompt's tokens at
#: concurrency 1 (vLLM 0.19.1, Llama 3.1 8B, one H100): intercept ms and slope ms a token.
_POST_ITL_MS, _POST_ITL_SLOPE_MS = 6.44, 4.37e-05
_NIM = ("https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md (NIM 1.8.0, "
        "Llama-3.3-70B-Instruct, '2 x H100 80G / fp8 TP2', AIPerf)")
_NIM_SWEEP = (_NIM + "; its whole concurrency sweep as copied, row for row, into "
              "https://github.com/zivbeker42/llm-guesstimator/blob/cf11e664a85abf1f5cb811e7c7798581"
              "aadb1290/tested_benchmarks/nim_llama33_70b_v1.8.0_2xH100_fp8TP2.csv (the copy's "
              "concurrency-1 rows match the page's)")

#: NVIDIA NIM 1.8.0's concurrency sweep of Llama 3.3 70B (the 3.1 70B shape) in FP8 on 2 x H100:
#: ``(input, output, concurrency, TTFT ms, ITL ms)``, every row of it (concurrency 1 included:
#: one user in a closed loop is one request at a time).
_NIM_PAGE: tuple[tuple[int, int, int, float, float], ...] = (
    (5000, 500, 1, 406.77, 18.58), (5000, 500, 5, 546.7, 21.83), (5000, 500, 25, 688.69, 38.75),
    (5000, 500, 50, 834.51, 59.73), (5000, 500, 100, 7996.25, 92.91),
    (5000, 500, 150, 34794.22, 92.86), (5000, 500, 200, 61680.22, 93.06),
    (5000, 500, 250, 88605.32, 93.2),
    (500, 2000, 1, 47.77, 18.91), (500, 2000, 5, 126.53, 19.04), (500, 2000, 25, 147.63, 21.69),
    (500, 2000, 50, 181.64, 23.97), (500, 2000, 100, 229.77, 29.98),
    (500, 2000, 150, 296.74, 37.85), (500, 2000, 200, 4867.89, 40.72),
    (200, 200, 1, 31.22, 18.8), (200, 200, 5, 88.7, 18.83), (200, 200, 25, 138.98, 20.61),
    (200, 200, 50, 156.28, 23.33), (200, 200, 100, 176.8, 29.87), (200, 200, 150, 195.51, 37.75),
    (200, 200, 200, 253.36, 42.95), (200, 200, 250, 264.22, 48.16),
    (1000, 1000, 1, 82.46, 18.67), (1000, 1000, 5, 145.62, 19.07),
    (1000, 1000, 25, 250.49, 22.45), (1000, 1000, 50, 278.62, 25.87),
    (1000, 1000, 100, 334.23, 34.21), (1000, 1000, 150, 428.54, 44.44),
    (1000, 1000, 200, 558.23, 50.66), (1000, 1000, 250, 3499.83, 56.3),
    (20000, 2000, 1, 1833.01, 19.58), (20000, 2000, 5, 2910.33, 25.24),
    (20000, 2000, 25, 18781.26, 48.26), (20000, 2000, 50, 123969.71, 49.22),
    (20000, 2000, 100, 333564.85, 49.81), (20000, 2000, 150, 543226.4, 50.01),
    (20000, 2000, 200, 753417.03, 50.06), (20000, 2000, 250, 963222.96, 50.13),
)


#: The benchmark process the page names ("Using AIPerf to Benchmark"): its sweep runs
#: ``aiperf profile --concurrency C --request-count $((C * 3))`` with no warm-up count and reads
#: ``time_to_first_token['avg']`` from profile_export_aiperf.json, the mean over all 3 x C
#: requests (https://docs.nvidia.com/nim/benchmarking/llm/latest/quickstart.html, 'Sweep Use
#: Cases' and 'Analyze Output').
_NIM_REQUESTS_PER_USER = 3


def _nim_rows(inp: int, out: int, users: int, ttft: float, itl: float) -> tuple:
    base = f"nim-h100-70b-fp8-tp2-u{users}-{inp}-{out}"
    note = ("FP8; a closed loop of `users` clients (AIPerf's concurrency), no think time, 3 "
            "requests a user (NIM's sweep); the page's figure read as the mean over them all")
    return tuple(Published(f"{base}-{k}", _NIM_SWEEP, "tensorrt-llm", "llama-3.1-70b",
                           "h100-80gb", 2, f"online_{k}", 1, inp, out, v, "ms", note,
                           dtype="fp8", users=users, requests=_NIM_REQUESTS_PER_USER * users,
                           statistic="mean", client="aiperf")
                 for k, v in (("ttft", ttft), ("itl", itl)))


#: The engine profile (schedatrix/serving/perf/engines.py) of each framework's rows, unless a
#: row names its own: vLLM's CI and PR #10058 ran vLLM's V1 engine with synchronous scheduling
#: (the host's time per iteration is fitted to one of them); TensorRT-LLM's rows ran its C++
#: runtime (gptSessionBenchmark: a static batch, the performance page's rows name
#: ``tensorrt-llm-0.9``; NIM: a TensorRT-LLM engine behind a server);
#: lmdeploy's, its TurboMind C++ engine (no profile: replayed as a static batch with no host).
_ENGINE_OF = {"vllm": "vllm-0.10", "tensorrt-llm": "tensorrt-llm", "lmdeploy": "lmdeploy-0.1"}


@dataclass(frozen=True)
class Published:
    """One published figure and the setup it was measured on."""

    id: str
    source: str
    framework: str
    model: str
    gpu: str
    tp: int
    kind: str
    batch: int
    input_tokens: int
    output_tokens: int
    value: float
    unit: str
    note: str = ""
    calibrates: str = ""
    cuda_graphs: bool = True
    dtype: str = "bf16"
    known_miss: str = ""
    engine: str = ""
    users: int = 0
    requests: int = 0
    statistic: str = ""
    client: str = ""
    spread: float = 0.0
    kv_offload_gb: float = 0.0

    def __post_init__(self):
        if not self.engine:     # the profile of the engine that measured the row
            object.__setattr__(self, "engine", _ENGINE_OF[self.framework])

    @property
    def fitted(self) -> bool:
        """Whether a constant of the model was fitted to this row (then it is not a test)."""
        return bool(self.calibrates)

    def setup_key(self) -> tuple:
        """What makes two rows one test: the same model, GPU, parallelism, kind of figure,
        batch, lengths, precision, CUDA graphs and engine."""
        return (self.model, self.gpu, self.tp, self.kind, self.batch, self.input_tokens,
                self.output_tokens, self.dtype, self.cuda_graphs, self.engine, self.users,
                self.requests, self.spread, self.client, self.statistic, self.kv_offload_gb)

    @property
    def online(self) -> bool:
        """A served load (``users`` clients in a closed loop) rather than one batch."""
        return self.kind in ("online_ttft", "online_itl", "online_tok_s")

    @property
    def band(self) -> float:
        if self.kind == "online_ttft":
            return ONLINE_TTFT_BAND
        return THROUGHPUT_BAND if self.kind in ("batch_throughput", "batch_rate",
                                                "online_tok_s", "prefill_rate") else LATENCY_BAND

    def setup(self) -> str:
        """The setup in words, for the validation table."""
        what = {"first_token": f"batch {self.batch}, {self.input_tokens:,} in, first token",
                "batch_latency": f"batch {self.batch}, {self.input_tokens:,} in / "
                                 f"{self.output_tokens:,} out, whole batch",
                "batch_throughput": f"batch {self.batch}, {self.input_tokens:,} in / "
                                    f"{self.output_tokens:,} out, out tok/s per GPU",
                "batch_rate": f"batch {self.batch}, {self.input_tokens:,} in / "
                              f"{self.output_tokens:,} out, out tok/s",
                "cpu_tier_ttft": f"one request, {self.input_tokens:,} in from the CPU tier, "
                                 "first token",
                "prefill_rate": f"batch {self.batch:,}, {self.input_tokens:,} in / 1 out, prompt "
                                "tok/s" + (f", a {self.kv_offload_gb:g} GB CPU tier, no hits"
                                           if self.kv_offload_gb else ""),
                "inter_token": f"one at a time, {self.input_tokens:,} in / "
                               f"{self.output_tokens:,} out, inter-token latency",
                "fp8_speedup": f"batch {self.batch}, {self.input_tokens:,} in / "
                               f"{self.output_tokens:,} out, BF16 time over FP8 time",
                "online_ttft": f"{self._served()}, {self.statistic} TTFT",
                "online_itl": f"{self._served()}, {self.statistic} ITL",
                "online_tok_s": f"{self._served()}, out tok/s",
                }[self.kind]
        graphs = "" if self.cuda_graphs else ", no CUDA graphs"
        dtype = ", FP8" if self.dtype == "fp8" else ""
        return (f"{self.framework}: {self.model} on {self.tp} x {self.gpu}, {what}{graphs}"
                f"{dtype}")

    def _served(self) -> str:
        """An online row's load in words: users, requests, lengths and the client."""
        within = f" ± {self.spread:.0%}" if self.spread else ""
        client = f" ({self.client})" if self.client else ""
        return (f"{self.users} users, closed loop, {self.requests:,} requests, "
                f"{self.input_tokens:,}{within} in / {self.output_tokens:,}{within} out{client}")


#: TensorRT-LLM 0.9's performance page (``_TRT_DOC``), every row of it for the catalog's models
#: (LLaMA 7B and 70B: Llama 2; Mixtral 8x7B) on the catalog's GPUs (H200 and H100 in FP8, A100 in
#: FP16), as printed: ``(gpu, model, tp, batch, input, output, value)``. Output length 1 is a
#: "Low Latency" table's first token latency (ms); the others are its "Peak Throughput" tables'
#: out tok/s per GPU. 12 rows a GPU and model pair, 54 in all. The page's GPT-J 6B, Mistral 7B,
#: Falcon 180B and its L40S tables are not in the catalog.
_TRT_PAGE: tuple[tuple[str, str, int, int, int, int, float], ...] = (
    # H200 GPUs (FP8)
    ("h200", "mixtral-8x7b", 2, 1024, 128, 128, 5444),
    ("h200", "mixtral-8x7b", 2, 256, 128, 2048, 4973),
    ("h200", "mixtral-8x7b", 2, 64, 2048, 128, 605),
    ("h200", "mixtral-8x7b", 2, 64, 2048, 2048, 1821),
    ("h200", "llama-2-7b", 1, 896, 128, 128, 20618),
    ("h200", "llama-2-7b", 1, 120, 128, 2048, 8348),
    ("h200", "llama-2-7b", 1, 64, 2048, 128, 2391),
    ("h200", "llama-2-7b", 1, 56, 2048, 2048, 3522),
    ("h200", "llama-2-70b", 1, 1024, 128, 128, 3989),
    ("h200", "llama-2-70b", 2, 512, 128, 2048, 3963),
    ("h200", "llama-2-70b", 1, 64, 2048, 128, 418),
    ("h200", "llama-2-70b", 1, 64, 2048, 2048, 1458),
    ("h200", "mixtral-8x7b", 2, 1, 128, 1, 12.1),
    ("h200", "mixtral-8x7b", 2, 1, 2048, 1, 87.7),
    ("h200", "llama-2-7b", 1, 1, 128, 1, 5.7),
    ("h200", "llama-2-7b", 1, 1, 2048, 1, 30.2),
    ("h200", "llama-2-70b", 4, 1, 128, 1, 17.8),
    ("h200", "llama-2-70b", 4, 1, 2048, 1, 103.0),
    # H100 GPUs (FP8)
    ("h100-80gb", "mixtral-8x7b", 2, 512, 128, 128, 5255),
    ("h100-80gb", "mixtral-8x7b", 2, 128, 128, 2048, 3408),
    ("h100-80gb", "mixtral-8x7b", 2, 64, 2048, 128, 588),
    ("h100-80gb", "mixtral-8x7b", 2, 32, 2048, 2048, 1317),
    ("h100-80gb", "llama-2-7b", 1, 896, 128, 128, 19854),
    ("h100-80gb", "llama-2-7b", 1, 120, 128, 2048, 6944),
    ("h100-80gb", "llama-2-7b", 1, 84, 2048, 128, 2163),
    ("h100-80gb", "llama-2-7b", 1, 56, 2048, 2048, 2826),
    ("h100-80gb", "llama-2-70b", 2, 1024, 128, 128, 3214),
    ("h100-80gb", "llama-2-70b", 4, 512, 128, 2048, 2725),
    ("h100-80gb", "llama-2-70b", 2, 96, 2048, 128, 346),
    ("h100-80gb", "llama-2-70b", 2, 64, 2048, 2048, 1011),
    ("h100-80gb", "mixtral-8x7b", 2, 1, 128, 1, 13.4),
    ("h100-80gb", "mixtral-8x7b", 2, 1, 2048, 1, 89.5),
    ("h100-80gb", "llama-2-7b", 1, 1, 128, 1, 6.3),
    ("h100-80gb", "llama-2-7b", 1, 1, 2048, 1, 30.8),
    ("h100-80gb", "llama-2-70b", 4, 1, 128, 1, 19.6),
    ("h100-80gb", "llama-2-70b", 8, 1, 2048, 1, 85.1),
    # A100 GPUs (FP16)
    ("a100-80gb", "mixtral-8x7b", 2, 512, 128, 128, 2842),
    ("a100-80gb", "mixtral-8x7b", 2, 128, 128, 2048, 1724),
    ("a100-80gb", "mixtral-8x7b", 2, 64, 2048, 128, 319),
    ("a100-80gb", "mixtral-8x7b", 2, 32, 2048, 2048, 801),
    ("a100-80gb", "llama-2-7b", 1, 256, 128, 128, 5390),
    ("a100-80gb", "llama-2-7b", 1, 32, 128, 2048, 1484),
    ("a100-80gb", "llama-2-7b", 1, 32, 2048, 128, 533),
    ("a100-80gb", "llama-2-7b", 1, 16, 2048, 2048, 603),
    ("a100-80gb", "llama-2-70b", 4, 1024, 128, 128, 686),
    ("a100-80gb", "llama-2-70b", 8, 512, 128, 2048, 684),
    ("a100-80gb", "llama-2-70b", 4, 96, 2048, 128, 80),
    ("a100-80gb", "llama-2-70b", 4, 64, 2048, 2048, 289),
    ("a100-80gb", "mixtral-8x7b", 2, 1, 128, 1, 23.8),
    ("a100-80gb", "mixtral-8x7b", 2, 1, 2048, 1, 160.9),
    ("a100-80gb", "llama-2-7b", 1, 1, 128, 1, 16.2),
    ("a100-80gb", "llama-2-7b", 1, 1, 2048, 1, 132.4),
    ("a100-80gb", "llama-2-70b", 4, 1, 128, 1, 45.6),
    ("a100-80gb", "llama-2-70b", 8, 1, 2048, 1, 249.2),
)

_SHORT = {"a100-80gb": "a100", "h100-80gb": "h100", "h200": "h200", "llama-2-7b": "7b",
          "llama-2-70b": "70b", "mixtral-8x7b": "mixtral"}

#: Why TensorRT-LLM 0.9's FP8 Mixtral rows miss (the numbers say it).
_MOE_FP8_MISS = ("replayed with 16-bit experts (the tensorrt-llm-0.9 profile: 0.9 had no FP8 "
                 "mixture of experts), they miss both ways: a first token of 128 tokens is "
                 "slower than published (it reads 45 GB of 16-bit experts a GPU), the "
                 "2,048-token prefills and the large batches faster; no route of the model fits "
                 "them all (docs/serving-calibration.md, MoE: every expert run densely brings 9 "
                 "of the 18 Mixtral rows in band, FP8 or 16-bit grouped experts 6)")
#: Why the A100's Mixtral rows with few distinct tokens miss.
_MOE_A100_MISS = ("faster than reading every expert at the A100's full bandwidth (46.7 GB a "
                  "GPU at 2,039 GB/s is 22.9 ms; 128 prompt tokens, or a batch of 32, touch all "
                  "8 experts under any independent routing): the benchmark's dummy-weight "
                  "tokens did not spread over the experts as the model assumes")


def _trt_row(g: str, model: str, tp: int, batch: int, inp: int, out: int,
             value: float) -> Published:
    fp8 = g != "a100-80gb"
    first = out == 1
    id_ = (f"trtllm-{_SHORT[g]}-{_SHORT[model]}{'-fp8' if fp8 else ''}-tp{tp}-"
           + (f"ttft-{inp}" if first else f"bs{batch}-{inp}-{out}"))
    note = ("FP8 weights and FP8 KV cache (the page's 'FP8' tables)" if fp8 else
            "FP16, A100 SXM 80GB")
    miss = ""
    if model == "mixtral-8x7b":
        miss = _MOE_FP8_MISS if fp8 else _MOE_A100_MISS
    return Published(id_, _TRT_DOC, "tensorrt-llm", model, g, tp,
                     "first_token" if first else "batch_throughput", batch, inp, out, value,
                     "ms" if first else "tok/s/GPU", note, dtype="fp8" if fp8 else "bf16",
                     engine="tensorrt-llm-0.9", known_miss=miss)


PUBLISHED: tuple[Published, ...] = (
    # TensorRT-LLM 0.9.0's performance page: every row for the catalog's models and GPUs
    *(_trt_row(*r) for r in _TRT_PAGE),
    # vLLM's CI performance benchmark: one generate() of 8 prompts, 32 in / 128 out, BF16,
    # random weights (every output token generated), CUDA graphs on
    Published("vllm-ci-h200-8b-bs8", _VLLM_CI, "vllm", "llama-3.1-8b", "h200", 1,
              "batch_latency", 8, 32, 128, 833.421, "ms",
              "BF16, dummy weights; the vLLM version is not on the page", calibrates="step_s"),
    Published("vllm-ci-h200-70b-tp4-bs8", _VLLM_CI, "vllm", "llama-3.1-70b", "h200", 4,
              "batch_latency", 8, 32, 128, 2077.53, "ms",
              "BF16, dummy weights; Llama-3-70B (the 3.1 shape)"),
    Published("vllm-ci-h100-8b-bs8", _VLLM_CI + "; a copy stored under another address",
              "vllm", "llama-3.1-8b", "h100-80gb", 1, "batch_latency", 8, 32, 128, 997.542,
              "ms", "BF16, dummy weights; weak provenance (docs/serving-validation.md)"),
    Published("vllm-ci-h100-70b-tp4-bs8", _VLLM_CI + "; a copy stored under another address",
              "vllm", "llama-3.1-70b", "h100-80gb", 4, "batch_latency", 8, 32, 128, 2444.47,
              "ms", "BF16, dummy weights; weak provenance (docs/serving-validation.md)"),
    # vLLM PR #10058 ("[V1] Integrate Piecewise CUDA graphs"): benchmark_latency.py on the V1
    # engine with and without CUDA graphs; its defaults (batch 8, 32 in / 128 out); the GPU is
    # not stated: replayed on the H100, vLLM's benchmark GPU of that time
    Published("vllm-pr10058-v1-graphs", _PR10058, "vllm", "llama-3.1-8b", "h100-80gb", 1,
              "batch_latency", 8, 32, 128, 1040, "ms",
              "BF16; the GPU and the arguments are not stated (the script's defaults, an H100)"),
    Published("vllm-pr10058-v1-eager", _PR10058, "vllm", "llama-3.1-8b", "h100-80gb", 1,
              "batch_latency", 8, 32, 128, 1260, "ms",
              "BF16, without CUDA graphs; the GPU and the arguments are not stated",
              calibrates="dispatch_s", cuda_graphs=False),
    # lmdeploy v0.1.0a1 (TurboMind, C++), static inference benchmark on A100-80G, FP16, batch 1
    Published("lmdeploy-a100-7b-bs1-128-128", _LMDEPLOY, "lmdeploy", "llama-2-7b", "a100-80gb",
              1, "batch_rate", 1, 128, 128, 102.21, "tok/s", "FP16"),
    Published("lmdeploy-a100-70b-tp4-bs1-128-128", _LMDEPLOY, "lmdeploy", "llama-2-70b",
              "a100-80gb", 4, "batch_rate", 1, 128, 128, 33.63, "tok/s", "FP16"),
    # TensorRT-LLM's quantization blog: Llama-2-7B on one H100, 1,024 in / 128 out, FP8 against
    # FP16 at a fixed batch
    Published("trtllm-blog-h100-7b-fp8-speedup-bs1", _TRT_QUANT, "tensorrt-llm", "llama-2-7b",
              "h100-80gb", 1, "fp8_speedup", 1, 1024, 128, 1.51, "x",
              "FP8 (weights and KV cache) over FP16; the speedup's metric is not defined further "
              "(throughput at a fixed batch, by the context)"),
    Published("trtllm-blog-h100-7b-fp8-speedup-bs8", _TRT_QUANT, "tensorrt-llm", "llama-2-7b",
              "h100-80gb", 1, "fp8_speedup", 8, 1024, 128, 1.40, "x",
              "FP8 over FP16 at batch 8; as the row above"),
    # NIM 1.8.0's whole concurrency sweep: TTFT and ITL under a closed loop
    *(row for r in _NIM_PAGE for row in _nim_rows(*r)),
    # vLLM's CI: Mixtral 8x7B in BF16 on 2 x H200, one generate() of 8 prompts
    Published("vllm-ci-h200-mixtral-tp2-bs8", _VLLM_CI, "vllm", "mixtral-8x7b", "h200", 2,
              "batch_latency", 8, 32, 128, 1917.44, "ms",
              "BF16, dummy weights (uniform routing is what random weights give)"),
    # vLLM's post on FP8 KV caches (vLLM 0.19.1, Llama 3.1 8B on one H100, FlashAttention 3),
    # every figure of its BF16 KV cache: the one-request sweep's fitted line at the sweep's two
    # ends, and the served load of its Table 4
    *(Published(f"vllm-post-h100-8b-c1-{inp}-128-itl", _VLLM_POST + " ('Single Request "
                "Benchmarking': the BF16 line's slope and intercept)", "vllm", "llama-3.1-8b",
                "h100-80gb", 1, "inter_token", 1, inp, 128,
                _POST_ITL_MS + _POST_ITL_SLOPE_MS * inp, "ms",
                "BF16 KV cache; the post gives its sweep (256 to 125k tokens in, 128 out, "
                "concurrency 1) as a fitted line, ITL = 6.44 ms + 4.37e-05 ms x input tokens; "
                "the row is the line at this end of the sweep", engine="vllm-0.14")
      for inp in (256, 125_000)),
    *(Published(f"vllm-post-h100-8b-c8-20000-2000-{k}", _VLLM_POST + " (Table 4, BF16)", "vllm",
                "llama-3.1-8b", "h100-80gb", 1, f"online_{k}", 1, 20_000, 2_000, v, unit,
                "BF16 KV cache; 150 requests at concurrency 8 (vllm bench serve's "
                "--max-concurrency, every request sent at once), ~20k in and ~2k out with ±15% "
                "(read as --random-range-ratio 0.15); the draws are this project's, not the "
                "benchmark's own", engine="vllm-0.14", users=8, requests=150,
                statistic="median" if k != "tok_s" else "", client="vllm-bench", spread=0.15)
      for k, v, unit in (("ttft", 763.6, "ms"), ("itl", 15.18, "ms"), ("tok_s", 450.3, "tok/s"))),
)

#: Published measurements not replayed, each with what the model lacks for it.
UNREPLAYED: tuple[tuple[str, str, str], ...] = (
    ("MLPerf Inference v4.1, NVIDIA: Llama-2-70B on 8 x H200 and 8 x H100 (offline, server)",
     "https://mlcommons.org/benchmarks/inference-datacenter/ (v4.1 results, NVIDIA)",
     "the OpenOrca length mix, which is not shipped"),
    ("TensorRT-LLM perf-overview (trtllm-bench): Llama 3.1 8B and 70B in FP8 on H100 and H200",
     "https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686aa854010d68bcbd0f4ab000221541ca6/docs/"
     "source/performance/perf-overview.md",
     "offline in-flight batching under the engine's own batch and token limits, which the page "
     "does not state"),
    ("SGLang's benchmark of vLLM 0.6.0 (Llama 3.1 8B on A100, 70B on 4 x H100, ShareGPT)",
     "https://github.com/sgl-project/sglang/blob/main/benchmark/benchmark_vllm_060/README.md",
     "ShareGPT's length mix, which is not shipped; vLLM's multi-step scheduling"),
    ("NVIDIA NIM 1.8.0: Llama 3.3 70B on 2 x H100, concurrency 25 and 50", _NIM,
     "a closed loop of 25 or 50 users whose request lengths and think time the page does not "
     "give in full (concurrency 1 is replayed)"),
    ("MLPerf Inference v4.1, NVIDIA: Mixtral 8x7B on 8 x H100 (offline, server)",
     "https://github.com/mlcommons/inference_results_v4.1 (closed/NVIDIA, mixtral-8x7b)",
     "the MLPerf Mixtral dataset's length mix (OpenOrca, GSM8K, MBXP), not shipped, and the "
     "precision and parallelism of the submission, not read"),
    ("DistServe (OSDI'24)", "https://arxiv.org/abs/2401.09670",
     "OPT models, not in the catalog"),
    ("Splitwise (ISCA'24)", "https://arxiv.org/abs/2311.18677",
     "its figures are plots only (no table to carry over)"),
    ("Sarathi-Serve (OSDI'24)", "https://arxiv.org/abs/2403.02310",
     "A100 PCIe and A40 GPUs, not in the catalog"),
    ("vLLM's post on FP8 KV caches: the FP8 KV cache's rows (Table 3's slopes and break-even "
     "points, Table 4's FP8 row, the FP8 line), Llama 3.1 8B on one H100", _VLLM_POST,
     "an FP8 KV cache under 16-bit weights: the model's precision is one setting for both"),
    ("vLLM's post on FP8 KV caches: gpt-oss-20b (Table 5, Figure 3) and the B200 sections",
     _VLLM_POST, "gpt-oss-20b and the B200 are not in the catalog"),
    ("vLLM PR #23465 (FlashAttention 3's swizzle): Meta-Llama-3-8B-Instruct on one H100, "
     "'4k and 2k out' at 1 to 4 requests a second, median TTFT and TPOT of main and the PR",
     "https://github.com/vllm-project/vllm/pull/23465",
     "the benchmark's command is not given (the lengths' exact values and spread, whether "
     "the outputs ignore EOS) nor the server's flags, and the last row could not be read "
     "from the stored copy of the thread"),
)


def _offload_rows(tokens: int, compute_ms: float, cpu_ms: float | None
                  ) -> tuple[Published, ...]:
    """Figure 1 of vLLM's post on its offloading connector at one prompt length
    (:mod:`.offload_rows`): the first token computed, and loaded from the CPU tier (where its
    point can be read finely enough)."""
    read = (f"read off the plot's pixels (within about {FIGURE1_READING_MS:g} ms); one request "
            "alone, 1 token out, tokenization off, GPU prefix caching off")
    computed = Published(f"vllm-offload-h100-8b-{tokens // 1000}k-compute", OFFLOAD_POST,
                         "vllm", "llama-3.1-8b", "h100-80gb", 1, "first_token", 1, tokens, 1,
                         compute_ms, "ms", "BF16; 'GPU Compute'; " + read, engine="vllm-0.14")
    if cpu_ms is None:
        return (computed,)
    return (computed, Published(
        f"vllm-offload-h100-8b-{tokens // 1000}k-cpu", OFFLOAD_POST, "vllm", "llama-3.1-8b",
        "h100-80gb", 1, "cpu_tier_ttft", 1, tokens, 1, cpu_ms, "ms",
        "BF16; 'Load from CPU': the prompt's KV copied back from CPU memory; " + read,
        engine="vllm-0.14"))


# a CPU tier for the KV cache: vLLM's offloading connector's Figures 1 and 2 (.offload_rows)
PUBLISHED += tuple(row for r in FIGURE1_TTFT_MS for row in _offload_rows(*r)) + tuple(
    Published(f"vllm-offload-h100-8b-prefill-512{'-tier' if gb else ''}", OFFLOAD_POST, "vllm",
              "llama-3.1-8b", "h100-80gb", 1, "prefill_rate", 10_000, 512, 1,
              FIGURE2_PREFILL_TOK_S[key], "tok/s",
              f"BF16; Figure 2, {key}: read off the plot's pixels (within about 500 tokens/s); "
              "10,000 prompts of 512 tokens, GPU prefix caching off", engine="vllm-0.14",
              kv_offload_gb=gb)
    for key, gb in (("without", 0.0), ("with, 0% hits", 200.0)))
UNREPLAYED += OFFLOAD_UNREPLAYED
