"""The memo of serving runs: a kept run is the run simulated again, judged by the caller's own
SLOs, and what the key leaves out is what the simulator never reads."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.cluster.faults import Fault
from schedatrix.serving.cluster.routing import RoundRobin
from schedatrix.serving.figures.metrics import figures, met_slo
from schedatrix.serving.load.requests import SLOClass
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.sim import memo
from schedatrix.serving.sim.simulate import simulate

ARRAYS = ("status", "arrival_s", "scheduled_s", "first_token_s", "done_s", "preemptions",
          "replica")


def chat(tpot_s=0.1, ttft_s=1.0, name="chat", priority=0, share=1.0):
    return SLOClass(name, share, priority=priority, ttft_s=ttft_s, tpot_s=tpot_s)


def load(*classes, rate=9.0, requests=400, seed=0):
    """A replica's worth of chat at a rate that queues (so the SLOs are missed sometimes)."""
    return generate(Load(rate_rps=rate, input_len="lognormal:900,0.8",
                         output_len="lognormal:150,0.8", classes=classes or (chat(),)),
                    seed, requests=requests)


def same_run(a, b) -> bool:
    return (all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in ARRAYS)
            and all(np.array_equal(x, y)
                    for x, y in zip(a.gaps.arrays(), b.gaps.arrays(), strict=True))
            and (a.reasons, a.kv_peak_share, a.iterations, a.events)
            == (b.reasons, b.kv_peak_share, b.iterations, b.events))


def fresh(requests, design, **kw):
    with memo.off():
        return simulate(requests, design, **kw)


def test_a_kept_run_is_the_run_simulated_again():
    req, design = load(), Design(model="llama-3.1-8b")
    first = simulate(req, design)
    again = simulate(req, design)
    assert memo.stats()["hits"] == 1 and memo.stats()["runs"] == 1
    assert again is not first and again.requests is req
    assert same_run(again, fresh(req, design)) and same_run(first, again)
    assert memo.stats()["saved_s"] > 0
    assert figures(again) == figures(fresh(req, design))


def test_a_run_under_another_tpot_slo_is_shared_and_judged_by_the_callers_thresholds():
    loose, strict = load(chat(tpot_s=0.1)), load(chat(tpot_s=0.02))
    design = Design(model="llama-3.1-8b")
    a = simulate(loose, design)
    b = simulate(strict, design)
    assert memo.stats()["hits"] == 1               # the same arrivals: simulated once
    assert b.requests is strict and b.requests.classes[0].tpot_s == 0.02
    assert np.array_equal(met_slo(b), met_slo(fresh(strict, design)))
    # and the thresholds matter here: the strict SLO is missed more (the check could fail)
    assert met_slo(b).mean() < met_slo(a).mean()


@pytest.mark.parametrize("knobs", [
    {},
    {"replicas": 2, "router": "power-of-two"},
    {"prefill_replicas": 1, "decode_replicas": 1, "replicas": 0},
    {"shed_ttft": True, "priority_preemption": True, "max_queue": 30},
    {"buckets": (("batch", 2.0, 4.0),), "preemption": "swap", "max_batch": 8},
])
def test_the_simulator_never_reads_a_tpot_threshold(knobs):
    """What the key leaves out: two classes of different priorities, every TPOT threshold
    changed, the memo off: the same run, on every kind of front door and replica."""
    design = Design(model="llama-3.1-8b", **knobs)

    def two(tpot):
        return load(chat(tpot_s=tpot, share=0.6), chat(tpot_s=tpot * 3, name="batch",
                                                      priority=1, share=0.4), rate=12.0)

    assert same_run(fresh(two(0.1), design), fresh(two(0.01), design))
    assert same_run(fresh(two(0.1), design), fresh(load(chat(tpot_s=None, share=0.6), chat(
        tpot_s=None, name="batch", priority=1, share=0.4), rate=12.0), design))


def test_a_ttft_threshold_is_part_of_the_key_since_shedding_reads_it():
    design = Design(model="llama-3.1-8b", shed_ttft=True)
    tight, loose = load(chat(ttft_s=0.2), rate=14.0), load(chat(ttft_s=5.0), rate=14.0)
    a, b = simulate(tight, design), simulate(loose, design)
    assert memo.stats()["hits"] == 0
    assert a.reasons != b.reasons                  # shedding read it: the runs differ
    assert same_run(b, fresh(loose, design))


