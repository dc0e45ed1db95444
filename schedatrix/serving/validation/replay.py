"""The validation against published measurements: replay each row of
:mod:`schedatrix.serving.published.rows` on the simulator and compare (docs/serving-validation.md).

``check(row)`` gives the model's figure, the ratio to the published one and whether it lies in
the row's band. Two terms of the host's costs (:mod:`..perf.host`) are fitted here, each to the
one row marked as calibrating it, because no profile in ``../shared/serving-data`` times the
host: ``calibrate("step_s")`` (the host's time per iteration) and ``calibrate("dispatch_s")``
(its dispatch of one eager kernel); tools/calibrate_serving.py writes both into
:mod:`..perf.host`, and every other row tests them. Every replay builds its step-time model as
the command line does (``Design.perf``, the fit's host costs passed in).

``online_start_study()`` replays NIM's online TTFT rows (AIPerf's closed loop) with the users
starting together (as AIPerf's concurrency mode does, the validation's replay), spread evenly
and at random phases (:data:`STARTS`);
``gemm_checks()`` holds the matmul roofline to DeepGEMM's FP8 table
(:mod:`..published.fp8_gemm`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design, build
from ..figures.metrics import gap_quantiles
from ..figures.record import COMPLETED
from ..load.lengths import Fixed, Uniform, draw_lengths
from ..load.requests import ClosedLoop, Requests
from ..perf.catalog import gpu as gpu_of
from ..perf.engines import ENGINES
from ..perf.host import VLLM_HOST, HostCosts
from ..perf.kernels import efficiency, matmul_s
from ..published.fp8_gemm import DEEPGEMM_H800
from ..published.lora_rows import LORA_PUBLISHED, LoraPublished, is_lora
from ..published.rows import PUBLISHED, Published
from ..published.spec_rows import SPEC_PUBLISHED
from ..replica.lora import ADAPTER_META
from ..sim.engine import simulate_fast
from .spec import is_spec, replay_spec

__all__ = ["Check", "check", "validate", "replay", "calibrate", "calibrating", "engine_flags",
           "KINDS", "kind_of", "KindSummary", "Test", "tests", "summarize", "LEAN_LIMIT",
           "SHARE_AIM", "lone_request_s", "online_run", "online_start_study", "STARTS",
           "online_design", "replay_run",
           "gemm_checks", "lora_ratio"]

#: The engines whose rows are C++ sessions running a static batch with nothing scheduled
#: between its steps (TensorRT-LLM's gptSessionBenchmark, NIM's TensorRT-LLM engine at
#: concurrency 1, lmdeploy's TurboMind): no host time, every prompt prefilled in one step.
_STATIC_NO_HOST = ("tensorrt-llm", "tensorrt-llm-0.9", "lmdeploy-0.1")
_VLLM = ("vllm-0.10", "vllm-0.14")


def engine_flags(row: Published) -> tuple[bool, bool]:
    """(static batch, vLLM's host time) of the engine that measured ``row``: what the engine
    profiles of schedatrix/serving/perf/engines.py do not say (whether the row ran a static
    session, and whether vLLM's fitted host time applies); the rest (batch limits, capacity
    policy, async scheduling, the MoE route) reaches the replay from the row's profile through
    ``Design.perf`` and ``build``. An online ``tensorrt-llm`` row (a served load) is in-flight
    batching on that profile, with no host time."""
    if row.engine in _STATIC_NO_HOST:
        return not row.online, False
    if row.engine in _VLLM:
        return False, True
    raise InputError(f"validation row {row.id}: engine {row.engine!r}; allowed: "
                     f"{', '.join(_VLLM + _STATIC_NO_HOST)}")


@dataclass(frozen=True)
class Check:
    """One row against the model: its figure, their ratio (model / published), in band or not."""

    row: Published
    model: float

    @property
    def ratio(self) -> float:
        return self.model / self.row.value

    @property
    def within(self) -> bool:
        return abs(self.ratio - 1) <= self.row.band


def _host(row: Published, host: HostCosts) -> HostCosts:
    static, vllm_host = engine_flags(row)
    return host if vllm_host else dataclasses.replace(host, step_s=0.0, per_seq_s=0.0)


def replay(row: Published, host: HostCosts = VLLM_HOST) -> float:
    """The model's figure for ``row`` (in the row's unit), with vLLM's host costs ``host``."""
    if is_spec(row):                  # speculative decoding: its own replay (.spec_validation)
        return replay_spec(row, host)
    if is_lora(row):                  # many LoRA adapters against none: one load, two runs
        return lora_ratio(row, host)
    if row.kind == "fp8_speedup":     # the same batch in BF16 and in FP8: time over time
        bf16, fp8 = (_span(dataclasses.replace(row, dtype=d), host)[0] for d in ("bf16", "fp8"))
        return bf16 / fp8
    if row.online:
        return _online(row, host)
    if row.kind == "cpu_tier_ttft":    # a prompt's KV copied back from the CPU tier
        return _cpu_tier_ttft(row, host)
    if row.kind == "prefill_rate":     # prompts at once, one token each: prompt tokens a second
        return _prefill_rate(row, host)
    span, run, design = _span(row, host)
    n = row.batch
    if row.kind == "first_token":
        return float(np.mean(run.first_token_s - run.arrival_s)) * 1e3
    if row.kind == "inter_token":
        gaps = (run.done_s - run.first_token_s) / np.maximum(row.output_tokens - 1, 1)
        return float(np.mean(gaps)) * 1e3
    if row.kind == "batch_latency":
        return span * 1e3
    if row.kind == "batch_throughput":
        return n * row.output_tokens / span / design.gpus
    if row.kind == "batch_rate":
        return n * row.output_tokens / span
    raise InputError(f"validation row {row.id}: kind {row.kind!r}; allowed: first_token, "
                     "batch_latency, batch_throughput, batch_rate, inter_token, fp8_speedup")


