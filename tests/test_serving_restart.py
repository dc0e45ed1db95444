"""A restart as what it takes (issue 36): the phases of RestartCosts, the simulator's replica
back when they are done (both engines alike), and the [restart] table and flags refusing bad
values in one line."""

from __future__ import annotations

import numpy as np
import pytest
from serving_support import LinearCost, layout, poisson_load

from schedatrix.cli import main
from schedatrix.errors import InputError
from schedatrix.serving.cluster.deployment import Design
from schedatrix.serving.cluster.faults import Fault, Resilience, parse_fault
from schedatrix.serving.cluster.policy import Policy
from schedatrix.serving.cluster.restart import PHASES, WEIGHT_SOURCES, RestartCosts
from schedatrix.serving.load.workload import Load, generate
from schedatrix.serving.perf.model import PerfModel
from schedatrix.serving.replica.knobs import SchedulerConfig
from schedatrix.serving.scenarios.scenario import scenario_from_dict
from schedatrix.serving.sim.engine import simulate_fast
from schedatrix.serving.sim.reference import simulate_reference
from schedatrix.serving.sim.simulate import simulate


def test_the_phases_add_up_and_the_weights_read_at_their_source_s_rate():
    gb16 = 16e9
    for source, rate in WEIGHT_SOURCES.items():
        r = RestartCosts(weights_from=source)
        phases = r.phases_s(gb16)
        assert tuple(phases) == PHASES
        assert phases["weights"] == pytest.approx(16 / rate)
        assert r.total_s(gb16) == pytest.approx(24 + 7.5 + 17 + 9.6 + 16 / rate)
    # a stated rate overrides the source's; a bigger model a GPU takes longer, the rest does not
    assert RestartCosts(weights_from="network", weight_load_gb_s=4).phases_s(gb16)["weights"] == 4
    big, small = RestartCosts().phases_s(70e9), RestartCosts().phases_s(8e9)
    assert big["weights"] > small["weights"] and big["graph capture"] == small["graph capture"]
    assert RestartCosts.weights_only(2.0).total_s(gb16) == pytest.approx(8.0)
    # slower storage, a longer restart
    order = [RestartCosts(weights_from=s).total_s(gb16) for s in ("page-cache", "disk", "network")]
    assert order == sorted(order) and order[0] < order[-1]


@pytest.mark.parametrize("kwargs, words", [
    ({"weights_from": "tape"}, "weights_from must be one of page-cache, disk, network, got 'tape'"),
    ({"weights_from": ["disk"]}, "weights_from must be one of"),
    ({"weight_load_gb_s": 0}, "weight_load_gb_s must be in (0, 1e+06], got 0"),
    ({"graph_capture_s": -1}, "graph_capture_s must be in [0, 1e+06], got -1"),
    ({"engine_start_s": "fast"}, "engine_start_s must be a number, got 'fast'"),
])
def test_bad_restart_values_are_refused_in_one_line(kwargs, words):
    with pytest.raises(InputError) as e:
        RestartCosts(**kwargs)
    assert words in str(e.value) and "\n" not in str(e.value)


def _at_8b(restart):
    """A crash on 3 x TP1 of Llama 3.1 8B: when replica 0 is back, by the fault log."""
    req = generate(Load(rate_rps=4, input_len="256", output_len="32"), 0, duration_s=60)
    run = simulate(req, Design(replicas=3), faults=(parse_fault("worker:0@10+5"),),
                   resilience=Resilience(restart=restart))
    [entry] = run.fault_log
    return entry["until_s"]


def test_the_simulator_s_replica_is_back_when_its_restart_is_done():
    per_gpu = PerfModel("llama-3.1-8b", "a100-80gb").weights_bytes_per_gpu
    for restart in (RestartCosts(), RestartCosts(weights_from="network"),
                    RestartCosts.weights_only(5.0)):
        assert _at_8b(restart) == pytest.approx(10 + 5 + restart.total_s(per_gpu))
    # the old model's 3.2 s of weights at 5 GB/s, and the new default's whole restart
    assert _at_8b(RestartCosts.weights_only(5.0)) == pytest.approx(15 + 3.2, abs=0.1)
    assert _at_8b(RestartCosts()) - 15 > 60


@pytest.mark.parametrize("restart", [RestartCosts.weights_only(5.0),
                                     RestartCosts(engine_start_s=0.3, compile_s=0.1,
                                                  graph_capture_s=0.2, warmup_s=0.05),
                                     RestartCosts(engine_start_s=0.0, compile_s=0.0,
                                                  graph_capture_s=1.1, warmup_s=0.0)])
