"""One GPU's share of one transformer layer under tensor parallelism (vLLM's Megatron split).

Query heads, the MLP and the output projection split evenly over the ``tp`` GPUs; KV heads split
too while ``tp <= kv_heads`` and are replicated (one per GPU) beyond. The operators and their
sizes follow the names of Vidur's profiles, so the calibration and the model use the same shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import BYTES_PER_PARAM, ModelShape

__all__ = ["LayerShard", "MATMULS", "ELEMENTWISE"]

#: The four matmuls of a layer, in Vidur's names: QKV projection, output projection, gate+up
#: projection (fused), down projection.
MATMULS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
#: The elementwise kernels of a layer, in Vidur's names.
ELEMENTWISE = ("input_layernorm", "post_attention_layernorm", "attn_rope", "mlp_act", "add")


@dataclass(frozen=True)
class LayerShard:
    """The part of one layer that one GPU of a ``tp``-way group computes."""

    model: ModelShape
    tp: int

    @property
    def q_heads(self) -> int:
        return self.model.heads // self.tp

    @property
    def kv_heads(self) -> int:
        """KV heads this GPU holds (at least one: replicated when tp > kv_heads)."""
        return max(1, self.model.kv_heads // self.tp)

    @property
    def matmuls(self) -> dict[str, tuple[int, int]]:
        """``name -> (k, n)``: each matmul multiplies ``tokens x k`` by ``k x n``."""
        m, hd = self.model, self.model.head_dim
        return {
            "attn_pre_proj": (m.hidden, (self.q_heads + 2 * self.kv_heads) * hd),
            "attn_post_proj": (self.q_heads * hd, m.hidden),
            "mlp_up_proj": (m.hidden, 2 * m.ffn // self.tp),
            "mlp_down_proj": (m.ffn // self.tp, m.hidden),
        }

    @property
    def elementwise_bytes_per_token(self) -> dict[str, int]:
        """Bytes each elementwise kernel reads plus writes per token (BF16)."""
        m, b = self.model, BYTES_PER_PARAM
        return {
            "input_layernorm": 2 * m.hidden * b,
            "post_attention_layernorm": 2 * m.hidden * b,
            "attn_rope": 2 * (self.q_heads + self.kv_heads) * m.head_dim * b,
            "mlp_act": 3 * (m.ffn // self.tp) * b,
            "add": 3 * m.hidden * b,
        }

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes one token holds in this layer on this GPU."""
        return 2 * self.kv_heads * self.model.head_dim * BYTES_PER_PARAM

    @property
    def attention_flops_per_pair(self) -> int:
        """FLOPs of attention per (query, key) pair on this GPU: QK^T and PV, 2 x 2 x head dim
        for each query head."""
        return 4 * self.q_heads * self.model.head_dim

    @property
    def weight_bytes(self) -> int:
        """Bytes of this GPU's share of the layer's matmul weights."""
        return sum(k * n for k, n in self.matmuls.values()) * BYTES_PER_PARAM
