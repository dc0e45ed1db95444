"""Many LoRA adapters on one base model (vLLM's multi-LoRA, Punica's and S-LoRA's batched
kernels): an adapter's bytes on each GPU, the batched LoRA kernels' time per iteration, and the
seconds an adapter takes to reach a GPU slot.

**Knobs** (:class:`LoRA`, vLLM's names): ``adapters`` N served (every request uses one: its
load's own, ``Requests.meta["lora_adapter"]``, or drawn by popularity),
``rank`` R (vLLM's ``max_lora_rank``: 1, 8, 16, 32, 64, 128, 256, 320 or 512), ``max_loras``
M slots in HBM (at most M distinct adapters in a batch) and ``max_cpu_loras`` C adapters kept in
host memory (at least M; vLLM's default M), least recently used dropped first. ``skew`` is the
Zipf exponent of the adapters' popularity (0: uniform, vLLM's ``bench serve`` picks a module at
random; S-LoRA's traces use a power law); ``targets`` the modules adapted (``all``, or
``attention``: vLLM's ``target_modules`` of qkv_proj and o_proj, S-LoRA's adapters);
``by_class``: each SLO class (a tenant) uses its own adapter, class c adapter c.

**Bytes**: vLLM applies an adapter to every linear layer of a decoder layer (``qkv_proj``,
``o_proj``, ``gate_up_proj``, ``down_proj``), each slice an ``A`` (in x R) and a ``B``
(R x out) in the model's 16-bit dtype. With tensor parallelism a column-parallel layer (qkv,
gate_up) keeps ``A`` whole and splits ``B``; a row-parallel one (o, down) splits ``A`` and keeps
``B`` (vLLM's default, not ``fully_sharded_loras``). The M slots' bytes are taken out of the KV
cache, as vLLM allocates its stacked LoRA buffers before it sizes the cache.

**Kernels** (Punica's SGMV, vLLM's Triton ``lora_shrink`` / ``lora_expand``): per decoder layer
and module one shrink (tokens x in by in x R per slice) and one expand (tokens x R by R x out),
each a grouped matmul that reads the weights of every distinct adapter in the batch once: the
project's matmul roofline (:func:`..perf.kernels.matmul_s`, its fitted shares and its fixed time per
kernel) with ``weights`` = the distinct adapters; a kernel launched from the host (no CUDA
graph covers the iteration) takes at least the host's dispatch, as the base model's kernels do.
At decode sizes the fixed time of 8 kernels a layer dominates. Error: a roofline, not fitted
to LoRA; held to the published rows of :mod:`..published.lora_rows`
(docs/serving-calibration.md, "Multi-LoRA").

**Loading**: an adapter not in a GPU slot is copied from host memory over each GPU's PCIe link
(:mod:`..perf.pcie`); one not in host memory is read from local disk first, at ``DISK_GB_S``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ..numbers import check_int, check_real
from ..perf.kernels import eager, matmul_s

__all__ = ["LoRA", "LoraKernels", "LORA_RANKS", "DISK_GB_S", "adapter_bytes_per_gpu",
           "draw_adapters", "slots_tokens", "LORA_STREAM", "MAX_ADAPTERS", "LORA_TARGETS",
           "ADAPTER_META"]

#: The modules an adapter may target: every linear layer (vLLM's default) or the attention's
#: (vLLM's ``target_modules`` ``["qkv_proj", "o_proj"]``; S-LoRA's adapters).
LORA_TARGETS = ("all", "attention")
#: vLLM's allowed ``max_lora_rank`` values (``MaxLoRARanks``, vllm/config/lora.py).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: GB/s an adapter file is read from local disk into host memory (a PCIe Gen4 NVMe SSD reads 3
#: to 7 GB/s sequentially by its data sheet; safetensors' load and the page cache move it:
#: an assumption, error -50% to +130%).
DISK_GB_S = 3.0
#: Mixed into the run's seed: the adapters' draws are a stream of their own.
LORA_STREAM = 0x10A
#: The most adapters a design may serve.
MAX_ADAPTERS = 1_000_000


@dataclass(frozen=True)
class LoRA:
    """A replica's adapters (see the module's knobs); ``max_cpu_loras`` None is ``max_loras``;
    ``h2d_gb_s`` each GPU's host-to-device rate (:mod:`..perf.pcie`)."""

    adapters: int
    rank: int = 16
    max_loras: int = 1
    max_cpu_loras: int | None = None
    skew: float = 0.0
    h2d_gb_s: float = 25.0
    targets: str = "all"
    by_class: bool = False

    def __post_init__(self):
        check_int("lora_adapters", self.adapters, 1, MAX_ADAPTERS)
        if isinstance(self.rank, bool) or self.rank not in LORA_RANKS:
            raise InputError(f"lora_rank: {self.rank!r}; allowed: "
                             f"{', '.join(map(str, LORA_RANKS))} (vLLM's max_lora_rank)")
        check_int("max_loras", self.max_loras, 1, 4096)
        if self.max_cpu_loras is None:
            object.__setattr__(self, "max_cpu_loras", self.max_loras)
        check_int("max_cpu_loras", self.max_cpu_loras, 1, MAX_ADAPTERS)
        if self.max_cpu_loras < self.max_loras:
            raise InputError(f"max_cpu_loras: {self.max_cpu_loras}; must be at least max_loras "
                             f"({self.max_loras}), as vLLM requires")
        check_real("lora_skew", self.skew, 0.0, 10.0)
        check_real("h2d_gb_s", self.h2d_gb_s, 0.0, 10_000.0, low_open=True)
        if not isinstance(self.by_class, bool):
            raise InputError(f"lora_by_class: {self.by_class!r}; allowed: true or false")
        if self.targets not in LORA_TARGETS:
            raise InputError(f"lora_targets: {self.targets!r}; allowed: "
                             f"{', '.join(LORA_TARGETS)}")

    def label(self) -> str:
        return (f"{self.adapters} LoRA r{self.rank}, {self.max_loras} slot"
                f"{'s' if self.max_loras > 1 else ''}")