def test_reference_and_fast_engines_agree_on_a_restart(restart):
    req = poisson_load(120, 40.0, 3, inp=(20, 300), out=(1, 80))
    faults = (Fault("worker", 0, 0.5, 0.2), Fault("drain", 1, 0.8, 0.1))
    policy = Policy(faults=faults, resilience=Resilience(health_check_s=0.2, restart=restart))
    cfg = SchedulerConfig(8, 256, True, 16, 0)
    lay = layout(3, 400, 1)
    a = simulate_reference(req, LinearCost(), cfg, lay, policy)
    b = simulate_fast(req, LinearCost(), cfg, lay, policy)
    for name in ("status", "replica"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("first_token_s", "done_s"):
        assert np.allclose(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert len(a.fault_log) == len(b.fault_log)
    for fa, fb in zip(a.fault_log, b.fault_log, strict=True):
        assert fa.keys() == fb.keys()
        assert all(fa[k] == pytest.approx(fb[k]) for k in fa)
    # the replica back after its restart serves again
    back = 0.5 + 0.2 + restart.total_s(LinearCost.weights_bytes_per_gpu)
    assert a.fault_log[0]["until_s"] == pytest.approx(back)
    assert np.any((a.replica == 0) & (a.arrival_s > back + 0.1))


SCENARIO = {"load": {"rate": 2, "requests": 50, "input_len": "128", "output_len": "16"},
            "designs": [{"replicas": 2}], "faults": {"schedule": ["worker:0@5+5"]}}


def test_the_restart_table_sets_the_costs_and_refuses_bad_ones():
    sc = scenario_from_dict({**SCENARIO, "restart": {"weights_from": "network",
                                                     "graph_capture_s": 5}})
    assert sc.resilience.restart == RestartCosts(weights_from="network", graph_capture_s=5)
    assert scenario_from_dict(SCENARIO).resilience.restart == RestartCosts()
    for table, words in (({"weights_from": "tape"}, "[restart] weights_from must be one of"),
                         ({"load_gb_s": 3}, "[restart] unknown key 'load_gb_s'"),
                         ({"warmup_s": -2}, "[restart] warmup_s must be in")):
        with pytest.raises(InputError, match=None) as e:
            scenario_from_dict({**SCENARIO, "restart": table})
        assert words in str(e.value)
    with pytest.raises(InputError) as e:      # the weight rate moved to [restart]
        scenario_from_dict({**SCENARIO, "resilience": {"weight_load_gb_s": 5}})
    assert "unknown key 'weight_load_gb_s'" in str(e.value)


def test_the_flags_set_the_restart_and_bad_values_exit_2(tmp_path, capsys):
    toml = tmp_path / "s.toml"
    toml.write_text('[load]\nrate = 2\nrequests = 40\ninput_len = "128"\noutput_len = "16"\n'
                    '[[designs]]\nreplicas = 2\n')
    runs = {}
    for flags in ([], ["--weights-from", "network"], ["--weight-load-gb-s", "0.25"]):
        code = main(["serving", "run", str(toml), "--fault", "worker:0@5+5", "--json",
                     *flags])
        out = capsys.readouterr().out
        assert code == 0, out
        runs[tuple(flags)] = out
    assert len(set(runs.values())) == 3       # each restart its own run
    for flags, words in ((["--weights-from", "tape"], "invalid choice: 'tape'"),
                         (["--weight-load-gb-s", "0"], "--weight-load-gb-s must be above 0")):
        code = main(["serving", "run", str(toml), *flags])
        err = capsys.readouterr().err
        assert code == 2 and words in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1


def test_the_calibration_doc_states_the_model_s_restart():
    """docs/serving-calibration.md's restart section quotes the phases and totals the model
    gives for Llama 3.1 8B on one A100."""
    from pathlib import Path
    doc = " ".join((Path(__file__).resolve().parents[1] / "docs" / "serving-calibration.md")
                   .read_text().split())
    per_gpu = PerfModel("llama-3.1-8b", "a100-80gb").weights_bytes_per_gpu
    r = RestartCosts()
    assert (r.engine_start_s, r.compile_s, r.graph_capture_s, r.warmup_s) == (24, 7.5, 17, 9.6)
    totals = {s: f"{RestartCosts(weights_from=s).total_s(per_gpu):.1f}" for s in WEIGHT_SOURCES}
    assert (f"the default restart takes 24 + {per_gpu / 2e9:.1f} + 7.5 + 17 + 9.6 = "
            f"{totals['disk']} s; from `page-cache` {totals['page-cache']} s; from `network` "
            f"{totals['network']} s") in doc
    assert f"took {RestartCosts.weights_only(5.0).total_s(per_gpu):.1f} s" in doc
    for source, rate in WEIGHT_SOURCES.items():
        assert f"| `{source}`" in doc and f"| {rate:.1f} |" in doc
