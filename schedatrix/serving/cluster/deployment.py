"""A deployment design: model, GPU, parallelism, replicas or a prefill/decode split, knobs.

A :class:`Design` is validated where it is made (a model that does not fit, a TP degree the
heads don't divide, PP stages the layers don't divide, an unknown GPU or model: each an
:class:`~schedatrix.errors.InputError` naming the knob). :func:`build` turns it into what the
simulators take: a performance model, the scheduler's knobs and the layout of replicas on
nodes of eight GPUs.

Parallelism, as modelled:

- **data parallelism**: ``replicas`` copies behind a round-robin router;
- **tensor parallelism** ``tp``: each iteration's work split over ``tp`` GPUs of one node,
  plus two all-reduces per layer (the performance model);
- **pipeline parallelism** ``pp``: the layers split over ``pp`` stages; the replica runs
  ``pp`` micro-batches at once, as vLLM's virtual engines do: one scheduler per micro-batch,
  each with its share of the KV cache, each iteration passing through every stage. With
  balanced micro-batches each stage is busy with one of them at a time (the pipe is full);
  with fewer requests than stages, stages sit idle (the bubble);
- **prefill/decode split**: ``prefill_replicas`` replicas only prefill prompts, then each
  prompt's KV cache moves to one of ``decode_replicas`` replicas (over NVLink on one node,
  InfiniBand between nodes), which generate the rest. Each side may have its own tensor
  parallelism and GPU (``prefill_tp``, ``decode_tp``, ``prefill_gpu``, ``decode_gpu``; by
  default the design's ``tp`` and ``gpu``), as DistServe and Splitwise place them: GPUs and
  cost count each side at its own size and price, and two kinds of GPU sit on nodes of their
  own, so the KV move between them crosses InfiniBand.

Every replica runs the serving engine ``engine`` (:mod:`..perf.engines`; default
``DEFAULT_ENGINE``, vLLM 0.14): its capacity policy, preemption modes, async scheduling
(``async_scheduling`` None: the engine's default), host costs, and its token budget and
sequence cap by GPU (``max_batch`` / ``max_batched_tokens`` None: what ``vllm serve`` picks on
the design's ``gpu``; with chunked prefill off, as vLLM does, a budget of at least the model's
context). ``preemption`` None is the engine's; ``swap`` with no engine named selects vLLM 0.6,
the last vLLM with swap (V1 has none). ``client_path`` (``"vllm"`` or ``"none"``, or a
:class:`~..perf.client_path.ClientPath`) adds the request's path outside the GPU to what a
client measures. Engines run with CUDA graphs (``cuda_graphs``, vLLM's default) and the
engine's host time per iteration unless ``host_ms`` gives another (:mod:`..perf.host`).
``dtype`` (``bf16`` or ``fp8``) sets the weights' and the KV cache's precision; ``ep`` (1 or each
side's TP) spreads a mixture-of-experts model's experts over a replica's GPUs, and ``expert_skew``
(0: uniform) is the Zipf exponent of its routing (:mod:`..perf.moe`; refused for a dense model).
``spec_method`` (``none``, ``ngram``, ``eagle``, ``draft``), ``spec_tokens``, ``spec_accept`` and
``draft_model`` make every replica speculate (:mod:`..perf.spec_decode`); with ``ngram`` or
``draft`` the engine's async scheduling is off, as vLLM turns it off for them.
``kv_offload_gb`` (0: off) gives each replica a CPU tier of that many GB of host memory for its
prefix cache, copied back over each GPU's PCIe link (:mod:`..replica.cpu_tier`).
``lora_adapters`` (0: off) serves that many LoRA adapters of rank ``lora_rank`` on every replica,
``max_loras`` of them in HBM slots and ``max_cpu_loras`` (None: ``max_loras``) in host memory,
each request's adapter its load's own, its SLO class's (``lora_by_class``: a tenant an adapter)
or drawn by a popularity of Zipf exponent ``lora_skew`` (0: uniform), on the modules
``lora_targets`` names (``all`` or ``attention``)
(:mod:`..replica.lora`, :mod:`..replica.lora_slots`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from ...errors import InputError
from ..numbers import check_int, check_real
from ..perf.catalog import DTYPES, GPUS, GPUS_PER_NODE, INTER_NODE_GB_S, gpu, model
from ..perf.client_path import NO_CLIENT_PATH, VLLM_CLIENT_PATH, ClientPath
from ..perf.engines import DEFAULT_ENGINE, ENGINES, EngineProfile, engine
from ..perf.host import HostCosts, host_costs
from ..perf.model import GPU_MEMORY_UTILIZATION, PerfModel
from ..perf.moe import check_expert_skew
from ..perf.pcie import h2d_gb_s
from ..perf.spec_decode import SPEC_SYNC_ONLY, SpecDecode, SpecPerfModel
from ..replica.cpu_tier import MAX_OFFLOAD_GB, KVOffload
from ..replica.knobs import DEFAULT_BLOCK_TOKENS, SchedulerConfig
from ..replica.lora import LoRA, slots_tokens
from .admission import Admission
from .faults import Resilience
from .layout import Layout, ReplicaPlan
from .policy import Policy

__all__ = ["Design", "Built", "build", "design_from_dict", "DESIGN_KNOBS", "CLIENT_PATHS"]

#: The client paths a design may name.
CLIENT_PATHS = {"vllm": VLLM_CLIENT_PATH, "none": NO_CLIENT_PATH}


@dataclass(frozen=True)
class Design:
    """One candidate deployment. ``replicas`` whole replicas, or a split of
    ``prefill_replicas`` + ``decode_replicas`` (then ``replicas`` must be 0); each replica is
    ``tp`` x ``pp`` GPUs. ``price_per_gpu_hour`` None takes the catalog's stated price."""

    name: str = ""
    model: str = "llama-3.1-8b"
    gpu: str = "a100-80gb"
    tp: int = 1
    pp: int = 1
    replicas: int = 1
    prefill_replicas: int = 0
    decode_replicas: int = 0
    max_batch: int | None = None
    max_batched_tokens: int | None = None
    chunked_prefill: bool = True
    block_tokens: int = DEFAULT_BLOCK_TOKENS
    gpu_memory_share: float = GPU_MEMORY_UTILIZATION
    inter_node: str = "ib-ndr"
    price_per_gpu_hour: float | None = None
    router: str = "round-robin"
    priority_preemption: bool = False
    preemption: str | None = None
    pcie_gb_s: float = 25.0
    buckets: tuple = ()
    max_queue: int | None = None
    shed_ttft: bool = False
    shed_share: float = 0.5
    cuda_graphs: bool = True
    host_ms: float | None = None
    prefill_tp: int | None = None
    decode_tp: int | None = None
    prefill_gpu: str | None = None
    decode_gpu: str | None = None
    ep: int = 1
    dtype: str = "bf16"
    expert_skew: float = 0.0
    engine: str | None = None
    async_scheduling: bool | None = None
    client_path: str | ClientPath = "vllm"
    spec_method: str = "none"
    spec_tokens: int | None = None
    spec_accept: float | None = None
    draft_model: str | None = None
    kv_offload_gb: float = 0.0
    lora_adapters: int = 0
    lora_rank: int = 16
    max_loras: int = 1
    max_cpu_loras: int | None = None
    lora_skew: float = 0.0
    lora_targets: str = "all"
    lora_by_class: bool = False

    def __post_init__(self):
        model(self.model)
        gpu(self.gpu)
        name = self.engine
        if isinstance(name, EngineProfile):
            name = name.name
        if name is None:
            name = "vllm-0.6" if self.preemption == "swap" else DEFAULT_ENGINE
        profile = engine(name)       # an unknown name: refused, naming the allowed ones
        object.__setattr__(self, "engine", profile.name)
        if self.preemption is not None:
            if self.preemption not in ("recompute", "swap"):
                raise InputError(f"preemption must be one of recompute, swap, got "
                                 f"{self.preemption!r}")
            profile.check_preemption(self.preemption)
        if self.async_scheduling is not None:
            if not isinstance(self.async_scheduling, bool):
                raise InputError(f"async_scheduling: {self.async_scheduling!r}; allowed: true "
                                 "or false (on or off on the command line)")
            profile.check_async(self.async_scheduling)
        spec = self.spec()      # refuses a bad method, K, rate or draft model, naming it
        if spec.on:
            if not profile.name.startswith("vllm"):
                raise InputError(f"spec_method: {spec.method!r} with engine {profile.name}; "
                                 "speculative decoding is modelled as vLLM runs it (allowed: "
                                 "spec_method none, or a vLLM engine: " + ", ".join(
                                     n for n in ENGINES if n.startswith("vllm")) + ")")
            if self.async_scheduling is True and spec.method in SPEC_SYNC_ONLY:
                raise InputError(f"async_scheduling: on with spec_method {spec.method!r}; vLLM "
                                 "schedules asynchronously only with EAGLE (allowed: off, or "
                                 "spec_method eagle)")
        if self.priority_preemption is True and not profile.preemption:
            raise InputError(f"priority_preemption: true with engine {profile.name}; "
                             f"{profile.label} never preempts a started request (allowed: "
                             "false, or an engine that preempts: "
                             f"{', '.join(n for n, p in ENGINES.items() if p.preemption)})")
        if isinstance(self.client_path, str):
            if self.client_path not in CLIENT_PATHS:
                raise InputError(f"client_path: {self.client_path!r}; allowed: "
                                 f"{', '.join(CLIENT_PATHS)}")
        elif not isinstance(self.client_path, ClientPath):
            raise InputError(f"client_path: {self.client_path!r}; allowed: "
                             f"{', '.join(CLIENT_PATHS)}")
        for knob in ("max_batch", "max_batched_tokens"):
            if getattr(self, knob) is not None:
                object.__setattr__(self, knob, check_int(knob, getattr(self, knob), 1,
                                                         10_000_000))
        object.__setattr__(self, "tp", check_int("tp", self.tp, 1, GPUS_PER_NODE))
        if not isinstance(self.cuda_graphs, bool):
            raise InputError(f"cuda_graphs: {self.cuda_graphs!r}; allowed: true or false "
                             "(on or off on the command line)")
        if self.host_ms is not None:
            object.__setattr__(self, "host_ms", check_real("host_ms", self.host_ms, 0.0, 1000.0))
        for knob in ("prefill_tp", "decode_tp"):
            if getattr(self, knob) is not None:
                object.__setattr__(self, knob, check_int(knob, getattr(self, knob), 1,
                                                         GPUS_PER_NODE))
        for knob in ("prefill_gpu", "decode_gpu"):
            if getattr(self, knob) is not None:
                try:
                    gpu(getattr(self, knob))
                except InputError:
                    raise InputError(f"{knob}: unknown GPU {getattr(self, knob)!r}; allowed: "
                                     f"{', '.join(GPUS)}") from None
        object.__setattr__(self, "pp", check_int("pp", self.pp, 1, 1024))
        object.__setattr__(self, "ep", check_int("ep", self.ep, 1, GPUS_PER_NODE))
        shape = model(self.model)
        object.__setattr__(self, "expert_skew", check_expert_skew(
            self.expert_skew, shape.experts, shape.experts_per_token, shape.name))
        if self.dtype not in DTYPES:
            raise InputError(f"dtype: {self.dtype!r}; allowed: {', '.join(DTYPES)}")
        for knob in ("replicas", "prefill_replicas", "decode_replicas"):
            object.__setattr__(self, knob, check_int(knob, getattr(self, knob), 0, 100_000))
        split = self.prefill_replicas or self.decode_replicas
        if split and (not self.prefill_replicas or not self.decode_replicas):
            raise InputError(f"a prefill/decode split needs both prefill_replicas and "
                             f"decode_replicas >= 1, got {self.prefill_replicas} and "
                             f"{self.decode_replicas}")
        if split and self.replicas not in (0, 1):
            raise InputError(f"replicas must be 0 with a prefill/decode split (the split's "
                             f"replicas are prefill_replicas + decode_replicas), got "
                             f"{self.replicas}")
        phase = [k for k in ("prefill_tp", "decode_tp", "prefill_gpu", "decode_gpu")
                 if getattr(self, k) is not None]
        if phase and not split:
            raise InputError(f"{phase[0]}: {getattr(self, phase[0])!r} sets one side of a "
                             "prefill/decode split, and this design has none; allowed: with "
                             "prefill_replicas and decode_replicas, or tp and gpu alone")
        if split:
            object.__setattr__(self, "replicas", 0)
        elif self.replicas < 1:
            raise InputError("replicas must be at least 1 (or give prefill_replicas and "
                             "decode_replicas for a split)")
        check_real("gpu_memory_share", self.gpu_memory_share, 0.0, 1.0, low_open=True)
        if self.inter_node not in INTER_NODE_GB_S:
            raise InputError(f"inter_node must be one of {', '.join(INTER_NODE_GB_S)}, "
                             f"got {self.inter_node!r}")
        if self.price_per_gpu_hour is not None:
            object.__setattr__(self, "price_per_gpu_hour", check_real(
                "price_per_gpu_hour", self.price_per_gpu_hour, 0.0, 1e6))
        SchedulerConfig(self.batch_cap(), self.token_budget(), self.chunked_prefill,
                        self.block_tokens)
        object.__setattr__(self, "kv_offload_gb", check_real(
            "kv_offload_gb", self.kv_offload_gb, 0.0, MAX_OFFLOAD_GB))
        object.__setattr__(self, "lora_adapters", check_int(
            "lora_adapters", self.lora_adapters, 0, 1_000_000))
        lora = self.lora()           # refuses a bad rank, slot count or skew, naming it
        if lora is None and (self.lora_rank, self.max_loras, self.max_cpu_loras,
                             self.lora_skew, self.lora_targets, self.lora_by_class) != (
                                 16, 1, None, 0.0, "all", False):
            raise InputError("lora_rank, max_loras, max_cpu_loras, lora_skew, lora_targets and "
                             "lora_by_class need lora_adapters >= 1, got lora_adapters "
                             f"{self.lora_adapters}")
        if lora is not None and model(self.model).moe:
            raise InputError(f"lora_adapters: {self.lora_adapters} with {self.model}, a "
                             "mixture-of-experts model; LoRA is modelled on dense models only "
                             "(allowed: 0, or a dense model)")
        buckets = self.buckets
        if isinstance(buckets, dict):
            buckets = tuple((k, *v) if isinstance(v, list | tuple) else (k, v)
                            for k, v in buckets.items())
        object.__setattr__(self, "buckets", tuple(tuple(b) for b in buckets))
        self.policy()                    # the router, admission and preemption knobs
        for role in self.roles():        # the model must fit, TP and PP must divide, each side
            try:
                self.perf(role)
            except InputError as e:
                if not self.split or (self.tp_of("prefill"), self.gpu_of("prefill")) == (
                        self.tp_of("decode"), self.gpu_of("decode")):
                    raise
                raise InputError(f"the {role} side ({role}_tp {self.tp_of(role)}, {role}_gpu "
                                 f"{self.gpu_of(role)}): {e}") from None
        if not self.name:
            object.__setattr__(self, "name", self.label())

    # -- derived -----------------------------------------------------------------------------
    def engine_profile(self) -> EngineProfile:
        return engine(self.engine)

    def batch_cap(self) -> int:
        """Running requests per scheduler at most: ``max_batch``, or the engine's default on
        the design's GPU (``vllm serve``'s, capped by the token budget as vLLM caps it)."""
        if self.max_batch is not None:
            return self.max_batch
        cap = self.engine_profile().max_batch(self.gpu)
        return min(cap, self.token_budget()) if self.max_batched_tokens is None else cap

    def token_budget(self) -> int:
        """Tokens per iteration at most: ``max_batched_tokens``, or the engine's default on the
        design's GPU (with chunked prefill off, at least the model's context, as vLLM sets
        it)."""
        if self.max_batched_tokens is not None:
            return self.max_batched_tokens
        budget = self.engine_profile().max_batched_tokens(self.gpu)
        if not self.chunked_prefill:
            budget = max(budget, model(self.model).max_context)
        return budget

    def async_on(self) -> bool:
        """Whether the schedulers overlap the host with the GPU (the engine's default unless
        ``async_scheduling`` says)."""
        if self.async_scheduling is not None:
            return self.async_scheduling
        if self.spec_method in SPEC_SYNC_ONLY:   # vLLM turns it off for these (PR #31998)
            return False
        return self.engine_profile().async_scheduling

    def spec(self) -> SpecDecode:
        """How the replicas speculate (:mod:`..perf.spec_decode`)."""
        return SpecDecode(self.spec_method, self.spec_tokens, self.spec_accept,
                          self.draft_model)

    def preemption_mode(self) -> str:
        """``preemption``, or the engine's first mode (recompute when it never preempts)."""
        if self.preemption is not None:
            return self.preemption
        modes = self.engine_profile().preemption
        return modes[0] if modes else "recompute"

    def kv_offload(self) -> KVOffload | None:
        """The replicas' CPU tier (None when ``kv_offload_gb`` is 0), copying back at the PCIe
        rate of the GPU requests enter on (a split's prefill side: it looks prefixes up)."""
        if not self.kv_offload_gb:
            return None
        return KVOffload(self.kv_offload_gb, h2d_gb_s(self.gpu_of(self.roles()[0])))

    def lora(self) -> LoRA | None:
        """The replicas' LoRA adapters (None when ``lora_adapters`` is 0), loaded over the PCIe
        link of the GPU requests enter on (:mod:`..replica.lora`)."""
        if not self.lora_adapters:
            return None
        return LoRA(self.lora_adapters, self.lora_rank, self.max_loras, self.max_cpu_loras,
                    self.lora_skew, h2d_gb_s(self.gpu_of(self.roles()[0])), self.lora_targets,
                    self.lora_by_class)

    def client(self) -> ClientPath:
        path = self.client_path
        return CLIENT_PATHS[path] if isinstance(path, str) else path

    @property
    def split(self) -> bool:
        return self.prefill_replicas > 0

    def roles(self) -> tuple[str, ...]:
        """The kinds of replica the design has: ``mixed``, or ``prefill`` and ``decode``."""
        return ("prefill", "decode") if self.split else ("mixed",)

    def tp_of(self, role: str) -> int:
        """The tensor-parallel degree of a ``role``'s replicas."""
        own = {"prefill": self.prefill_tp, "decode": self.decode_tp}.get(role)
        return self.tp if own is None else own

    def gpu_of(self, role: str) -> str:
        """The GPU of a ``role``'s replicas."""
        own = {"prefill": self.prefill_gpu, "decode": self.decode_gpu}.get(role)
        return self.gpu if own is None else own

    def replicas_of(self, role: str) -> int:
        return {"mixed": self.replicas, "prefill": self.prefill_replicas,
                "decode": self.decode_replicas}[role]

    def gpus_per_replica_of(self, role: str) -> int:
        return self.tp_of(role) * self.pp

    @property
    def gpus_per_replica(self) -> int:
        """GPUs of one replica (of the decode side in a split: the larger share of a fleet)."""
        return self.gpus_per_replica_of(self.roles()[-1])

    def gpus_by_kind(self) -> dict[str, int]:
        """GPUs of each kind the design uses."""
        out: dict[str, int] = {}
        for role in self.roles():
            kind = self.gpu_of(role)
            out[kind] = out.get(kind, 0) + self.replicas_of(role) * self.gpus_per_replica_of(role)
        return out

    @property
    def gpus(self) -> int:
        return sum(self.gpus_by_kind().values())

    @property
    def dollars_per_hour(self) -> float:
        """What the design's GPUs cost an hour: each kind at its price (or the design's
        ``price_per_gpu_hour`` for every GPU)."""
        return sum(n * (self.price_per_gpu_hour if self.price_per_gpu_hour is not None
                        else gpu(kind).price_per_gpu_hour)
                   for kind, n in self.gpus_by_kind().items())

    @property
    def price(self) -> float:
        """Dollars per GPU-hour used for cost (the design's, or the catalog's; with two kinds
        of GPU, their average over the design's GPUs)."""
        return self.dollars_per_hour / self.gpus

    def label(self) -> str:
        par = f"TP{self.tp}" + (f" PP{self.pp}" if self.pp > 1 else "") + (
            f" EP{self.ep}" if self.ep > 1 else "") + (" FP8" if self.dtype == "fp8" else "")
        if self.split and any(getattr(self, k) is not None for k in
                              ("prefill_tp", "decode_tp", "prefill_gpu", "decode_gpu")):
            def side(role, letter, n):
                text = f"{letter}{n} TP{self.tp_of(role)}"
                return text + (f" {self.gpu_of(role)}" if self.gpu_of(role) != self.gpu
                               or self.gpu_of("prefill") != self.gpu_of("decode") else "")
            text = (f"split {side('prefill', 'P', self.prefill_replicas)} : "
                    f"{side('decode', 'D', self.decode_replicas)}"
                    + (f" PP{self.pp}" if self.pp > 1 else "")
                    + (f" EP{self.ep}" if self.ep > 1 else "")
                    + (" FP8" if self.dtype == "fp8" else ""))
        elif self.split:
            text = f"split P{self.prefill_replicas}:D{self.decode_replicas} {par}"
        else:
            text = f"{self.replicas} x {par}"
        if self.router != "round-robin":
            text += f", {self.router} router"
        if self.engine != DEFAULT_ENGINE:
            text += f", {self.engine}"
        if self.async_scheduling is not None and \
                self.async_scheduling != self.engine_profile().async_scheduling:
            text += f", async {'on' if self.async_scheduling else 'off'}"
        if self.spec_method != "none":
            text += f", spec {self.spec().label()}"
        if self.kv_offload_gb:
            text += f", CPU tier {self.kv_offload_gb:g} GB"
        if self.lora_adapters:
            text += f", {self.lora().label()}"
        return text

    def admission(self) -> Admission:
        return Admission({b[0]: tuple(b[1:]) for b in self.buckets}, self.max_queue,
                         self.shed_ttft, self.shed_share)

    def policy(self, faults=(), resilience: Resilience | None = None,
               seed: int = 0) -> Policy:
        """The design's front door and preemption, with a fault schedule to run."""
        client = self.client()
        return Policy(self.router, self.admission(), self.priority_preemption,
                      self.preemption_mode(), self.pcie_gb_s, tuple(faults),
                      resilience or Resilience(), seed, None if client.off else client)

    def perf(self, role: str | None = None, host: HostCosts | None = None) -> PerfModel:
        """The performance model of a ``role``'s replicas (None: the first role's); ``host``
        replaces the engine's host costs (the validation's fit of them)."""
        role = role or self.roles()[0]
        profile = self.engine_profile()
        if host is None:
            host = profile.host if self.host_ms is None else host_costs(self.host_ms / 1000)
        perf = PerfModel(self.model, self.gpu_of(role), tp=self.tp_of(role), pp=self.pp,
                         inter_node=self.inter_node, cuda_graphs=self.cuda_graphs, host=host,
                         ep=self.ep, dtype=self.dtype, expert_skew=self.expert_skew,
                         async_scheduling=self.async_on(), serial_s=profile.serial_s,
                         moe_fp8_compute=profile.moe_fp8)
        spec = self.spec()
        return SpecPerfModel(perf, spec) if spec.on else perf

    def single_machine(self) -> bool:
        """One replica on one machine (nothing distributed)."""
        return not self.split and self.replicas == 1 and self.gpus <= GPUS_PER_NODE

    def with_(self, **knobs) -> Design:
        knobs.setdefault("name", "")
        return replace(self, **knobs)


