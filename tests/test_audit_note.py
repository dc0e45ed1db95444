"""The fleet note: the example parses, every problem is reported at once, assumptions are said."""

from pathlib import Path

import pytest

from schedatrix.audit.note import ASSUMED_REPLICA_RPS, load_note, parse_note
from schedatrix.audit.objective import parse_objective
from schedatrix.errors import InputError

ROOT = Path(__file__).resolve().parents[1]

GOOD = """
[fleet]
gpus = "8 x NVIDIA A100 80GB"
[pools.small]
model = "Llama 3.2 3B"
capacity = "autoscaled, 1-4 replicas, 1 GPU/replica"
replica_capacity = 6
[pools.large]
model = "Llama 3.1 70B"
capacity = "autoscaled, 1-2 replicas, 2 GPUs/replica"
replica_capacity = "~3 requests/s per replica"
"""


def test_example_note_mirrors_the_form():
    note = load_note(ROOT / "schedatrix" / "examples" / "fleet-note.toml")
    assert (note.gpu_count, note.gpu_type) == (8, "NVIDIA A100 80GB")
    small, large = note.pool("small"), note.pool("large")
    assert small.models == ("Llama 3.2 3B",) and large.models == ("Llama 3.1 70B",)
    assert (small.scaling, small.min_replicas, small.max_replicas, small.gpus_per_replica) == (
        "autoscaled", 1, 4, 1)
    assert (large.min_replicas, large.max_replicas, large.gpus_per_replica) == (1, 2, 2)
    assert (small.replica_rps, large.replica_rps) == (6.0, 3.0)
    assert not small.replica_rps_assumed and not large.replica_rps_assumed
    assert note.serving_stack == "vLLM" and note.price_per_gpu_hour == 2.5
    assert [o.text for o in small.objectives] == ["TTFT p99 < 1 s"]
    assert note.beyond_first_pass == ()
    assert small.capacity_text == "autoscaled, 1-4 replicas, 1 GPU/replica"


def test_structured_capacity_fields_equal_the_phrase():
    note = parse_note(GOOD.replace(
        'capacity = "autoscaled, 1-4 replicas, 1 GPU/replica"',
        'scaling = "autoscaled"\nreplicas = [1, 4]\ngpus_per_replica = 1'))
    assert note.pool("small") == parse_note(GOOD).pool("small")


def test_blank_capacity_takes_the_first_pass_assumption():
    note = parse_note(GOOD.replace("replica_capacity = 6", 'replica_capacity = ""')
                      .replace('replica_capacity = "~3 requests/s per replica"', ""))
    assert note.pool("small").replica_rps == ASSUMED_REPLICA_RPS["small"] == 6.0
    assert note.pool("large").replica_rps == ASSUMED_REPLICA_RPS["large"] == 3.0
    assert note.pool("small").replica_rps_assumed and note.pool("large").replica_rps_assumed


def test_every_problem_is_reported_at_once():
    bad = """
[fleet]
objectives = ["TTFT fast please"]
[pools.small]
capacity = "autoscaled, 5-2 replicas, 1 GPU/replica"
replica_capacity = 0
[pools.large]
model = "Llama 3.1 70B"
capacity = "fixed, 6 replicas, 2 GPUs/replica"
replica_capacity = -3
"""
    with pytest.raises(InputError) as info:
        parse_note(bad, source="note.toml")
    msg = str(info.value)
    assert msg.startswith("note.toml: ")
    assert "gpus is missing" in msg                      # required field
    assert "[pools.small] model is missing" in msg       # required field
    assert "min 5 > max 2" in msg                        # range
    assert "replica_capacity = 0" in msg and "replica_capacity = -3" in msg   # <= 0
    assert "'TTFT fast please' can't be parsed" in msg   # objective
    parts = msg.removeprefix("note.toml: ").split("; ")
    # one part per problem: 2 missing, the range, 2 capacities <= 0, the objective (the GPU
    # checks need the fleet's count, which is missing)
    assert len(parts) == 6, parts


