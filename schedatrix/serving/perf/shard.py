"""One GPU's share of one transformer layer under tensor parallelism (vLLM's Megatron split).

Query heads, the MLP and the output projection split evenly over the ``tp`` GPUs; KV heads split
too while ``tp <= kv_heads`` and are replicated (one per GPU) beyond. The operators and their
sizes follow the names of Vidur's profiles, so the calibration and the model use the same shapes.

A mixture-of-experts layer keeps the attention's split and replaces the MLP by its experts:
with ``ep == 1`` every expert is split over the ``tp`` GPUs like a dense MLP (vLLM's default);
with ``ep == tp`` (expert parallelism, vLLM's ``--enable-expert-parallel``) each GPU holds
``experts / ep`` whole experts. ``dtype`` sets the bytes of the weights and of the KV cache
(activations are BF16 either way); ``fp8_experts=False`` keeps an FP8 model's experts in 16 bits
(an engine whose MoE kernel has no FP8 path, TensorRT-LLM 0.9: :mod:`.moe`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import BYTES_PER_PARAM, ModelShape, dtype_bytes

__all__ = ["LayerShard", "MATMULS", "ELEMENTWISE"]

#: The four matmuls of a layer, in Vidur's names: QKV projection, output projection, gate+up
#: projection (fused), down projection.
MATMULS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
#: The elementwise kernels of a layer, in Vidur's names.
ELEMENTWISE = ("input_layernorm", "post_attention_layernorm", "attn_rope", "mlp_act", "add")
#: Bytes per router logit of the top-k selection: FP32 logits read, FP32 weights and int32
#: expert ids written.
TOPK_BYTES_PER_LOGIT = 12


@dataclass(frozen=True)
class LayerShard:
    """The part of one layer that one GPU of a ``tp``-way group computes."""

    model: ModelShape
    tp: int
    ep: int = 1
    dtype: str = "bf16"
    fp8_experts: bool = True

    @property
    def q_heads(self) -> int:
        return self.model.heads // self.tp

    @property
    def kv_heads(self) -> int:
        """KV heads this GPU holds (at least one: replicated when tp > kv_heads)."""
        return max(1, self.model.kv_heads // self.tp)

    @property
    def weight_bytes_per_value(self) -> int:
        """Bytes of one weight of the layer's linear layers (and of one KV value)."""
        return dtype_bytes(self.dtype)

    @property
    def expert_weight_bytes_per_value(self) -> int:
        """Bytes of one weight of the routed experts: the layer's, but 2 for an FP8 model whose
        experts stay 16-bit (``fp8_experts=False``)."""
        if self.dtype == "fp8" and not self.fp8_experts:
            return BYTES_PER_PARAM
        return self.weight_bytes_per_value

    @property
    def matmuls(self) -> dict[str, tuple[int, int]]:
        """``name -> (k, n)``: each dense matmul multiplies ``tokens x k`` by ``k x n`` (the
        attention's two, and the MLP's two, or an MoE layer's shared experts' two)."""
        m, hd = self.model, self.model.head_dim
        out = {
            "attn_pre_proj": (m.hidden, (self.q_heads + 2 * self.kv_heads) * hd),
            "attn_post_proj": (self.q_heads * hd, m.hidden),
        }
        if not m.moe:
            out["mlp_up_proj"] = (m.hidden, 2 * m.ffn // self.tp)
            out["mlp_down_proj"] = (m.ffn // self.tp, m.hidden)
        elif m.shared_experts:
            out["shared_up_proj"] = (m.hidden, 2 * m.shared_expert_ffn // self.tp)
            out["shared_down_proj"] = (m.shared_expert_ffn // self.tp, m.hidden)
        return out

    # -- the experts of an MoE layer -----------------------------------------------------------
    @property
    def local_experts(self) -> int:
        """Routed experts this GPU holds (a share of each when ep == 1: all of them)."""
        return self.model.experts // self.ep

    @property
    def expert_tp(self) -> int:
        """GPUs each expert is split over (tp when ep == 1, 1 when ep == tp)."""
        return self.tp // self.ep

    @property
    def expert_matmuls(self) -> dict[str, tuple[int, int]]:
        """``name -> (k, n)`` of one expert's share on this GPU: gate+up (fused) and down."""
        m = self.model
        if not m.moe:
            return {}
        f = m.expert_ffn // self.expert_tp
        return {"expert_up_proj": (m.hidden, 2 * f), "expert_down_proj": (f, m.hidden)}

    @property
    def router(self) -> tuple[int, int] | None:
        """``(k, n)`` of the router's gate (hidden x experts, BF16, on every GPU), or None."""
        return (self.model.hidden, self.model.experts) if self.model.moe else None

    @property
    def elementwise_bytes_per_token(self) -> dict[str, float]:
        """Bytes each elementwise kernel reads plus writes per token (BF16 activations); an MoE
        layer's activation runs over this GPU's share of the token's picked experts, and its
        top-k selection and the sum of the picked experts' outputs are kernels of their own."""
        m, b = self.model, BYTES_PER_PARAM
        out = {
            "input_layernorm": 2 * m.hidden * b,
            "post_attention_layernorm": 2 * m.hidden * b,
            "attn_rope": 2 * (self.q_heads + self.kv_heads) * m.head_dim * b,
            "mlp_act": 3 * (m.ffn // self.tp) * b,
            "add": 3 * m.hidden * b,
        }
        if m.moe:
            k = m.experts_per_token
            out["mlp_act"] = 3 * k * m.expert_ffn * b / self.tp
            if m.shared_experts:
                out["shared_act"] = 3 * (m.shared_expert_ffn // self.tp) * b
            out["moe_topk"] = m.experts * TOPK_BYTES_PER_LOGIT
            out["moe_sum"] = (k + 1) * m.hidden * b
        return out

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes one token holds in this layer on this GPU."""
        return 2 * self.kv_heads * self.model.head_dim * self.weight_bytes_per_value

    @property
    def attention_flops_per_pair(self) -> int:
        """FLOPs of attention per (query, key) pair on this GPU: QK^T and PV, 2 x 2 x head dim
        for each query head."""
        return 4 * self.q_heads * self.model.head_dim

    @property
    def weight_bytes(self) -> int:
        """Bytes of this GPU's share of the layer's matmul weights (its experts included)."""
        dense = sum(k * n for k, n in self.matmuls.values())
        experts = self.local_experts * sum(k * n for k, n in self.expert_matmuls.values())
        router = self.model.hidden * self.model.experts * BYTES_PER_PARAM
        return (dense * self.weight_bytes_per_value
                + experts * self.expert_weight_bytes_per_value + router)
