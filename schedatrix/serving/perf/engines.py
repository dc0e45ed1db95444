"""Engine profiles: what differs between serving engines and their versions, as one named bundle.

A profile holds, each with its source: the scheduler's capacity policy (how it admits a request
against the KV cache), the preemption modes the engine has, whether it overlaps the host's
scheduling with the GPU's step (async scheduling) and its default, the token budget and sequence
cap it picks by GPU and entry point, the batch sizes it captures CUDA graphs for, and the host's
costs. ``Design(engine=NAME)`` (``--engine NAME``, TOML ``engine``) selects one;
``DEFAULT_ENGINE`` is vLLM at a named version.

Capacity policies:

- ``max-utilization``: admit the queue's head when its first chunk's KV blocks fit now; when a
  running request then needs a block the cache can't give, preempt the lowest (vLLM's V1
  scheduler; TensorRT-LLM's ``MAX_UTILIZATION``, which pauses requests);
- ``guaranteed-no-evict``: admit a request only when the KV of its whole prompt and every output
  token still to come fits beside what the running requests have reserved to their ends; a
  started request is never preempted (TensorRT-LLM's default, ``GUARANTEED_NO_EVICT``).

SGLang is not modelled: its scheduler's defaults (its ``schedule_conservativeness`` and
``new_token_ratio`` reservation, the chunked prefill size by GPU) are not sourced here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError
from .catalog import GPU
from .catalog import gpu as gpu_of
from .host import VLLM_HOST, HostCosts

__all__ = ["EngineProfile", "ENGINES", "DEFAULT_ENGINE", "engine", "CAPACITY_POLICIES",
           "ENTRY_POINTS", "VLLM_CAPTURE_SIZES", "ASYNC_SERIAL_S"]

#: How a scheduler admits against the KV cache (see the module docstring).
CAPACITY_POLICIES = ("max-utilization", "guaranteed-no-evict")
#: How the engine is started: its OpenAI-compatible server, or its offline Python class.
ENTRY_POINTS = ("serve", "offline")
#: vLLM's CUDA-graph capture sizes (V1): 1, 2, 4, then every 8 up to max_cudagraph_capture_size
#: (512 by default); a batch is padded up to the next size, larger ones run eagerly.
VLLM_CAPTURE_SIZES = (1, 2, 4) + tuple(range(8, 513, 8))
#: Seconds of an async-scheduled iteration that do not overlap the GPU: the sampled token ids
#: copied back and the next step's inputs updated with them before it launches. An assumption
#: (no published profile separates it); docs/serving-calibration.md gives its error.
ASYNC_SERIAL_S = 1e-4

_VLLM_DEFAULTS_SOURCE = (
    "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults: a GPU of at least 70 GiB whose "
    "name has no 'a100' gets 8192 tokens / 1024 sequences under `vllm serve` and 16384 / 1024 "
    "under the LLM class; every other GPU 2048 / 256 under `vllm serve` and 8192 / 256 under "
    "the LLM class (vLLM PR #17885 kept the A100 small: larger budgets cut its throughput)")


def _vllm_class(g: GPU) -> str:
    """vLLM's rule: 'large' for a GPU of at least 70 GiB that is not an A100, else 'small'."""
    return "large" if g.memory_gb * 1e9 >= 70 * 2**30 and "a100" not in g.name else "small"


