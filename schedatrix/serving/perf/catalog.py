"""The hardware and model catalog: public facts from ``../shared/spec/serving.md``, nothing fitted.

GPUs carry their dense BF16 peak, memory, HBM bandwidth and in-node GPU-to-GPU link (the total of
both directions, as vendors quote NVLink), plus a stated default price. Models carry the shape
the performance model needs. Lookups by name raise :class:`~schedatrix.errors.InputError` naming
the field, the value and the allowed names.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError

__all__ = ["GPU", "ModelShape", "GPUS", "MODELS", "GPUS_PER_NODE", "INTER_NODE_GB_S",
           "BYTES_PER_PARAM", "PRICE_NOTE", "gpu", "model", "inter_node_gb_s"]

#: GPUs in one node (a DGX/HGX board); tensor parallelism stays inside one node.
GPUS_PER_NODE = 8
#: BF16 weights and KV cache: 2 bytes a value.
BYTES_PER_PARAM = 2
#: Between nodes, per GPU, one direction: InfiniBand HDR 200 Gb/s and NDR 400 Gb/s.
INTER_NODE_GB_S = {"ib-hdr": 25.0, "ib-ndr": 50.0}


@dataclass(frozen=True)
class GPU:
    """One GPU type.

    tflops_bf16 : dense BF16 tensor-core peak, TFLOP/s
    memory_gb : HBM capacity, GB (10**9 bytes)
    hbm_gb_s : peak memory bandwidth, GB/s
    link_gb_s : GPU-to-GPU bandwidth inside a node, GB/s, total of both directions
        (NVLink as NVIDIA quotes it; PCIe Gen4 x16 as 64 GB/s both ways); one direction
        carries half
    price_per_gpu_hour : a stated default rental price in dollars (an assumption: see
        ``PRICE_NOTE``); every report that uses it prints it
    """

    name: str
    tflops_bf16: float
    memory_gb: float
    hbm_gb_s: float
    link_gb_s: float
    link: str
    price_per_gpu_hour: float

    @property
    def link_one_way_gb_s(self) -> float:
        """GB/s one direction over the in-node link (half the quoted total)."""
        return self.link_gb_s / 2


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's shape (Llama family). ``params`` counts every weight,
    embeddings included; ``ffn`` is the gated MLP's intermediate size."""

    name: str
    params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    #: the longest context (prompt + output) the model takes, its config's
    #: max_position_embeddings: Llama 2 4,096; Llama 3.1 and 3.2 131,072
    max_context: int = 131_072

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes a token holds in BF16: 2 (K and V) x layers x KV heads x head dim x 2."""
        return 2 * self.layers * self.kv_heads * self.head_dim * BYTES_PER_PARAM

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights in BF16 (params x 2)."""
        return self.params * BYTES_PER_PARAM


#: Assumed prices, dollars per GPU-hour, on demand. A100, H100, H200: the middle of the
#: "specialty cloud" on-demand range of the Mercatus GPU price survey (May 2026: A100 80GB
#: $1.10-1.50, H100 SXM $2.50-3.50, H200 SXM $3.50-4.50). L4: Google Cloud's g2-standard-4
#: (one L4 with its share of the VM) at about $0.70 an hour on demand. Prices move by 2-3x
#: between providers; pass your own where it matters.
PRICE_NOTE = ("assumed on-demand prices: A100 $1.30, H100 $3.00, H200 $4.00 (middle of the "
              "specialty-cloud range, Mercatus survey May 2026), L4 $0.70 (Google Cloud "
              "g2-standard-4)")

GPUS: dict[str, GPU] = {g.name: g for g in (
    GPU("a100-80gb", 312.0, 80.0, 2039.0, 600.0, "NVLink 3 (600 GB/s both ways)", 1.30),
    GPU("h100-80gb", 989.0, 80.0, 3350.0, 900.0, "NVLink 4 (900 GB/s both ways)", 3.00),
    GPU("h200", 989.0, 141.0, 4800.0, 900.0, "NVLink 4 (900 GB/s both ways)", 4.00),
    GPU("l4", 121.0, 24.0, 300.0, 64.0, "PCIe Gen4 x16 (64 GB/s both ways)", 0.70),
)}

MODELS: dict[str, ModelShape] = {m.name: m for m in (
    ModelShape("llama-3.2-3b", 3.21e9, 28, 3072, 24, 8, 128, 8192, 128256),
    ModelShape("llama-3.1-8b", 8.03e9, 32, 4096, 32, 8, 128, 14336, 128256),
    ModelShape("llama-2-7b", 6.74e9, 32, 4096, 32, 32, 128, 11008, 32000, 4096),
    ModelShape("llama-2-70b", 69.0e9, 80, 8192, 64, 8, 128, 28672, 32000, 4096),
    ModelShape("llama-3.1-70b", 70.6e9, 80, 8192, 64, 8, 128, 28672, 128256),
)}


def _lookup(table: dict, field: str, name: str):
    try:
        return table[name]
    except (KeyError, TypeError):
        raise InputError(f"{field}: unknown {field} {name!r}; allowed: "
                         f"{', '.join(table)}") from None


def gpu(name: str) -> GPU:
    """The GPU called ``name`` (one of ``GPUS``)."""
    return _lookup(GPUS, "gpu", name)


def model(name: str) -> ModelShape:
    """The model called ``name`` (one of ``MODELS``)."""
    return _lookup(MODELS, "model", name)


def inter_node_gb_s(name: str) -> float:
    """GB/s per GPU, one direction, of the inter-node link ``name`` (``ib-hdr``, ``ib-ndr``)."""
    return _lookup(INTER_NODE_GB_S, "inter_node", name)
