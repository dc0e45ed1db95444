"""The roofline of one replica: what an iteration could cost at best, and what the model says.

A GPU does at most ``peak`` FLOP/s and reads at most ``bandwidth`` bytes/s. An iteration that
does F FLOPs and moves B bytes takes at least max(F / peak, B / bandwidth): the first bound
wins when its arithmetic intensity F / B (FLOPs per byte) is above the ridge peak / bandwidth,
the second below. Here F counts the dense work, 2 x params x tokens (attention's FLOPs are
left out: they are small next to it below a few thousand tokens of context), and B the
weights read once plus the KV cache the decoding requests attend over. The performance
model's time for the same batch (:meth:`~schedatrix.serving.perf.model.PerfModel.iteration_s`)
sits above the bound by its efficiency factors and fixed costs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...serving.perf.catalog import BYTES_PER_PARAM
from ...serving.perf.model import PerfModel

__all__ = ["Batches", "prefill_batches", "decode_batches", "ridge_flops_per_byte",
           "peak_flops", "peak_bytes_s"]


def peak_flops(perf: PerfModel) -> float:
    """FLOP/s of all the replica's GPUs at their BF16 peak."""
    return perf.gpu.tflops_bf16 * 1e12 * perf.gpus


def peak_bytes_s(perf: PerfModel) -> float:
    """Bytes/s of all the replica's GPUs at their peak HBM bandwidth."""
    return perf.gpu.hbm_gb_s * 1e9 * perf.gpus


def ridge_flops_per_byte(perf: PerfModel) -> float:
    """The arithmetic intensity where the two bounds meet: peak FLOP/s over peak bytes/s."""
    return peak_flops(perf) / peak_bytes_s(perf)


@dataclass(frozen=True)
class Batches:
    """A family of batches: per batch, its tokens, the FLOPs and bytes the bound counts, the
    performance model's time and the bound's time (seconds)."""

    label: str
    tokens: np.ndarray
    flops: np.ndarray
    bytes: np.ndarray
    model_s: np.ndarray
    bound_s: np.ndarray

    @property
    def intensity(self) -> np.ndarray:
        """FLOPs per byte moved."""
        return self.flops / self.bytes

    @property
    def model_tflops(self) -> np.ndarray:
        """TFLOP/s the performance model's time achieves on the counted FLOPs."""
        return self.flops / self.model_s / 1e12

    @property
    def model_tok_s(self) -> np.ndarray:
        """Tokens per second of the iteration, by the performance model."""
        return self.tokens / self.model_s

    @property
    def bound_share(self) -> np.ndarray:
        """The bound's time over the model's: how close the model gets to the roofline."""
        return self.bound_s / self.model_s


def _bound(perf: PerfModel, flops: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    return np.maximum(flops / peak_flops(perf), nbytes / peak_bytes_s(perf))


def prefill_batches(perf: PerfModel, tokens) -> Batches:
    """One prompt of each length in ``tokens``, prefilled whole in one iteration."""
    t = np.asarray(tokens, dtype=np.int64)
    m = perf.model
    flops = 2.0 * m.params * t
    nbytes = m.weight_bytes + t * m.kv_bytes_per_token          # weights read, KV written
    model_s = np.array([perf.iteration_s([(int(x), 0)]) for x in t])
    return Batches("prefill", t, flops, nbytes, model_s, _bound(perf, flops, nbytes))


def decode_batches(perf: PerfModel, batch, context_tokens: int) -> Batches:
    """Decode steps: each batch size in ``batch`` decoding one token per request, every
    request attending over ``context_tokens`` tokens of KV cache."""
    n = np.asarray(batch, dtype=np.int64)
    m = perf.model
    flops = 2.0 * m.params * n
    nbytes = m.params * BYTES_PER_PARAM + n * context_tokens * m.kv_bytes_per_token
    model_s = np.array([perf.iteration_s((), int(x), int(x) * context_tokens) for x in n])
    return Batches(f"decode, {context_tokens:,} context", n, flops, nbytes, model_s,
                   _bound(perf, flops, nbytes))
