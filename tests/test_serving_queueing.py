"""The simulator against queueing theory (the spec's references).

With batching off (one request at a time per replica), fixed lengths and Poisson arrivals a
replica is an M/D/1 queue; with exponential service times, M/M/1. Each run is long (100,000
to 200,000 requests, fixed seeds, so the test is deterministic); the tolerances below are
what the simulator meets at those lengths (seed-to-seed spread measured at 100,000 requests:
about +-2.5% for M/D/1 at rho = 0.7).
"""

from __future__ import annotations

import numpy as np
import pytest
from serving_support import LinearCost, layout

from schedatrix.serving.figures.metrics import figures, time_series
from schedatrix.serving.load.requests import Requests
from schedatrix.serving.replica.knobs import SchedulerConfig
from schedatrix.serving.sim.engine import simulate_fast

#: 10 ms per iteration whatever it holds: a request of one prompt token and K output tokens
#: is served in exactly K x 10 ms (one prefill iteration, then K - 1 decode iterations).
TEN_MS = LinearCost(base=0.0, prefill_tok=0.01, attn=0.0, decode=0.01, ctx=0.0)
ONE_AT_A_TIME = SchedulerConfig(max_batch=1, max_batched_tokens=16)


def _poisson(n, rate, out, seed):
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1 / rate, n))
    return Requests(arrival, np.ones(n, np.int64), out.astype(np.int64), np.zeros(n, np.int16))


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_md1_mean_queue_time(rho):
    mu = 10.0                                     # 10 output tokens: 0.1 s of service
    n = 200_000
    run = simulate_fast(_poisson(n, rho * mu, np.full(n, 10), seed=7), TEN_MS, ONE_AT_A_TIME,
                        layout(1, 10**7))
    theory = rho / (2 * mu * (1 - rho))
    assert figures(run).queue_mean == pytest.approx(theory, rel=0.04 if rho > 0.7 else 0.03)


def test_mm1_mean_queue_time():
    # output tokens: exponential with mean 500 rounded up (geometric: its second moment is
    # within 0.1% of the exponential's), so service is exponential at 10 ms a token
    rng = np.random.default_rng(3)
    n = 100_000
    out = np.ceil(rng.exponential(500, n))
    mu = 1 / (0.01 * out.mean())
    lam = 0.5 * mu
    run = simulate_fast(_poisson(n, lam, out, seed=11), TEN_MS, ONE_AT_A_TIME, layout(1, 10**7))
    rho = lam / mu
    assert figures(run).queue_mean == pytest.approx(rho / (mu - lam), rel=0.05)


def test_littles_law_on_a_batching_replica():
    # any configuration: here continuous batching with mixed lengths on two replicas
    rng = np.random.default_rng(5)
    n = 40_000
    req = Requests(np.cumsum(rng.exponential(1 / 30, n)), rng.integers(50, 800, n),
                   rng.integers(1, 300, n), np.zeros(n, np.int16))
    run = simulate_fast(req, LinearCost(), SchedulerConfig(64, 1024), layout(2, 5000))
    f = figures(run)
    lam = f.arrived / f.span_s
    # L by sweeping arrivals and departures, against lambda x W
    assert f.mean_in_system == pytest.approx(lam * f.e2e_mean, rel=0.01)
    # L sampled at 400 instants (the time series), against lambda x W: an estimate
    ts = time_series(run, windows=400)
    assert ts.in_system.mean() == pytest.approx(lam * f.e2e_mean, rel=0.05)
