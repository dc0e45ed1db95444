"""NIM's online TTFT rows with the closed loop taken out: the same requests arriving at random.

The validation replays NIM's concurrency sweep as AIPerf runs it, a closed loop of users sent
together (:func:`.validation.online_run`); how the users' sends were spread in the measured runs
is not stated, and a deterministic closed loop keeps whatever collisions its start made
(:func:`.validation.online_start_study`). :func:`open_loop_ttft` asks the question without the
loop: the row's requests arriving as a Poisson process at the rate the loop itself settles at
(its users at random phases, waves three to eight), on the same design. Where the published
mean is far from this too, the start process is not why the row misses.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ..load.requests import Requests
from ..perf.host import VLLM_HOST
from ..published.rows import Published
from .replay import online_design, online_run, replay_run

__all__ = ["OpenLoop", "loop_rate_rps", "open_loop_ttft", "OPEN_LOOP_REQUESTS",
           "OPEN_LOOP_WARMUP", "OPEN_LOOP_SEED"]

#: Requests of the open-loop run, the first :data:`OPEN_LOOP_WARMUP` of them left out (the
#: run starts empty); the arrivals' seed.
OPEN_LOOP_REQUESTS = 4000
OPEN_LOOP_WARMUP = 500
OPEN_LOOP_SEED = 0
#: Waves of the closed loop whose sends give its rate (each wave: the next ``users`` sends).
_WAVES, _SKIP = 8, 2


@dataclass(frozen=True)
class OpenLoop:
    """A row's open-loop question: the loop's rate and the mean TTFT (s) of Poisson arrivals
    at it, beside the published mean (s)."""

    row: Published
    rate_rps: float
    ttft_s: float

    @property
    def error(self) -> float:
        """The open-loop mean over the published one, minus 1."""
        return self.ttft_s * 1e3 / self.row.value - 1


def loop_rate_rps(row: Published) -> float:
    """Requests a second the row's closed loop sends once settled: its users at random phases,
    the sends of waves three to eight over the time they span."""
    run = online_run(dataclasses.replace(row, requests=_WAVES * row.users), VLLM_HOST,
                     "random")
    sent = np.sort(run.arrival_s)[_SKIP * row.users:]
    return float((len(sent) - 1) / (sent[-1] - sent[0]))


def open_loop_ttft(row: Published) -> OpenLoop:
    """The row's requests (its fixed lengths) arriving as a Poisson process at
    :func:`loop_rate_rps`, on the row's design: their mean TTFT after the warm-up."""
    if not isinstance(row, Published) or row.kind != "online_ttft":
        raise InputError(f"row: {getattr(row, 'id', row)!r} is not an online TTFT row "
                         "(kind online_ttft)")
    rate = loop_rate_rps(row)
    n = OPEN_LOOP_REQUESTS
    gaps = np.random.default_rng(OPEN_LOOP_SEED).exponential(1.0 / rate, n)
    requests = Requests(np.cumsum(gaps), np.full(n, row.input_tokens, np.int64),
                        np.full(n, row.output_tokens, np.int64), np.zeros(n, np.int16))
    run = replay_run(row, requests, online_design(row), VLLM_HOST)
    ttft = (run.first_token_s - run.arrival_s)[OPEN_LOOP_WARMUP:]
    return OpenLoop(row, rate, float(ttft.mean()))
