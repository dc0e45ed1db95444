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


@pytest.mark.slow
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
    # the drills' Little's law (studies.queueing.in_system) is the same product
    from schedatrix.serving.studies.queueing import in_system
    assert f.mean_in_system == pytest.approx(in_system(lam, f.e2e_mean), rel=0.01)
    # L sampled at 400 instants (the time series), against lambda x W: an estimate
    ts = time_series(run, windows=400)
    assert ts.in_system.mean() == pytest.approx(lam * f.e2e_mean, rel=0.05)


# -- the lesson's laws (studies/queueing.py) on the real performance model -----------------

def test_service_times_are_what_a_one_at_a_time_replica_spends():
    from schedatrix.serving.cluster.deployment import Design
    from schedatrix.serving.load import Load, generate
    from schedatrix.serving.sim.simulate import simulate
    from schedatrix.serving.studies.queueing import service_s

    # the engine's service time: without the client path (which moves done_s, not the replica)
    for design in (Design(max_batch=1, client_path="none"),
                   Design(max_batch=1, max_batched_tokens=512, tp=2, client_path="none")):
        req = generate(Load(rate_rps=0.05, input_len="lognormal:1500,0.8",
                            output_len="lognormal:150,0.7"), 0, requests=300)
        run = simulate(req, design)
        alone = service_s(design, req.input_tokens, req.output_tokens)
        assert np.abs(run.done_s - run.scheduled_s - alone).max() < 1e-9


def test_pollaczek_khinchine_beside_the_simulator():
    from schedatrix.serving.cluster.deployment import Design
    from schedatrix.serving.load import Load, generate
    from schedatrix.serving.sim.simulate import simulate
    from schedatrix.serving.studies.queueing import mg1, service_s

    design = Design(max_batch=1)
    lengths = {"input_len": "lognormal:1000,0.8", "output_len": "lognormal:150,0.8"}
    mean_s = service_s(design, *(lambda r: (r.input_tokens, r.output_tokens))(
        generate(Load(rate_rps=1.0, **lengths), 99, requests=20_000))).mean()
    req = generate(Load(rate_rps=0.6 / mean_s, **lengths), 3, requests=100_000)
    law = mg1(0.6 / mean_s, service_s(design, req.input_tokens, req.output_tokens))
    assert law.rho == pytest.approx(0.6, rel=0.02) and law.service_cv > 0.5
    # M/D/1 waits (1 + cv^2) times less than M/G/1 at the same rho
    assert law.wait_s == pytest.approx(law.md1_wait_s * (1 + law.service_cv ** 2))
    f = figures(simulate(req, design))
    assert f.queue_mean == pytest.approx(law.wait_s, rel=0.04)
    assert f.mean_in_system == pytest.approx(f.arrived / f.span_s * f.e2e_mean, rel=0.01)


def test_the_laws_refuse_what_they_do_not_describe():
    from schedatrix.errors import InputError
    from schedatrix.serving.cluster.deployment import Design
    from schedatrix.serving.studies.queueing import mg1, service_s

    assert mg1(2.0, np.array([0.5, 0.6])).wait_s == float("inf")     # rho >= 1
    with pytest.raises(InputError, match="rate_rps"):
        mg1(0.0, np.array([0.5]))
    with pytest.raises(InputError, match="split"):
        service_s(Design(prefill_replicas=1, decode_replicas=1), [10], [10])
    with pytest.raises(InputError, match="equally long"):
        service_s(Design(), [10, 20], [10])
    from schedatrix.serving.studies.queueing import in_system
    with pytest.raises(InputError, match="in_system: rate_rps and mean_time_s"):
        in_system(-1.0, 2.0)
