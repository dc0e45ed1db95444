"""Checks of exercises 8 to 10 and 12: serving figures by hand, a router graded in the simulator.

They run in the checker process. The learner's functions see plain data only: a model or a
GPU as the catalog's facts in a dict, an event log as a list of ``(time_s, request_id,
kind)`` tuples, a time series as a list of dicts, a request and its candidate replicas as
dicts. The answers are the library's: :class:`~schedatrix.serving.perf.model.PerfModel` for KV
capacity and step times, :func:`~schedatrix.serving.figures.metrics.figures` of the very run a log
was written from. Exercise 11's check, a recovery rule of the learner's design, is
:mod:`.checks_recovery`.

The router exercise runs the simulator here, in the checker, on a fixed prefix-heavy load;
every routing decision crosses the boundary as plain data (the request and the replicas'
views in, a replica index out), so the learner's ``choose`` never shares a process with the
simulator or the check, and the targets are measured on the run this process made.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, replace
from functools import cache

import numpy as np

from ...errors import InputError
from ...serving.cluster.deployment import Design
from ...serving.cluster.routing import FunctionRouter
from ...serving.figures.metrics import figures
from ...serving.load.prefixes import document_sessions
from ...serving.load.requests import Requests, SLOClass
from ...serving.load.workload import Load, generate
from ...serving.perf.catalog import GPUS, MODELS, gpu, model
from ...serving.perf.model import PerfModel
from ...serving.replica.kv_cache import largest_batch as _largest_batch
from ...serving.sim.event_log import event_log, logged_run
from ...serving.sim.simulate import simulate
from .check_support import (
    DRAWN,
    RANDOM_SEED,
    as_number,
    call,
    close,
    drawn,
    fmt,
    off_by,
    passed,
)

__all__ = ["check_kv_capacity", "check_largest_batch", "check_smallest_tp", "check_decode_step",
           "check_tp_for_tpot",
           "check_log_figures", "check_router", "model_facts", "gpu_facts",
           "ROOFLINE_SHARE", "ROOFLINE_TOLERANCE", "MEMORY_BOUND_SHARE", "LOG_KEYS",
           "ROUTER_TARGETS",
           "router_run"]

#: The exercises' models: the dense ones (a decode step of a mixture-of-experts model reads
#: only the experts its tokens touch, beyond what exercises 8 and 9 teach).
DENSE_MODELS = {name: m for name, m in MODELS.items() if not m.moe}


def model_facts(name: str) -> dict:
    """A model's catalog facts as the exercises hand them over (a dict of numbers and its
    name)."""
    return asdict(model(name))


def gpu_facts(name: str) -> dict:
    """A GPU's catalog facts as the exercises hand them over."""
    return asdict(gpu(name))


# --------------------------------------------------------------------------- exercise 8


@cache
def _capacity_cases() -> list[tuple[str, str, int, float, float, str]]:
    fixed = [
        ("llama-3.1-8b", "a100-80gb", 1, 0.90, 2.0, "the default replica"),
        ("llama-3.1-8b", "h200", 1, 0.90, 2.0, "the same model on 141 GB"),
        ("llama-2-7b", "a100-80gb", 1, 0.90, 2.0, "Llama 2 7B: 32 KV heads, no grouped query"),
        ("llama-3.1-70b", "h100-80gb", 4, 0.90, 2.0, "70B over four GPUs"),
        ("llama-3.1-70b", "a100-80gb", 1, 0.90, 2.0, "70B on one GPU: does it fit?"),
        ("llama-3.2-3b", "l4", 1, 0.90, 2.0, "a small model on a small GPU"),
        ("llama-3.1-8b", "l4", 1, 0.90, 2.0, "8B on 24 GB"),
        ("llama-3.1-8b", "a100-80gb", 2, 0.80, 0.0, "no reserve, 80% usable"),
    ]
    return fixed + _capacity_random(RANDOM_SEED + 8)


#: The usable shares the random replicas take: at most vLLM's default 0.9, above which the
#: library refuses to build a replica whose weights fit only at the larger share (a drawn case
#: found it: 70B on two H100s with a 4 GB reserve fits at 95%, not at 90%).
USABLE_SHARES = (0.8, 0.85, 0.9)


@cache
def _capacity_random(seed: int, what: str = "a random replica"
                     ) -> list[tuple[str, str, int, float, float, str]]:
    rng = np.random.default_rng(seed)
    rand = []
    for _ in range(30):
        rand.append((str(rng.choice(list(DENSE_MODELS))), str(rng.choice(list(GPUS))),
                     int(rng.choice([1, 2, 4, 8])), float(rng.choice(USABLE_SHARES)),
                     float(rng.choice([0.0, 1.0, 2.0, 4.0])), what))
    return rand