#: The knobs a scenario file or the command line may set on a design.
DESIGN_KNOBS = tuple(f.name for f in fields(Design))


def design_from_dict(values: dict, where: str = "design") -> Design:
    """A Design from a mapping (a scenario's table): unknown keys are an error naming them."""
    unknown = sorted(set(values) - set(DESIGN_KNOBS))
    if unknown:
        raise InputError(f"{where}: unknown knob {', '.join(map(repr, unknown))}; "
                         f"allowed: {', '.join(DESIGN_KNOBS)}")
    try:
        return Design(**values)
    except InputError as e:
        raise InputError(f"{where}: {e}") from None


@dataclass(frozen=True)
class Built:
    """What the simulators take for a design."""

    design: Design
    perf: PerfModel | dict
    config: SchedulerConfig
    layout: Layout
    kv_blocks_per_replica: int


def build(design: Design, hash_block_tokens: int = 0) -> Built:
    """The performance model (a mapping by role when a split's two sides differ), scheduler
    knobs and layout of a design. ``hash_block_tokens`` turns prefix caching on for a load that
    carries block hashes of that many tokens."""
    perfs = {role: design.perf(role) for role in design.roles()}
    lora = design.lora()
    blocks = {}
    for role, p in perfs.items():
        tokens = p.kv_capacity_tokens(design.gpu_memory_share)
        if lora is not None:          # the adapters' slots come out of the KV cache
            tokens -= slots_tokens(p, lora)
            if tokens < design.block_tokens:
                raise InputError(f"max_loras: {lora.max_loras} slots of rank {lora.rank} "
                                 f"leave no KV cache on {design.gpu_of(role)}; allowed: fewer "
                                 "slots, a lower rank, or more GPUs")
        blocks[role] = tokens // design.block_tokens
    hb = hash_block_tokens
    if hb and hb % design.block_tokens:
        raise InputError(f"the load's prefix hash blocks ({hb} tokens) must be a multiple of "
                         f"block_tokens ({design.block_tokens})")
    config = SchedulerConfig(design.batch_cap(), design.token_budget(),
                             design.chunked_prefill, design.block_tokens, hb,
                             model(design.model).max_context, design.async_on(),
                             design.engine_profile().capacity, design.kv_offload(), lora)
    plans, node, free, kind = [], 0, GPUS_PER_NODE, None
    for role in design.roles():
        g = design.gpus_per_replica_of(role)
        if kind is not None and design.gpu_of(role) != kind and free < GPUS_PER_NODE:
            node, free = node + 1, GPUS_PER_NODE          # a node holds one kind of GPU
        kind = design.gpu_of(role)
        for _ in range(design.replicas_of(role)):
            if g > GPUS_PER_NODE:                      # spans whole nodes
                if free < GPUS_PER_NODE:
                    node += 1
                span = math.ceil(g / GPUS_PER_NODE)
                nodes = tuple(range(node, node + span))
                node += span
                free = GPUS_PER_NODE
            else:
                if free < g:
                    node, free = node + 1, GPUS_PER_NODE
                nodes = (node,)
                free -= g
            plans.append(ReplicaPlan(role, design.pp, blocks[role] // design.pp, nodes))
    same = len({id(p) for p in perfs.values()}) == 1 or (
        design.tp_of("prefill") == design.tp_of("decode")
        and design.gpu_of("prefill") == design.gpu_of("decode"))
    perf = next(iter(perfs.values())) if same else perfs
    return Built(design, perf, config, Layout(tuple(plans)), blocks[design.roles()[0]])