def test_a_name_or_a_price_shares_a_run_and_every_other_knob_does_not():
    req, design = load(), Design(model="llama-3.1-8b")
    simulate(req, design)
    simulate(req, design.with_(name="the same design"))
    simulate(req, dataclasses.replace(design, price_per_gpu_hour=9.0))
    assert memo.stats()["hits"] == 2
    other = simulate(req, design.with_(max_batched_tokens=1024))
    assert memo.stats()["hits"] == 2 and memo.stats()["runs"] == 2
    assert same_run(other, fresh(req, design.with_(max_batched_tokens=1024)))
    assert not same_run(other, fresh(req, design))


def test_the_router_seed_faults_and_implementation_are_part_of_the_key():
    req = load()
    design = Design(model="llama-3.1-8b", replicas=3, router="power-of-two")
    reseeded = dataclasses.replace(req, meta={**req.meta, "seed": 7})
    a, b = simulate(req, design), simulate(reseeded, design)
    crash = (Fault("worker", 0, 10.0, 20.0),)
    c = simulate(req, design, faults=crash)
    d = simulate(req, design, implementation="reference")
    assert memo.stats() == {"runs": 4, "requests": 4 * len(req), "hits": 0, "misses": 4,
                            "saved_s": 0.0}
    assert not same_run(a, b) and not same_run(a, c)
    assert same_run(c, fresh(req, design, faults=crash))
    fa, fd = figures(a).as_dict(), figures(d).as_dict()     # the two simulators agree, as
    assert all(fa[k] == fd[k] or np.isclose(fa[k], fd[k], rtol=1e-9) for k in fa)   # they must


def test_a_custom_router_is_never_kept():
    req, design = load(), Design(model="llama-3.1-8b", replicas=2)
    simulate(req, design, router=RoundRobin(0))
    simulate(req, design, router=RoundRobin(0))
    assert memo.stats() == {"runs": 0, "requests": 0, "hits": 0, "misses": 0, "saved_s": 0.0}


def test_changing_a_run_handed_out_changes_no_other():
    req, design = load(), Design(model="llama-3.1-8b")
    first = simulate(req, design)
    truth = fresh(req, design)
    first.done_s[:] = 0.0
    first.reasons.clear()
    second = simulate(req, design)
    assert same_run(second, truth)
    second.first_token_s[:] = -1.0
    assert same_run(simulate(req, design), truth)


def test_the_memo_holds_at_most_its_bound_dropping_the_oldest(monkeypatch):
    monkeypatch.setattr(memo, "MAX_REQUESTS", 1000)
    design = Design(model="llama-3.1-8b")
    loads = [load(seed=s) for s in range(4)]       # 400 requests each
    for req in loads:
        simulate(req, design)
    assert memo.stats()["requests"] <= 1000 and memo.stats()["runs"] == 2
    simulate(loads[3], design)                     # the newest is kept
    simulate(loads[0], design)                     # the oldest was dropped
    assert memo.stats()["hits"] == 1
    big = load(requests=1200)
    simulate(big, design)                          # bigger than the bound: never kept
    assert all(len(r.requests) <= 1000 for r, _ in memo._RUNS.values())


def test_off_simulates_every_run_and_keeps_none():
    req, design = load(), Design(model="llama-3.1-8b")
    with memo.off():
        simulate(req, design)
        simulate(req, design)
    assert memo.stats() == {"runs": 0, "requests": 0, "hits": 0, "misses": 0, "saved_s": 0.0}
    simulate(req, design)
    assert memo.stats()["runs"] == 1


def test_arrays_of_python_objects_are_never_kept():
    """Their bytes are addresses, which a later, different load could reuse: no key."""
    req = load(requests=4)
    odd = dataclasses.replace(req, hash_offsets=np.arange(5),
                              hash_values=np.array([1, 2, 3, 4], dtype=object))
    design = Design(model="llama-3.1-8b")
    assert memo.key(odd, design, "fast", (), None) is None
    assert memo.key(req, design, "fast", (), None) is not None


def test_threads_simulating_at_once_share_the_memo_safely(monkeypatch):
    import threading

    monkeypatch.setattr(memo, "MAX_REQUESTS", 500)    # evicting while others read
    design = Design(model="llama-3.1-8b")
    loads = [load(requests=100, seed=s) for s in range(6)]
    truth = [fresh(r, design) for r in loads]
    errors = []

    def work(k):
        try:
            for j in range(12):
                r = loads[(k + j) % len(loads)]
                assert same_run(simulate(r, design), truth[(k + j) % len(loads)])
        except BaseException as e:   # noqa: BLE001 - handed to the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert memo.stats()["requests"] <= 500
