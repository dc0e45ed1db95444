"""The hardware and model catalog: public facts from ``../shared/spec/serving.md``, nothing fitted.

GPUs carry their dense BF16 peak (and dense FP8 peak where the GPU has FP8 tensor cores),
memory, HBM bandwidth and in-node GPU-to-GPU link (the total of both directions, as vendors
quote NVLink), plus a stated default price. Models carry the shape the performance model needs:
dense Llamas, and two mixture-of-experts models whose shapes are their published
``config.json`` files (each row names its address; tests/test_serving_perf.py pins every field).
Lookups by name raise :class:`~schedatrix.errors.InputError` naming the field, the value and
the allowed names.

Precisions (``DTYPES``): ``bf16`` (2 bytes a weight and a KV value) and ``fp8`` (1 byte: FP8
E4M3 weights of the decoder's linear layers and an FP8 KV cache, as TensorRT-LLM's and vLLM's
FP8 checkpoints run; the embedding, the LM head and the MoE router stay BF16, as ModelOpt's
FP8 checkpoints keep them, and activations stay BF16 between kernels).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError

__all__ = ["GPU", "ModelShape", "GPUS", "MODELS", "GPUS_PER_NODE", "INTER_NODE_GB_S",
           "BYTES_PER_PARAM", "DTYPES", "PRICE_NOTE", "gpu", "model", "inter_node_gb_s",
           "dtype_bytes", "MODEL_SOURCES"]

#: GPUs in one node (a DGX/HGX board); tensor parallelism stays inside one node.
GPUS_PER_NODE = 8
#: BF16 weights and KV cache: 2 bytes a value (activations are always BF16).
BYTES_PER_PARAM = 2
#: Bytes a weight and a KV-cache value take in each precision the model knows.
DTYPES = {"bf16": 2, "fp8": 1}
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
    tflops_fp8 : dense FP8 tensor-core peak, TFLOP/s (NVIDIA quotes it "with sparsity", twice
        the dense figure); None where the GPU has no FP8 tensor cores (the A100)
    """

    name: str
    tflops_bf16: float
    memory_gb: float
    hbm_gb_s: float
    link_gb_s: float
    link: str
    price_per_gpu_hour: float
    tflops_fp8: float | None = None

    @property
    def link_one_way_gb_s(self) -> float:
        """GB/s one direction over the in-node link (half the quoted total)."""
        return self.link_gb_s / 2


