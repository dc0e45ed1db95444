"""The audit asks the serving simulator for a capacity the note left blank (issue 12, item 8):
the pool's length sample is the same however the traces are read, the simulated figure is the
simulator's own answer on that sample, and the report says which capacities were simulated,
given or assumed, and why."""

import argparse
import json

import numpy as np
import pytest

from schedatrix.audit.audit import Settings, run_audit
from schedatrix.audit.capacity import MAX_PROFILE_BUCKETS, drift_profile
from schedatrix.audit.cli import add_audit_parser
from schedatrix.audit.note import parse_note
from schedatrix.audit.report import markdown, to_json, verdict
from schedatrix.audit.synth import constant_rate_csv, packaged_hour
from schedatrix.audit.tally import SAMPLE_PAIRS, Tally, _mix, row_code, tally_traces
from schedatrix.errors import InputError
from schedatrix.serving.studies.capacity import replica_capacity
from schedatrix.traces.convert import Chunk

NOTE = """
[fleet]
gpus = "8 x NVIDIA A100 80GB"
objectives = ["TTFT p99 < 1 s"]
[pools.small]
model = "Llama 3.2 3B"
capacity = "autoscaled, 1-4 replicas, 1 GPU/replica"
[pools.large]
model = "{large_model}"
capacity = "autoscaled, 1-2 replicas, {large_gpus} GPUs/replica"
{large_capacity}
"""


def note(large_model="Llama 3.1 8B", large_gpus=1, large_capacity="", objectives=None):
    text = NOTE.format(large_model=large_model, large_gpus=large_gpus,
                       large_capacity=large_capacity)
    if objectives is not None:
        text = text.replace('objectives = ["TTFT p99 < 1 s"]', f"objectives = {objectives}")
    return parse_note(text)


@pytest.fixture(scope="module")
def hour():
    return packaged_hour()


def tally_of(n, hour):
    return tally_traces(n, [(hour["large"], "large"), (hour["small"], "small")])


def mk(t_s, pool, input_tokens, output_tokens, lines):
    return Chunk(t_s=t_s, pool=pool, input_tokens=input_tokens, output_tokens=output_tokens,
                 ttft_s=None, e2e_s=None, ok=None, replica=None, lines=lines, bytes_read=0,
                 format_name="test")


def chunk(rng, lines, pools):
    n = len(lines)
    return mk(np.sort(rng.random(n)) * 100, pools, rng.integers(1, 5000, n),
              rng.integers(1, 900, n), lines)


def test_sample_is_the_least_hashes_whatever_the_chunks_or_the_merge_order():
    rng = np.random.default_rng(3)
    n = 12_000
    lines = np.arange(n)
    pools = rng.integers(0, 2, n)
    whole = chunk(rng, lines, pools)
    nt = note()
    one = Tally(nt)
    one.add(whole, file_index=0)
    many = Tally(nt)
    for s in np.array_split(np.arange(n), 7):
        many.add(mk(whole.t_s[s], pools[s], whole.input_tokens[s], whole.output_tokens[s],
                    lines[s]), file_index=0)
    keys = _mix(row_code(0, lines))
    for p in range(2):
        mine = np.flatnonzero(pools == p)
        least = mine[np.argsort(keys[mine])[:SAMPLE_PAIRS]]          # brute force
        for t in (one, many):
            s = t.pools[p].lengths
            assert len(s) == SAMPLE_PAIRS
            assert np.array_equal(s.input_tokens, whole.input_tokens[least])
            assert np.array_equal(s.output_tokens, whole.output_tokens[least])
    # two files' tallies merge to the same sample in either order
    a, b = Tally(nt), Tally(nt)
    a.add(whole, file_index=0)
    b.add(chunk(rng, lines, pools), file_index=1)
    ab, ba = Tally(nt), Tally(nt)
    for t, parts in ((ab, (a, b)), (ba, (b, a))):
        for part in parts:
            t.merge(part)
    for p in range(2):
        assert np.array_equal(ab.pools[p].lengths.keys, ba.pools[p].lengths.keys)
        assert np.array_equal(ab.pools[p].lengths.input_tokens, ba.pools[p].lengths.input_tokens)


def test_a_small_pool_keeps_every_pair():
    rng = np.random.default_rng(4)
    t = Tally(note())
    c = chunk(rng, np.arange(50), np.zeros(50, dtype=np.int64))
    t.add(c)
    s = t.pools[0].lengths
    assert len(s) == 50 and sorted(s.input_tokens) == sorted(c.input_tokens)
    assert len(t.pools[1].lengths) == 0