def _modules(shape, targets: str = "all") -> tuple[tuple[str, int, tuple[int, ...]], ...]:
    """(parallel style, in, out slices) of the linear modules LoRA adapts in one layer: every
    one (``all``), or the attention's ``qkv_proj`` and ``o_proj`` (``attention``)."""
    h = shape.hidden
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    attention = (("col", h, (q, kv, kv)), ("row", q, (h,)))
    if targets == "attention":
        return attention
    return attention + (("col", h, (shape.ffn, shape.ffn)), ("row", shape.ffn, (h,)))


def adapter_bytes_per_gpu(shape, rank: int, tp: int = 1, layers: int | None = None,
                          value_bytes: int = 2, targets: str = "all") -> float:
    """Bytes one adapter of ``rank`` takes on each of a replica's GPUs (``layers``: those on
    the GPU's pipeline stage; default all) on the modules ``targets`` names."""
    per_layer = 0.0
    for style, k, outs in _modules(shape, targets):
        for n in outs:
            if style == "col":
                per_layer += k * rank + rank * n / tp
            else:
                per_layer += k * rank / tp + rank * n
    return per_layer * (shape.layers if layers is None else layers) * value_bytes


class LoraKernels:
    """The batched LoRA kernels' seconds per iteration on one replica (``perf`` a
    :class:`~..perf.model.PerfModel`, or a wrapper of one that forwards its attributes): every
    layer's, as an iteration passes through every pipeline stage; ``adapter_bytes`` is one
    adapter's bytes on a GPU (its stage's layers, its TP shard). The all-reduce a
    row-parallel layer's shrink needs under TP is not counted."""

    def __init__(self, perf, rank: int, targets: str = "all"):
        self.rank = int(rank)
        self.eff, self.gpu = perf.eff, perf.gpu
        self.tp = int(getattr(perf, "tp", 1))
        self.layers = perf.model.layers    # an iteration passes through every stage's layers
        stage_layers = perf.model.layers // int(getattr(perf, "pp", 1))
        self._mods = _modules(perf.model, targets)
        # kernels launched from the host (no CUDA graph covers the iteration) take at least
        # the host's dispatch each, as the base model's do
        eagerly = getattr(perf, "launched_eagerly", None)
        self._eagerly = eagerly if eagerly is not None else (lambda tokens: False)
        host = getattr(perf, "host", None)
        self._dispatch_s = host.dispatch_s if host is not None else 0.0
        #: one adapter's bytes on each GPU
        self.adapter_bytes = adapter_bytes_per_gpu(perf.model, rank, self.tp, stage_layers,
                                                   targets=targets)
        self._memo: dict[tuple[int, int], float] = {}

    def seconds(self, tokens: int, distinct: int) -> float:
        """Seconds the shrink and expand kernels of every layer take for ``tokens`` tokens of
        ``distinct`` adapters (0 when either is 0)."""
        if tokens <= 0 or distinct <= 0:
            return 0.0
        key = (tokens, distinct)
        s = self._memo.get(key)
        if s is None:
            s = self._memo[key] = self._seconds(tokens, distinct)
        return s

    def _seconds(self, tokens: int, distinct: int) -> float:
        r, tp, eff, gpu = self.rank, self.tp, self.eff, self.gpu
        eagerly, dispatch = bool(self._eagerly(tokens)), self._dispatch_s
        layer = 0.0
        for style, k, outs in self._mods:
            slices = len(outs)
            out = sum(outs)
            if style == "col":       # A whole, B split
                shrink = matmul_s(eff, gpu, tokens, k, r * slices, weights=distinct)
                expand = matmul_s(eff, gpu, tokens, r * slices, out / tp, weights=distinct)
            else:                    # A split, B whole
                shrink = matmul_s(eff, gpu, tokens, k / tp, r, weights=distinct)
                expand = matmul_s(eff, gpu, tokens, r, out, weights=distinct)
            layer += float(eager(shrink, eagerly, dispatch)) + float(eager(expand, eagerly,
                                                                             dispatch))
        return layer * self.layers