@cache
def _attention_drawn(seed: int) -> list[tuple[dict, int, str]]:
    """Models of drawn attention shapes (layers, KV heads, head dim), as the exercise hands a
    model over, with the library's KV bytes per token of each."""
    r = random.Random(seed)
    out = []
    for k in range(4):
        spec = replace(MODELS[r.choice(sorted(DENSE_MODELS))], name=f"drawn-model-{k}",
                       layers=r.randrange(8, 129), kv_heads=r.choice([1, 2, 4, 8, 16, 32]),
                       head_dim=r.choice([64, 80, 96, 128, 256]))
        out.append((asdict(spec), spec.kv_bytes_per_token, spec.name))
    return out


def _capacity(name: str, gpu_name: str, tp: int, share: float, reserve_gb: float) -> int:
    """The library's KV capacity in tokens, 0 when the model does not fit."""
    try:
        return PerfModel(name, gpu_name, tp=tp, activation_reserve_gb=reserve_gb) \
            .kv_capacity_tokens(share)
    except InputError:
        return 0


def check_kv_capacity(kv_bytes_per_token: Callable, kv_capacity_tokens: Callable) -> str:
    """Exercise 8: ``kv_bytes_per_token(model)`` and ``kv_capacity_tokens(model, gpu, tp,
    usable_share, reserve_gb)`` (tokens, 0 when the weights do not fit), within one token."""
    per_token = [(model_facts(name), MODELS[name].kv_bytes_per_token, name)
                 for name in DENSE_MODELS] + drawn(_attention_drawn, 80)
    for facts, want, name in per_token:
        got = call("kv_bytes_per_token", kv_bytes_per_token, dict(facts))
        value = as_number("kv_bytes_per_token", f"<{name}>", got, "a number of bytes")
        if value != want:
            m = MODELS.get(name) or replace(MODELS["llama-3.1-8b"], **{
                k: facts[k] for k in ("layers", "heads", "kv_heads", "head_dim")})
            if value * 2 == want:
                hint = "Half of it: count both K and V, and 2 bytes a value in BF16."
            elif value == want * m.heads / m.kv_heads:
                hint = "Attention heads or KV heads? Only the KV heads are cached."
            else:
                hint = ("Per token, every layer keeps a K and a V vector for each KV head, of "
                        "head dim values, 2 bytes each in BF16.")
            raise AssertionError(f"kv_bytes_per_token(<{name}>) returned {value:,.0f}, "
                                 f"expected {want:,} ({want / 1024:g} KiB). {hint}")
    cases = _capacity_cases()
    for name, gname, tp, share, reserve, what in cases + drawn(
            lambda s: _capacity_random(s, DRAWN), 8):
        shown = f"<{name}>, <{gname}>, {tp}, {share:g}, {reserve:g}"
        got = as_number("kv_capacity_tokens", shown,
                        call("kv_capacity_tokens", kv_capacity_tokens, model_facts(name),
                             gpu_facts(gname), tp, share, reserve), "a number of tokens")
        want = _capacity(name, gname, tp, share, reserve)
        if off_by(got, want) > 1:
            raise AssertionError(f"kv_capacity_tokens({shown}) returned {got:,.0f}, expected "
                                 f"{want:,} tokens ({what}). "
                                 + _capacity_hint(name, gname, tp, share, reserve, got, want))
    return passed("check_kv_capacity", {"models' KV per token": len(DENSE_MODELS),
                                        "fixed replicas": 8, "random": len(cases) - 8})


def _capacity_hint(name, gname, tp, share, reserve, got, want) -> str:
    m, g = MODELS[name], GPUS[gname]
    kv = m.kv_bytes_per_token
    if want == 0:
        return "The weights and the reserve leave no room on each GPU: return 0."
    if got < 0:
        return "A negative capacity means it does not fit: return 0 then."
    free = g.memory_gb * 1e9 * share - m.weight_bytes / tp - reserve * 1e9
    if abs(got - (g.memory_gb * 2**30 * share - m.weight_bytes / tp - reserve * 2**30)
           / (kv / tp)) <= 1:
        return "GB here are 10^9 bytes, not 2^30."
    if abs(got - free / kv) <= 1:
        return ("Each GPU holds only its share of every token's KV, as it holds its share of "
                "the weights.")
    whole_weights = g.memory_gb * 1e9 * share - m.weight_bytes - reserve * 1e9
    if abs(got - whole_weights / (kv / tp)) <= 1:
        return "With tensor parallelism each GPU holds a share of the weights too."
    if abs(got - (g.memory_gb * 1e9 - m.weight_bytes / tp - reserve * 1e9) / (kv / tp)) <= 1:
        return "Only the usable share of each GPU's memory is the engine's."
    return "Per GPU: usable memory, less its weights and the reserve, over its share of a token."


