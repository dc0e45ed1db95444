"""Checks of exercise 14: the weights a decode step reads in FP8 and with a mixture of experts,
and the largest batch a TPOT SLO allows by the roofline.

The learner's functions see the catalog's facts as dicts (as in exercises 8 and 9), a precision
(``"bf16"`` or ``"fp8"``) and numbers. The answers are the library's:
:meth:`~schedatrix.serving.perf.model.PerfModel.weight_bytes_read` (the decoder's matmul weights
in the precision, the MoE router and the LM head in BF16, only the experts the batch's tokens
touch, in expectation under uniform routing), and a roofline built on it: a decode step of
``b`` requests on ``tp`` GPUs reads ``weight_bytes_read(b)`` plus the batch's KV cache in the
precision, each GPU its ``1 / tp``, at a share of the HBM bandwidth.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from ...errors import InputError
from ...serving.perf.catalog import BYTES_PER_PARAM, GPUS, MODELS, dtype_bytes
from ...serving.perf.model import PerfModel
from .check_support import DRAWN, RANDOM_SEED, as_number, call, close, drawn, passed
from .checks_serving import gpu_facts, model_facts

__all__ = ["check_weight_reads", "check_batch_for_tpot", "weights_read", "roofline_step_s",
           "roofline_batch_for_tpot", "BYTES_REL"]

#: How close the weight bytes must be to the library's (relative): the catalog's parameter
#: counts are rounded (Llama 3.2 3B's 3.21e9) and count the norms, which no matmul reads.
BYTES_REL = 2e-3
#: The precisions of the exercise, and the tensor-parallel sizes a design may take.
DTYPES = ("bf16", "fp8")
TP_CHOICES = (1, 2, 4, 8)


@cache
def _perf(name: str, gpu_name: str, tp: int, dtype: str) -> PerfModel | None:
    """The library's model of the replica, or None where it cannot be built (no FP8 on the
    A100, the weights do not fit)."""
    try:
        return PerfModel(name, gpu_name, tp=tp, dtype=dtype)
    except InputError:
        return None


def weights_read(name: str, dtype: str, batch: int) -> float:
    """The library's bytes of weights one decode step of ``batch`` requests reads, on the
    replica where the model fits at the smallest TP on an H200 (the bytes do not depend on
    the split)."""
    perf = next(p for p in (_perf(name, "h200", tp, dtype) for tp in TP_CHOICES) if p)
    return perf.weight_bytes_read(batch)


# --------------------------------------------------------------------------- the weight reads


@cache
def _reads_random(seed: int, what: str = "a random step", count: int = 30
                  ) -> list[tuple[str, str, int, str]]:
    rng = np.random.default_rng(seed)
    names = sorted(MODELS)
    return [(names[k % len(names)], str(rng.choice(DTYPES)),
             int(np.exp(rng.uniform(0, np.log(4096)))), what) for k in range(count)]


@cache
def _reads_cases() -> list[tuple[str, str, int, str]]:
    fixed = [
        ("llama-3.1-8b", "bf16", 1, "a dense model: every weight once"),
        ("llama-3.1-8b", "fp8", 64, "FP8: one byte a weight, but not for every weight"),
        ("llama-3.2-3b", "fp8", 1, "tied embeddings: the LM head is the embedding"),
        ("mixtral-8x7b", "bf16", 1, "one token touches 2 of 8 experts"),
        ("mixtral-8x7b", "bf16", 2, "two tokens may pick the same expert"),
        ("mixtral-8x7b", "fp8", 256, "a big batch touches every expert"),
        ("qwen3-30b-a3b", "bf16", 8, "8 of 128 experts a token"),
        ("qwen3-30b-a3b", "fp8", 32, "more tokens, more experts"),
    ]
    return fixed + _reads_random(RANDOM_SEED + 14)


def _by_params(m, dtype: str, batch: int, *, lm_head_dtype: bool = False, embedding=False,
               experts: str = "expected", everything: bool = False) -> float:
    """Weight bytes from the catalog's parameter counts, right or with one mistake (the hints
    compare an answer with these)."""
    b = dtype_bytes(dtype)
    if everything:
        return m.params * b
    head = m.vocab * m.hidden * (b if lm_head_dtype else BYTES_PER_PARAM)
    rest = m.params - m.embedding_params
    if m.moe:
        e, k = m.experts, m.experts_per_token
        router = m.layers * m.hidden * e
        rest -= m.layers * e * m.expert_params + router
        touched = {"expected": e * (1 - (1 - k / e) ** batch), "all": e,
                   "picks": min(e, k * batch), "one token": k}[experts]
        rest = rest * b + m.layers * touched * m.expert_params * b + router * BYTES_PER_PARAM
    else:
        rest *= b
    return rest + head + (m.vocab * m.hidden * BYTES_PER_PARAM if embedding else 0.0)


def _reads_hint(name: str, dtype: str, batch: int, got: float) -> str:
    m = MODELS[name]
    mistakes = [
        (_by_params(m, dtype, batch, lm_head_dtype=True),
         "An FP8 checkpoint keeps the embedding and the LM head in BF16: 2 bytes a weight."),
        (_by_params(m, dtype, batch, embedding=True),
         "A decode step looks up only its own tokens' rows of the embedding: it does not read "
         "the whole table."),
        (_by_params(m, dtype, batch, everything=True),
         "Which weights does a step multiply by? Not the embedding table, and the LM head "
         "stays in BF16."),
        (_by_params(m, "bf16", batch), "Every weight at 2 bytes: what does FP8 store in one?"),
    ]
    if m.moe:
        mistakes += [
            (_by_params(m, dtype, batch, experts="all"),
             "A step reads only the experts its tokens picked, not all of them."),
            (_by_params(m, dtype, batch, experts="picks"),
             "Two tokens can pick the same expert, and it is read once: the expected distinct "
             "experts of T tokens is E (1 - (1 - k/E)^T)."),
            (_by_params(m, dtype, batch, experts="one token"),
             "Each token of the batch picks its own k experts."),
        ]
    for value, hint in mistakes:
        if close(got, value, rel=BYTES_REL / 4):
            return hint
    return ("Add it up layer by layer: the weights every token runs through, the experts the "
            "batch touches, the LM head; each at its own bytes per weight.")


def check_weight_reads(decode_weight_bytes: Callable) -> str:
    """Exercise 14: ``decode_weight_bytes(model, dtype, batch)``: the bytes of weights one
    decode step of ``batch`` requests reads (the whole replica), within :data:`BYTES_REL` of the
    library's."""
    cases = _reads_cases()
    for name, dtype, batch, what in cases + drawn(lambda s: _reads_random(s, DRAWN), 14):
        shown = f"<{name}>, {dtype!r}, {batch}"
        got = as_number("decode_weight_bytes", shown,
                        call("decode_weight_bytes", decode_weight_bytes, model_facts(name),
                             dtype, batch), "a number of bytes")
        want = weights_read(name, dtype, batch)
        if not close(got, want, rel=BYTES_REL):
            raise AssertionError(
                f"decode_weight_bytes({shown}) returned {got / 1e9:.4g} GB, expected "
                f"{want / 1e9:.4g} GB ({what}). " + _reads_hint(name, dtype, batch, got))
    return passed("check_weight_reads", {"fixed steps": 8, "random": len(cases) - 8})


