"""A mixture-of-experts layer's time on one GPU: the routing of a batch's tokens over the
experts, the experts' grouped matmuls, the router, and expert parallelism's all-to-alls.

**Routing.** Each token's router picks ``k`` distinct experts of ``E``. ``expert_skew`` = ``s``
(>= 0) is the Zipf exponent of the experts' popularity: ranked from the most used, expert ``i``
(1 to E) receives the share ``p_i = i**-s / sum_j j**-s`` of the routed (token, expert) pairs,
so a token picks it with probability ``q_i = k p_i`` (:func:`pick_probabilities`), tokens
independent. ``s = 0`` is uniform routing (``q_i = k / E``, what a balanced router gives on
average and what random weights give); the busiest expert carries ``E p_1`` times the mean
load (:func:`peak_to_mean`: 1.83 at s = 0.5 for Mixtral's 8 experts, 2.94 at s = 1). A
token cannot pick an expert twice, so ``q_1 <= 1`` bounds the skew (:func:`max_expert_skew`:
1.436 for Mixtral's top-2 of 8, where the busiest expert carries 4 times the mean).
:func:`sample_routing` draws this routing (systematic sampling: one uniform offset per token
picks ``k`` distinct experts with exactly these probabilities), which the tests hold the
formulas to. The default is 0: uniform is what the benchmarks replayed here are taken to run
(dummy weights), and no published measurement of a real router's load with figures this project
could read was found; set the skew where a measurement of your traffic gives one (a peak-to-mean
load ``r`` is ``s`` with ``peak_to_mean(E, s) = r``). Tokens are independent here: routing that
is correlated across a batch's tokens (a batch of near-identical tokens that all pick the same
experts) touches fewer experts than any skew gives.

Of ``T`` tokens, expert ``i`` is read by at least one with probability ``P_i = 1 - (1 - q_i)
** T``, so the expected distinct experts touched are ``sum_i P_i`` (:func:`expected_experts`;
uniform: ``E (1 - (1 - k / E) ** T)``) and the expected rows of expert ``i`` are ``T q_i``. A
decode step of a dense model reads all its weights; an MoE model's reads the attention and
shared weights once and only the experts its tokens touch, which is why it decodes a small
batch faster than a dense model of its total size, and why skewed routing (fewer experts
touched) is faster still where weight reads dominate. The counts depend on the iteration's
token count alone, so the fast simulator's decode line still holds (a decode step is ``a + b x
context`` at a fixed batch).

**The grouped matmuls.** The experts' gate+up and down projections each run as one grouped
GEMM (vLLM's fused MoE kernel, TensorRT-LLM's MoE plugin): one group of ``T q_i`` rows per
touched expert, each against its own weights. Each group runs at the efficiency of its own
row count: the calibrated matmul roofline (:func:`.kernels.matmul_s`, fitted to profiled dense
matmuls of 1 to 8,192 rows, which it follows within +-7% at the median for every row count of
the H200 profile) of the group's rows, the group's weights read once, summed over the groups
(their tiles share the GPU's SMs: a persistent grouped GEMM hands out tiles of every group to
the same CTAs), plus one launch. The expectation over routing is taken per expert: ``P_i x
t(T q_i / P_i rows)``. Under uniform routing every group has ``T k / E`` rows and the sum is
the roofline of all rows against all touched experts' weights (the roofline is homogeneous),
the figure this model gave before routing skew existed.

**Parallelism.** With ``ep == 1`` each GPU holds ``1 / tp`` of every expert, so every GPU
does the same work. With expert parallelism (``ep == tp``) each GPU holds ``E / ep`` whole
experts (vLLM places them by id, which routing's popularity does not follow) and the busiest
GPU sets the layer's pace: the one holding the most used expert, with ``E / ep - 1`` others
of the mean popularity of the rest (:func:`busiest_gpu_picks`: exact in expectation over
placements; a batch's own fluctuation around these means is not modelled, so a small batch
under EP is a little faster here than it runs). That GPU also receives the most all-to-all
traffic: *dispatch* sends each token's hidden vector to the GPUs of its ``k`` experts and
*combine* sends the ``k`` results back, two all-to-alls a layer over the link (DeepEP's and
Megatron's formulation), in place of the all-reduce that joins a tensor-split MLP; the busiest
GPU's share of the pairs sets their time (:func:`.kernels.alltoall_s`, ``share``). The tokens
are spread over the ``ep`` GPUs for attention (its all-reduce becomes a reduce-scatter, and an
all-gather brings the tokens back before the next attention: one all-reduce's traffic, as
before).

**How the engine runs the experts** (engine settings, :class:`~.model.PerfModel`'s
``moe_fp8_compute`` and ``moe_all_experts``). With FP8 weights the experts' grouped matmuls
read one byte per weight and compute at the FP8 peak (``fp8_compute=True``: vLLM's fused MoE
with FP8 weights and activations, TensorRT-LLM's MoE plugin from 0.10), or keep 16-bit expert
weights computed at the 16-bit peak (``fp8_compute=False``: an MoE kernel without an FP8 path;
the attention's matmuls and the KV cache stay FP8). TensorRT-LLM 0.9 had no FP8 MoE plugin
("Added FP8 quantization support for Mixtral" is in the 0.10.0 release notes,
https://github.com/NVIDIA/TensorRT-LLM/releases/tag/v0.10.0; 0.7.1's plugin took FP16/BF16,
INT8 and INT4 weights only, and in the 0.10 development tree the plugin's non-Hopper grouped
GEMM still refuses FP8). Its FP8 route for Mixtral was then either 16-bit experts in the plugin
or the plugin-less path that runs every expert as a dense FP8 MLP over every token and masks the
outputs (``all_experts=True``, :func:`all_experts_block_s`; in TensorRT-LLM since at least the
0.10 development tree, whose Mixtral README warns it "comes at a significant performance
cost"). Which one 0.9's benchmark ran is not stated; docs/serving-calibration.md holds both
against its Mixtral rows.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...errors import InputError
from .catalog import BYTES_PER_PARAM, GPU
from .kernels import Efficiency, allreduce_s, alltoall_s, elementwise_s, matmul_s
from .shard import LayerShard

__all__ = ["pick_probabilities", "peak_to_mean", "max_expert_skew", "check_expert_skew",
           "expected_experts", "busiest_gpu_picks", "sample_routing", "moe_block_s",
           "all_experts_block_s"]


def _zipf_shares(experts: int, skew: float) -> np.ndarray:
    weights = np.arange(1, experts + 1, dtype=float) ** -float(skew)
    return weights / weights.sum()


@lru_cache(maxsize=256)
def _probabilities(experts: int, k: int, skew: float) -> tuple:
    return tuple(k * _zipf_shares(experts, skew))


def pick_probabilities(experts: int, k: int, skew: float = 0.0) -> np.ndarray:
    """``q_i``: the probability that a token picks expert ``i`` (ranked from the most used),
    ``k x`` its Zipf share ``i**-skew / sum_j j**-skew``; they sum to ``k``."""
    return np.array(_probabilities(int(experts), int(k), float(skew)))


def peak_to_mean(experts: int, skew: float) -> float:
    """The busiest expert's load over the mean load: ``E x p_1`` (1 when uniform)."""
    return float(experts * _zipf_shares(experts, skew)[0])


