"""The replay of a speculative-decoding row (:mod:`..published.spec_rows`): one request at a
time on the row's setup, speculating as the row did, its acceptance rate solved from the
acceptance length its source measured."""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design, build
from ..figures.record import COMPLETED
from ..load.requests import Requests
from ..perf.host import VLLM_HOST, HostCosts
from ..perf.model import PerfModel
from ..perf.spec_decode import SpecPerfModel
from ..published.spec_rows import SpecPublished, accept_from_length
from ..sim.engine import simulate_fast

__all__ = ["is_spec", "replay_spec", "SPEC_REQUESTS"]

#: Requests a row replays, one after another (each its own draws: their mean TPOT is the figure).
SPEC_REQUESTS = 16


def is_spec(row) -> bool:
    """Whether ``row`` is a speculative-decoding row (replayed here)."""
    return isinstance(row, SpecPublished)


def design_of(row: SpecPublished) -> Design:
    """The design ``row`` ran: one replica of one sequence at a time, on vLLM 0.10's profile
    (V1, synchronous), speculating as the row says (a ``draft`` row with its ``draft_model``)."""
    spec = {} if row.spec_method == "none" else dict(
        spec_method=row.spec_method, spec_tokens=row.spec_tokens,
        spec_accept=accept_from_length(row.accept_length, row.spec_tokens))
    if row.spec_method == "draft":
        spec["draft_model"] = row.draft_model or None
    return Design(model=row.model, gpu=row.gpu, tp=row.tp, max_batch=1, engine="vllm-0.10",
                  cuda_graphs=row.cuda_graphs, dtype=row.dtype, client_path="none", **spec)


def replay_spec(row: SpecPublished, host: HostCosts = VLLM_HOST) -> float:
    """The model's mean TPOT (ms) for ``row``: SPEC_REQUESTS requests, each arriving after the
    last has ended, on the row's step-time model with vLLM's host costs ``host``."""
    if row.kind != "spec_itl":
        raise InputError(f"validation row {row.id}: kind {row.kind!r}; allowed: spec_itl")
    n = SPEC_REQUESTS
    design = design_of(row)
    built = build(design)
    perf = PerfModel(row.model, row.gpu, tp=row.tp, cuda_graphs=row.cuda_graphs, host=host,
                     dtype=row.dtype)
    if row.spec_method != "none":
        perf = SpecPerfModel(perf, design.spec())
    # far apart: each request runs alone (the next arrives after the last has ended)
    requests = Requests(np.arange(n) * 1000.0, np.full(n, row.input_tokens, np.int64),
                        np.full(n, row.output_tokens, np.int64), np.zeros(n, np.int16))
    run = simulate_fast(requests, perf, built.config, built.layout, design.policy())
    if not (run.status == COMPLETED).all():
        raise InputError(f"validation row {row.id}: not every request completed")
    tpot = (run.done_s - run.first_token_s) / max(row.output_tokens - 1, 1)
    return float(np.mean(tpot)) * 1e3