def dtype_bytes(dtype: str) -> int:
    """Bytes a weight and a KV value take in ``dtype`` (``bf16`` 2, ``fp8`` 1)."""
    try:
        return DTYPES[dtype]
    except (KeyError, TypeError):
        raise InputError(f"dtype: {dtype!r}; allowed: {', '.join(DTYPES)}") from None


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's shape. ``params`` counts every weight, embeddings included;
    ``ffn`` is the gated MLP's intermediate size (the config's ``intermediate_size``).

    A mixture-of-experts model (``experts`` > 0) replaces every layer's MLP by ``experts``
    gated MLPs of ``expert_ffn`` each, of which a router picks ``experts_per_token`` for each
    token, plus ``shared_experts`` MLPs of ``shared_expert_ffn`` in all that every token runs
    (none in Mixtral or Qwen3-30B-A3B); its ``ffn`` is then unused. ``tied_embeddings``: the
    LM head is the embedding matrix (Llama 3.2 3B), so the weights hold it once.
    """

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
    experts: int = 0
    experts_per_token: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    shared_expert_ffn: int = 0
    tied_embeddings: bool = False

    @property
    def moe(self) -> bool:
        """A mixture-of-experts model."""
        return self.experts > 0

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes a token holds in BF16: 2 (K and V) x layers x KV heads x head dim x 2."""
        return self.kv_bytes_per_token_in("bf16")

    def kv_bytes_per_token_in(self, dtype: str) -> int:
        """KV-cache bytes a token holds in ``dtype``: 2 (K and V) x layers x KV heads x head
        dim x the dtype's bytes (from the attention's shape alone, MoE or not)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes(dtype)

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights in BF16 (params x 2)."""
        return self.params * BYTES_PER_PARAM

    @property
    def embedding_params(self) -> int:
        """Weights of the embedding and the LM head (vocab x hidden, once when tied)."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    def weight_bytes_in(self, dtype: str) -> float:
        """Bytes of all weights in ``dtype``: the decoder's weights at the dtype's bytes, the
        embedding and the LM head in BF16."""
        emb = self.embedding_params
        return (self.params - emb) * dtype_bytes(dtype) + emb * BYTES_PER_PARAM

    @property
    def expert_params(self) -> int:
        """Weights of one routed expert (gate, up and down projections)."""
        return 3 * self.hidden * self.expert_ffn

    @property
    def active_params(self) -> float:
        """Weights a token runs through: all but the routed experts it does not pick (the
        params of a dense model)."""
        unpicked = self.experts - self.experts_per_token
        return self.params - self.layers * unpicked * self.expert_params


#: Assumed prices, dollars per GPU-hour, on demand. A100, H100, H200: the middle of the
#: "specialty cloud" on-demand range of the Mercatus GPU price survey (May 2026: A100 80GB
#: $1.10-1.50, H100 SXM $2.50-3.50, H200 SXM $3.50-4.50). L4: Google Cloud's g2-standard-4
#: (one L4 with its share of the VM) at about $0.70 an hour on demand. Prices move by 2-3x
#: between providers; pass your own where it matters.
PRICE_NOTE = ("assumed on-demand prices: A100 $1.30, H100 $3.00, H200 $4.00 (middle of the "
              "specialty-cloud range, Mercatus survey May 2026), L4 $0.70 (Google Cloud "
              "g2-standard-4)")

#: Dense FP8 peaks: NVIDIA quotes FP8 tensor-core TFLOP/s "with sparsity"; dense is half.
#: H100 SXM and H200 SXM 3,958 with sparsity (Hopper whitepaper: 1,978.9 dense); L4 485 with
#: sparsity (242.5 dense, derived by halving). The A100 has no FP8 tensor cores.
GPUS: dict[str, GPU] = {g.name: g for g in (
    GPU("a100-80gb", 312.0, 80.0, 2039.0, 600.0, "NVLink 3 (600 GB/s both ways)", 1.30),
    GPU("h100-80gb", 989.0, 80.0, 3350.0, 900.0, "NVLink 4 (900 GB/s both ways)", 3.00, 1979.0),
    GPU("h200", 989.0, 141.0, 4800.0, 900.0, "NVLink 4 (900 GB/s both ways)", 4.00, 1979.0),
    GPU("l4", 121.0, 24.0, 300.0, 64.0, "PCIe Gen4 x16 (64 GB/s both ways)", 0.70, 242.5),
)}

#: Where each mixture-of-experts shape comes from (its published configuration file).
MODEL_SOURCES = {
    "mixtral-8x7b": "https://huggingface.co/mistralai/Mixtral-8x7B-Instruct-v0.1/blob/"
                    "eba92302a2861cdc0098cc54bc9f17cb2c47eb61/config.json",
    "qwen3-30b-a3b": "https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json (as "
                     "copied in public files; Qwen's model card: 30.5B total, 3.3B active)",
}

MODELS: dict[str, ModelShape] = {m.name: m for m in (
    ModelShape("llama-3.2-3b", 3.21e9, 28, 3072, 24, 8, 128, 8192, 128256,
               tied_embeddings=True),
    ModelShape("llama-3.1-8b", 8.03e9, 32, 4096, 32, 8, 128, 14336, 128256),
    ModelShape("llama-2-7b", 6.74e9, 32, 4096, 32, 32, 128, 11008, 32000, 4096),
    ModelShape("llama-2-70b", 69.0e9, 80, 8192, 64, 8, 128, 28672, 32000, 4096),
    ModelShape("llama-3.1-70b", 70.6e9, 80, 8192, 64, 8, 128, 28672, 128256),
    # MoE: params counted from the config's shape (embeddings, attention, experts, router,
    # norms), which gives the published totals: Mixtral "46.7B", Qwen3 "30.5B"
    ModelShape("mixtral-8x7b", 46.70e9, 32, 4096, 32, 8, 128, 14336, 32000, 32768,
               experts=8, experts_per_token=2, expert_ffn=14336),
    ModelShape("qwen3-30b-a3b", 30.53e9, 48, 2048, 32, 4, 128, 6144, 151936, 40960,
               experts=128, experts_per_token=8, expert_ffn=768),
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
