"""The validation against published measurements: replay each row of
:mod:`schedatrix.serving.perf.published` on the simulator and compare (docs/serving-validation.md).

``check(row)`` gives the model's figure, the ratio to the published one and whether it lies in
the row's band. Two terms of the host's costs (:mod:`..perf.host`) are fitted here, each to the
one row marked as calibrating it, because no profile in ``../shared/serving-data`` times the
host: ``calibrate("step_s")`` (the host's time per iteration) and ``calibrate("dispatch_s")``
(its dispatch of one eager kernel); tools/calibrate_serving.py writes both into
:mod:`..perf.host`, and every other row tests them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design, build
from ..figures.record import COMPLETED
from ..load.requests import Requests
from ..perf.host import VLLM_HOST, HostCosts
from ..perf.model import PerfModel
from ..perf.published import PUBLISHED, Published
from ..sim.engine import simulate_fast

__all__ = ["Check", "check", "validate", "replay", "calibrate", "calibrating"]

#: The host of each framework's rows: vLLM's engine, or a C++ session running a static batch
#: with nothing scheduled between its steps (TensorRT-LLM's gptSessionBenchmark, lmdeploy's
#: TurboMind).
_NO_HOST = ("tensorrt-llm", "lmdeploy")


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
    if row.framework in _NO_HOST:
        return dataclasses.replace(host, step_s=0.0, per_seq_s=0.0)
    if row.framework == "vllm":
        return host
    raise InputError(f"framework: {row.framework!r}; allowed: vllm, {', '.join(_NO_HOST)}")


def replay(row: Published, host: HostCosts = VLLM_HOST) -> float:
    """The model's figure for ``row`` (in the row's unit), with vLLM's host costs ``host``."""
    if row.kind == "fp8_speedup":     # the same batch in BF16 and in FP8: time over time
        bf16, fp8 = (_span(dataclasses.replace(row, dtype=d), host)[0] for d in ("bf16", "fp8"))
        return bf16 / fp8
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


def _span(row: Published, host: HostCosts):
    """(seconds until the batch's last request ends, the run, the design) of ``row``'s batch
    arriving at once."""
    n = row.batch
    requests = Requests(np.zeros(n), np.full(n, row.input_tokens, np.int64),
                        np.full(n, row.output_tokens, np.int64), np.zeros(n, np.int16))
    static = row.framework in _NO_HOST      # a static batch: every prompt in one step
    design = Design(model=row.model, gpu=row.gpu, tp=row.tp, max_batch=max(n, 1),
                    max_batched_tokens=max(n * row.input_tokens, 8192) if static else 8192,
                    chunked_prefill=not static, cuda_graphs=row.cuda_graphs, dtype=row.dtype,
                    engine="vllm-0.10", client_path="none")  # as the rows were replayed so far
    built = build(design)
    perf = PerfModel(row.model, row.gpu, tp=row.tp, cuda_graphs=row.cuda_graphs,
                     host=_host(row, host), dtype=row.dtype)
    run = simulate_fast(requests, perf, built.config, built.layout, design.policy())
    if not (run.status == COMPLETED).all():
        raise InputError(f"validation row {row.id}: not every request of the batch completed")
    return float(np.max(run.done_s)), run, design


def check(row: Published) -> Check:
    return Check(row, replay(row))


def validate(rows: tuple[Published, ...] = PUBLISHED) -> list[Check]:
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