# --------------------------------------------------------------------------- the sizing


def roofline_step_s(name: str, gpu_name: str, dtype: str, tp: int, batch: int,
                    context_tokens: int, hbm_share: float) -> float:
    """One decode step by the roofline: the weights ``batch`` tokens read on the replica (the
    library's count for ``tp`` GPUs, where the replica can be built) plus ``batch`` contexts of
    KV cache in ``dtype``, each of the ``tp`` GPUs reading its ``1 / tp`` at ``hbm_share`` of
    its HBM bandwidth (seconds)."""
    m, g = MODELS[name], GPUS[gpu_name]
    perf = _perf(name, gpu_name, tp, dtype)
    weights = perf.weight_bytes_read(batch) if perf else weights_read(name, dtype, batch)
    nbytes = weights + batch * context_tokens * m.kv_bytes_per_token_in(dtype)
    return nbytes / tp / (hbm_share * g.hbm_gb_s * 1e9)


def _largest(step_s: Callable[[int], float], most: int, tpot_slo_s: float) -> int | None:
    """The largest batch of 1 to ``most`` whose ``step_s`` is within the SLO (the step grows
    with the batch), or None."""
    if most < 1 or step_s(1) > tpot_slo_s:
        return None
    low, high = 1, most
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if step_s(mid) <= tpot_slo_s else (low, mid - 1)
    return low


