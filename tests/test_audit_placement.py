"""The audit plans its two pools within the fleet note's GPU count (issue 21): what they need at
the trace's peak, whether the configured ranges fit, the cheapest placement meeting the note's
objective, in audit.json and in a sentence of the report."""

import json

import numpy as np
import pytest

from schedatrix import examples
from schedatrix.audit.audit import Settings, run_audit
from schedatrix.audit.capacity import derive_capacity
from schedatrix.audit.note import load_note, parse_note
from schedatrix.audit.placement import plan_pools
from schedatrix.audit.report import markdown, to_json
from schedatrix.audit.synth import packaged_hour
from schedatrix.audit.tally import tally_traces


@pytest.fixture(scope="module")
def hour():
    return packaged_hour()


def _audit(note, hour, **settings):
    tally = tally_traces(note, [(hour["large"], "large"), (hour["small"], "small")])
    return run_audit(tally, Settings(**settings))


@pytest.fixture(scope="module")
def example(hour):
    return _audit(load_note(examples.path("fleet-note.toml")), hour)


def test_the_peak_need_is_the_sizing_of_each_pool_against_the_count(example):
    pl = plan_pools(example)
    assert pl.gpu_count == 8
    for placed, p in zip(pl.at_peak, example.pools, strict=True):
        need = max(1, int(p.sizing.needed.max()))
        assert placed.replicas == need and placed.gpus == need * p.config.gpus_per_replica
    assert pl.peak_gpus == sum(x.gpus for x in pl.at_peak)
    assert pl.peak_fits == (pl.peak_gpus <= 8)
    assert pl.configured_gpus == 4 * 1 + 2 * 2 and pl.configured_fits


def test_audit_json_and_the_report_carry_it(example):
    out = json.loads(json.dumps(to_json(example), default=float))["placement"]
    assert out["gpu_count"] == 8 and out["configured"] == {"gpus": 8, "fits": True}
    assert out["at_peak"]["gpus"] == sum(r["gpus"] for r in out["at_peak"]["pools"])
    assert {r["pool"] for r in out["cheapest"]["pools"]} == {"small", "large"}
    assert out["cheapest"]["gpus"] <= out["at_peak"]["gpus"]
    text = markdown(example)
    assert "## The pools within the fleet's GPUs" in text
    assert out["sentence"] in text and "of the fleet's 8 GPUs" in out["sentence"]
    assert "meeting TTFT p99 < 1 s" in out["sentence"]
    # Llama 3.1 70B in BF16 needs more than 2 x 80 GB: the report says so of the large pool
    assert any("does not fit on 2 x a100-80gb" in n for n in out["notes"])


def test_the_cheapest_placement_takes_the_size_with_the_fewest_gpus(hour):
    # an 8B pool configured at 2 GPUs a replica, its capacity left blank: the simulator answers
    # for every size, and the fewest GPUs at the peak wins
    text = examples.path("fleet-note.toml").read_text()
    text = text.replace('model = "Llama 3.1 70B"', 'model = "Llama 3.1 8B"').replace(
        'replica_capacity = "~3 requests/s per replica"', "")
    a = _audit(parse_note(text), hour)
    pl = plan_pools(a)
    large = a.pool("large")
    best = next(x for x in pl.cheapest if x.pool_id == "large")
    counts = {}
    for tp in (1, 2, 4, 8):
        ans = derive_capacity(a.note, large.config, large.lengths, gpus_per_replica=tp,
                              profile=large.rate_profile)
        if ans.rps:
            need = int(np.ceil(large.peak_rps * 1.1 / ans.rps * (1 - 1e-9)))
            counts[tp] = max(need, 1) * tp
    assert best.gpus == min(counts.values())
    assert best.gpus <= next(x for x in pl.at_peak if x.pool_id == "large").gpus


def test_told_to_assume_it_places_the_configured_sizes_only(hour):
    a = _audit(load_note(examples.path("fleet-note.toml")), hour, capacity="assume")
    pl = plan_pools(a)
    assert [(x.pool_id, x.gpus_per_replica) for x in pl.cheapest] == [
        (x.pool_id, x.gpus_per_replica) for x in pl.at_peak]
    assert all("told to assume" in n for n in pl.notes if "configured" in n)
    assert sum("told to assume" in n for n in pl.notes) == 2