@dataclass(frozen=True)
class EngineProfile:
    """One engine at one version.

    name, label, version : how it is called, shown and which release it describes
    sources : where each setting comes from
    capacity : one of ``CAPACITY_POLICIES``
    preemption : the preemption modes the engine has, its default first (``()``: it never
        preempts a started request)
    async_scheduling : the default of ``--async-scheduling``; ``async_supported`` whether the
        engine has it at all
    batch_defaults : ``{(entry point, GPU class): (max_batched_tokens, max_batch)}``; the GPU
        class from ``gpu_class`` (``"all"`` when one pair fits every GPU)
    capture_sizes : the batch sizes CUDA graphs are captured for
    host : the host's costs per iteration (:mod:`.host`)
    serial_s : with async scheduling, the part of an iteration that stays serial
    moe_fp8 : with FP8 weights, whether the engine runs a mixture of experts' grouped matmuls
        in FP8 (False: its MoE kernel keeps 16-bit experts at the 16-bit peak,
        :class:`~.model.PerfModel`'s ``moe_fp8_compute``)
    """

    name: str
    label: str
    version: str
    sources: tuple[str, ...]
    capacity: str
    preemption: tuple[str, ...]
    async_scheduling: bool
    async_supported: bool
    batch_defaults: tuple[tuple[tuple[str, str], tuple[int, int]], ...]
    capture_sizes: tuple[int, ...] = VLLM_CAPTURE_SIZES
    host: HostCosts = VLLM_HOST
    serial_s: float = ASYNC_SERIAL_S
    gpu_classes: str = "vllm"     # how GPUs are grouped for batch_defaults: "vllm" or "all"
    moe_fp8: bool = True

    def __post_init__(self):
        if self.capacity not in CAPACITY_POLICIES:
            raise InputError(f"engine {self.name}: capacity {self.capacity!r}; allowed: "
                             f"{', '.join(CAPACITY_POLICIES)}")
        if self.async_scheduling and not self.async_supported:
            raise InputError(f"engine {self.name}: async scheduling on by default but not "
                             "supported")

    def gpu_class(self, g: str | GPU) -> str:
        g = g if isinstance(g, GPU) else gpu_of(g)
        return _vllm_class(g) if self.gpu_classes == "vllm" else "all"

    def defaults(self, g: str | GPU, entry: str = "serve") -> tuple[int, int]:
        """(max_batched_tokens, max_batch) the engine picks on GPU ``g`` from ``entry``."""
        if entry not in ENTRY_POINTS:
            raise InputError(f"entry point: {entry!r}; allowed: {', '.join(ENTRY_POINTS)}")
        table = dict(self.batch_defaults)
        key = (entry, self.gpu_class(g))
        if key not in table:
            raise InputError(f"engine {self.name} has no stated defaults for {entry!r} on "
                             f"{g if isinstance(g, str) else g.name}")
        return table[key]

    def max_batched_tokens(self, g: str | GPU, entry: str = "serve") -> int:
        return self.defaults(g, entry)[0]

    def max_batch(self, g: str | GPU, entry: str = "serve") -> int:
        return self.defaults(g, entry)[1]

    def check_preemption(self, mode: str) -> str:
        """``mode`` if the engine has it, else an error naming what it has."""
        if mode not in self.preemption:
            has = ", ".join(self.preemption) if self.preemption else "none (it never preempts)"
            raise InputError(f"preemption: {mode!r} with engine {self.name}; {self.label} has: "
                             f"{has}")
        return mode

    def check_async(self, value: bool) -> bool:
        if value and not self.async_supported:
            raise InputError(f"async_scheduling: on with engine {self.name}; {self.label} has "
                             "no async scheduling (allowed: off)")
        return value


_VLLM_BATCH = ((("serve", "large"), (8192, 1024)), (("offline", "large"), (16384, 1024)),
               (("serve", "small"), (2048, 256)), (("offline", "small"), (8192, 256)))
_V1_PREEMPTION = ("vLLM V1 preempts by recompute only (vllm/v1/core/sched/scheduler.py: a "
                  "preempted request frees its blocks and waits again; no swap space in V1); "
                  "its recompute hits the request's own blocks in the prefix cache (modelled "
                  "for the prompt's blocks when the load carries prefix hashes; the blocks of "
                  "its generated tokens are recomputed)")
_TRT_SOURCE = ("TensorRT-LLM docs, performance tuning guide, 'Useful Runtime Options': "
               "capacity scheduler policies GUARANTEED_NO_EVICT (default: a started request is "
               "never paused) and MAX_UTILIZATION (packs requests, pauses them when the KV "
               "cache runs out)")
_TRT_BATCH_SOURCE = ("trtllm-serve --max_batch_size 256, --max_num_tokens 8192 as its CLI "
                     "page lists them (a mirror of the docs; another page there says 8 / 2048: "
                     "not settled, so every design may give its own)")

_TRT09_MOE = ("no FP8 mixture of experts in 0.9: 'Added FP8 quantization support for Mixtral' is "
              "in the 0.10.0 release notes (https://github.com/NVIDIA/TensorRT-LLM/releases/tag/"
              "v0.10.0), and 0.9's MoE plugin took FP16/BF16, INT8 and INT4 weights; its FP8 "
              "Mixtral rows are taken to run the experts in 16-bit through the plugin (the "
              "attention and the KV cache in FP8): docs/serving-calibration.md, MoE")

_TRT09_SESSION = ("TensorRT-LLM 0.9's performance page ran gptSessionBenchmark: a C++ session "
                  "running one static batch, no scheduler between its steps (nothing to "
                  "overlap: synchronous, no host time in the validation); the session allocates "
                  "the whole batch's KV cache up front, for which the simulator has no policy of "
                  "its own: max-utilization admission stands in (it admits the whole batch when "
                  "it fits)")