def test_pools_needing_more_gpus_than_the_fleet():
    with pytest.raises(InputError) as info:
        parse_note(GOOD.replace("1-2 replicas, 2 GPUs", "1-6 replicas, 2 GPUs"))
    msg = str(info.value)
    assert ("[pools.large] at its largest (6 replicas x 2 GPUs) needs 12 GPUs, "
            "the fleet has 8") in msg
    assert "need 16 GPUs together, the fleet has 8" in msg


def test_the_pools_together_may_not_exceed_the_fleet():
    with pytest.raises(InputError, match="need 10 GPUs together, the fleet has 8"):
        parse_note(GOOD.replace("1-2 replicas, 2 GPUs", "1-3 replicas, 2 GPUs"))


@pytest.mark.parametrize("change, expected", [
    (('gpus = "8 x NVIDIA A100 80GB"', 'gpus = "lots"'), "gpus = 'lots' can't be read"),
    (("1-4 replicas", "four replicas"), "capacity = 'autoscaled, four replicas"),
    (("replica_capacity = 6", "replica_capacity = 0"), "replica_capacity = 0: must be"),
    (("replica_capacity = 6", "replica_capacity = \"fast\""), "replica_capacity = 'fast'"),
    (("replica_capacity = 6", "replicas_capacity = 6"), "unknown field 'replicas_capacity'"),
    (('[fleet]', '[fleet]\nprice_per_gpu_hour = -1'), "price_per_gpu_hour = -1"),
    (('[fleet]', '[fleet]\nobjectives = ["TTFT p99 under a second"]'), "can't be parsed"),
    (('model = "Llama 3.2 3B"', ''), "[pools.small] model is missing"),
    (('capacity = "autoscaled, 1-4 replicas, 1 GPU/replica"', ''), "capacity is missing"),
])
def test_each_bad_field_is_named(change, expected):
    with pytest.raises(InputError) as info:
        parse_note(GOOD.replace(*change))
    assert expected in str(info.value)


def test_not_toml_and_missing_file():
    with pytest.raises(InputError, match="not valid TOML"):
        parse_note("[fleet\n")
    with pytest.raises(InputError, match="can't be read"):
        load_note("/nonexistent/note.toml")


def test_more_pools_or_models_is_beyond_the_first_pass():
    three = GOOD.replace('gpus = "8 x', 'gpus = "16 x') + """
[pools.embed]
model = ["bge-large", "e5-large"]
capacity = "fixed, 2 replicas, 1 GPU/replica"
"""
    note = parse_note(three)
    assert len(note.pools) == 3
    assert any("3 pools" in b for b in note.beyond_first_pass)
    assert any("'embed' serves 2 models" in b for b in note.beyond_first_pass)
    assert note.pool("embed").replica_rps_assumed


@pytest.mark.parametrize("text, metric, pct, limit", [
    ("TTFT p99 < 1 s", "ttft", 99, 1.0),
    ("ttft p95 <= 800 ms", "ttft", 95, 0.8),
    ("E2E p50 < 12.5 s", "e2e", 50, 12.5),
    ("error rate < 1%", "error_rate", None, 0.01),
])
def test_objectives_parse(text, metric, pct, limit):
    o = parse_objective(text)
    assert (o.metric, o.percentile) == (metric, pct)
    assert o.limit == pytest.approx(limit)
    assert o.met(limit * 0.99) and not o.met(limit * 1.01)
    assert o.met(limit) == ("<=" in text)


@pytest.mark.parametrize("text", ["TTFT < 1 s", "TTFT p99 < 1 minute", "p99 < 1 s",
                                  "throughput > 5 req/s", "TTFT p100 < 1 s"])
def test_unparseable_objectives(text):
    with pytest.raises(ValueError, match="can't be parsed"):
        parse_objective(text)