def _profile(row: Published) -> str:
    """The engine profile (schedatrix/serving/perf/engines.py) a row replays on: its own
    engine's where there is one, else vLLM 0.10's (synchronous; lmdeploy's TurboMind, whose
    static session runs with no host time)."""
    return row.engine if row.engine in ENGINES else "vllm-0.10"


def _row_design(row: Published, **knobs) -> Design:
    """The design ``row`` replays on: its model, GPUs, engine profile, CUDA graphs and dtype,
    and ``knobs`` beside them."""
    return Design(model=row.model, gpu=row.gpu, tp=row.tp, engine=_profile(row),
                  cuda_graphs=row.cuda_graphs, dtype=row.dtype, **knobs)


def _span(row: Published, host: HostCosts):
    """(seconds until the batch's last request ends, the run, the design) of ``row``'s batch
    arriving at once."""
    n = row.batch
    requests = Requests(np.zeros(n), np.full(n, row.input_tokens, np.int64),
                        np.full(n, row.output_tokens, np.int64), np.zeros(n, np.int16))
    static = engine_flags(row)[0]      # a static batch: every prompt in one step
    # a static session (gptSessionBenchmark, TurboMind's) has no scheduler to overlap with the
    # GPU: synchronous, its host time zeroed by _host; a vLLM row runs its own profile's default
    design = _row_design(row, max_batch=max(n, 1),
                         max_batched_tokens=max(n * row.input_tokens, 8192) if static else None,
                         chunked_prefill=not static, client_path="none",
                         async_scheduling=False if static else None)
    run = replay_run(row, requests, design, host, "of the batch ")
    return float(np.max(run.done_s)), run, design


def replay_run(row: Published, requests: Requests, design: Design, host: HostCosts,
               which: str = "", hash_block_tokens: int = 0):
    """``requests`` on ``design``, stepped by its performance model as the command line builds
    it (``Design.perf``: the engine profile's async scheduling and serial part reach it) with
    ``row``'s host costs; every request must complete. ``hash_block_tokens``: prefix caching
    on, for requests that carry block hashes of that many tokens."""
    built = build(design, hash_block_tokens)
    perf = design.perf(host=_host(row, host))
    run = simulate_fast(requests, perf, built.config, built.layout, design.policy())
    if not (run.status == COMPLETED).all():
        raise InputError(f"validation row {row.id}: not every request {which}completed")
    return run