ENGINES: dict[str, EngineProfile] = {p.name: p for p in (
    EngineProfile(
        name="vllm-0.14", label="vLLM 0.14 (V1 engine, async scheduling)", version="0.14.0",
        sources=(_VLLM_DEFAULTS_SOURCE,
                 "async scheduling on by default: vllm-project/vllm PR #27614 'Enable async "
                 "scheduling by default' (the last item of the Async Scheduling Plan, issue "
                 "#27679), in the releases from v0.14.0 (January 2026) on",
                 _V1_PREEMPTION, "CUDA-graph capture sizes: vLLM's compilation config"),
        capacity="max-utilization", preemption=("recompute",), async_scheduling=True,
        async_supported=True, batch_defaults=_VLLM_BATCH),
    EngineProfile(
        name="vllm-0.10", label="vLLM 0.10 (V1 engine, synchronous scheduling)",
        version="0.10.2",
        sources=(_VLLM_DEFAULTS_SOURCE,
                 "synchronous scheduling by default (async scheduling was experimental, "
                 "--async-scheduling, PR #19970); the host's 1.77 ms an iteration fitted to a "
                 "published row (docs/serving-validation.md)", _V1_PREEMPTION),
        capacity="max-utilization", preemption=("recompute",), async_scheduling=False,
        async_supported=True, batch_defaults=_VLLM_BATCH),
    EngineProfile(
        name="vllm-0.6", label="vLLM 0.6 (V0 engine: recompute or swap)", version="0.6.0",
        sources=("vLLM V0's scheduler has --preemption-mode recompute (default) and swap "
                 "(--swap-space GiB of host memory a GPU); kept for designs that swap",
                 _VLLM_DEFAULTS_SOURCE + " (the same table is applied here; V0's own defaults "
                 "were 256 sequences and a budget of max(max_model_len, 2048) without chunked "
                 "prefill: an approximation)"),
        capacity="max-utilization", preemption=("recompute", "swap"), async_scheduling=False,
        async_supported=False, batch_defaults=_VLLM_BATCH),
    EngineProfile(
        name="tensorrt-llm", label="TensorRT-LLM (in-flight batching, guaranteed no evict)",
        version="0.9-1.x",
        sources=(_TRT_SOURCE, _TRT_BATCH_SOURCE,
                 "overlap scheduler: TensorRT-LLM's PyTorch backend overlaps the host with the "
                 "GPU by default (its C++ runtime sends the next step while one runs)"),
        capacity="guaranteed-no-evict", preemption=(), async_scheduling=True,
        async_supported=True, batch_defaults=((("serve", "all"), (8192, 256)),
                                              (("offline", "all"), (8192, 256))),
        gpu_classes="all"),
    EngineProfile(
        name="tensorrt-llm-0.9",
        label="TensorRT-LLM 0.9 static session (gptSessionBenchmark; no FP8 mixture of experts)",
        version="0.9.0",
        sources=(_TRT09_SESSION, _TRT_BATCH_SOURCE, _TRT09_MOE),
        capacity="max-utilization", preemption=("recompute",), async_scheduling=False,
        async_supported=False, batch_defaults=((("serve", "all"), (8192, 256)),
                                               (("offline", "all"), (8192, 256))),
        gpu_classes="all", moe_fp8=False),
    EngineProfile(
        name="tensorrt-llm-max-utilization",
        label="TensorRT-LLM (in-flight batching, max utilization)", version="0.9-1.x",
        sources=(_TRT_SOURCE, _TRT_BATCH_SOURCE,
                 "a paused request's KV is dropped and its tokens recomputed when it resumes "
                 "(modelled as recompute)"),
        capacity="max-utilization", preemption=("recompute",), async_scheduling=True,
        async_supported=True, batch_defaults=((("serve", "all"), (8192, 256)),
                                              (("offline", "all"), (8192, 256))),
        gpu_classes="all"),
)}

#: The engine a design runs unless it names another.
DEFAULT_ENGINE = "vllm-0.14"


def engine(name: str | EngineProfile | None = None) -> EngineProfile:
    """The profile called ``name`` (None: the default), or an error naming the allowed ones."""
    if isinstance(name, EngineProfile):
        return name
    if name is None:
        name = DEFAULT_ENGINE
    if not isinstance(name, str) or name not in ENGINES:
        raise InputError(f"engine: {name!r}; allowed: {', '.join(ENGINES)}")
    return ENGINES[name]
