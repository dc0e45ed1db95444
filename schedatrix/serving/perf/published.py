"""Published measurements of real deployments the performance model is held to: facts carried
over from their sources (each row names its address), none measured here.

Each row is a setup the simulator can replay (:mod:`schedatrix.serving.harness.validation`):

- ``first_token``: ``batch`` prompts of ``input_tokens`` at once, one output token each; the
  figure is the time to the first token (milliseconds);
- ``batch_latency``: ``batch`` requests at once, ``input_tokens`` in and ``output_tokens`` out
  each; the figure is the time until the last one finishes (milliseconds), as vLLM's
  ``benchmark_latency.py`` times one ``generate()`` call;
- ``batch_throughput``: the same batch; the figure is output tokens per second per GPU over
  the whole batch (prefill included), as TensorRT-LLM's ``gptSessionBenchmark`` reports;
- ``batch_rate``: the same, output tokens per second of the whole batch (lmdeploy's static
  benchmark).

``framework`` decides the host's time per iteration: ``vllm`` runs vLLM's (:mod:`.host`);
``tensorrt-llm`` and ``lmdeploy`` are C++ sessions running a static batch with no scheduler
between steps, replayed with no host time. ``cuda_graphs`` False: the row ran without CUDA
graphs (vLLM's ``enforce_eager``). ``band`` is the largest ratio error the validation accepts
(latency 15%, throughput 20%); ``calibrates`` names the term of the host's costs the row was
fitted to (shown, and a test checks the fit, not the model).

``UNREPLAYED`` lists published measurements the model cannot set up yet, and why.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Published", "PUBLISHED", "UNREPLAYED", "LATENCY_BAND", "THROUGHPUT_BAND"]

#: The widest accepted error, model over published minus 1, of a latency and a throughput row.
LATENCY_BAND = 0.15
THROUGHPUT_BAND = 0.20

_TRT_DOC = ("https://github.com/NVIDIA/TensorRT-LLM/blob/v0.9.0/docs/source/performance.md "
            "(docs/source/performance.md: 'All data was generated using version 0.9.0')")
_PR10058 = "https://github.com/vllm-project/vllm/pull/10058 (its 'Benchmarks' table)"
_LMDEPLOY = ("https://github.com/InternLM/lmdeploy/blob/3e391df4673326f79363eebe030876861a9b7090"
             "/docs/en/benchmark/a100_fp16.md ('Static Inference Benchmark', v0.1.0a1)")
_VLLM_CI = ("https://buildkite.com/vllm/performance-benchmark/builds/9515 (vLLM's performance "
            "benchmark, latency tests: .buildkite/nightly-benchmarks/tests/latency-tests.json)")


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

    @property
    def band(self) -> float:
        return THROUGHPUT_BAND if self.kind in ("batch_throughput", "batch_rate") \
            else LATENCY_BAND

    def setup(self) -> str:
        """The setup in words, for the validation table."""
        what = {"first_token": f"batch {self.batch}, {self.input_tokens:,} in, first token",
                "batch_latency": f"batch {self.batch}, {self.input_tokens:,} in / "
                                 f"{self.output_tokens:,} out, whole batch",
                "batch_throughput": f"batch {self.batch}, {self.input_tokens:,} in / "
                                    f"{self.output_tokens:,} out, out tok/s per GPU",
                "batch_rate": f"batch {self.batch}, {self.input_tokens:,} in / "
                              f"{self.output_tokens:,} out, out tok/s"}[self.kind]
        graphs = "" if self.cuda_graphs else ", no CUDA graphs"
        return f"{self.framework}: {self.model} on {self.tp} x {self.gpu}, {what}{graphs}"


def _trt(id_, model, tp, kind, batch, inp, out, value, unit, note=""):
    return Published(id_, _TRT_DOC, "tensorrt-llm", model, "a100-80gb", tp, kind, batch, inp,
                     out, value, unit, "FP16, A100 SXM 80GB; " + note if note else
                     "FP16, A100 SXM 80GB")


PUBLISHED: tuple[Published, ...] = (
    # TensorRT-LLM 0.9.0, A100 FP16, "Low Latency": batch 1, first token (one output token)
    _trt("trtllm-a100-7b-ttft-128", "llama-2-7b", 1, "first_token", 1, 128, 1, 16.2, "ms"),
    _trt("trtllm-a100-7b-ttft-2048", "llama-2-7b", 1, "first_token", 1, 2048, 1, 132.4, "ms"),
    _trt("trtllm-a100-70b-tp4-ttft-128", "llama-2-70b", 4, "first_token", 1, 128, 1, 45.6,
         "ms"),
    _trt("trtllm-a100-70b-tp8-ttft-2048", "llama-2-70b", 8, "first_token", 1, 2048, 1, 249.2,
         "ms"),
    # TensorRT-LLM 0.9.0, A100 FP16, "Peak Throughput": static batches, out tok/s per GPU
    _trt("trtllm-a100-7b-bs256-128-128", "llama-2-7b", 1, "batch_throughput", 256, 128, 128,
         5390, "tok/s/GPU"),
    _trt("trtllm-a100-7b-bs32-128-2048", "llama-2-7b", 1, "batch_throughput", 32, 128, 2048,
         1484, "tok/s/GPU"),
    _trt("trtllm-a100-7b-bs32-2048-128", "llama-2-7b", 1, "batch_throughput", 32, 2048, 128,
         533, "tok/s/GPU"),
    _trt("trtllm-a100-7b-bs16-2048-2048", "llama-2-7b", 1, "batch_throughput", 16, 2048, 2048,
         603, "tok/s/GPU"),
    _trt("trtllm-a100-70b-tp4-bs1024-128-128", "llama-2-70b", 4, "batch_throughput", 1024, 128,
         128, 686, "tok/s/GPU"),
    _trt("trtllm-a100-70b-tp8-bs512-128-2048", "llama-2-70b", 8, "batch_throughput", 512, 128,
         2048, 684, "tok/s/GPU"),
    _trt("trtllm-a100-70b-tp4-bs96-2048-128", "llama-2-70b", 4, "batch_throughput", 96, 2048,
         128, 80, "tok/s/GPU"),
    _trt("trtllm-a100-70b-tp4-bs64-2048-2048", "llama-2-70b", 4, "batch_throughput", 64, 2048,
         2048, 289, "tok/s/GPU"),
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
)

#: Published measurements not replayed, each with what the model lacks for it.
UNREPLAYED: tuple[tuple[str, str, str], ...] = (
    ("MLPerf Inference v4.1, NVIDIA: Llama-2-70B on 8 x H200 and 8 x H100 (offline, server)",
     "https://mlcommons.org/benchmarks/inference-datacenter/ (v4.1 results, NVIDIA)",
     "FP8 weights and KV cache, and the OpenOrca length mix, which is not shipped"),
    ("TensorRT-LLM 0.9.0 H100 / H200 tables; TensorRT-LLM perf-overview (Llama 3.1 8B, 70B)",
     _TRT_DOC, "FP8 weights and KV cache"),
    ("SGLang's benchmark of vLLM 0.6.0 (Llama 3.1 8B on A100, 70B on 4 x H100, ShareGPT)",
     "https://github.com/sgl-project/sglang/blob/main/benchmark/benchmark_vllm_060/README.md",
     "ShareGPT's length mix, which is not shipped; vLLM's multi-step scheduling"),
    ("NVIDIA NIM 1.8.0: Llama 3.3 70B on 2 x H100, fixed concurrency",
     "https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md",
     "FP8 weights"),
    ("DistServe (OSDI'24)", "https://arxiv.org/abs/2401.09670",
     "OPT models, not in the catalog"),
    ("Splitwise (ISCA'24)", "https://arxiv.org/abs/2311.18677",
     "its figures are plots only (no table to carry over)"),
    ("Sarathi-Serve (OSDI'24)", "https://arxiv.org/abs/2403.02310",
     "A100 PCIe and A40 GPUs, not in the catalog"),
)
