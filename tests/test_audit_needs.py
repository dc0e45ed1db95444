"""Sizing with answers known by construction: constant rates, the autoscaler, the policies,
the routing what-if, and the streaming structures the figures rest on."""

import math
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedatrix.audit.audit import Settings, audit_files, run_audit
from schedatrix.audit.histogram import IntHistogram
from schedatrix.audit.needs import autoscaled, replicas_needed, size_pool
from schedatrix.audit.note import parse_note
from schedatrix.audit.sparse import Counts, group
from schedatrix.audit.synth import constant_rate_csv, write_rows
from schedatrix.audit.tally import tally_traces

NOTE_TEXT = """
[fleet]
gpus = "64 x NVIDIA H100 80GB"
price_per_gpu_hour = 2.0
[pools.small]
model = "Llama 3.2 3B"
capacity = "{small}"
replica_capacity = {small_rps}
[pools.large]
model = "Llama 3.1 70B"
capacity = "{large}"
replica_capacity = {large_rps}
"""


def note(small="autoscaled, 1-16 replicas, 1 GPU/replica",
         large="fixed, 4 replicas, 2 GPUs/replica", small_rps=6, large_rps=3):
    return parse_note(NOTE_TEXT.format(small=small, large=large, small_rps=small_rps,
                                       large_rps=large_rps))


def exact_need(rate, headroom, cap) -> int:
    return math.ceil(Fraction(str(rate)) * (1 + Fraction(str(headroom))) / Fraction(str(cap)))


@settings(max_examples=40, deadline=None)
@given(rate_quarters=st.integers(1, 120),
       headroom=st.sampled_from([0, 0.05, 0.1, 0.2, 0.25, 0.5]),
       cap=st.sampled_from([1, 2, 3, 4.5, 6, 7.5]))
def test_constant_rate_needs_exactly_ceil_rate_headroom_over_capacity(rate_quarters, headroom,
                                                                      cap):
    rate = rate_quarters / 4  # rate x 60 s is a whole number of requests per bucket
    n = note(small_rps=cap)
    with tempfile.TemporaryDirectory() as d:
        f = constant_rate_csv(Path(d) / "c.csv", {"small": rate, "large": 1.0}, seconds=600)
        a = audit_files(n, [(f, None)], Settings(headroom=headroom, route_below=None))
    small = a.pool("small")
    want = exact_need(rate, headroom, cap)
    assert len(a.duration_s) == 10 and (a.duration_s == 60).all()
    assert small.requests.tolist() == [rate * 60] * 10
    assert small.sizing.needed.tolist() == [want] * 10
    assert small.sizing.needed_gpu_hours == pytest.approx(want * 600 / 3600)
    assert small.mean_rps == pytest.approx(rate) and small.peak_to_average == pytest.approx(1)
    ideal = min(max(want, 1), 16)
    assert small.sizing.ideal.replicas.tolist() == [ideal] * 10
    assert small.sizing.configured.replicas.tolist() == [ideal] * 10
    assert small.sizing.configured.convergence == pytest.approx(1.0)


def test_a_fixed_pool_short_of_demand_reads_unmet_and_idle_exactly(tmp_path):
    # large: fixed 4 replicas x 3 req/s = 12 req/s against 15 req/s; small at 6 req/s on 1-16.
    f = constant_rate_csv(tmp_path / "c.csv", {"small": 6.0, "large": 15.0}, seconds=1200)
    a = audit_files(note(), [(f, None)], Settings(headroom=0.1, route_below=None))
    large = a.pool("large")
    c = large.sizing.configured
    assert c.replicas.tolist() == [4] * 20
    assert c.unmet_share == pytest.approx(1 - 12 / 15)
    assert not c.capacity_ok
    assert c.gpu_hours == pytest.approx(4 * 2 * 1200 / 3600)
    assert c.idle_gpu_hours == pytest.approx(0)
    assert large.sizing.needed.tolist() == [exact_need(15, 0.1, 3)] * 20   # 6 > max 4
    assert large.dollars(c.gpu_hours) == pytest.approx(c.gpu_hours * 2.0)
    small = a.pool("small").sizing
    assert small.needed.tolist() == [2] * 20    # ceil(6 x 1.1 / 6)
    assert small.configured.idle_gpu_hours == pytest.approx(2 * 1200 / 3600 * (1 - 6 / 12))
    assert a.unmet_share == pytest.approx(3 * 1200 / (21 * 1200))
    assert not a.capacity_ok


