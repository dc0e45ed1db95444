"""A mixture-of-experts layer's time on one GPU: the experts a batch's tokens touch, the router,
and expert parallelism's all-to-alls.

Routing is assumed uniform: each token's router picks ``k`` of the ``E`` experts, every expert
equally likely and tokens independent (a trained router is balanced by its auxiliary loss; real
batches are lumpier, so this is the fewest experts a batch reads). An expert is read when at
least one token picks it: of ``T`` tokens the expected number of distinct experts touched is

    E x (1 - (1 - k / E) ** T)

(:func:`expected_experts`): about ``T x k`` while that is small against ``E``, all ``E`` for a
large batch. A decode step of a dense model reads all its weights; an MoE model's reads the
attention and shared weights once and only the experts its tokens touch, which is why it decodes
a small batch faster than a dense model of its total size. The count depends on the
iteration's token count alone, so the fast simulator's decode line still holds (a decode step is
``a + b x context`` at a fixed batch).

Per GPU, with ``ep == 1`` each GPU reads its ``1 / tp`` share of every touched expert; with
expert parallelism (``ep == tp``) it holds ``E / ep`` whole experts and reads the touched ones
among them: the same bytes on average. What expert parallelism changes is the traffic: the
tokens are spread over the ``ep`` GPUs (attention's all-reduce becomes a reduce-scatter, and an
all-gather brings the tokens back before the next attention: one all-reduce's traffic, as
before), *dispatch* sends each token's hidden vector to the GPUs of its ``k`` experts and
*combine* sends the ``k`` results back: two all-to-alls a layer over the link (DeepEP's and
Megatron's formulation), in place of the all-reduce that joins a tensor-split MLP.
"""

from __future__ import annotations

import numpy as np

from .catalog import BYTES_PER_PARAM, GPU
from .kernels import Efficiency, allreduce_s, alltoall_s, elementwise_s, matmul_s
from .shard import LayerShard

__all__ = ["expected_experts", "moe_block_s"]


def expected_experts(experts: int, k: int, tokens):
    """Expected distinct experts ``tokens`` tokens touch when each picks ``k`` of ``experts``
    uniformly: ``experts x (1 - (1 - k / experts) ** tokens)`` (a number or an array)."""
    tokens = np.asarray(tokens, dtype=float)
    return experts * (1.0 - (1.0 - k / experts) ** tokens)


def moe_block_s(eff: Efficiency, gpu: GPU, sh: LayerShard, tokens, kernel, by_tokens,
                tflops: float) -> tuple:
    """Seconds of one MoE layer's expert block on one GPU for ``tokens`` tokens (an array),
    and its collectives: ``(kernels, collectives)``. ``kernel(seconds)`` applies the eager
    launch rule; ``by_tokens`` says which iterations launch eagerly (their collectives keep
    their floors); ``tflops`` is the peak of the weights' precision.

    Kernels: the router's gate (BF16, every GPU), the top-k selection, the experts' gate+up and
    down as two grouped matmuls (the touched local experts' weights, ``tokens x k / ep`` rows on
    this GPU on average), their activation and the sum of each token's ``k`` outputs. The
    collectives: the all-reduce joining a tensor-split block (ep == 1), or dispatch and combine
    (ep > 1)."""
    m = sh.model
    k = m.experts_per_token
    rows = tokens * k / sh.ep                     # (token, expert) pairs this GPU computes
    touched = expected_experts(m.experts, k, tokens) / sh.ep   # its local experts read
    wb = sh.weight_bytes_per_value
    hk, e = sh.router
    seconds = kernel(matmul_s(eff, gpu, tokens, hk, e))
    for kk, n in sh.expert_matmuls.values():
        seconds = seconds + kernel(matmul_s(eff, gpu, rows, kk, n, weight_bytes=wb,
                                            tflops=tflops, weights=touched))
        if sh.dtype == "fp8":     # the grouped matmul's input quantized to FP8 first
            seconds = seconds + kernel(elementwise_s(eff, gpu, rows * kk * (BYTES_PER_PARAM + 1)))
    elementwise = sh.elementwise_bytes_per_token
    for name in ("moe_topk", "mlp_act", "moe_sum"):
        seconds = seconds + kernel(elementwise_s(eff, gpu, tokens * elementwise[name]))
    act = tokens * m.hidden * BYTES_PER_PARAM
    comm = allreduce_s(eff, gpu, act, sh.tp, by_tokens)
    if sh.ep > 1:
        comm = 2 * alltoall_s(eff, gpu, act * k, sh.ep, by_tokens) + (
            comm if m.shared_experts else 0.0)     # shared experts stay tensor-split
    return seconds, comm