@cache
def _batch_cases() -> list[tuple[int, int, int, int, int, str]]:
    cap = _capacity("llama-3.1-8b", "a100-80gb", 1, 0.9, 2.0)
    fixed = [
        (cap, 8000, 2000, 16, 256, "long prompts: the cache decides"),
        (cap, 1000, 200, 16, 256, "short requests: the batch cap decides"),
        (1600, 100, 60, 16, 256, "160 tokens: exactly ten blocks each"),
        (1600, 100, 61, 16, 256, "161 tokens: one token into an eleventh block"),
        (1615, 100, 60, 16, 256, "15 tokens of the cache make no block"),
        (100, 90, 20, 16, 256, "a cache too small for even one request"),
        (cap, 3000, 1000, 32, 512, "32-token blocks"),
    ]
    return fixed + _batch_random(RANDOM_SEED + 9)


@cache
def _batch_random(seed: int, what: str = "a random cache") -> list[tuple[int, int, int, int, int,
                                                                        str]]:
    rng = np.random.default_rng(seed)
    rand = []
    for _ in range(30):
        rand.append((int(rng.integers(1_000, 3_000_000)), int(rng.integers(1, 20_000)),
                     int(rng.integers(1, 4_000)), int(rng.choice([8, 16, 32])),
                     int(rng.choice([64, 256, 1024])), what))
    return rand