def roofline_batch_for_tpot(name: str, gpu_name: str, dtype: str, tp: int, context_tokens: int,
                            tpot_slo_s: float, hbm_share: float,
                            kv_capacity_tokens: int) -> int | None:
    """The largest batch whose roofline decode step is within ``tpot_slo_s`` and whose
    contexts fit ``kv_capacity_tokens``, or None when one request does not."""
    return _largest(lambda b: roofline_step_s(name, gpu_name, dtype, tp, b, context_tokens,
                                              hbm_share),
                    kv_capacity_tokens // context_tokens, tpot_slo_s)


def _designs(rng: np.random.Generator, count: int, what: str) -> list[tuple]:
    """Drawn replicas the library builds (the weights fit, FP8 only where the GPU has it),
    a context, a TPOT SLO and a bandwidth share each, with the replica's KV capacity."""
    out, names, gpus = [], sorted(MODELS), sorted(GPUS)
    while len(out) < count:
        name, gname = names[int(rng.integers(len(names)))], gpus[int(rng.integers(len(gpus)))]
        dtype, tp = str(rng.choice(DTYPES)), int(rng.choice(TP_CHOICES))
        if tp > MODELS[name].kv_heads or _perf(name, gname, tp, dtype) is None:
            continue
        context = int(rng.integers(128, min(16_384, MODELS[name].max_context)))
        out.append((name, gname, dtype, tp, context, float(np.round(rng.uniform(0.01, 0.1), 4)),
                    float(np.round(rng.uniform(0.6, 0.95), 2)),
                    _perf(name, gname, tp, dtype).kv_capacity_tokens(), what))
    return out


@cache
def _sizing_random(seed: int, what: str = "a random replica") -> list[tuple]:
    return _designs(np.random.default_rng(seed), 24, what)


@cache
def _sizing_cases() -> list[tuple]:
    fixed = [
        ("llama-3.1-8b", "h100-80gb", "bf16", 1, 2048, 0.030, 0.85, "8B at 30 ms"),
        ("llama-3.1-8b", "h100-80gb", "fp8", 1, 2048, 0.030, 0.85, "the same in FP8"),
        ("llama-3.1-70b", "h100-80gb", "bf16", 4, 4096, 0.040, 0.85, "70B on four GPUs"),
        ("llama-3.1-70b", "h100-80gb", "fp8", 2, 4096, 0.040, 0.85, "70B in FP8 on two"),
        ("mixtral-8x7b", "h100-80gb", "bf16", 2, 2048, 0.020, 0.85,
         "Mixtral: more experts as the batch grows"),
        ("llama-3.1-8b", "a100-80gb", "bf16", 1, 1024, 0.005, 0.85,
         "an SLO one request cannot meet"),
        ("llama-3.1-8b", "h200", "fp8", 1, 8192, 0.100, 0.9, "a loose SLO: the KV cache decides"),
    ]
    with_capacity = [(*c[:7], _perf(*c[:2], c[3], c[2]).kv_capacity_tokens(), c[7])
                     for c in fixed]
    return with_capacity + _sizing_random(RANDOM_SEED + 141)


def _sizing_hint(case: tuple, got: int | None, want: int | None) -> str:
    """Which likely mistake ``got`` matches, else the roofline step at the answer given."""
    name, gname, dtype, tp, ctx, slo, share, cap, _ = case
    m, g = MODELS[name], GPUS[gname]
    if got is not None and got * ctx > cap:
        return (f"{got} contexts of {ctx:,} tokens are {got * ctx:,} tokens, more than the "
                f"{cap:,} the KV cache holds.")

    def step(weights: Callable[[int], float], kv_dtype: str = dtype, split: int = tp):
        bw = share * g.hbm_gb_s * 1e9
        return lambda b: (weights(b) + b * ctx * m.kv_bytes_per_token_in(kv_dtype)) / split / bw

    def read(b: int) -> float:
        return weights_read(name, dtype, b)

    mistakes = [
        (step(read, split=1), cap // ctx, "Each of the tp GPUs reads only its share of the "
                                          "weights and of the KV cache."),
        (step(read), 10**9, "The batch's contexts must also fit the KV cache."),
        (step(read, kv_dtype="bf16"), cap // ctx, "An FP8 KV cache takes one byte a value."),
    ]
    if m.moe:
        mistakes.append((step(lambda b: weights_read(name, dtype, 1)), cap // ctx,
                         "A bigger batch touches more experts: the weights read grow with it."))
    for step_s, most, hint in mistakes:
        if got == _largest(step_s, most, slo) != want:
            return hint
    if want is None:
        return (f"One request's roofline step is "
                f"{roofline_step_s(name, gname, dtype, tp, 1, ctx, share) * 1e3:.3f} ms against "
                f"the {slo * 1e3:g} ms SLO." if cap >= ctx else
                f"The KV cache holds {cap:,} tokens, under one context.")
    at = want if got is None else got
    ms = roofline_step_s(name, gname, dtype, tp, at, ctx, share) * 1e3
    if got is None:
        return f"At {want} requests the roofline step is {ms:.3f} ms, within the SLO."
    if ms > slo * 1e3:
        return f"At {got} requests the roofline step is {ms:.3f} ms, over the {slo * 1e3:g} ms SLO."
    return f"At {got} requests the roofline step is {ms:.3f} ms: more requests still fit the SLO."


def check_batch_for_tpot(largest_batch_for_tpot: Callable) -> str:
    """Exercise 14: ``largest_batch_for_tpot(model, gpu, dtype, tp, context_tokens, tpot_slo_s,
    hbm_share, kv_capacity_tokens)``: the largest batch whose roofline decode step (weights
    and KV read, each GPU its 1/tp) is within the SLO and whose contexts fit the KV cache, or
    None. A batch at the edge passes when the library's step at it is within the SLO to
    :data:`BYTES_REL` and one request more is over it by as much."""
    cases = _sizing_cases()
    for case in cases + drawn(lambda s: _sizing_random(s, DRAWN), 141):
        name, gname, dtype, tp, ctx, slo, share, cap, what = case
        shown = f"<{name}>, <{gname}>, {dtype!r}, {tp}, {ctx}, {slo:g}, {share:g}, {cap}"
        got = call("largest_batch_for_tpot", largest_batch_for_tpot, model_facts(name),
                   gpu_facts(gname), dtype, tp, ctx, slo, share, cap)
        want = roofline_batch_for_tpot(name, gname, dtype, tp, ctx, slo, share, cap)
        if got is None or want is None:
            if got is not want:
                value = None if got is None else as_number(
                    "largest_batch_for_tpot", shown, got, "a whole number of requests, or None")
                raise AssertionError(
                    f"largest_batch_for_tpot({shown}) returned {got!r}, expected {want!r} "
                    f"({what}). " + _sizing_hint(case, None if value is None else int(value),
                                                 want))
            continue
        value = as_number("largest_batch_for_tpot", shown, got,
                          "a whole number of requests, or None")
        if value != int(value):
            raise AssertionError(f"largest_batch_for_tpot({shown}) returned {value:g}: return a "
                                 "whole number of requests")
        b = int(value)
        if b < 1:
            raise AssertionError(f"largest_batch_for_tpot({shown}) returned {b}, expected {want} "
                                 f"({what}): a batch holds at least one request (None when "
                                 "one does not fit).")
        edge = b >= 1 and b * ctx <= cap and \
            roofline_step_s(name, gname, dtype, tp, b, ctx, share) <= slo * (1 + BYTES_REL) and (
                (b + 1) * ctx > cap or roofline_step_s(name, gname, dtype, tp, b + 1, ctx, share)
                > slo * (1 - BYTES_REL))
        if b != want and not edge:
            raise AssertionError(f"largest_batch_for_tpot({shown}) returned {b}, expected {want} "
                                 f"({what}). " + _sizing_hint(case, b, want))
    return passed("check_batch_for_tpot", {"fixed replicas": 7, "random": len(cases) - 7})