def lora_ratio(row: LoraPublished, host: HostCosts = VLLM_HOST) -> float:
    """A multi-LoRA row's ratio: its load (the requests its benchmark sent) with the row's
    adapters, one slot an adapter and every adapter in host memory (S-LoRA never makes a
    request wait for a slot), over the same load on the base model alone; each throughput is
    the completed requests over the time from the benchmark's start to the last response."""
    if row.kind != "lora_ratio":
        raise InputError(f"validation row {row.id}: kind {row.kind!r}; allowed: lora_ratio")
    arrival, inp, out, adapter = row.trace()
    rps = []
    for n in (row.adapters, 0):
        requests = Requests(arrival, inp, out, np.zeros(len(arrival), np.int16),
                            meta={ADAPTER_META: adapter} if n else {})
        lora = dict(lora_adapters=n, lora_rank=row.rank, max_loras=n, max_cpu_loras=n,
                    lora_targets=row.targets) if n else {}
        design = _row_design(row, client_path="none", **lora)
        run = replay_run(row, requests, design, host)
        rps.append(len(requests) / float(np.max(run.done_s)))
    return rps[0] / rps[1]


#: GB of host memory a ``cpu_tier_ttft`` row's replica gets for its CPU tier: room for the
#: prompt and every block pushed out after it (the source's size is not stated; it had 500 GB).
CPU_TIER_GB = 200.0
#: Tokens in each prompt that pushes a ``cpu_tier_ttft`` row's prompt out of HBM.
_FILLER_TOKENS = 100_000


