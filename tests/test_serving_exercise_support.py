"""What the serving exercises stand on: a router from a plain function, recovery from a plain
series, the largest batch, the request event log and the document load."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.cluster.faults import parse_fault
from schedatrix.serving.cluster.routing import FunctionRouter
from schedatrix.serving.figures.metrics import figures
from schedatrix.serving.figures.record import COMPLETED
from schedatrix.serving.figures.recovery import recovery_from_series, recovery_series, recovery_time
from schedatrix.serving.load.prefixes import DOCUMENT_BLOCKS, document_sessions
from schedatrix.serving.load.requests import SLOClass
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.replica.kv_cache import largest_batch
from schedatrix.serving.sim.event_log import EVENT_KINDS, event_log, logged_run
from schedatrix.serving.sim.simulate import simulate


def test_a_function_router_of_least_work_makes_the_library_least_work_run():
    load = document_sessions(sessions=60, turns=3, seed=5)
    mine = FunctionRouter(lambda request, replicas: min(
        replicas, key=lambda r: (r["outstanding_tokens"], r["index"]))["index"])
    a = simulate(load, Design(replicas=3), router=mine)
    b = simulate(load, Design(replicas=3, router="least-work"))
    assert mine.decisions == len(load)
    np.testing.assert_array_equal(a.done_s, b.done_s)


def test_a_function_router_sees_plain_data_and_must_return_a_candidate():
    seen = []

    def spy(request, replicas):
        seen.append((request, replicas))
        return replicas[-1]["index"]

    simulate(document_sessions(sessions=5, turns=2, seed=1), Design(replicas=2),
             router=FunctionRouter(spy))
    request, replicas = seen[-1]
    assert set(request) == {"prompt_tokens", "session", "hashes", "time_s"}
    assert len(request["hashes"]) == DOCUMENT_BLOCKS and request["session"] == -1
    assert [set(r) for r in replicas] == [{"index", "outstanding_tokens",
                                          "prefix_hit_tokens"}] * 2
    assert any(r["prefix_hit_tokens"] > 0 for _, rs in seen for r in rs)
    for bad in (7, True, "0", 0.0):
        with pytest.raises(InputError, match="choose returned"):
            simulate(document_sessions(sessions=5, turns=2, seed=1), Design(replicas=2),
                     router=FunctionRouter(lambda request, replicas, bad=bad: bad))


def test_recovery_from_a_plain_series_is_recovery_time():
    load = Load(rate_rps=8.0, input_len="lognormal:800,0.8", output_len="exp:120",
                classes=[SLOClass("chat", 1.0, 0, 0.6, 0.05)])
    fault = parse_fault("worker:0@300+60")
    run = simulate(generate(load, seed=1, duration_s=900), Design(replicas=3), faults=[fault])
    windows, pre_p95, pre_good = recovery_series(run, fault.at_s)
    rec = recovery_from_series([w["since_fault_s"] for w in windows],
                               [math.nan if w["ttft_p95_s"] is None else w["ttft_p95_s"]
                                for w in windows],
                               [w["goodput_rps"] for w in windows], pre_p95, pre_good)
    assert rec == recovery_time(run, fault.at_s)[0] is not None
    assert recovery_from_series([0.0, 10.0], [9.0, 0.1], [5.0, 5.0], 0.2, 5.0, hold=2) is None
    assert recovery_from_series([0.0, 10.0, 20.0], [9.0, math.nan, 0.2], [5.0, 5.0, 4.0], 0.2,
                                5.0, hold=2) == 10.0


def test_paired_recovery_from_plain_windows_is_the_faults_recovery():
    """Exercise 11's windows (paired_series less its verdicts) give, through
    paired_recovery_from_series, the recovery fault_figures reads against the baseline."""
    from schedatrix.classroom.checking.checks_recovery import RECOVERY_KEYS, paired_windows
    from schedatrix.serving.figures.recovery import (
        fault_figures,
        paired_recovery,
        paired_recovery_from_series,
    )
    load = Load(rate_rps=8.0, input_len="lognormal:800,0.8", output_len="exp:120",
                classes=[SLOClass("chat", 1.0, 0, 0.6, 0.05)])
    fault = parse_fault("worker:0@300+60")
    requests = generate(load, seed=1, duration_s=900)
    baseline = simulate(requests, Design(replicas=3))
    run = simulate(requests, Design(replicas=3), faults=[fault])
    windows = paired_windows(run, baseline, fault.at_s)
    assert windows and all(tuple(w) == RECOVERY_KEYS for w in windows)

    def series(key):
        return [math.nan if w[key] is None else w[key] for w in windows]
    rec = paired_recovery_from_series([w["since_fault_s"] for w in windows],
                                      series("ttft_p95_s"), series("goodput_rps"),
                                      series("baseline_ttft_p95_s"),
                                      series("baseline_goodput_rps"))
    assert rec == paired_recovery(run, baseline, fault.at_s) \
        == fault_figures(run, baseline)[0].recovery_s == 10.0
    # the older (pre-fault level) rule: 80 s with vLLM 0.10's synchronous engine, which left
    # this fleet less headroom; with vLLM 0.14's async scheduling both rules read 10 s here
    assert fault_figures(run, baseline)[0].pre_level_recovery_s == 10.0
    assert paired_recovery_from_series([0.0, 10.0, 20.0], [9.0, math.nan, 0.3], [5.0, 0.0, 4.0],
                                       [0.2, math.nan, 0.25], [5.0, 0.0, 5.0], hold=2) == 10.0
    assert paired_recovery_from_series([0.0, 10.0], [0.3, 0.3], [5.0, 5.0], [0.2, 0.2],
                                       [5.0, 5.0], hold=1) is None


def test_largest_batch_counts_whole_blocks_and_refuses_bad_input():
    assert largest_batch(1600, 100, 60) == 10
    assert largest_batch(1600, 100, 61) == 9
    assert largest_batch(1615, 100, 60) == 10
    assert largest_batch(10**7, 10, 6) == 256
    assert largest_batch(100, 90, 20) == 0
    with pytest.raises(InputError, match="prompt_tokens"):
        largest_batch(1600, 0, 10)
    with pytest.raises(InputError, match="block_tokens"):
        largest_batch(1600, 10, 10, block_tokens=0)


def test_the_event_log_holds_every_token_and_gives_the_runs_figures():
    chat = SLOClass("chat", 1.0, 0, 0.4, 0.03)
    load = Load(rate_rps=6.0, input_len="lognormal:600,0.8", output_len="exp:60",
                classes=[chat])
    requests = generate(load, seed=4, requests=40)
    run = logged_run(requests, Design())
    events = event_log(run)
    assert events == sorted(events, key=lambda e: e[0])
    assert {k for _, _, k in events} <= set(EVENT_KINDS)
    tokens = sum(1 for e in events if e[2] == "token")
    assert (run.status == COMPLETED).all()
    assert tokens == int(requests.output_tokens.sum())
    assert sum(1 for e in events if e[2] == "arrival") == len(requests)
    first = {}
    for t, i, kind in events:
        if kind == "token":
            first.setdefault(i, t - run.arrival_s[i])
    assert np.percentile(list(first.values()), 50) == pytest.approx(figures(run).ttft_p50)
    with pytest.raises(InputError, match="token times"):
        event_log(simulate(requests, Design()))


def test_the_document_load_is_seeded_and_checks_its_input():
    a, b = document_sessions(seed=3), document_sessions(seed=3)
    np.testing.assert_array_equal(a.arrival_s, b.arrival_s)
    assert len(a) == 1600 and a.meta["hash_block_tokens"] == 512
    assert not np.array_equal(a.arrival_s, document_sessions(seed=4).arrival_s)
    for kwargs, name in (({"sessions": 0}, "sessions"), ({"turns": 0}, "turns"),
                         ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed")):
        with pytest.raises(InputError, match=name):
            document_sessions(**kwargs)