def test_replicas_needed_forgives_float_error_only():
    assert replicas_needed([5.0], 6, 0.2).tolist() == [1]      # 5 x 1.2 / 6 = 1 exactly
    assert replicas_needed([5.0001], 6, 0.2).tolist() == [2]
    assert replicas_needed([0.0, 0.1], 6, 0.1).tolist() == [0, 1]


def test_the_autoscaler_follows_need_one_delay_late_within_its_range():
    need = np.array([1, 10, 1, 3, 0, 2])
    assert autoscaled(need, 1, 4, 0).tolist() == [1, 4, 1, 3, 1, 2]
    assert autoscaled(need, 1, 4, 1).tolist() == [1, 1, 4, 1, 3, 1]
    assert autoscaled(need, 2, 4, 2).tolist() == [2, 2, 2, 4, 2, 3]


def test_policies_and_convergence_by_hand():
    cfg = note(small="autoscaled, 1-4 replicas, 1 GPU/replica").pool("small")
    # 4 buckets of 60 s at 1, 1, 10, 1 req/s; 6 req/s per replica; no headroom.
    req = np.array([60, 60, 600, 60])
    s = size_pool(cfg, req, req * 100, np.full(4, 60.0), headroom=0.0, delay_buckets=1)
    assert s.needed.tolist() == [1, 1, 2, 1]
    assert s.configured.replicas.tolist() == [1, 1, 1, 2]
    assert s.policies["max_warm"].replicas.tolist() == [4] * 4
    assert s.policies["average"].replicas.tolist() == [1] * 4    # mean 3.25 req/s -> 1
    assert s.ideal.replicas.tolist() == [1, 1, 2, 1]
    hours = 60 / 3600
    assert s.ideal.gpu_hours == pytest.approx(5 * hours)
    assert s.policies["max_warm"].convergence == pytest.approx(5 / 16)
    assert s.configured.convergence == pytest.approx(1.0)
    # the configured fleet serves 360 of the burst's 600: 240 unmet of 780
    assert s.configured.unmet_share == pytest.approx(240 / 780)
    assert s.policies["average"].unmet_share == pytest.approx(240 / 780)
    assert s.ideal.unmet_share == 0 and s.ideal.capacity_ok
    assert s.policies["average"].convergence == pytest.approx(5 / 4)
    assert not s.policies["max_warm"].convergence_ok
    # idle: max warm runs 24 req/s of capacity per bucket
    assert s.policies["max_warm"].idle_gpu_hours == pytest.approx(
        4 * hours * ((1 - 1 / 24) * 3 + (1 - 10 / 24)))
    assert s.ideal.served_tokens == pytest.approx(req.sum() * 100)


def test_routing_what_if_moves_exactly_the_short_requests(tmp_path):
    # large gets 4 req/s: 2 of them 100 input tokens, 2 of them 5,000; small 3 req/s.
    rows_t, rows_p, rows_i = [], [], []
    for sec in range(600):
        for k in range(4):
            rows_t.append(sec + 0.1 + k * 0.2)
            rows_p.append("large")
            rows_i.append(100 if k % 2 else 5000)
        for k in range(3):
            rows_t.append(sec + 0.15 + k * 0.3)
            rows_p.append("small")
            rows_i.append(300)
    f = write_rows(tmp_path / "r.csv", "timestamp_s,pool,input_tokens,output_tokens",
                   [np.array(rows_t), np.array(rows_p, dtype=object), np.array(rows_i),
                    np.full(len(rows_t), 10)], ["%.3f", "%s", "%d", "%d"])
    n = note(small="autoscaled, 1-2 replicas, 1 GPU/replica",
             large="autoscaled, 1-4 replicas, 2 GPUs/replica", small_rps=2, large_rps=1)
    a = audit_files(n, [(f, None)], Settings(headroom=0.0, route_below=1000))
    r = a.routing
    assert (r.source, r.target, r.threshold_tokens) == ("large", "small", 1000)
    assert r.moved_requests == 1200 and r.moved_share == pytest.approx(0.5)
    assert r.before["large"].needed.tolist() == [4] * 10
    assert r.after["large"].needed.tolist() == [2] * 10     # 2 req/s at 1 per replica
    assert r.before["small"].needed.tolist() == [2] * 10    # 3 req/s at 2 per replica
    assert r.after["small"].needed.tolist() == [3] * 10     # 5 req/s: above its max 2
    assert r.after["small"].configured.unmet_share == pytest.approx(1 / 5)
    # a threshold below every request moves nothing; one above every request moves all
    tally = tally_traces(n, [(f, None)], thresholds=[50, 10_000])
    none = run_audit(tally, Settings(headroom=0.0, route_below=50)).routing
    every = run_audit(tally, Settings(headroom=0.0, route_below=10_000)).routing
    assert none.moved_requests == 0 and every.moved_requests == 2400


