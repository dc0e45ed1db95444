"""The performance model: one scheduler iteration of a replica, KV transfer time, KV capacity.

A replica is ``tp x pp`` GPUs of one type: ``tp`` GPUs of one node split every layer (tensor
parallelism), ``pp`` stages split the layers (pipeline parallelism; stages fill a node before the
next). One iteration runs the whole batch through every stage once: per layer the four matmuls,
the elementwise kernels, the KV-cache write, one attention kernel and two all-reduces; once per
iteration the embedding, the final norm, the LM head for every sequence in the batch (vLLM
computes logits for each scheduled request's last token), the logits' gather and sampling, the
activation sends between stages and the host's step time. Each term is a roofline with named
efficiency factors (:mod:`schedatrix.serving.perf.kernels`) fitted by
``tools/calibrate_serving.py``. A mixture-of-experts layer runs its expert block instead of the
MLP (:mod:`.moe`: the routing of the batch's tokens, uniform or skewed by ``expert_skew``, the
experts they touch as grouped matmuls at each expert's rows, expert parallelism's all-to-alls);
``dtype="fp8"`` reads the decoder's weights and the KV cache at one byte and runs its matmuls at
the GPU's FP8 peak (:mod:`.catalog`).

The simulator uses only the :class:`PerformanceModel` interface (``iteration_s``,
``decode_line``, ``kv_transfer_s``, ``kv_capacity_tokens``); :class:`FixedCostModel` is the
simplest model that honours it, for queueing-theory tests.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np

from ...errors import InputError
from .catalog import (
    BYTES_PER_PARAM,
    DTYPES,
    GPU,
    GPUS,
    GPUS_PER_NODE,
    ModelShape,
    dtype_bytes,
    gpu,
    inter_node_gb_s,
    model,
)
from .engines import ASYNC_SERIAL_S
from .host import HostCosts, host_costs
from .kernels import (
    Efficiency,
    allgather_s,
    allreduce_s,
    decode_attention_s,
    eager,
    efficiency,
    elementwise_s,
    embedding_s,
    matmul_s,
    prefill_attention_rates,
    send_s,
)
from .moe import check_expert_skew, expected_experts, moe_block_s
from .shard import LayerShard

__all__ = ["PerformanceModel", "PerfModel", "FixedCostModel", "GPU_MEMORY_UTILIZATION",
           "check_dtype", "ACTIVATION_RESERVE_GB", "SAMPLER_BYTES_PER_LOGIT", "FP8_QUANT_BYTES",
           "CUDA_GRAPH_MAX_TOKENS"]

#: Share of GPU memory the engine may use (vLLM's ``gpu_memory_utilization`` default).
GPU_MEMORY_UTILIZATION = 0.90
#: GB per GPU kept for activations and buffers, outside weights and KV cache: the peak of
#: vLLM's profiling forward pass at 8,192 batched tokens, CUDA graphs and NCCL/cuBLAS
#: workspaces (vLLM's start-up logs show about 1-3 GB for 8B-70B models). An assumption.
ACTIVATION_RESERVE_GB = 2.0
#: Bytes moved per logit by sampling: FP32 logits written, then read by softmax and sampling.
SAMPLER_BYTES_PER_LOGIT = 8
#: Bytes per value an FP8 matmul's input quantization moves: its BF16 input read, FP8 written
#: (vLLM's FP8 linear layers quantize each input with a kernel of its own, scaled_fp8_quant).
FP8_QUANT_BYTES = BYTES_PER_PARAM + 1
#: The elementwise kernels of an MoE layer outside its expert block (:mod:`.moe` runs the
#: activation, the top-k selection and the sum of the experts' outputs).
_MOE_LAYER_ELEMENTWISE = ("input_layernorm", "post_attention_layernorm", "attn_rope", "add")
#: The largest batch (tokens) vLLM captures CUDA graphs for: its default
#: ``max_cudagraph_capture_size`` of 512 (vLLM 0.11, V1 engine; the capture sizes are 1, 2, 4,
#: then every 8 up to 512, a batch padded up to the next). Larger batches run eagerly.
CUDA_GRAPH_MAX_TOKENS = 512

#: The token and sequence tables (:meth:`PerfModel._token_s`), shared by every model of the same
#: shape, GPU, parallelism, precision, efficiency, host and launch mode in this process: a
#: simulation builds its replicas' models afresh, and a table of 16,384 token counts took
#: about 17 ms of a 100 ms run. Each table is built in blocks of TABLE_BLOCK counts, so an
#: entry's value never depends on how long its table grew (nor on which run asked first).
_TABLES: dict = {}
_TABLES_MAX = 256
TABLE_BLOCK = 1024
#: Prefill chunks whose attention term a model keeps (by new and cached tokens; beyond, each is
#: computed again): a prompt's first chunk repeats across a load's many requests.
CHUNK_TERMS_KEPT = 1 << 14


@runtime_checkable
class PerformanceModel(Protocol):
    """What the simulator asks of a performance model (seconds; token counts)."""

    def iteration_s(self, prefill_chunks: Sequence[tuple[int, int]] = (), n_decode: int = 0,
                    decode_context_tokens: int = 0) -> float: ...

    def decode_line(self, n_decode: int) -> tuple[float, float]: ...

    def kv_transfer_s(self, tokens: int, same_node: bool = True, to=None) -> float: ...

    def kv_capacity_tokens(self, usable_share: float = GPU_MEMORY_UTILIZATION) -> int: ...


def _check_batch(prefill_chunks: Iterable, n_decode: int, decode_context_tokens) -> list:
    chunks = prefill_chunks if type(prefill_chunks) is list else list(prefill_chunks)
    for c in chunks:
        if len(c) != 2 or c[0] < 1 or c[1] < 0:
            raise InputError(f"prefill_chunks: {tuple(c)!r} is not (new_tokens >= 1, "
                             "cached_tokens >= 0)")
    if n_decode < 0:
        raise InputError(f"n_decode: {n_decode} decoding requests; must be >= 0")
    if decode_context_tokens < 0 or (n_decode == 0 and decode_context_tokens):
        raise InputError(f"decode_context_tokens: {decode_context_tokens} with n_decode = "
                         f"{n_decode}; must be >= 0, and 0 when nothing decodes")
    return chunks


class PerfModel:
    """The calibrated roofline model of one replica: ``model`` on ``tp x pp`` GPUs of ``gpu``.

    model, gpu : catalog names (or a ModelShape / GPU)
    tp : tensor-parallel degree, 1 to 8 (one node); must divide the attention heads and the
        FFN size, and either divide the KV heads or be a multiple of them (vLLM's rule: KV
        heads are replicated when tp > kv_heads)
    pp : pipeline stages; must divide the layers. Stages fill a node (8 // tp stages a node)
        before the next, so some sends between stages cross nodes
    inter_node : the link between nodes, ``ib-hdr`` (25 GB/s a GPU) or ``ib-ndr`` (50 GB/s)
    efficiency : the factors (default: the fitted ones of ``gpu``)
    activation_reserve_gb : GB per GPU kept outside weights and KV cache
    cuda_graphs : True (vLLM's default): iterations of at most ``CUDA_GRAPH_MAX_TOKENS`` tokens
        replay a captured CUDA graph, so each kernel costs its GPU time; larger ones, and every
        iteration when False (vLLM's ``enforce_eager``), launch each kernel from the host, so
        none takes less than the host's dispatch of one operator (:mod:`.host`)
    host_s : seconds of host time per iteration (None: vLLM's, :mod:`.host`)
    host : the host's costs in full (a :class:`~.host.HostCosts`; overrides ``host_s``)
    ep : expert parallelism of a mixture-of-experts model: 1 (each expert split over the tp
        GPUs) or tp (each GPU holds experts / tp whole experts; dispatch and combine
        all-to-alls, :mod:`.moe`)
    dtype : ``bf16`` or ``fp8`` (FP8 weights and KV cache at the FP8 tensor-core peak; refused
        on a GPU without FP8 tensor cores, the A100)
    expert_skew : the Zipf exponent of a mixture-of-experts model's routing (:mod:`.moe`): 0
        (default) uniform, up to the skew where every token picks the most used expert; 0 for a
        dense model
    moe_fp8_compute : with ``dtype="fp8"``, whether the experts' grouped matmuls run in FP8
        (True, vLLM's fused MoE) or keep 16-bit expert weights at the 16-bit peak (False,
        TensorRT-LLM 0.9's MoE plugin: an engine setting, :mod:`.moe`)
    async_scheduling : the host's scheduling overlaps the GPU's step (vLLM's async
        scheduling): an iteration takes ``max(GPU, host) + serial_s`` instead of
        ``GPU + host``; ``serial_s`` the part that stays serial (:mod:`.engines`)
    moe_all_experts : run every expert over every token and mask the outputs (True:
        TensorRT-LLM's MoE without its plugin, :func:`.moe.all_experts_block_s`) instead of the
        routed tokens through a grouped matmul (False, the default)

    Raises InputError when the shape is not allowed or the model does not fit.
    """

    def __init__(self, model: str | ModelShape, gpu: str | GPU, tp: int = 1, pp: int = 1,
                 inter_node: str = "ib-ndr", efficiency: Efficiency | None = None,
                 activation_reserve_gb: float = ACTIVATION_RESERVE_GB, cuda_graphs: bool = True,
                 host_s: float | None = None, host: HostCosts | None = None, ep: int = 1,
                 dtype: str = "bf16", expert_skew: float = 0.0, moe_fp8_compute: bool = True,
                 moe_all_experts: bool = False, async_scheduling: bool = False,
                 serial_s: float = ASYNC_SERIAL_S):
        if not isinstance(cuda_graphs, bool):
            raise InputError(f"cuda_graphs: {cuda_graphs!r}; must be true or false")
        self.cuda_graphs = cuda_graphs
        self.host = host_costs(host_s) if host is None else host
        if not isinstance(async_scheduling, bool):
            raise InputError(f"async_scheduling: {async_scheduling!r}; must be true or false")
        self.async_scheduling = async_scheduling
        if isinstance(serial_s, bool) or not isinstance(serial_s, int | float) or \
                not 0 <= serial_s <= 1.0:
            raise InputError(f"serial_s: {serial_s!r}; must be a number of seconds from 0 to 1")
        self.serial_s = float(serial_s) if async_scheduling else 0.0
        self.model = _model_of(model)
        self.gpu = _gpu_of(gpu)
        self.dtype = check_dtype(dtype, self.gpu)
        self.tflops = self.gpu.tflops_fp8 if self.dtype == "fp8" else self.gpu.tflops_bf16
        self.tp, self.pp = _check_parallelism(self.model, tp, pp)
        self.ep = _check_ep(self.model, self.tp, ep)
        self.expert_skew = check_expert_skew(expert_skew, self.model.experts,
                                             self.model.experts_per_token, self.model.name)
        if not isinstance(moe_fp8_compute, bool):
            raise InputError(f"moe_fp8_compute: {moe_fp8_compute!r}; must be true or false")
        self.moe_fp8_compute = moe_fp8_compute
        if not isinstance(moe_all_experts, bool):
            raise InputError(f"moe_all_experts: {moe_all_experts!r}; must be true or false")
        self.moe_all_experts = moe_all_experts
        self.inter_node = inter_node
        self.inter_node_gb_s = inter_node_gb_s(inter_node)
        if activation_reserve_gb < 0:
            raise InputError(f"activation_reserve_gb: {activation_reserve_gb}; must be >= 0")
        self.activation_reserve_gb = float(activation_reserve_gb)
        self.eff = _efficiency_of(self.gpu) if efficiency is None else efficiency
        self.shard = LayerShard(self.model, self.tp, self.ep, self.dtype, moe_fp8_compute)
        self.gpus = self.tp * self.pp
        stages_per_node = GPUS_PER_NODE // self.tp
        self.cross_node_sends = math.ceil(self.pp / stages_per_node) - 1
        self.in_node_sends = self.pp - 1 - self.cross_node_sends
        self._decode_per_token_s = (self.model.layers * decode_attention_s(
            self.eff, self.gpu, self.shard.kv_bytes_per_token))
        self._parts = lru_cache(maxsize=1 << 16)(self._parts_uncached)
        self._tables = _shared_tables(self)
        self._tok_table: list[float] = self._tables["tok"]
        self._seq_table: list[float] = self._tables["seq"]
        # what prefill attention needs per chunk, kept (shard properties compute each time)
        self._attention_terms = (self.shard.attention_flops_per_pair,
                                 self.shard.kv_bytes_per_token,
                                 *prefill_attention_rates(self.eff, self.gpu),
                                 self.eff.roofline_blend)
        self._decode_parts: dict[int, tuple[float, float]] = {}   # _decode_s's, by batch
        self._chunk_terms: dict[tuple, float] = {}   # _prefill_attention_s's, by chunk
        self.kv_capacity_tokens()  # the model must fit, with room for KV cache

    def __repr__(self) -> str:
        extra = (f", ep={self.ep}" if self.ep > 1 else "") + (
            f", dtype={self.dtype!r}" if self.dtype != "bf16" else "") + (
            f", expert_skew={self.expert_skew:g}" if self.expert_skew else "") + (
            "" if self.moe_fp8_compute else ", moe_fp8_compute=False") + (
            ", moe_all_experts=True" if self.moe_all_experts else "") + (
            ", async_scheduling=True" if self.async_scheduling else "")
        return (f"PerfModel({self.model.name!r}, {self.gpu.name!r}, tp={self.tp}, pp={self.pp}, "
                f"inter_node={self.inter_node!r}, cuda_graphs={self.cuda_graphs}{extra})")

    # -- the interface -------------------------------------------------------------------
    def iteration_s(self, prefill_chunks: Sequence[tuple[int, int]] = (), n_decode: int = 0,
                    decode_context_tokens: int = 0) -> float:
        """Seconds of one iteration: ``prefill_chunks`` = ``(new_tokens, cached_tokens)`` per
        prefilling request; ``n_decode`` requests decode one token each, attending over
        ``decode_context_tokens`` tokens in all. An empty batch takes 0 s."""
        return self._iteration_s(_check_batch(prefill_chunks, n_decode, decode_context_tokens),
                                 n_decode, decode_context_tokens)

    def _iteration_s(self, chunks: list, n_decode: int, decode_context_tokens: int) -> float:
        """:meth:`iteration_s` of a batch known to be well formed (the simulator's)."""
        tokens = n_decode
        for c in chunks:
            tokens += c[0]
        if tokens == 0:
            return 0.0
        seqs = len(chunks) + n_decode
        tok, seq = self._tok_table, self._seq_table   # _token_s, _seq_s inline when in range
        seconds = ((tok[tokens] if tokens < len(tok) else self._token_s(tokens))
                   + (seq[seqs] if seqs < len(seq) else self._seq_s(seqs)))
        if chunks:
            seconds += self._prefill_attention_s(chunks)
        seconds += self._decode_per_token_s * decode_context_tokens
        if self.async_scheduling:    # the host works beside the GPU; a small part stays serial
            host = self.host.step_s + self.host.per_seq_s * seqs
            return (seconds if seconds > host else host) + self.serial_s
        return seconds

    def _decode_s(self, n_decode: int, decode_context_tokens: int) -> float:
        """:meth:`iteration_s` of ``n_decode >= 1`` decoders and no prefill, the same
        arithmetic, its parts that depend on the batch size alone kept by size."""
        parts = self._decode_parts.get(n_decode)
        if parts is None:
            seqs = tokens = n_decode
            tok, seq = self._tok_table, self._seq_table
            parts = self._decode_parts[n_decode] = (
                (tok[tokens] if tokens < len(tok) else self._token_s(tokens))
                + (seq[seqs] if seqs < len(seq) else self._seq_s(seqs)),
                self.host.step_s + self.host.per_seq_s * seqs)
        seconds = parts[0] + self._decode_per_token_s * decode_context_tokens
        if self.async_scheduling:
            host = parts[1]
            return (seconds if seconds > host else host) + self.serial_s
        return seconds

    def stage_s(self, prefill_chunks: Sequence[tuple[int, int]] = (), n_decode: int = 0,
                decode_context_tokens: int = 0) -> float:
        """Seconds the slowest pipeline stage spends on this batch (its layers, the embedding or
        the LM head, one send to the next stage, the host step): the interval at which a full
        pipeline finishes micro-batches. Equals ``iteration_s`` when pp == 1. Not part of the
        interface the simulator needs."""
        if self.pp == 1:
            return self.iteration_s(prefill_chunks, n_decode, decode_context_tokens)
        chunks = _check_batch(prefill_chunks, n_decode, decode_context_tokens)
        tokens = sum(c[0] for c in chunks) + n_decode
        if tokens == 0:
            return 0.0
        layer, first, last, in_node, cross, host = self._parts(tokens, len(chunks) + n_decode)
        attention = self._decode_per_token_s * decode_context_tokens
        if chunks:
            attention += self._prefill_attention_s(chunks)
        send = cross if self.cross_node_sends else in_node
        gpu = float((layer + attention / self.model.layers) * self.layers_per_stage
                    + max(first, last) + send + host)
        if self.async_scheduling:
            return max(gpu, self.host.seconds(len(chunks) + n_decode)) + self.serial_s
        return gpu

    def decode_line(self, n_decode: int) -> tuple[float, float]:
        """``(a, b)`` with ``iteration_s((), n_decode, S) == max(floor, a + b * S)`` for every
        S >= 0, ``floor = decode_floor(n_decode)`` (0 without async scheduling, so the line
        alone): ``a`` is everything that depends on the batch size, ``b`` the seconds per token
        of context the decode attention reads."""
        if n_decode < 1:
            raise InputError(f"n_decode: {n_decode}; decode_line needs at least 1 decoding "
                             "request")
        return (self._token_s(n_decode) + self._seq_s(n_decode) + self.serial_s,
                self._decode_per_token_s)

    def decode_floor(self, n_decode: int) -> float:
        """The least seconds of a decode iteration of ``n_decode`` requests: with async
        scheduling the host's time (it overlaps the GPU's, so the step waits for the longer)
        plus the serial part; 0 without (the host's time is then inside ``decode_line``)."""
        if not self.async_scheduling:
            return 0.0
        return self.host.step_s + self.host.per_seq_s * n_decode + self.serial_s

    def kv_transfer_s(self, tokens: int, same_node: bool = True,
                      to: PerfModel | None = None) -> float:
        """Seconds to move ``tokens`` tokens of KV cache to another replica, of the same shape
        or (``to``) of its own: the GPUs of both sides move their shards at once, so the side
        whose GPUs each hold more of it sets the time (a prefill side of TP2 sending to a decode
        side of TP4 moves half the cache through each sending GPU), over the in-node link or,
        across nodes (always, between two kinds of GPU), over InfiniBand."""
        if tokens < 0:
            raise InputError(f"tokens: {tokens}; must be >= 0")
        if tokens == 0:
            return 0.0
        per_gpu = self.kv_bytes_per_token_per_gpu
        if to is not None:
            per_gpu = max(per_gpu, to.kv_bytes_per_token_per_gpu)
            same_node = same_node and to.gpu.name == self.gpu.name
        return float(send_s(self.eff, self.gpu, tokens * per_gpu,
                            None if same_node else self.inter_node_gb_s))

    def cross_node_send_s(self, tokens: int) -> float:
        """Seconds an iteration of ``tokens`` tokens spends sending activations between
        pipeline stages on different nodes (what a slow link stretches)."""
        if not self.cross_node_sends or tokens <= 0:
            return 0.0
        act = tokens * self.model.hidden * BYTES_PER_PARAM
        return self.cross_node_sends * float(send_s(self.eff, self.gpu, 2 * act,
                                                    self.inter_node_gb_s))

    def kv_capacity_tokens(self, usable_share: float = GPU_MEMORY_UTILIZATION) -> int:
        """Tokens of KV cache the replica holds: per GPU, (memory x ``usable_share`` - weights -
        activation reserve) / KV bytes per token on that GPU. Raises InputError when the
        model does not fit."""
        if not 0 < usable_share <= 1:
            raise InputError(f"usable_share: {usable_share}; must be in (0, 1]")
        mem = self.gpu.memory_gb * 1e9 * usable_share
        reserve = self.activation_reserve_gb * 1e9
        free = mem - self.weights_bytes_per_gpu - reserve
        if free < self.kv_bytes_per_token_per_gpu:
            need = (self.weights_bytes_per_gpu + reserve) * self.gpus / 1e9
            raise InputError(
                f"model: {self.model.name} does not fit on {self.gpus} x {self.gpu.name} "
                f"(tp={self.tp}, pp={self.pp}): it needs {need:.1f} GB "
                f"({self.weights_bytes_per_gpu * self.gpus / 1e9:.1f} GB of weights + "
                f"{self.activation_reserve_gb:g} GB activation reserve per GPU) plus KV cache, "
                f"and the GPUs have {mem * self.gpus / 1e9:.1f} GB ({self.gpu.memory_gb:g} GB x "
                f"{self.gpus} x {usable_share:.0%} usable); allowed: more GPUs (tp, pp) or a "
                "GPU with more memory")
        return int(free // self.kv_bytes_per_token_per_gpu)

    # -- figures ------------------------------------------------------------------------
    @property
    def layers_per_stage(self) -> int:
        return self.model.layers // self.pp

    @property
    def weights_bytes_per_gpu(self) -> float:
        """Weight bytes on each GPU: an even share of the model (in its dtype) over ``tp x pp``
        GPUs, plus the replicated KV projections when tp > kv_heads (with expert parallelism
        each GPU holds experts / ep whole experts: the same share; an FP8 model's experts at 2
        bytes where they stay 16-bit, moe_fp8_compute=False)."""
        m = self.model
        kv_proj = m.layers * 2 * m.hidden * m.kv_heads * m.head_dim * dtype_bytes(self.dtype)
        held = kv_proj * self.shard.kv_heads / m.kv_heads / self.pp
        wider = self.shard.expert_weight_bytes_per_value - self.shard.weight_bytes_per_value
        experts = m.layers * m.experts * m.expert_params * wider
        return (m.weight_bytes_in(self.dtype) - kv_proj + experts) / self.gpus + held

    def weight_bytes_read(self, tokens: int) -> float:
        """Bytes of weights the replica's GPUs read in all in an iteration of ``tokens`` tokens:
        every layer's dense matmuls (in the model's dtype; replicated KV heads counted on each
        GPU), its router and, of a mixture-of-experts model, the experts the tokens touch (the
        expected count under the model's routing, :func:`.moe.expected_experts`), plus the LM head
        (BF16). The bytes a decode step's weight reads cost, whatever the kernels' efficiency."""
        if tokens < 1:
            raise InputError(f"tokens: {tokens}; an iteration reads weights for >= 1 token")
        sh, m = self.shard, self.model
        dense = sum(k * n for k, n in sh.matmuls.values()) * sh.weight_bytes_per_value
        layer = dense * self.tp
        if m.moe:
            touched = m.experts if self.moe_all_experts else float(expected_experts(
                m.experts, m.experts_per_token, tokens, self.expert_skew))
            one = sum(k * n for k, n in sh.expert_matmuls.values()) * sh.expert_tp
            layer += touched * one * sh.expert_weight_bytes_per_value
            layer += m.hidden * m.experts * BYTES_PER_PARAM * self.tp   # the router, per GPU
        return m.layers * layer + m.hidden * m.vocab * BYTES_PER_PARAM

    @property
    def kv_bytes_per_token_per_gpu(self) -> int:
        """KV bytes one token holds on each GPU (its layers and KV heads)."""
        return self.shard.kv_bytes_per_token * self.layers_per_stage

    # -- terms ----------------------------------------------------------------------------
    def _token_s(self, tokens: int) -> float:
        """Seconds of an iteration that depend on its token count only (every layer, the
        embedding, the final norm, the sends between stages, the host step), from a table
        computed once per power of two of the token count (the simulator asks millions of
        times)."""
        table = self._tok_table = self._tables["tok"]   # another model may have grown it
        if tokens >= len(table):
            table = self._tok_table = self._grow("tok", tokens)
        return table[tokens]

    def _seq_s(self, seqs: int) -> float:
        """Seconds that depend on the sequences emitting a token only (LM head, logits,
        sampling), from a table like :meth:`_token_s`'s."""
        table = self._seq_table = self._tables["seq"]
        if seqs >= len(table):
            table = self._seq_table = self._grow("seq", seqs)
        return table[seqs]

    def _grow(self, name: str, count: int) -> list[float]:
        """The shared table ``name`` ("tok" or "seq") grown to the power of two above
        ``count``, a block of TABLE_BLOCK counts at a time (the token part of an iteration of
        that many tokens and one sequence, or the sequence part of that many sequences of one
        token each)."""
        table = self._tables[name]
        stop = 1 << max(count, TABLE_BLOCK).bit_length()
        grown = list(table)
        for first in range(len(table), stop, TABLE_BLOCK):
            counts = np.arange(first, first + TABLE_BLOCK, dtype=float)
            ones = np.ones_like(counts)
            if name == "tok":
                grown += self._split_parts(counts, ones)[0].tolist()
            else:
                grown += self._split_parts(ones, counts)[1].tolist()
        self._tables[name] = grown
        return grown

    def _split_parts(self, tokens, seqs):
        """(token part, sequence part) of an iteration's time, elementwise over arrays: what
        depends on the iteration's token count alone, and what on its sequences alone (the LM
        head, the logits, sampling, the host's per-sequence work)."""
        layer, first, last_tok, last_seq, in_node, cross, host_tok, host_seq = \
            self._terms(tokens, seqs)
        token_part = (self.model.layers * layer + first + last_tok + self.in_node_sends * in_node
                      + self.cross_node_sends * cross + host_tok)
        return (np.asarray(token_part, dtype=float),
                np.asarray(last_seq + host_seq, dtype=float))

    def _terms(self, tokens, seqs):
        """Every term but attention's work, elementwise over arrays of token and sequence
        counts: one layer (four matmuls, five elementwise kernels, the KV-cache write, the
        attention kernel's fixed time, two all-reduces), the first stage's extra (the
        vocab-parallel embedding and its all-reduce), the last stage's (the final norm; the LM
        head, the logits' gather and sampling), a send between stages in a node and across
        nodes, the host's time (fixed, per sequence). Kernels of an iteration the CUDA graphs
        do not cover take at least the host's dispatch each (kernels.eager)."""
        e, g, m, sh, tp = self.eff, self.gpu, self.model, self.shard, self.tp
        tokens, seqs = np.asarray(tokens, dtype=float), np.asarray(seqs, dtype=float)
        by_tokens = self.launched_eagerly(tokens)
        by_seqs = self.launched_eagerly(seqs)

        dispatch = self.host.dispatch_s

        def k(seconds, eagerly=by_tokens):   # one kernel
            return eager(seconds, eagerly, dispatch)

        act = tokens * m.hidden * BYTES_PER_PARAM  # one activation tensor
        wb, peak = sh.weight_bytes_per_value, self.tflops
        layer = sum(k(matmul_s(e, g, tokens, kk, n, weight_bytes=wb, tflops=peak))
                    for kk, n in sh.matmuls.values())
        if self.dtype == "fp8":   # each FP8 matmul's input is quantized first (BF16 in, FP8 out)
            layer = layer + sum(k(elementwise_s(e, g, tokens * kk * FP8_QUANT_BYTES))
                                for kk, _ in sh.matmuls.values())
        elementwise = sh.elementwise_bytes_per_token
        names = _MOE_LAYER_ELEMENTWISE + (("shared_act",) if m.shared_experts else ())
        layer = layer + sum(k(elementwise_s(e, g, tokens * elementwise[name]))
                            for name in (names if m.moe else elementwise))
        layer = layer + k(elementwise_s(e, g, 2 * tokens * sh.kv_bytes_per_token))  # KV write
        layer = layer + k(e.kernel_launch_s + 0 * tokens)  # the attention kernel's fixed time
        if m.moe:   # after attention one all-reduce; the expert block joins its own way
            experts, joined = moe_block_s(e, g, sh, tokens, k, by_tokens, peak,
                                          self.expert_skew, self.moe_fp8_compute,
                                          self.moe_all_experts)
            layer = layer + allreduce_s(e, g, act, tp, by_tokens) + experts + joined
        else:       # after attention and after the MLP
            layer = layer + 2 * allreduce_s(e, g, act, tp, by_tokens)
        first = k(embedding_s(e, g, 2 * act)) + allreduce_s(e, g, act, tp, by_tokens)
        last_tok = k(elementwise_s(e, g, 2 * act))  # final norm
        last_seq = (k(matmul_s(e, g, seqs, m.hidden, m.vocab // tp), by_seqs)  # LM head
                    + allgather_s(e, g, seqs * m.vocab * BYTES_PER_PARAM, tp, by_seqs)
                    + k(elementwise_s(e, g, seqs * m.vocab * SAMPLER_BYTES_PER_LOGIT), by_seqs))
        sends = 2 * act  # hidden states and residual
        in_node, cross = send_s(e, g, sends), send_s(e, g, sends, self.inter_node_gb_s)
        # with async scheduling the host's time overlaps the GPU's: iteration_s takes the max
        host_tok = (0.0 if self.async_scheduling else self.host.step_s) + 0 * tokens
        host_seq = (0.0 if self.async_scheduling else self.host.per_seq_s) * seqs
        return layer, first, last_tok, last_seq, in_node, cross, host_tok, host_seq

    def launched_eagerly(self, tokens):
        """Whether an iteration of ``tokens`` tokens (a number or an array) launches its kernels
        from the host: always without CUDA graphs, else beyond the largest captured batch."""
        return np.logical_or(not self.cuda_graphs, np.asarray(tokens) > CUDA_GRAPH_MAX_TOKENS)

    def _parts_uncached(self, tokens: int, seqs: int) -> tuple[float, ...]:
        """Seconds of everything but attention's work, for one (tokens, seqs): (one layer, the
        first stage's extra, the last stage's, a send in a node, a send across nodes, the
        host's time)."""
        layer, first, last_tok, last_seq, in_node, cross, host_tok, host_seq = \
            self._terms(tokens, seqs)
        return (float(layer), float(first), float(last_tok + last_seq), float(in_node),
                float(cross), float(host_tok + host_seq))

    def _prefill_attention_s(self, chunks: list) -> float:
        """kernels.prefill_attention_s of every chunk, its rates kept (the same arithmetic);
        each chunk's term kept by (new, cached) tokens, up to CHUNK_TERMS_KEPT of them."""
        kept = self._chunk_terms
        total = 0.0
        for new, cached in chunks:
            key = (new, cached)
            term = kept.get(key)
            if term is None:
                flops_per_pair, kv_bytes_per_token, flop_rate, byte_rate, p = \
                    self._attention_terms
                pairs = new * cached + new * (new + 1) // 2  # causal: token i sees cached + i
                compute = pairs * flops_per_pair / flop_rate
                memory = (cached + new) * kv_bytes_per_token / byte_rate
                term = (compute**p + memory**p) ** (1.0 / p)
                if len(kept) < CHUNK_TERMS_KEPT:
                    kept[key] = term
            total += term
        return float(self.model.layers * total)


class FixedCostModel:
    """A model with constant costs, for queueing tests: an iteration with any work takes
    ``step_s`` + ``prefill_token_s`` per prompt token + ``decode_token_s`` per decoding
    request + ``context_token_s`` per token of decode context. ``kv_transfer_s`` is
    ``transfer_token_s`` per token; ``kv_capacity_tokens`` is ``capacity_tokens``."""

    def __init__(self, step_s: float = 0.0, prefill_token_s: float = 0.0,
                 decode_token_s: float = 0.0, context_token_s: float = 0.0,
                 transfer_token_s: float = 0.0, capacity_tokens: int = 10**9):
        for name, v in (("step_s", step_s), ("prefill_token_s", prefill_token_s),
                        ("decode_token_s", decode_token_s), ("context_token_s", context_token_s),
                        ("transfer_token_s", transfer_token_s)):
            if not v >= 0:
                raise InputError(f"{name}: {v}; must be >= 0 seconds")
        if capacity_tokens < 1:
            raise InputError(f"capacity_tokens: {capacity_tokens}; must be >= 1")
        self.step_s, self.prefill_token_s = float(step_s), float(prefill_token_s)
        self.decode_token_s, self.context_token_s = float(decode_token_s), float(context_token_s)
        self.transfer_token_s, self.capacity_tokens = float(transfer_token_s), int(capacity_tokens)

    def __repr__(self) -> str:
        return (f"FixedCostModel(step_s={self.step_s}, prefill_token_s={self.prefill_token_s}, "
                f"decode_token_s={self.decode_token_s}, context_token_s={self.context_token_s})")

    def iteration_s(self, prefill_chunks: Sequence[tuple[int, int]] = (), n_decode: int = 0,
                    decode_context_tokens: int = 0) -> float:
        chunks = _check_batch(prefill_chunks, n_decode, decode_context_tokens)
        new = sum(c[0] for c in chunks)
        if new + n_decode == 0:
            return 0.0
        a, b = self.step_s + self.decode_token_s * n_decode, self.context_token_s
        return a + self.prefill_token_s * new + b * decode_context_tokens

    def decode_line(self, n_decode: int) -> tuple[float, float]:
        if n_decode < 1:
            raise InputError(f"n_decode: {n_decode}; decode_line needs at least 1 decoding "
                             "request")
        return self.step_s + self.decode_token_s * n_decode, self.context_token_s

    def kv_transfer_s(self, tokens: int, same_node: bool = True, to=None) -> float:
        if tokens < 0:
            raise InputError(f"tokens: {tokens}; must be >= 0")
        return self.transfer_token_s * tokens

    def kv_capacity_tokens(self, usable_share: float = GPU_MEMORY_UTILIZATION) -> int:
        return self.capacity_tokens


def _model_of(value) -> ModelShape:
    return value if isinstance(value, ModelShape) else model(value)


def _gpu_of(value) -> GPU:
    return value if isinstance(value, GPU) else gpu(value)


def _efficiency_of(g: GPU) -> Efficiency:
    return efficiency(g.name)


def _as_int(value):
    try:
        return None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        return None


def check_dtype(dtype, g: GPU) -> str:
    """``dtype`` if ``g`` runs it: ``bf16`` anywhere, ``fp8`` where the GPU has FP8 tensor
    cores (refused on the A100, with the reason)."""
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise InputError(f"dtype: {dtype!r}; allowed: {', '.join(DTYPES)}")
    if dtype == "fp8" and g.tflops_fp8 is None:
        fp8 = ", ".join(n for n, x in GPUS.items() if x.tflops_fp8 is not None)
        raise InputError(f"dtype: 'fp8' on {g.name}: the {g.name.split('-')[0].upper()} has no "
                         f"FP8 tensor cores (weight-only FP8 is not modelled); allowed: bf16 "
                         f"on {g.name}, or fp8 on {fp8}")
    return dtype


def _ffn_of(m: ModelShape) -> int:
    """The MLP width tensor parallelism must split: the experts' for an MoE model."""
    return m.expert_ffn if m.moe else m.ffn


def _check_parallelism(m: ModelShape, tp, pp) -> tuple[int, int]:
    given_tp, tp, given_pp, pp = tp, _as_int(tp), pp, _as_int(pp)
    if tp is None or not 1 <= tp <= GPUS_PER_NODE:
        raise InputError(f"tp: {given_tp!r}; tensor parallelism must be an integer from 1 to "
                         f"{GPUS_PER_NODE} (one node)")
    kv_ok = m.kv_heads % tp == 0 if tp <= m.kv_heads else tp % m.kv_heads == 0
    if m.heads % tp or _ffn_of(m) % tp or not kv_ok:
        ffn = f"expert FFN {m.expert_ffn}" if m.moe else f"FFN {m.ffn}"
        raise InputError(
            f"tp: {tp} does not split {m.name} ({m.heads} attention heads, {m.kv_heads} KV heads, "
            f"{ffn}); allowed: a divisor of the heads and the FFN size that divides the "
            f"KV heads or is a multiple of them: "
            f"{', '.join(str(t) for t in allowed_tp(m))}")
    if pp is None or pp < 1 or m.layers % pp:
        raise InputError(f"pp: {given_pp!r}; pipeline stages must divide the {m.layers} layers of "
                         f"{m.name}: {', '.join(str(p) for p in allowed_pp(m))}")
    return tp, pp


def _check_ep(m: ModelShape, tp: int, ep) -> int:
    given, ep = ep, _as_int(ep)
    if ep == 1:
        return 1
    if ep is None or ep < 1:
        raise InputError(f"ep: {given!r}; expert parallelism must be a whole number, 1 or tp")
    if not m.moe:
        raise InputError(f"ep: {ep} needs a mixture-of-experts model; {m.name} is dense "
                         "(allowed: 1)")
    if ep != tp or m.experts % ep:
        raise InputError(f"ep: {ep} with tp {tp}: expert parallelism spreads the {m.experts} "
                         f"experts of {m.name} over the replica's tensor-parallel GPUs; "
                         f"allowed: 1 or {tp}" + ("" if m.experts % tp == 0 else
                                                 f" (and {tp} must divide {m.experts})"))
    return ep


def allowed_tp(m: ModelShape) -> list[int]:
    """The tensor-parallel degrees that split ``m`` (vLLM's rule, one node at most)."""
    out = []
    for t in range(1, GPUS_PER_NODE + 1):
        kv_ok = m.kv_heads % t == 0 if t <= m.kv_heads else t % m.kv_heads == 0
        if m.heads % t == 0 and _ffn_of(m) % t == 0 and kv_ok:
            out.append(t)
    return out


def allowed_pp(m: ModelShape) -> list[int]:
    """The pipeline depths that divide the layers of ``m``."""
    return [p for p in range(1, m.layers + 1) if m.layers % p == 0]


def _shared_tables(perf: PerfModel) -> dict:
    """The tables of every model equal to ``perf`` in what they depend on (a fresh pair, kept
    by no one else, when that can't be hashed)."""
    try:
        key = (perf.model, perf.gpu, perf.dtype, perf.tp, perf.pp, perf.ep, perf.inter_node,
               perf.eff, perf.cuda_graphs, perf.host, perf.expert_skew, perf.moe_fp8_compute,
               perf.moe_all_experts, perf.async_scheduling)
        tables = _TABLES.get(key)
    except TypeError:
        return {"tok": [], "seq": []}
    if tables is None:
        if len(_TABLES) >= _TABLES_MAX:
            _TABLES.clear()
        tables = _TABLES[key] = {"tok": [], "seq": []}
    return tables