def slots_tokens(perf, lora: LoRA) -> int:
    """KV-cache tokens the ``max_loras`` slots' bytes displace on each GPU of ``perf``."""
    one = LoraKernels(perf, lora.rank, lora.targets).adapter_bytes
    return -int(-(lora.max_loras * one) // perf.kv_bytes_per_token_per_gpu)


#: The key of ``Requests.meta`` under which a load carries each request's own adapter.
ADAPTER_META = "lora_adapter"


def draw_adapters(n: int, lora: LoRA, seed: int, given=None, class_id=None) -> list[int]:
    """The adapter (0 to N - 1) each of ``n`` requests uses: ``given`` (a load's own, one a
    request), its SLO class's (``lora.by_class``: class c uses adapter c, a tenant its own), or
    drawn from the run's seed: uniform, or Zipf with exponent ``lora.skew`` (adapter a drawn
    with weight (a + 1) ** -skew)."""
    if given is None and lora.by_class:
        given = np.asarray(class_id if class_id is not None else np.zeros(n, np.int64))
        if n and given.max() >= lora.adapters:
            raise InputError(f"lora_by_class: the load has {int(given.max()) + 1} classes and "
                             f"lora_adapters is {lora.adapters}; allowed: at least one adapter "
                             "a class")
    if given is not None:
        given = np.asarray(given)
        if len(given) != n or (n and (given.min() < 0 or given.max() >= lora.adapters)):
            raise InputError(f"requests: {ADAPTER_META} needs one adapter a request, each 0 to "
                             f"lora_adapters - 1 = {lora.adapters - 1}")
        return given.astype(int).tolist()
    rng = np.random.default_rng([int(seed) % 2**63, LORA_STREAM])
    if lora.skew == 0:
        return rng.integers(0, lora.adapters, n).tolist()
    w = np.arange(1, lora.adapters + 1, dtype=float) ** -lora.skew
    return rng.choice(lora.adapters, size=n, p=w / w.sum()).tolist()
