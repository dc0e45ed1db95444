"""Serve a load on a design: one run, by the fast simulator or the plain reference."""

from __future__ import annotations

import time

from ...errors import InputError
from ..cluster.deployment import Design, build
from ..cluster.faults import Resilience
from ..figures.record import Run
from ..load.requests import Requests
from . import memo
from .engine import simulate_fast
from .reference import simulate_reference

__all__ = ["simulate", "IMPLEMENTATIONS", "MOONCAKE_HASH_BLOCK_TOKENS"]

IMPLEMENTATIONS = {"fast": simulate_fast, "reference": simulate_reference}
#: Tokens per prefix hash block in Mooncake's traces (their ``hash_ids``), the default for a
#: load that carries hashes without saying their block size.
MOONCAKE_HASH_BLOCK_TOKENS = 512


def simulate(requests: Requests, design: Design, implementation: str = "fast",
             faults=(), resilience: Resilience | None = None, router=None) -> Run:
    """Serve ``requests`` on ``design`` (with ``faults`` injected). Prefix caching is on when
    the requests carry block hashes (``meta["hash_block_tokens"]`` tokens each, Mooncake's 512
    by default). The router's random choices are seeded by the load's seed. ``router``, when
    given, replaces the design's router by name: any object with ``choose(request, replicas,
    t)`` (for a plain function of plain data, :class:`~schedatrix.serving.cluster.routing.
    FunctionRouter`).

    Runs are kept by their inputs within a process (:mod:`.memo`): the same arrivals on the
    same design give a copy of the run already made; with a custom router, never."""
    if implementation not in IMPLEMENTATIONS:
        raise InputError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}, "
                         f"got {implementation!r}")
    k = None if router is not None else memo.key(requests, design, implementation, faults,
                                                 resilience)
    kept = memo.get(k, requests)
    if kept is not None:
        return kept
    started = time.process_time()
    hb = 0
    if requests.hash_offsets is not None:
        hb = int(requests.meta.get("hash_block_tokens", MOONCAKE_HASH_BLOCK_TOKENS))
    built = build(design, hash_block_tokens=hb)
    policy = design.policy(faults, resilience, int(requests.meta.get("seed", 0)))
    run = IMPLEMENTATIONS[implementation](requests, built.perf, built.config, built.layout,
                                          policy, router=router)
    memo.put(k, run, time.process_time() - started)
    return run