@lru_cache(maxsize=64)
def max_expert_skew(experts: int, k: int) -> float:
    """The largest skew a top-``k`` router of ``experts`` experts can have: where the most used
    expert is picked by every token (``q_1 = k p_1 = 1``); infinite when ``k == 1``."""
    if k <= 1:
        return float("inf")
    low, high = 0.0, 1.0
    while k * _zipf_shares(experts, high)[0] < 1.0:
        low, high = high, 2 * high
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if k * _zipf_shares(experts, mid)[0] < 1.0 else (low, mid)
    return low


def check_expert_skew(value, experts: int, k: int, model_name: str = "the model") -> float:
    """``value`` as a skew for a top-``k`` router of ``experts`` experts (0 for a dense model,
    ``experts == 0``), or an InputError naming the knob, the value and what is allowed."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"expert_skew: {value!r} is not a number; allowed: 0 (uniform "
                         "routing) or more, a Zipf exponent")
    value = float(value)
    if not experts:
        if value != 0:
            raise InputError(f"expert_skew: {value:g} needs a mixture-of-experts model; "
                             f"{model_name} is dense (allowed: 0)")
        return 0.0
    top = max_expert_skew(experts, k)
    if not 0 <= value <= top:
        raise InputError(f"expert_skew: {value!r} for {model_name} ({experts} experts, top-{k}); "
                         f"allowed: 0 (uniform) to {top:.3f} (the most used expert picked by "
                         "every token)")
    return value


def expected_experts(experts: int, k: int, tokens, skew: float = 0.0):
    """Expected distinct experts ``tokens`` tokens touch (a number or an array): ``sum_i 1 -
    (1 - q_i) ** tokens``; uniform: ``experts x (1 - (1 - k / experts) ** tokens)``."""
    tokens = np.asarray(tokens, dtype=float)
    q = pick_probabilities(experts, k, skew)
    return (1.0 - (1.0 - q) ** tokens[..., None]).sum(axis=-1)


def busiest_gpu_picks(experts: int, k: int, ep: int, skew: float = 0.0) -> np.ndarray:
    """The pick probabilities of the experts on the busiest of ``ep`` expert-parallel GPUs: the
    most used expert and ``experts / ep - 1`` of the mean popularity of the other experts (all
    ``experts`` when ep == 1). Their sum over ``k`` is that GPU's share of the routed pairs."""
    q = pick_probabilities(experts, k, skew)
    if ep <= 1:
        return q
    rest = (k - q[0]) / (experts - 1)
    return np.concatenate([q[:1], np.full(experts // ep - 1, rest)])


def sample_routing(experts: int, k: int, tokens: int, skew: float = 0.0,
                   seed: int = 0) -> np.ndarray:
    """A ``tokens x k`` array of the experts (0 = the most used) each token picks under the
    routing above: systematic sampling of the pick probabilities (one uniform offset ``u`` per
    token; the experts whose cumulative-probability intervals hold ``u, u + 1, ..., u + k -
    1``), so each token's ``k`` experts are distinct and expert ``i`` is picked with probability
    ``q_i`` exactly. Same seed, same routing."""
    q = pick_probabilities(experts, k, skew)
    if q.max() > 1 + 1e-12:
        raise InputError(f"expert_skew: {skew!r} gives the most used expert a pick "
                         f"probability of {q.max():.3f}; allowed: up to "
                         f"{max_expert_skew(experts, k):.3f}")
    edges = np.cumsum(q)
    u = np.random.default_rng(seed).random(tokens)[:, None] + np.arange(k)[None, :]
    return np.minimum(np.searchsorted(edges, u, side="right"), experts - 1)


def _grouped_matmul_s(eff: Efficiency, gpu: GPU, tokens, q, k_dim: int, n_dim: int,
                      weight_bytes: int, tflops: float):
    """Seconds of one grouped matmul over the experts of pick probabilities ``q`` for
    ``tokens`` tokens (an array), without its launch: per expert, the probability it is touched
    times the roofline of its rows given it is (``P_i x t(T q_i / P_i)`` = the roofline of
    ``T q_i`` rows against ``P_i`` weight matrices: the roofline is homogeneous)."""
    t = np.asarray(tokens, dtype=float)[..., None]
    touched = 1.0 - (1.0 - q) ** t
    groups = matmul_s(eff, gpu, t * q, k_dim, n_dim, floor_s=0.0, weight_bytes=weight_bytes,
                      tflops=tflops, weights=touched)
    return groups.sum(axis=-1)


def moe_block_s(eff: Efficiency, gpu: GPU, sh: LayerShard, tokens, kernel, by_tokens,
                tflops: float, skew: float = 0.0, fp8_compute: bool = True,
                all_experts: bool = False) -> tuple:
    """Seconds of one MoE layer's expert block on the busiest GPU for ``tokens`` tokens (an
    array), and its collectives: ``(kernels, collectives)``. ``kernel(seconds)`` applies the
    eager launch rule; ``by_tokens`` says which iterations launch eagerly (their collectives
    keep their floors); ``tflops`` is the peak of the weights' precision; ``skew`` the routing's
    Zipf exponent; ``fp8_compute`` whether FP8 experts compute in FP8 (else 16-bit expert
    weights at the 16-bit peak); ``all_experts`` runs every local expert over every token
    instead (:func:`all_experts_block_s`).

    Kernels: the router's gate (BF16, every GPU), the top-k selection, the experts' gate+up and
    down as two grouped matmuls (a group per touched local expert, at its own rows), the FP8
    quantization of their inputs where they compute in FP8, their activation and the sum of
    each token's ``k`` outputs. The collectives: the all-reduce joining a tensor-split block
    (ep == 1), or dispatch and combine (ep > 1), at the busiest GPU's share."""
    if all_experts:
        return all_experts_block_s(eff, gpu, sh, tokens, kernel, by_tokens, tflops, fp8_compute)
    m = sh.model
    k = m.experts_per_token
    q = busiest_gpu_picks(m.experts, k, sh.ep, skew)
    rows = tokens * q.sum()                       # (token, expert) pairs the busiest GPU computes
    fp8 = sh.dtype == "fp8" and fp8_compute
    wb = 1 if fp8 else BYTES_PER_PARAM
    peak = tflops if fp8 else gpu.tflops_bf16
    hk, e = sh.router
    seconds = kernel(matmul_s(eff, gpu, tokens, hk, e))
    for kk, n in sh.expert_matmuls.values():
        seconds = seconds + kernel(eff.kernel_launch_s + _grouped_matmul_s(
            eff, gpu, tokens, q, kk, n, wb, peak))
        if fp8:     # the grouped matmul's input quantized to FP8 first
            seconds = seconds + kernel(elementwise_s(eff, gpu, rows * kk * (BYTES_PER_PARAM + 1)))
    elementwise = sh.elementwise_bytes_per_token
    load = q.sum() * sh.ep / k                    # the busiest GPU's rows over the mean's
    for name in ("moe_topk", "mlp_act", "moe_sum"):
        per_token = elementwise[name] * (load if name == "mlp_act" else 1.0)
        seconds = seconds + kernel(elementwise_s(eff, gpu, tokens * per_token))
    act = tokens * m.hidden * BYTES_PER_PARAM
    comm = allreduce_s(eff, gpu, act, sh.tp, by_tokens)
    if sh.ep > 1:
        comm = 2 * alltoall_s(eff, gpu, act * k, sh.ep, by_tokens, share=q.sum() / k) + (
            comm if m.shared_experts else 0.0)     # shared experts stay tensor-split
    return seconds, comm


def all_experts_block_s(eff: Efficiency, gpu: GPU, sh: LayerShard, tokens, kernel, by_tokens,
                        tflops: float, fp8_compute: bool = True) -> tuple:
    """``(kernels, collectives)`` of an MoE layer that runs every local expert over every token
    and keeps each token's ``k`` outputs by a mask: TensorRT-LLM's MoE without its plugin (its
    "OOTB" path, ``MixtureOfExperts.forward`` when ``moe_plugin`` is off: "out = expert(
    hidden_states)" for each expert, then "output += out * expert_weights"; its Mixtral README:
    "this comes at a significant performance cost"). Each expert is a gated MLP of its own (two
    matmuls over all ``tokens`` rows, in the model's precision: the FP8 linear layers quantize
    their input), its activation, and the masked add of its output; ``E / ep`` experts on each
    GPU, so routing skew does not matter; an all-reduce joins the GPUs' outputs."""
    m = sh.model
    fp8 = sh.dtype == "fp8" and fp8_compute
    wb = 1 if fp8 else BYTES_PER_PARAM
    peak = tflops if fp8 else gpu.tflops_bf16
    local = sh.local_experts
    hk, e = sh.router
    seconds = kernel(matmul_s(eff, gpu, tokens, hk, e))
    b = BYTES_PER_PARAM
    for kk, n in sh.expert_matmuls.values():
        one = kernel(matmul_s(eff, gpu, tokens, kk, n, weight_bytes=wb, tflops=peak))
        if fp8:
            one = one + kernel(elementwise_s(eff, gpu, tokens * kk * (b + 1)))
        seconds = seconds + local * one
    f = m.expert_ffn // sh.expert_tp
    act = kernel(elementwise_s(eff, gpu, tokens * 3 * f * b))           # gate x silu(up)
    masked_add = kernel(elementwise_s(eff, gpu, tokens * 3 * m.hidden * b))
    seconds = seconds + local * (act + masked_add)
    seconds = seconds + kernel(elementwise_s(
        eff, gpu, tokens * sh.elementwise_bytes_per_token["moe_topk"]))
    comm = allreduce_s(eff, gpu, tokens * m.hidden * b, sh.tp, by_tokens)
    return seconds, comm