def cpu_tier_run(row: Published, host: HostCosts = VLLM_HOST):
    """The run behind a ``cpu_tier_ttft`` row: its prompt alone (1 token out), then prompts of
    other text, one at a time, until together they outgrow HBM's KV cache, so that the
    prompt's blocks are pushed out into the CPU tier (least recently used first), then the
    prompt again, alone; prefix caching on in the design's 16-token blocks, no client path (the
    source times the engine with tokenization off). The last request is the row's."""
    design = _row_design(row, client_path="none", kv_offload_gb=CPU_TIER_GB)
    block = design.block_tokens
    built = build(design, hash_block_tokens=block)      # to size the prompts that push it out
    hbm = built.kv_blocks_per_replica * block
    filler = min(_FILLER_TOKENS, built.config.max_model_len - 1)   # each fits the context
    fillers = hbm // filler + 2                          # together more than HBM holds
    lengths = [row.input_tokens] + [filler] * fillers + [row.input_tokens]
    gap_s = 60.0                                          # each runs alone
    arrival = np.arange(len(lengths)) * gap_s
    blocks = [n // block for n in lengths]
    start = np.cumsum([0] + blocks[1:-1])                 # every filler's text its own
    hashes = [np.arange(blocks[0])] + [blocks[0] + start[j] + np.arange(b)
                                       for j, b in enumerate(blocks[1:-1])] + \
        [np.arange(blocks[0])]
    requests = Requests(arrival, np.array(lengths, np.int64), np.ones(len(lengths), np.int64),
                        np.zeros(len(lengths), np.int16),
                        hash_offsets=np.cumsum([0] + [len(h) for h in hashes]),
                        hash_values=np.concatenate(hashes).astype(np.int64))
    return replay_run(row, requests, design, host, hash_block_tokens=block)


def _prefill_rate(row: Published, host: HostCosts) -> float:
    """Prompt tokens a second of ``row.batch`` prompts sent at once, one output token each, no
    client path; with ``row.kv_offload_gb`` a CPU tier of that size, the prompts each of its own
    text (prefix caching on, so the tier is looked in, and nothing is found)."""
    n = row.batch
    design = _row_design(row, client_path="none", kv_offload_gb=row.kv_offload_gb)
    block = design.block_tokens                  # prefix-cache hashes of the design's blocks
    per = row.input_tokens // block
    hashes = {} if not row.kv_offload_gb else dict(
        hash_offsets=np.arange(n + 1) * per, hash_values=np.arange(n * per, dtype=np.int64))
    requests = Requests(np.zeros(n), np.full(n, row.input_tokens, np.int64),
                        np.ones(n, np.int64), np.zeros(n, np.int16), **hashes)
    run = replay_run(row, requests, design, host,
                     hash_block_tokens=block if row.kv_offload_gb else 0)
    return n * row.input_tokens / float(np.max(run.done_s))


def _cpu_tier_ttft(row: Published, host: HostCosts) -> float:
    """The time to the first token (ms) of :func:`cpu_tier_run`'s last request."""
    run = cpu_tier_run(row, host)
    return float(run.first_token_s[-1] - run.arrival_s[-1]) * 1e3


#: How :func:`online_run` may start an online row's users: together (AIPerf's burst, the
#: validation's replay), spread evenly over one request's time alone, or at random phases
#: over it (seeded by :data:`ONLINE_PHASES_SEED`).
STARTS = ("together", "even", "random")
#: Seed of the random phases of ``start="random"`` (the study's; no source's).
ONLINE_PHASES_SEED = 0


def online_run(row: Published, host: HostCosts = VLLM_HOST, start: str = "together"):
    """The run behind an online row: ``row.users`` clients in a closed loop, no think time,
    ``row.requests`` requests of the row's lengths on the profile of the engine that measured
    it (its batch limits, scheduling and capacity policy: TensorRT-LLM's guaranteed no evict)
    with the client path as for any design. The users start together, as AIPerf's concurrency
    mode sends them; ``start`` "even" spreads their first sends evenly over one request's time
    alone instead (:func:`lone_request_s`), "random" at random phases over it
    (:func:`online_start_study`). The published figures rule out a lockstep of all the users
    (:mod:`.lockstep_floor`); neither spread is sourced."""
    if start not in STARTS:
        raise InputError(f"start: {start!r}; allowed: {', '.join(STARTS)}")
    n = row.requests
    ramp_s = lone_request_s(row, host) if start != "together" and row.users > 1 else 0.0
    loop = ClosedLoop(row.users, ramp_s=ramp_s, ramp="random" if start == "random" else "even",
                      seed=ONLINE_PHASES_SEED)
    requests = Requests(np.zeros(n), *online_lengths(row), np.zeros(n, np.int16),
                        closed_loop=loop)
    engine_flags(row)                  # refuses an engine it does not know
    return replay_run(row, requests, online_design(row), host)


#: Seed of an online row's drawn lengths (``spread`` > 0): the source's benchmark drew its own
#: with a generator of its own, so the draws are this project's, of the same distribution.
ONLINE_LENGTHS_SEED = 0


def _lengths(tokens: int, spread: float, n: int, stream: int) -> np.ndarray:
    """``n`` lengths of ``tokens``, or with ``spread`` > 0 drawn uniformly from the whole
    numbers within ``spread`` of it, as vLLM's random dataset draws them with
    ``--random-range-ratio`` (``floor(tokens (1 - r))`` to ``ceil(tokens (1 + r))``), by the load
    model's own draw (:func:`..load.lengths.draw_lengths`)."""
    dist = Uniform(math.floor(tokens * (1 - spread)), math.ceil(tokens * (1 + spread))) \
        if spread else Fixed(tokens)
    return draw_lengths(dist, n, np.random.default_rng([ONLINE_LENGTHS_SEED, stream]))


def online_lengths(row: Published) -> tuple[np.ndarray, np.ndarray]:
    """(input, output) tokens of each of an online row's ``requests``, as :func:`online_run`
    sends them."""
    return (_lengths(row.input_tokens, row.spread, row.requests, 0),
            _lengths(row.output_tokens, row.spread, row.requests, 1))


def _online(row: Published, host: HostCosts, start: str = "together") -> float:
    """An online row's figure from :func:`online_run`, every request counted, as the row's
    client computes it: TTFT per request and AIPerf's ITL per request ((end - first token) /
    (output tokens - 1)), or ``vllm-bench``'s ITL over every gap between two tokens of every
    request, pooled; the row's ``statistic`` of them (NIM's sweep reads AIPerf's average over
    all its ``--request-count`` requests, with no warm-up:
    :data:`..published.rows._NIM_REQUESTS_PER_USER`). ``online_tok_s``: the output tokens over
    the time from the first send to the last end."""
    run = online_run(row, host, start)
    out = online_lengths(row)[1]
    if row.kind == "online_tok_s":
        return float(np.sum(out) / (np.max(run.done_s) - np.min(run.arrival_s)))
    stat = {"mean": np.mean, "median": np.median}.get(row.statistic)
    if stat is None:
        raise InputError(f"validation row {row.id}: statistic {row.statistic!r}; allowed: "
                         "mean, median")
    if row.kind == "online_ttft":
        return float(stat(run.first_token_s - run.arrival_s)) * 1e3
    if row.client == "vllm-bench":       # every gap of every request, pooled
        if row.statistic == "median":
            return gap_quantiles(run.gaps, (50,))[0] * 1e3
        first, step, count, weights = run.gaps.arrays()
        w = weights.sum(axis=1) * count                 # gaps of each run, all classes
        return float(np.sum(w * (first + step * (count - 1) / 2)) / np.sum(w)) * 1e3
    gaps = (run.done_s - run.first_token_s) / np.maximum(out - 1, 1)
    return float(stat(gaps)) * 1e3


def online_design(row: Published) -> Design:
    """The design an online row runs on: its model, GPUs, engine profile, graphs and dtype,
    with the client path every design has."""
    return _row_design(row)


def lone_request_s(row: Published, host: HostCosts = VLLM_HOST) -> float:
    """Seconds one request of ``row``'s lengths takes alone on the row's online design, from
    its send to its last token (the model's)."""
    one = Requests(np.zeros(1), np.array([row.input_tokens]), np.array([row.output_tokens]),
                   np.zeros(1, np.int16))
    run = replay_run(row, one, online_design(row), host)
    return float(run.done_s[0] - run.arrival_s[0])


def online_start_study(rows: tuple[Published, ...] | None = None) -> dict[str, KindSummary]:
    """NIM's online TTFT rows (``client`` aiperf) replayed with each of :data:`STARTS`: the
    users starting together (the validation's replay, as the rows' client runs), spread evenly
    over one request's time alone, and at random phases over it; ``{start: summary}``, each
    the online TTFT kind's. Shows how much of the TTFT lean is the lockstep of a deterministic
    closed loop, and that no start alone gives the published figures."""
    rows = tuple(r for r in PUBLISHED if r.kind == "online_ttft" and r.client == "aiperf") \
        if rows is None else rows
    out = {}
    for start in STARTS:
        checks = [Check(r, _online(r, VLLM_HOST, start)) for r in rows]
        out[start] = next(k for k in summarize(checks) if k.kind == "online TTFT")
    return out


def check(row: Published) -> Check:
    return Check(row, replay(row))


def validate(rows: tuple[Published, ...] = PUBLISHED + SPEC_PUBLISHED + LORA_PUBLISHED
             ) -> list[Check]:
    """Every row against the model."""
    return [check(r) for r in rows]


def calibrating(term: str) -> Published:
    """The row that calibrates ``term`` of the host's costs."""
    for r in PUBLISHED:
        if r.calibrates == term:
            return r
    raise InputError(f"calibrate: no row calibrates {term!r}; allowed: "
                     f"{', '.join(sorted({r.calibrates for r in PUBLISHED if r.calibrates}))}")


def calibrate(term: str, base: HostCosts = VLLM_HOST, tolerance_s: float = 1e-8) -> float:
    """The value of ``term`` (``step_s`` or ``dispatch_s`` of the host costs ``base``, the others
    kept) that makes the model's figure for its calibrating row equal the published one. The
    row's figure is a latency that grows with either, so a bisection finds it."""
    row = calibrating(term)

    def figure(value: float) -> float:
        return replay(row, dataclasses.replace(base, **{term: value}))

    low, high = 0.0, 0.02
    if figure(low) > row.value or figure(high) < row.value:
        raise InputError(f"validation row {row.id}: no {term} from 0 to 20 ms reproduces it")
    while high - low > tolerance_s:
        mid = (low + high) / 2
        low, high = (mid, high) if figure(mid) < row.value else (low, mid)
    return (low + high) / 2


#: The validation's aims (issue 32): no kind's mean signed error beyond 10% either way, even with
#: every row in band; 90% of all tests in band.
LEAN_LIMIT = 0.10
SHARE_AIM = 0.90

#: The kinds of row the validation reports on, each with the row kinds it holds: the error of
#: each kind is summarized on its own, so that a kind leaning one way is seen.
KINDS: dict[str, tuple[str, ...]] = {
    "first token": ("first_token",),
    "first token from the CPU tier": ("cpu_tier_ttft",),
    "whole batch": ("batch_latency",),
    "ITL": ("inter_token",),
    "throughput": ("batch_throughput", "batch_rate", "online_tok_s", "prefill_rate"),
    "FP8 speedup": ("fp8_speedup",),
    "online TTFT": ("online_ttft",),
    "online ITL": ("online_itl",),
    "speculative TPOT": ("spec_itl",),
    "LoRA throughput": ("lora_ratio",),
}


def kind_of(row: Published) -> str:
    """The kind (a key of ``KINDS``) of ``row``."""
    for name, kinds in KINDS.items():
        if row.kind in kinds:
            return name
    raise InputError(f"validation row {row.id}: kind {row.kind!r}; allowed: "
                     f"{', '.join(k for ks in KINDS.values() for k in ks)}")


@dataclass(frozen=True)
class Test:
    """One setup's test: the rows that share it (usually one) and their mean signed error."""

    checks: tuple[Check, ...]

    @property
    def row(self) -> Published:
        return self.checks[0].row

    @property
    def error(self) -> float:
        """The mean over the setup's rows of model / published - 1 (positive: the model's
        figure is above the published one)."""
        return float(np.mean([c.ratio - 1 for c in self.checks]))

    @property
    def within(self) -> bool:
        return abs(self.error) <= self.row.band


def tests(checks: list[Check]) -> list[Test]:
    """The tests in ``checks``: fitted rows left out, rows of one setup counted once."""
    groups: dict[tuple, list[Check]] = {}
    for c in checks:
        if not c.row.fitted:
            groups.setdefault(c.row.setup_key(), []).append(c)
    return [Test(tuple(g)) for g in groups.values()]


@dataclass(frozen=True)
class KindSummary:
    """One kind's tests: how many, the share in band, the mean signed error and the worst."""

    kind: str
    tests: tuple[Test, ...]

    @property
    def n(self) -> int:
        return len(self.tests)

    @property
    def in_band(self) -> float:
        return sum(t.within for t in self.tests) / self.n if self.n else float("nan")

    @property
    def mean_error(self) -> float:
        return float(np.mean([t.error for t in self.tests])) if self.n else float("nan")

    @property
    def leans(self) -> bool:
        """Whether the kind's mean signed error is beyond ``LEAN_LIMIT`` either way."""
        return self.n > 0 and abs(self.mean_error) > LEAN_LIMIT

    @property
    def worst(self) -> Test | None:
        return max(self.tests, key=lambda t: abs(t.error)) if self.n else None


def summarize(checks: list[Check]) -> list[KindSummary]:
    """Per kind of ``KINDS`` (in its order), the summary of its tests (fitted rows out, one
    setup once); a kind with no row has ``n`` 0."""
    by_kind: dict[str, list[Test]] = {k: [] for k in KINDS}
    for t in tests(checks):
        by_kind[kind_of(t.row)].append(t)
    return [KindSummary(k, tuple(v)) for k, v in by_kind.items()]


def gemm_checks(gpu: str = "h100-80gb") -> list[tuple[tuple, float]]:
    """Each row of DeepGEMM's FP8 table (:data:`..published.fp8_gemm.DEEPGEMM_H800`) with the
    TFLOP/s the calibrated matmul roofline gives it on ``gpu`` (the H800's SMs, FP8 peak and
    HBM are the H100 SXM's): a dense GEMM as one matmul, a grouped one as the MoE model runs its
    experts (:func:`..perf.moe._grouped_matmul_s`: every group's rows against its own weights,
    the roofline homogeneous). FP8 weights at the FP8 peak; no constant is fitted to it."""
    g, eff = gpu_of(gpu), efficiency(gpu)
    out = []
    for row in DEEPGEMM_H800:
        groups, m, n, k, _ = row
        total, mats = (m, 1) if groups == 0 else (groups * m, groups)
        s = matmul_s(eff, g, total, k, n, weight_bytes=1, tflops=g.tflops_fp8, weights=mats)
        out.append((row, 2.0 * total * n * k / s / 1e12))
    return out