def test_blank_capacity_is_the_simulators_answer_on_the_pools_own_mix(hour):
    tally = tally_of(note(), hour)
    a = run_audit(tally, Settings(drift=False))
    for pool, model in (("small", "llama-3.2-3b"), ("large", "llama-3.1-8b")):
        p = a.pool(pool)
        assert p.replica_rps_source == "simulated" and not p.replica_rps_assumed
        sample = tally.pools[[c.pool_id for c in tally.note.pools].index(pool)].lengths
        direct = replica_capacity(model, "a100-80gb", 1, sample.input_tokens,
                                  sample.output_tokens, "ttft", 99.0, 1.0, False,
                                  requests=2000)
        assert p.replica_rps == direct.rate_rps > 0
        assert "at one steady rate" in p.replica_rps_basis
        assert f"one replica of {model} on 1 x a100-80gb" in p.replica_rps_basis
        assert "within TTFT p99 < 1 s" in p.replica_rps_basis
    # the code pool's long prompts leave an 8B replica less room than the 3B's chat
    assert a.pool("large").replica_rps < a.pool("small").replica_rps
    # the figures follow: needed replicas are sized by the simulated capacity
    small = a.pool("small")
    assert small.sizing.configured is not None
    assert "[capacity simulated]" in "\n".join(verdict(a))
    md = markdown(a)
    assert "(simulated: one replica of llama-3.2-3b" in md
    data = json.loads(json.dumps(to_json(a)))
    assert data["pools"]["small"]["replica_rps_source"] == "simulated"
    assert data["pools"]["small"]["replica_rps"] == small.replica_rps


def test_a_tighter_objective_gives_a_lower_capacity(hour):
    steady = Settings(drift=False)      # the objectives' effect, at one rate (cheaper to run)
    loose = run_audit(tally_of(note(objectives='["TTFT p99 < 2 s"]'), hour), steady).pool("small")
    tight = run_audit(tally_of(note(objectives='["TTFT p99 < 200 ms"]'), hour),
                      steady).pool("small")
    both = run_audit(tally_of(note(objectives='["TTFT p99 < 2 s", "E2E p50 < 1 s"]'), hour),
                     steady)
    assert tight.replica_rps < loose.replica_rps
    # with two objectives the capacity is the rate that holds both, and the basis names the
    # binding one
    b = both.pool("small")
    assert b.replica_rps <= loose.replica_rps
    assert "within E2E p50 < 1 s" in b.replica_rps_basis or b.replica_rps == loose.replica_rps


@pytest.mark.parametrize("kwargs, why", [
    ({"large_model": "DeepSeek V3"}, "the simulator's catalog has no model 'DeepSeek V3'"),
    ({"large_model": "Llama 3.1 70B", "large_gpus": 2},
     "one replica of llama-3.1-70b on 2 x a100-80gb can't be built: model: llama-3.1-70b does "
     "not fit"),
    ({"objectives": '["error rate < 1%"]'}, "the note states no TTFT or E2E objective"),
])
def test_what_the_simulator_cant_answer_is_assumed_and_says_why(hour, kwargs, why):
    a = run_audit(tally_of(note(**kwargs), hour), Settings(drift=False))
    p = a.pool("large")
    assert p.replica_rps_source == "assumed" and p.replica_rps_assumed and p.replica_rps == 3.0
    assert why in p.replica_rps_basis
    assert any(why in n and "assumed the first-pass 3 requests/s" in n for n in a.notes)
    assert "[capacity assumed]" in "\n".join(verdict(a))


def test_the_gpu_must_be_in_the_catalog(hour):
    text = NOTE.format(large_model="Llama 3.1 8B", large_gpus=1, large_capacity="").replace(
        "NVIDIA A100 80GB", "AMD MI300X")
    a = run_audit(tally_of(parse_note(text), hour))
    assert all(p.replica_rps_source == "assumed" for p in a.pools)
    assert "no GPU 'AMD MI300X'" in a.pool("small").replica_rps_basis


def test_given_and_noted_capacities_are_never_simulated(hour):
    tally = tally_of(note(large_capacity="replica_capacity = 4"), hour)
    a = run_audit(tally, Settings(replica_rps={"small": 9.5}))
    assert (a.pool("small").replica_rps, a.pool("small").replica_rps_source) == (9.5, "given")
    assert (a.pool("large").replica_rps, a.pool("large").replica_rps_source) == (4.0, "note")
    assert "(from the note)" in markdown(a) and "(given in the audit's settings)" in markdown(a)
    assumed = run_audit(tally, Settings(capacity="assume")).pool("small")
    assert (assumed.replica_rps, assumed.replica_rps_source) == (6.0, "assumed")


def test_bad_capacity_mode_is_named():
    with pytest.raises(InputError, match="capacity = 'guess': must be one of simulate, assume"):
        Settings(capacity="guess")


def test_cli_capacity_flag(tmp_path, hour, capsys):
    n = tmp_path / "note.toml"
    n.write_text(NOTE.format(large_model="Llama 3.1 8B", large_gpus=1, large_capacity=""))
    p = argparse.ArgumentParser(prog="schedatrix")
    add_audit_parser(p.add_subparsers())
    for mode, source in (("assume", "assumed"), ("simulate", "simulated")):
        args = p.parse_args(["audit", str(n), str(hour["large"]), str(hour["small"]),
                             "--pool-of", f"{hour['large']}=large",
                             "--pool-of", f"{hour['small']}=small", "--capacity", mode,
                             "--no-drift", "--json", "--out", str(tmp_path / mode)])
        assert args.func(args) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["pools"]["small"]["replica_rps_source"] == source


