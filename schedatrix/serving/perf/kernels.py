"""The time of one kernel or collective on one GPU: roofline terms times named efficiency factors.

Every function takes an :class:`Efficiency` (the fitted factors of one GPU type) and the
:class:`~schedatrix.serving.perf.catalog.GPU`, and works on plain floats or on numpy arrays alike
(the calibration evaluates thousands of profiled operators at once with the very same formulas).

- matmul of ``tokens x k`` by ``k x n`` (BF16): ``launch + (compute**p + memory**p)**(1/p)``
  with ``compute = 2 tokens k n / (peak x matmul_flops_share)`` and ``memory = 2 (k n + tokens
  k + tokens n) / (HBM x matmul_hbm_share)``; ``p = roofline_blend`` joins the two (1: they add,
  large: the slower one alone). FP8 weights read 1 byte each and compute at the FP8 peak (the
  same shares of it); a grouped matmul (an MoE layer's experts) reads ``weights`` matrices.
- elementwise kernels (norms, rotary, activation, residual add): ``launch + bytes / (HBM x
  elementwise_hbm_share)``; the embedding lookup the same with ``embedding_hbm_share``.
- attention: prefill ``flops / (peak x prefill_attention_flops_share)`` blended with its KV read
  the same way as a matmul; decode ``KV bytes / (HBM x decode_attention_hbm_share)`` (linear in
  the bytes: the fast simulator relies on it).
- collectives: ring all-reduce ``latency + 2 (p - 1) / p x bytes / (one-way link x
  allreduce_link_share)``; an all-to-all (expert parallelism's dispatch and combine) sends
  ``(p - 1) / p`` of each GPU's ``bytes / p`` to the others at the same rates (or, uneven,
  the busiest receiver's share sets its time); launched
  eagerly (as the profiles timed it), never below the profiled small-message time of ``p``
  GPUs (``allreduce_floor_s``: what a collective costs however little it carries);
  all-gather half of that traffic; point-to-point send ``latency + bytes / (link x share)``,
  never below ``send_floor_s``.
- without CUDA graphs (or for a batch larger than the graphs captured), every kernel is
  launched by the host one at a time, so none takes less than the host's dispatch of one
  operator: a kernel's time is ``max(its time, dispatch)`` (:func:`eager`, the dispatch from
  :mod:`.host`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ...errors import InputError
from .catalog import GPU

__all__ = ["Efficiency", "efficiency", "matmul_s", "elementwise_s", "embedding_s",
           "prefill_attention_s", "prefill_attention_rates", "decode_attention_s",
           "allreduce_s", "allgather_s", "alltoall_s", "send_s", "collective_floor_s",
           "eager"]


@dataclass(frozen=True)
class Efficiency:
    """The named efficiency factors and fixed overheads of one GPU type (shares are 0 to 1
    of the catalog's peak figures; times in seconds).

    matmul_flops_share : share of peak BF16 FLOP/s a large matmul reaches
    matmul_hbm_share : share of peak HBM bandwidth a matmul reaches streaming its weights
    roofline_blend : the p of ``(compute**p + memory**p)**(1/p)`` (1: compute and memory time
        add; large: only the slower counts)
    elementwise_hbm_share : share of HBM bandwidth of norms, rotary, activation, adds
    embedding_hbm_share : the same for the embedding lookup (a gather, slower)
    kernel_launch_s : fixed time of every kernel (launch, tail, small-size floor)
    prefill_attention_flops_share : share of peak FLOP/s of prefill (causal) attention
    decode_attention_hbm_share : share of HBM bandwidth decode attention reads the KV cache at
    allreduce_latency_s, allreduce_link_share : fixed time and one-way link share of an
        in-node ring all-reduce
    send_latency_s, send_link_share : the same for a point-to-point send inside a node
    inter_node_latency_s, inter_node_share : fixed time and share of the InfiniBand rate of a
        send across nodes
    allreduce_floor_s : ``((p, seconds), ...)``: the median profiled time of an all-reduce of
        at most 64 KiB over ``p`` GPUs of one node, the least a collective costs (launch,
        synchronisation, NVLink latency)
    send_floor_s : the same for a send between two GPUs of a node
    profile_floor_s : the fixed time per operator in the profile the factors were fitted to
        (used only to compare with that profile; equals kernel_launch_s for vidur's profiles,
        and holds host dispatch for the H200's eager timings)
    source : where the factors come from
    """

    matmul_flops_share: float
    matmul_hbm_share: float
    roofline_blend: float
    elementwise_hbm_share: float
    embedding_hbm_share: float
    kernel_launch_s: float
    prefill_attention_flops_share: float
    decode_attention_hbm_share: float
    allreduce_latency_s: float
    allreduce_link_share: float
    send_latency_s: float
    send_link_share: float
    inter_node_latency_s: float
    inter_node_share: float
    allreduce_floor_s: tuple
    send_floor_s: float
    profile_floor_s: float
    source: str

    @classmethod
    def from_dict(cls, values: dict) -> Efficiency:
        out = {f.name: values[f.name] for f in fields(cls)}
        out["allreduce_floor_s"] = tuple((int(p), float(t)) for p, t in
                                         dict(out["allreduce_floor_s"]).items())
        return cls(**out)


def efficiency(gpu_name: str) -> Efficiency:
    """The fitted factors of ``gpu_name``, as written by ``tools/calibrate_serving.py``."""
    from .coefficients import COEFFICIENTS

    if gpu_name not in COEFFICIENTS:
        raise InputError(f"gpu: no efficiency factors for {gpu_name!r}; calibrated: "
                         f"{', '.join(COEFFICIENTS)}")
    return Efficiency.from_dict(COEFFICIENTS[gpu_name])


def _blend(a, b, p):
    return (a**p + b**p) ** (1.0 / p)


def matmul_s(eff: Efficiency, gpu: GPU, tokens, k, n, floor_s=None, weight_bytes=2,
             tflops=None, weights=1):
    """Seconds of a ``tokens x k`` by ``k x n`` matmul with BF16 activations (``floor_s``: the
    fixed time, kernel_launch_s unless given): weights of ``weight_bytes`` each (2: BF16, 1:
    FP8) at ``tflops`` (default the BF16 peak); ``weights`` matrices of ``k x n`` read (a grouped
    matmul: an MoE layer's experts, ``tokens`` rows in all)."""
    peak = gpu.tflops_bf16 if tflops is None else tflops
    compute = 2.0 * tokens * k * n / (peak * 1e12 * eff.matmul_flops_share)
    memory = (weight_bytes * weights * k * n + 2.0 * tokens * (k + n)) / (
        gpu.hbm_gb_s * 1e9 * eff.matmul_hbm_share)
    floor = eff.kernel_launch_s if floor_s is None else floor_s
    return floor + _blend(compute, memory, eff.roofline_blend)


def elementwise_s(eff: Efficiency, gpu: GPU, nbytes, floor_s=None):
    """Seconds of a memory-bound elementwise kernel moving ``nbytes`` (read plus written)."""
    floor = eff.kernel_launch_s if floor_s is None else floor_s
    return floor + nbytes / (gpu.hbm_gb_s * 1e9 * eff.elementwise_hbm_share)


def embedding_s(eff: Efficiency, gpu: GPU, nbytes, floor_s=None):
    """Seconds of the embedding lookup moving ``nbytes`` (rows read plus written)."""
    floor = eff.kernel_launch_s if floor_s is None else floor_s
    return floor + nbytes / (gpu.hbm_gb_s * 1e9 * eff.embedding_hbm_share)


def prefill_attention_s(eff: Efficiency, gpu: GPU, flops, kv_bytes):
    """Seconds of prefill attention work of ``flops`` reading ``kv_bytes`` of K and V, without
    the kernel's fixed time (one attention kernel serves the whole batch)."""
    flop_rate, byte_rate = prefill_attention_rates(eff, gpu)
    return _blend(flops / flop_rate, kv_bytes / byte_rate, eff.roofline_blend)


def prefill_attention_rates(eff: Efficiency, gpu: GPU) -> tuple:
    """(FLOP/s, bytes/s) prefill attention reaches: what :func:`prefill_attention_s` divides
    by (a caller asking millions of times keeps them)."""
    return (gpu.tflops_bf16 * 1e12 * eff.prefill_attention_flops_share,
            gpu.hbm_gb_s * 1e9 * eff.decode_attention_hbm_share)


def decode_attention_s(eff: Efficiency, gpu: GPU, kv_bytes):
    """Seconds of decode attention reading ``kv_bytes`` of KV cache (linear in the bytes), without
    the kernel's fixed time."""
    return kv_bytes / (gpu.hbm_gb_s * 1e9 * eff.decode_attention_hbm_share)


def collective_floor_s(eff: Efficiency, p):
    """The least an all-reduce over ``p`` GPUs costs (a number or an array of group sizes): the
    profiled floor of the smallest profiled group of at least ``p`` GPUs (the largest profiled
    one beyond it); 0 when p == 1 or nothing is profiled."""
    floors = sorted(eff.allreduce_floor_s)
    if not floors:
        return 0.0 * np.asarray(p, dtype=float)
    sizes = np.array([q for q, _ in floors])
    times = np.array([t for _, t in floors])
    at = np.minimum(np.searchsorted(sizes, p), len(sizes) - 1)
    return np.where(np.asarray(p) > 1, times[at], 0.0)


def allreduce_s(eff: Efficiency, gpu: GPU, nbytes, p, floored=True):
    """Seconds of a ring all-reduce of ``nbytes`` over ``p`` GPUs of one node (0 when p == 1):
    the ring's latency plus its traffic, never below the profiled floor of ``p`` GPUs where
    ``floored`` (a bool or an array: the collective is launched eagerly from the host, as the
    profiles timed it; inside a CUDA graph the host's part of that floor is gone)."""
    wire = 2.0 * (p - 1) / p * nbytes
    ring = eff.allreduce_latency_s + wire / (gpu.link_one_way_gb_s * 1e9
                                             * eff.allreduce_link_share)
    return (p > 1) * np.where(floored, np.maximum(ring, collective_floor_s(eff, p)), ring)


def allgather_s(eff: Efficiency, gpu: GPU, nbytes, p, floored=True):
    """Seconds of a ring all-gather whose result is ``nbytes`` (half an all-reduce's traffic),
    never below the all-reduce floor of ``p`` GPUs where ``floored``."""
    wire = (p - 1) / p * nbytes
    ring = eff.allreduce_latency_s + wire / (gpu.link_one_way_gb_s * 1e9
                                             * eff.allreduce_link_share)
    return (p > 1) * np.where(floored, np.maximum(ring, collective_floor_s(eff, p)), ring)


def alltoall_s(eff: Efficiency, gpu: GPU, nbytes, p, floored=True, share=None):
    """Seconds of an all-to-all over ``p`` GPUs of one node moving ``nbytes`` in all, never
    below the all-reduce floor of ``p`` GPUs where ``floored``; 0 when p == 1. The GPU that
    receives the most, ``share`` of ``nbytes`` (default ``1 / p``: an even exchange, each GPU
    holding ``nbytes / p``), gets ``(p - 1) / p`` of it from the others, and sets the time
    (an MoE layer's busiest expert-parallel GPU, :mod:`.moe`)."""
    wire = (p - 1) / p * nbytes * (1.0 / p if share is None else share)
    ring = eff.allreduce_latency_s + wire / (gpu.link_one_way_gb_s * 1e9
                                             * eff.allreduce_link_share)
    return (p > 1) * np.where(floored, np.maximum(ring, collective_floor_s(eff, p)), ring)


def send_s(eff: Efficiency, gpu: GPU, nbytes, inter_node_gb_s=None):
    """Seconds to send ``nbytes`` from one GPU to another: over the in-node link (never below
    ``send_floor_s``), or across nodes at ``inter_node_gb_s`` (one way, per GPU) when given."""
    if inter_node_gb_s is None:
        link = eff.send_latency_s + nbytes / (gpu.link_one_way_gb_s * 1e9 * eff.send_link_share)
        return np.maximum(link, eff.send_floor_s)
    return eff.inter_node_latency_s + nbytes / (inter_node_gb_s * 1e9 * eff.inter_node_share)


def eager(seconds, launched_eagerly, dispatch_s):
    """A kernel's ``seconds`` where ``launched_eagerly`` (a bool, or an array of them) holds:
    never below the host's dispatch of one operator, ``dispatch_s``."""
    return np.where(launched_eagerly, np.maximum(seconds, dispatch_s), seconds)