def test_no_routing_without_a_small_and_large_pair(tmp_path):
    n = parse_note(NOTE_TEXT.format(small="fixed, 1 replicas, 1 GPU/replica",
                                    large="fixed, 1 replicas, 1 GPU/replica", small_rps=1,
                                    large_rps=1).replace("[pools.large]", "[pools.big]"))
    assert "the two pools are not one small-model and one large-model pool" in (
        n.beyond_first_pass[0])
    f = constant_rate_csv(tmp_path / "c.csv", {"small": 1.0, "big": 1.0}, seconds=120)
    a = audit_files(n, [(f, None)])
    assert a.routing is None
    assert any("No routing what-if" in x for x in a.notes)
    assert any("Beyond the standard first pass" in x for x in a.notes)
    routed = audit_files(n, [(f, None)], Settings(route_from="big", route_to="small"))
    assert routed.routing.source == "big"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3000), min_size=1, max_size=300),
       st.sampled_from([1, 10, 50, 90, 95, 99, 99.9, 100]))
def test_histogram_percentiles_are_exact_nearest_rank(values, q):
    h = IntHistogram()
    for part in np.array_split(np.array(values), 3):
        h.add(part)
    assert h.n == len(values)
    assert h.percentile(q) == np.percentile(values, q, method="inverted_cdf")
    assert h.mean() == pytest.approx(np.mean(values))


def test_histogram_cap_and_empty():
    h = IntHistogram(cap=100)
    h.add(np.array([5, 500, 7]))
    assert h.percentile(100) == 100 and h.percentile(50) == 7
    assert math.isnan(IntHistogram().percentile(50))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(-10_000, 10_000), min_size=1, max_size=40), min_size=1,
                max_size=6), st.sampled_from([1, 1000, 10**12]), st.booleans())
def test_sparse_counts_keys_in_any_order(batches, spread, sort):
    # spread 10**12 takes the sorting path of group(), 1 and 1000 the dense one (or the sorted
    # path when a batch is sorted); rows are numbered across batches, so a key's first row is
    # its least number and its last row its greatest, as a Counts merge keeps them
    c = Counts(2, 2)
    flat, rows = [], []
    for b in batches:
        keys = np.array(sorted(b) if sort else b, dtype=np.int64) * spread
        row = np.arange(len(flat), len(flat) + len(keys))
        c.add(*group(keys, [None, keys % 7], [row], [row]))
        flat += keys.tolist()
        rows += row.tolist()
    flat, rows = np.array(flat), np.array(rows)
    keys, values = c.items()
    assert keys.tolist() == sorted(set(flat.tolist()))
    for k, (n, s, first, neg_last) in zip(keys.tolist(), values.tolist(), strict=True):
        mine = flat == k
        assert (n, s) == (mine.sum(), int((flat[mine] % 7).sum()))
        assert (first, -neg_last) == (rows[mine].min(), rows[mine].max())
    other = Counts(2, 2)
    other.merge(c)
    other.merge(c)
    assert (other.items()[0] == keys).all()
    assert (other.items()[1][:, :2] == 2 * values[:, :2]).all()
    assert (other.items()[1][:, 2:] == values[:, 2:]).all()


def test_settings_refuse_bad_knobs():
    from schedatrix.errors import InputError

    with pytest.raises(InputError, match="headroom = -0.1"):
        Settings(headroom=-0.1)
    with pytest.raises(InputError, match="reaction delay = -1"):
        Settings(delay_buckets=-1)
    with pytest.raises(InputError, match="per-replica capacity for small = 0"):
        Settings(replica_rps={"small": 0})
    with pytest.raises(InputError, match="routing threshold = 0"):
        Settings(route_below=0)