def test_a_csv_feeds_the_sample(tmp_path):
    f = constant_rate_csv(tmp_path / "c.csv", {"small": 2.0, "large": 50.0}, seconds=60,
                          input_tokens=321, output_tokens=45)
    t = tally_traces(note(), [(f, None)])
    small, large = (p.lengths for p in t.pools)
    assert len(small) == 120 and len(large) == SAMPLE_PAIRS       # 120 rows; 3,000 rows
    for s in (small, large):
        assert set(s.input_tokens.tolist()) == {321} and set(s.output_tokens.tolist()) == {45}


def test_the_drift_profile_is_each_whole_buckets_rate_over_the_mean():
    tally = Tally(note(), bucket_s=60)
    rng = np.random.default_rng(0)
    # 30 s into minute 0, then minutes 1-4 at 1, 3, 1 and 3 requests a second, ending 10 s
    # into minute 5: the two partial minutes are left out
    times = np.concatenate([np.arange(30, 60, 1.0)] + [
        60 * m + np.arange(0, 60, 1 / r) for m, r in ((1, 1), (2, 3), (3, 1), (4, 3))] +
        [np.arange(300, 310, 1.0)])
    n = len(times)
    tally.add(mk(times, np.zeros(n, np.int64), rng.integers(10, 100, n),
                 rng.integers(1, 50, n), np.arange(n)))
    prof = drift_profile(tally.pools[0], 60, float(times.min()), float(times.max()))
    assert [(s, e) for s, e, _ in prof] == [(0, 60), (60, 120), (120, 180), (180, 240)]
    assert [round(m, 6) for _, _, m in prof] == [0.5, 1.5, 0.5, 1.5]
    assert np.mean([m for _, _, m in prof]) == pytest.approx(1.0)
    assert drift_profile(tally.pools[0], 60, 30.0, 150.0) == ()      # one whole minute only
    assert drift_profile(tally.pools[1], 60, 30.0, 310.0) == ()      # the pool has nobody


def test_a_long_trace_keeps_its_busiest_hour_and_a_span_of_years_costs_nothing():
    tally = Tally(note(), bucket_s=60)
    rng = np.random.default_rng(1)
    # a quiet day at one request a minute, then one busy minute (30 requests) at 5,000 s, and
    # a lone request about 150 years later
    times = np.concatenate([np.arange(0, 86_400, 60.0) + 0.5, 5_000 + np.arange(30) / 30,
                            [4.8e9]])
    times.sort()
    n = len(times)
    tally.add(mk(times, np.zeros(n, np.int64), rng.integers(10, 100, n),
                 rng.integers(1, 50, n), np.arange(n)))
    prof = drift_profile(tally.pools[0], 60, float(times.min()), float(times.max()))
    assert len(prof) == MAX_PROFILE_BUCKETS
    assert max(m for _, _, m in prof) == pytest.approx(31 / (90 / 60))   # the busy minute
    assert np.mean([m for _, _, m in prof]) == pytest.approx(1.0)


def test_a_simulated_capacity_keeps_the_pools_drift_and_no_drift_compares(hour, tmp_path,
                                                                           capsys):
    """Issue 33: the audit's capacity is how much of the pool's own traffic fits, its per-minute
    swings kept; without them (--no-drift) the same replica reads a higher rate."""
    from schedatrix.serving.load.arrivals import Burst
    tally = tally_of(note(), hour)
    steady = run_audit(tally, Settings(drift=False))
    drifting = run_audit(tally)                        # drift is the default
    for pool, model in (("small", "llama-3.2-3b"), ("large", "llama-3.1-8b")):
        p, q = drifting.pool(pool), steady.pool(pool)
        k = [c.pool_id for c in tally.note.pools].index(pool)
        prof = drift_profile(tally.pools[k], tally.bucket_s, tally.t_min, tally.t_max)
        assert len(prof) >= 50 and p.rate_profile == prof
        sample = tally.pools[k].lengths
        direct = replica_capacity(model, "a100-80gb", 1, sample.input_tokens,
                                  sample.output_tokens, "ttft", 99.0, 1.0, False,
                                  requests=2000, bursts=tuple(Burst(*b) for b in prof))
        assert p.replica_rps == direct.rate_rps > 0
        assert "at its own per-minute rate swings" in p.replica_rps_basis
        assert p.replica_rps < q.replica_rps            # the swings cost capacity
    n = tmp_path / "note.toml"
    n.write_text(NOTE.format(large_model="Llama 3.1 8B", large_gpus=1, large_capacity=""))
    parser = argparse.ArgumentParser(prog="schedatrix")
    add_audit_parser(parser.add_subparsers())
    args = parser.parse_args(["audit", str(n), str(hour["large"]), str(hour["small"]),
                              "--pool-of", f"{hour['large']}=large",
                              "--pool-of", f"{hour['small']}=small", "--no-drift", "--json",
                              "--out", str(tmp_path / "out")])
    assert args.func(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pools"]["small"]["replica_rps"] == steady.pool("small").replica_rps
    with pytest.raises(InputError, match="drift"):
        Settings(drift="yes")