def check_largest_batch(largest_batch: Callable) -> str:
    """Exercise 8: ``largest_batch(capacity_tokens, prompt_tokens, output_tokens,
    block_tokens, max_batch)``: the most requests that fit at their full length."""
    cases = _batch_cases()
    for cap, prompt, output, block, cap_batch, what in cases + drawn(
            lambda s: _batch_random(s, DRAWN), 9):
        shown = f"{cap}, {prompt}, {output}, {block}, {cap_batch}"
        got = as_number("largest_batch", shown,
                        call("largest_batch", largest_batch, cap, prompt, output, block,
                             cap_batch), "a whole number of requests")
        want = _largest_batch(cap, prompt, output, block, cap_batch)
        if got != want:
            per = -(-(prompt + output) // block)
            if got == min(cap_batch, cap // (prompt + output)):
                hint = "The cache hands out whole blocks: a request's last block is whole too."
            elif got == cap // (per * block):
                hint = "The scheduler never runs more than max_batch requests at once."
            elif got == min(cap_batch, (cap / block) // per):
                hint = "The cache's own tokens come in whole blocks too."
            else:
                hint = ("How many whole blocks does one request fill at its full length, and "
                        "how many whole blocks does the cache have?")
            raise AssertionError(f"largest_batch({shown}) returned {got:g}, expected {want} "
                                 f"({what}). {hint}")
    return passed("check_largest_batch", {"fixed caches": 7, "random": len(cases) - 7})


#: The tensor-parallel sizes a replica may take in exercises 8 and 9 (one machine).
TP_CHOICES = (1, 2, 4, 8)
#: Exercise 8's engine settings for the smallest TP: usable share and reserve per GPU.
SMALLEST_TP_SHARE, SMALLEST_TP_RESERVE_GB = 0.90, 2.0


def smallest_tp_for_batch(name: str, gpu_name: str, prompt_tokens: int, output_tokens: int,
                          batch: int, block_tokens: int) -> int | None:
    """The smallest of :data:`TP_CHOICES` at which ``batch`` requests of ``prompt_tokens +
    output_tokens`` fit the KV cache at once at full length (the library's capacity and
    blocks), or None when even TP8 can't hold them."""
    for tp in TP_CHOICES:
        cap = _capacity(name, gpu_name, tp, SMALLEST_TP_SHARE, SMALLEST_TP_RESERVE_GB)
        if cap and _largest_batch(cap, prompt_tokens, output_tokens, block_tokens,
                                  batch) >= batch:
            return tp
    return None


@cache
def _tp_cases() -> list[tuple[str, str, int, int, int, int, str]]:
    fixed = [
        ("llama-3.1-8b", "a100-80gb", 8000, 2000, 41, 16, "one A100 holds 41 such requests"),
        ("llama-3.1-8b", "a100-80gb", 8000, 2000, 42, 16, "one request more"),
        ("llama-3.1-70b", "a100-80gb", 2000, 500, 16, 16, "70B: four GPUs or more"),
        ("llama-3.1-70b", "h200", 4000, 1000, 64, 16, "70B on 141 GB GPUs"),
        ("llama-2-7b", "h100-80gb", 4000, 1000, 64, 16, "no grouped-query attention"),
        ("llama-3.1-70b", "l4", 1000, 100, 1, 16, "70B on 24 GB GPUs: only TP8"),
    ]
    return fixed + _tp_random(RANDOM_SEED + 88)


@cache
def _tp_random(seed: int, what: str = "a random service"
               ) -> list[tuple[str, str, int, int, int, int, str]]:
    rng = np.random.default_rng(seed)
    return [(str(rng.choice(list(DENSE_MODELS))), str(rng.choice(list(GPUS))),
             int(rng.integers(100, 16_001)), int(rng.integers(1, 4_001)),
             int(rng.integers(1, 129)), int(rng.choice([16, 32])), what)
            for _ in range(40)]


def check_smallest_tp(smallest_tp: Callable) -> str:
    """Exercise 8: ``smallest_tp(model, gpu, prompt_tokens, output_tokens, batch,
    block_tokens)``: the smallest TP of 1, 2, 4, 8 whose KV cache (90% of memory usable, 2 GB
    reserve per GPU) holds ``batch`` such requests at once at full length, or None."""
    cases = _tp_cases()
    for name, gname, p, o, b, block, what in cases + drawn(lambda s: _tp_random(s, DRAWN), 88):
        shown = f"<{name}>, <{gname}>, {p}, {o}, {b}, {block}"
        got = call("smallest_tp", smallest_tp, model_facts(name), gpu_facts(gname), p, o, b,
                   block)
        want = smallest_tp_for_batch(name, gname, p, o, b, block)
        if got is None or want is None:
            if got is not want:
                held = _largest_batch(_capacity(name, gname, 8, SMALLEST_TP_SHARE,
                                                SMALLEST_TP_RESERVE_GB), p, o, block, b)
                hint = (f"At TP8 the replica holds {held} such requests: no TP here is enough."
                        if want is None else f"TP{want} holds them all.")
                raise AssertionError(f"smallest_tp({shown}) returned {got!r}, expected "
                                     f"{want!r} ({what}). {hint}")
            continue
        value = as_number("smallest_tp", shown, got, "a TP of 1, 2, 4 or 8, or None")
        if value != want:
            at = int(value) if value in TP_CHOICES else None
            held = (_largest_batch(_capacity(name, gname, at, SMALLEST_TP_SHARE,
                                             SMALLEST_TP_RESERVE_GB), p, o, block, b)
                    if at else None)
            if at is None:
                hint = "Return one of 1, 2, 4, 8 (or None)."
            elif value < want:
                hint = (f"At TP{at} the cache holds only {held} of the {b} requests at full "
                        "length: count whole blocks, per request and in the cache.")
            else:
                hint = f"A smaller TP already holds all {b}: try the sizes from the smallest."
            raise AssertionError(f"smallest_tp({shown}) returned {value:g}, expected TP{want} "
                                 f"({what}). {hint}")
    return passed("check_smallest_tp", {"fixed services": 6, "random": len(cases) - 6})


# --------------------------------------------------------------------------- exercise 9

#: The share of HBM bandwidth the roofline is compared with the library at.
ROOFLINE_SHARE = 0.85
#: How far the roofline may be from the library's calibrated model on the comparison grid.
ROOFLINE_TOLERANCE = 0.25
#: A grid step counts as clearly memory bound when its dense FLOPs at the GPU's peak would
#: take at most this share of its memory time.
MEMORY_BOUND_SHARE = 0.25
_GRID_MODELS = ("llama-3.1-8b", "llama-2-7b")
_GRID_BATCHES = (8, 32, 64, 128, 256)
_GRID_CONTEXTS = (512, 1024, 2048, 4096)


def roofline_decode_s(name: str, gpu_name: str, batch: int, context_tokens: int,
                      hbm_share: float) -> float:
    """One decode step on one GPU by the roofline: the weights once plus every request's
    KV cache, read at ``hbm_share`` of the HBM bandwidth (seconds)."""
    m, g = MODELS[name], GPUS[gpu_name]
    nbytes = m.weight_bytes + batch * context_tokens * m.kv_bytes_per_token
    return nbytes / (hbm_share * g.hbm_gb_s * 1e9)


@cache
def _step_cases() -> list[tuple[str, str, int, int, float, str]]:
    fixed = [
        ("llama-3.1-8b", "a100-80gb", 1, 1024, 0.85, "one request: nearly all weights"),
        ("llama-3.1-8b", "a100-80gb", 64, 2048, 0.85, "64 requests of 2,048 tokens"),
        ("llama-3.1-8b", "h200", 128, 4096, 0.9, "a big batch on an H200"),
        ("llama-2-7b", "h100-80gb", 32, 1024, 0.8, "Llama 2: four times the KV per token"),
        ("llama-3.2-3b", "l4", 16, 512, 1.0, "the bandwidth's full peak"),
    ]
    return fixed + _step_random(RANDOM_SEED + 10)


@cache
def _step_random(seed: int, what: str = "a random step"
                 ) -> list[tuple[str, str, int, int, float, str]]:
    rng = np.random.default_rng(seed)
    return [(str(rng.choice(list(DENSE_MODELS))), str(rng.choice(list(GPUS))),
             int(rng.integers(1, 257)), int(rng.integers(1, 8193)),
             float(np.round(rng.uniform(0.5, 1.0), 2)), what) for _ in range(30)]


@cache
def _grid() -> list[tuple[str, str, int, int, float]]:
    """(model, GPU, batch, context, library seconds) where the batch's KV fits one GPU and
    the step is clearly memory bound (its FLOPs at peak take at most ``MEMORY_BOUND_SHARE``
    of its memory time at ``ROOFLINE_SHARE``)."""
    out = []
    for name in _GRID_MODELS:
        m = MODELS[name]
        for gname in GPUS:
            perf = PerfModel(name, gname, host_s=0.0)   # the GPU's step: no host time in it
            room = perf.kv_capacity_tokens()
            peak = GPUS[gname].tflops_bf16 * 1e12
            for b in _GRID_BATCHES:
                for ctx in _GRID_CONTEXTS:
                    memory_s = roofline_decode_s(name, gname, b, ctx, ROOFLINE_SHARE)
                    if b * ctx <= room and 2 * m.params * b / peak <= MEMORY_BOUND_SHARE \
                            * memory_s:
                        out.append((name, gname, b, ctx, perf.iteration_s((), b, b * ctx)))
    return out


def check_decode_step(decode_step_s: Callable) -> str:
    """Exercise 9: ``decode_step_s(model, gpu, batch, context_tokens, hbm_share)`` by the
    roofline (to a millionth); then, at ``ROOFLINE_SHARE``, within ``ROOFLINE_TOLERANCE`` of
    the library's calibrated model on 8B-class models at batches of 8 or more, where the step
    is clearly memory bound."""
    cases = _step_cases()
    for name, gname, b, ctx, share, what in cases + drawn(lambda s: _step_random(s, DRAWN), 10):
        shown = f"<{name}>, <{gname}>, {b}, {ctx}, {share:g}"
        got = as_number("decode_step_s", shown,
                        call("decode_step_s", decode_step_s, model_facts(name),
                             gpu_facts(gname), b, ctx, share), "a number of seconds")
        want = roofline_decode_s(name, gname, b, ctx, share)
        if not close(got, want, rel=1e-6, abs_tol=0.0):
            m, g = MODELS[name], GPUS[gname]
            weights_only = m.weight_bytes / (share * g.hbm_gb_s * 1e9)
            if close(got, want * 1e3, rel=1e-6):
                hint = "That looks like milliseconds: return seconds."
            elif close(got, weights_only, rel=1e-6):
                hint = "The batch's KV cache is read every step too."
            elif close(got, want * share, rel=1e-6):
                hint = "Only a share of the peak bandwidth is reached: divide by it."
            elif close(got, (m.params + b * ctx * m.kv_bytes_per_token)
                       / (share * g.hbm_gb_s * 1e9), rel=1e-6):
                hint = "Parameters are 2 bytes each in BF16."
            else:
                hint = ("Print your byte count for this step beside the weights' bytes: which "
                        "part is missing or counted twice?")
            raise AssertionError(f"decode_step_s({shown}) returned {got:.6g} s, expected "
                                 f"{want:.6g} s ({what}). {hint}")
    worst = 0.0
    grid = _grid()
    for name, gname, b, ctx, lib_s in grid:
        shown = f"<{name}>, <{gname}>, {b}, {ctx}, {ROOFLINE_SHARE:g}"
        got = as_number("decode_step_s", shown,
                        call("decode_step_s", decode_step_s, model_facts(name),
                             gpu_facts(gname), b, ctx, ROOFLINE_SHARE), "a number of seconds")
        off = off_by(got / lib_s, 1.0)
        worst = max(worst, off)
        if off > ROOFLINE_TOLERANCE:
            raise AssertionError(f"decode_step_s({shown}) returned {got * 1e3:.3f} ms; the "
                                 f"library's calibrated model says {lib_s * 1e3:.3f} ms, "
                                 f"{off:.0%} away (allowed {ROOFLINE_TOLERANCE:.0%}).")
    return passed("check_decode_step", {"roofline steps": len(cases),
                                        "steps beside the calibrated model": len(grid)})


def tp_for_tpot_roofline(name: str, gpu_name: str, batch: int, context_tokens: int,
                         tpot_slo_s: float, hbm_share: float) -> int | None:
    """The smallest of :data:`TP_CHOICES` whose decode step by the roofline (each GPU reads
    1/tp of the weights and of the batch's KV) is within ``tpot_slo_s``, or None."""
    for tp in TP_CHOICES:
        if roofline_decode_s(name, gpu_name, batch, context_tokens, hbm_share) / tp \
                <= tpot_slo_s:
            return tp
    return None


@cache
def _tpot_cases() -> list[tuple[str, str, int, int, float, float, str]]:
    fixed = [
        ("llama-3.1-8b", "a100-80gb", 64, 2048, 0.020, 0.85, "one GPU is enough"),
        ("llama-3.1-8b", "a100-80gb", 64, 2048, 0.010, 0.85, "half the SLO"),
        ("llama-3.1-70b", "h100-80gb", 32, 4096, 0.020, 0.85, "70B at 20 ms"),
        ("llama-3.1-70b", "a100-80gb", 128, 8192, 0.005, 0.85, "out of reach of TP8"),
        ("llama-2-7b", "h200", 128, 4096, 0.015, 0.9, "Llama 2's big KV"),
    ]
    return fixed + _tpot_random(RANDOM_SEED + 99)


@cache
def _tpot_random(seed: int, what: str = "a random SLO"
                 ) -> list[tuple[str, str, int, int, float, float, str]]:
    rng = np.random.default_rng(seed)
    return [(str(rng.choice(list(DENSE_MODELS))), str(rng.choice(list(GPUS))),
             int(rng.integers(1, 257)), int(rng.integers(256, 8193)),
             float(np.round(rng.uniform(0.004, 0.08), 4)), float(np.round(rng.uniform(0.6, 0.95),
                                                                          2)),
             what) for _ in range(40)]


def check_tp_for_tpot(tp_for_tpot: Callable) -> str:
    """Exercise 9: ``tp_for_tpot(model, gpu, batch, context_tokens, tpot_slo_s, hbm_share)``:
    the smallest TP of 1, 2, 4, 8 whose roofline decode step (bytes split over the TP GPUs) is
    within the TPOT SLO, or None."""
    cases = _tpot_cases()
    for name, gname, b, ctx, slo, share, what in cases + drawn(lambda s: _tpot_random(s, DRAWN),
                                                               99):
        shown = f"<{name}>, <{gname}>, {b}, {ctx}, {slo:g}, {share:g}"
        got = call("tp_for_tpot", tp_for_tpot, model_facts(name), gpu_facts(gname), b, ctx,
                   slo, share)
        want = tp_for_tpot_roofline(name, gname, b, ctx, slo, share)
        step = roofline_decode_s(name, gname, b, ctx, share)
        if got is None or want is None:
            if got is not want:
                hint = (f"Even at TP8 the roofline step is {step / 8 * 1e3:.2f} ms, over "
                        f"{slo * 1e3:g} ms." if want is None else
                        f"At TP{want} the roofline step is {step / want * 1e3:.2f} ms.")
                raise AssertionError(f"tp_for_tpot({shown}) returned {got!r}, expected "
                                     f"{want!r} ({what}). {hint}")
            continue
        value = as_number("tp_for_tpot", shown, got, "a TP of 1, 2, 4 or 8, or None")
        if value != want:
            if value not in TP_CHOICES:
                hint = "Return one of 1, 2, 4, 8 (or None)."
            elif value < want:
                hint = (f"At TP{value:g} the roofline step is {step / value * 1e3:.2f} ms, over "
                        f"the {slo * 1e3:g} ms SLO.")
            else:
                hint = (f"TP{want} already steps in {step / want * 1e3:.2f} ms: try the sizes "
                        "from the smallest.")
            raise AssertionError(f"tp_for_tpot({shown}) returned {value:g}, expected TP{want} "
                                 f"({what}). {hint}")
    return passed("check_tp_for_tpot", {"fixed SLOs": 5, "random": len(cases) - 5})


# --------------------------------------------------------------------------- exercise 10

LOG_KEYS = ("ttft_p50", "ttft_p95", "itl_p50", "itl_p95", "tpot_p50", "tpot_p95",
            "goodput_rps")


@cache
def _log_cases() -> list[tuple[list, float, float, dict, str]]:
    """(events, TTFT SLO, TPOT SLO, the library's figures, what) for a few runs."""
    tiny = Requests(np.array([0.0, 0.05, 0.1, 0.12]), np.array([200, 900, 50, 400]),
                    np.array([1, 6, 2, 12]), np.zeros(4, np.int16),
                    classes=(SLOClass("chat", 1.0, 0, 0.2, 0.02),))
    runs = [(tiny, Design(), "four requests, one of them a single token")]
    specs = [(6.0, Design(), 11, "150 requests on one 8B replica"),
             (12.0, Design(buckets=(("chat", 8.0, 5.0),)), 12,
              "a token bucket turns requests away at the door"),
             (3.0, Design(model="llama-3.2-3b", gpu="l4"), 13, "an overloaded L4")]
    for rate, design, seed, what in specs:
        load = Load(rate_rps=rate, input_len="lognormal:600,0.8", output_len="exp:60",
                    classes=[SLOClass("chat", 1.0, 0, 0.4, 0.03)])
        runs.append((generate(load, seed=seed, requests=150), design, what))
    return [_logged(requests, design, what) for requests, design, what in runs]


def _logged(requests: Requests, design: Design, what: str) -> tuple[list, float, float, dict,
                                                                     str]:
    run = logged_run(requests, design)
    cls = requests.classes[0]
    f = figures(run)
    return (event_log(run), cls.ttft_s, cls.tpot_s, {k: getattr(f, k) for k in LOG_KEYS}, what)


@cache
def _log_drawn(seed: int) -> list[tuple[list, float, float, dict, str]]:
    """Two runs of drawn loads (rate, lengths, SLOs, arrivals), logged as the visible ones."""
    r = random.Random(seed)
    out = []
    for design in (Design(), Design(buckets=(("chat", 8.0, 5.0),))):
        load = Load(rate_rps=r.choice([3.0, 6.0, 9.0, 12.0]),
                    input_len=f"lognormal:{r.randrange(200, 1200)},0.8",
                    output_len=f"exp:{r.randrange(20, 120)}",
                    classes=[SLOClass("chat", 1.0, 0, r.choice([0.2, 0.4, 0.8]),
                                      r.choice([0.02, 0.03, 0.05]))])
        requests = generate(load, seed=r.randrange(1, 2**31), requests=r.randrange(60, 160))
        out.append(_logged(requests, design, f"{DRAWN}: {len(requests)} requests"))
    return out


def _log_hint(key: str, got: float, events: list, ttft_slo: float, tpot_slo: float) -> str:
    arrival, tokens, rejected = {}, {}, set()
    for t, i, kind in events:
        if kind == "arrival":
            arrival[i] = t
        elif kind == "token":
            tokens.setdefault(i, []).append(t)
        else:
            rejected.add(i)
    ids = sorted(tokens)
    if key.startswith("itl"):
        means = [np.mean(np.diff(tokens[i])) for i in ids if len(tokens[i]) > 1]
        if means and close(got, float(np.percentile(means, int(key[-2:]))), rel=1e-9):
            return ("That is a percentile of each request's mean gap: pool every gap between "
                    "two tokens, of every request, then take the percentile.")
    if key.startswith("tpot"):
        per = [(tokens[i][-1] - arrival[i]) / (len(tokens[i]) - 1) for i in ids
               if len(tokens[i]) > 1]
        if per and close(got, float(np.percentile(per, int(key[-2:]))), rel=1e-9):
            return "TPOT starts at the first token, not at the arrival."
        per = [(tokens[i][-1] - tokens[i][0]) / len(tokens[i]) for i in ids
               if len(tokens[i]) > 1]
        if per and close(got, float(np.percentile(per, int(key[-2:]))), rel=1e-9):
            return "After the first token come n - 1 more, not n."
        return "Only requests of two or more tokens have a TPOT."
    if key.startswith("ttft"):
        values = np.array([tokens[i][0] - arrival[i] for i in ids])
        q = int(key[-2:])
        if close(got, float(np.percentile(values, q, method="nearest")), rel=1e-9):
            return "Percentiles here are numpy's default: linear interpolation."
        return "Work one request out by hand from the log and compare it with your code's."
    if key == "goodput_rps":
        start = min(arrival.values())
        end = max([tokens[i][-1] for i in ids] + [arrival[i] for i in rejected])
        met = 0
        for i in ids:
            ttft = tokens[i][0] - arrival[i]
            n = len(tokens[i])
            tpot = (tokens[i][-1] - tokens[i][0]) / (n - 1) if n > 1 else 0.0
            met += ttft <= ttft_slo and tpot <= tpot_slo
        if close(got, len(ids) / (end - start), rel=1e-9):
            return "Goodput counts only the requests within both SLOs."
        if close(got, met / (max(arrival.values()) - start), rel=1e-9):
            return "The span runs from the first arrival to the last end, not the last arrival."
        return ("Count, by hand, which of the first few requests met both SLOs, and check what "
                "a single-token request and a rejected one do to your count and your span.")
    return ""


def check_log_figures(log_figures: Callable) -> str:
    """Exercise 10: ``log_figures(events, ttft_slo_s, tpot_slo_s) -> dict`` with the p50 and
    p95 of TTFT, ITL and TPOT and the goodput, as the library computes them for the run the
    log was written from (to a millionth)."""
    cases = _log_cases()
    for events, ttft_slo, tpot_slo, want, what in cases + drawn(_log_drawn, 10):
        shown = f"<{what}: {len(events):,} events>, {ttft_slo:g}, {tpot_slo:g}"
        got = call("log_figures", log_figures, list(events), ttft_slo, tpot_slo)
        if not isinstance(got, dict) or any(k not in got for k in LOG_KEYS):
            raise AssertionError(f"log_figures({shown}) returned {fmt(got)}: return a dict with "
                                 f"the keys {', '.join(LOG_KEYS)}")
        for key in LOG_KEYS:
            value = as_number("log_figures", shown, got[key], f"a number for {key!r}")
            if not close(value, float(want[key]), rel=1e-6, abs_tol=1e-12):
                unit = "requests/s" if key == "goodput_rps" else "s"
                raise AssertionError(
                    f"log_figures({shown}): {key} is {value:.6g} {unit}, expected "
                    f"{want[key]:.6g} {unit}. "
                    + _log_hint(key, value, events, ttft_slo, tpot_slo))
    return passed("check_log_figures", {"logs": len(cases)})


# --------------------------------------------------------------------------- exercise 12

#: What a router must reach on the document load: TTFT p50 at most, prefix hits at least,
#: TTFT p95 at most.
ROUTER_TARGETS = {"ttft_p50_s": 0.100, "prefix_hit_share": 0.50, "ttft_p95_s": 0.300}
ROUTER_DESIGN = Design(replicas=4)


def router_run(choose: Callable, seed: int | None = None) -> tuple[dict, int]:
    """Serve the document load on 4 replicas of Llama 3.1 8B on A100s with ``choose`` as the
    router (plain data in, a replica index out); return the figures the targets read and the
    number of decisions. ``seed``: the load's sessions drawn from it (default: the exercise's
    own load)."""
    router = FunctionRouter(choose)
    load = document_sessions() if seed is None else document_sessions(seed=seed)
    run = simulate(load, ROUTER_DESIGN, router=router)
    f = figures(run)
    return ({"ttft_p50_s": f.ttft_p50, "ttft_p95_s": f.ttft_p95,
             "prefix_hit_share": run.prefix_hit_tokens / max(run.prefix_lookup_tokens, 1),
             "completed": f.completed}, router.decisions)


def check_router(choose: Callable) -> str:
    """Exercise 12: ``choose(request, replicas) -> index``, graded by the run it routes: the
    simulator runs here; each decision calls the learner's function across the boundary."""
    def remote(request: dict, replicas: list[dict]):
        got = call("choose", choose, request, replicas)
        allowed = [r["index"] for r in replicas]
        if isinstance(got, bool) or not isinstance(got, int) or got not in allowed:
            shown_req = {k: (v[:3] + ["..."] if isinstance(v, list) and len(v) > 3 else v)
                         for k, v in request.items()}
            raise AssertionError(f"choose({fmt(shown_req)}, <{len(replicas)} replicas>) "
                                 f"returned {fmt(got)}: return the index of one of the "
                                 f"replicas you were given ({', '.join(map(str, allowed))}).")
        return got

    result, decisions = router_run(remote)
    _router_targets(result, "the document load")
    for seed in drawn(lambda s: [s % 2**31], 12):  # the same kind of load, other sessions
        _router_targets(router_run(remote, seed)[0],
                        f"the document load drawn for this grading (seed {seed})")
    return (f"check_router: all 3 targets met on the document load ({decisions:,} routing "
            "decisions). Well done!")


def _router_targets(result: dict, load: str) -> None:
    p50, p95 = result["ttft_p50_s"], result["ttft_p95_s"]
    hits = result["prefix_hit_share"]
    figures_line = (f"TTFT p50 {p50 * 1e3:.0f} ms, p95 {p95 * 1e3:.0f} ms, {hits:.0%} of "
                    "prompt tokens found in cache")
    if hits < ROUTER_TARGETS["prefix_hit_share"]:
        raise AssertionError(
            f"Your router served {load} with {figures_line}: below the "
            f"{ROUTER_TARGETS['prefix_hit_share']:.0%} target for cache hits. Where is a "
            "turn's document most likely still cached?")
    if p50 > ROUTER_TARGETS["ttft_p50_s"]:
        raise AssertionError(
            f"Your router served {load} with {figures_line}: the p50 is above the "
            f"{ROUTER_TARGETS['ttft_p50_s'] * 1e3:.0f} ms target. What does a cache hit save "
            "the typical request, and how many of them get one?")
    if p95 > ROUTER_TARGETS["ttft_p95_s"]:
        raise AssertionError(
            f"Your router served {load} with {figures_line}: the p95 is above the "
            f"{ROUTER_TARGETS['ttft_p95_s'] * 1e3:.0f} ms target. Is every replica doing its "
            "share, or do some queue while others idle?")
