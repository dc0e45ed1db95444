"""Recovery against the paired baseline (issue 33, item 1): the same seed and arrivals without
the fault, windows aligned, the noise floor beside it, overlapping faults sharing the damage."""

from __future__ import annotations

import json
import math
from functools import cache

import numpy as np
import pytest

from schedatrix.cli import main
from schedatrix.course.apps.fault_app import FAULT_DESIGN, FAULT_LOAD
from schedatrix.errors import InputError
from schedatrix.serving.cluster.faults import Resilience, parse_fault
from schedatrix.serving.cluster.restart import RestartCosts
from schedatrix.serving.figures.metrics import met_slo
from schedatrix.serving.figures.recovery import (
    NO_DAMAGE,
    FaultFigures,
    fault_figures,
    paired_recovery,
    paired_recovery_from_series,
    paired_series,
    recovery_time,
    windowed,
)
from schedatrix.serving.load.workload import generate
from schedatrix.serving.reports.decision_record import accept_json, decision_record, runbook
from schedatrix.serving.sim.simulate import simulate
from schedatrix.serving.studies import accept as accept_module
from schedatrix.serving.studies import acceptance
from schedatrix.serving.studies.accept import FaultCriteria, accept
from schedatrix.serving.studies.acceptance import Criteria

NOTHING = "link:0@120+0.1:1.01"      # the reviewer's fault that does nothing
CRASH = "worker:0@120+30"
#: The restart these figures were measured with (the weights alone at 5 GB/s, before issue 36):
#: they test the paired rule, not the restart (tests/test_serving_restart.py does that).
WEIGHTS_ONLY = Resilience(restart=RestartCosts.weights_only(5.0))


@cache
def lesson_runs(seed: int, spec: str):
    """Lesson 11's fleet and load (300 s), without and with the fault."""
    req = generate(FAULT_LOAD, seed, duration_s=300.0)
    return simulate(req, FAULT_DESIGN), simulate(req, FAULT_DESIGN, faults=(parse_fault(spec),),
                                                  resilience=WEIGHTS_ONLY)


# -- the reviewer's case ---------------------------------------------------------------------

def test_a_fault_that_does_nothing_reads_no_measurable_damage_on_lesson_11s_fleet():
    old, floors = [], []
    for seed in range(10):
        base, run = lesson_runs(seed, NOTHING)
        [f] = fault_figures(run, base)
        old.append(f.pre_level_recovery_s)
        floors.append(f.noise_floor_s)
        assert f.paired and f.recovery_s == 0 and f.goodput_lost == 0
        assert not f.measurable and f.verdict().startswith(NO_DAMAGE)
        assert f.effective_recovery_s == 0
        # the floor is the pre-fault-level rule read on the baseline at the fault's time
        assert f.noise_floor_s == recovery_time(base, 120.0)[0]
    # the old reading of this fault is the fleet's own noise: the reviewer's figures
    # (vLLM 0.14 with async scheduling; [10, 10, 30, 0, 0, 70, 0, 0, 70, 0] with vLLM 0.10's
    # synchronous engine)
    assert old == [0, 30, 0, 0, 0, 70, 0, 0, 70, 0]
    assert floors == old        # the fault changes nothing, so the run is its baseline


def test_a_replica_crash_still_reads_damage_well_above_its_noise_floor():
    above = 0
    for seed in range(10):
        base, run = lesson_runs(seed, CRASH)
        [f] = fault_figures(run, base)
        assert f.measurable and f.goodput_lost > 0 and f.recovery_s is not None
        assert 10 <= f.recovery_s <= 40     # 20 to 40 s with vLLM 0.10's synchronous engine
        assert "no measurable" not in f.verdict()
        above += f.noise_floor_s is not None and f.recovery_s >= max(2 * f.noise_floor_s,
                                                                     f.noise_floor_s + 10)
    # measured: on 7 of seeds 0-9 (floors 0 s) at least twice the floor and 10 s over it; on
    # seeds 1, 5 and 8 the floor (30, 70, 70 s) is above the recovery (10 to 30 s), and the
    # crash still reads damage there because it cost 40 to 67 requests their SLO
    assert above >= 7


# -- the paired windows and the rule ---------------------------------------------------------

def test_paired_windows_are_aligned_on_the_fault_and_difference_the_two_runs():
    base, run = lesson_runs(0, CRASH)
    windows = paired_series(run, base, 120.0)
    end = float(np.nanmax(base.done_s))
    assert [w["since_fault_s"] for w in windows] == [10.0 * k for k in range(len(windows))]
    assert 120 + 10 * len(windows) <= end < 120 + 10 * (len(windows) + 1)   # whole windows
    starts, p95, good = windowed(run, 120.0, end, 10.0)
    _, bp95, bgood = windowed(base, 120.0, end, 10.0)
    for k, w in enumerate(windows):
        assert starts[k] == 120 + w["since_fault_s"]
        assert w["goodput_rps"] == good[k] and w["baseline_goodput_rps"] == bgood[k]
        assert w["goodput_lost_rps"] == pytest.approx(bgood[k] - good[k])
        if np.isfinite(p95[k]):
            assert w["ttft_p95_excess_s"] == pytest.approx(p95[k] - bp95[k])
        ok = (p95[k] <= bp95[k] * 1.25) and good[k] >= 0.75 * bgood[k]
        assert w["within_margin"] == ok
    assert not windows[0]["within_margin"]          # the crash hurts at once
    [f] = fault_figures(run, base)
    assert f.recovery_s == paired_recovery(run, base, 120.0)
    assert f.peak_goodput_deficit_rps == max(w["goodput_lost_rps"] for w in windows)


def test_the_paired_rule_on_hand_made_windows():
    since = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    base_p95 = [0.2] * 6
    base_good = [8.0] * 6
    # p95 back within 25% of the baseline's at window 2 and there for three windows
    p95 = [2.0, 0.3, 0.25, 0.24, 0.2, 0.2]
    assert paired_recovery_from_series(since, p95, [8.0] * 6, base_p95, base_good) == 20.0
    # a margin of exactly 25% is within it
    assert paired_recovery_from_series(since, [0.25] * 6, [6.0] * 6, base_p95, base_good) == 0
    # one good window between bad ones is not a recovery yet
    p95 = [2.0, 0.2, 2.0, 0.2, 0.2, 2.0]
    assert paired_recovery_from_series(since, p95, [8.0] * 6, base_p95, base_good) is None
    assert paired_recovery_from_series(since, p95, [8.0] * 6, base_p95, base_good,
                                       hold=2) == 30.0
    # goodput below 75% of the baseline's window is outside the margin, above it is fine
    good = [5.0, 5.9, 6.0, 30.0, 8.0, 8.0]
    assert paired_recovery_from_series(since, [0.2] * 6, good, base_p95, base_good) == 20.0
    # a window judged against the baseline's, not a level: a burst in both is no damage
    burst = [0.2, 3.0, 3.0, 0.2, 0.2, 0.2]
    assert paired_recovery_from_series(since, burst, base_good, burst, base_good) == 0.0
    # no arrival in a window (NaN) is no late request, in either run; inf is late
    nan = [math.nan, 0.2, 0.2, 0.2, math.nan, 0.2]
    assert paired_recovery_from_series(since, nan, base_good, nan, base_good) == 0.0
    failed = [math.inf, 0.2, 0.2, 0.2, 0.2, 0.2]
    assert paired_recovery_from_series(since, failed, base_good, base_p95, base_good) == 10.0


def figs(recovery, floor, lost, paired=True) -> FaultFigures:
    return FaultFigures("worker:0@10+5", 10.0, 15.0, 0, 0, 0, lost, 0.5, 0.2, 8.0, recovery,
                        10.0, 0.25, paired=paired, noise_floor_s=floor)


def test_no_measurable_damage_is_within_the_floor_with_no_slo_lost():
    assert not figs(30.0, 40.0, 0).measurable            # within the floor
    assert not figs(40.0, 40.0, 0).measurable            # at it
    assert figs(50.0, 40.0, 0).measurable                # beyond it
    assert figs(30.0, 40.0, 3).measurable                # requests lost their SLO to it
    assert not figs(0.0, None, 0).measurable             # never left the margin
    assert figs(20.0, None, 0).measurable                # no floor: the recovery stands
    assert figs(None, 40.0, 0).measurable                # never recovered
    assert figs(30.0, 40.0, 0).effective_recovery_s == 0
    assert figs(50.0, 40.0, 0).effective_recovery_s == 50
    assert figs(None, 40.0, 0).effective_recovery_s is None
    assert figs(30.0, 40.0, 0).verdict() == (
        "no measurable damage (recovery 30 s against the baseline, noise floor 40 s)")
    assert figs(None, 0.0, 5).verdict() == (
        "never recovered within the run against the baseline (noise floor 0 s; goodput lost 5)")
    assert figs(20.0, None, None, paired=False).verdict() == "recovered in 20 s"
    d = figs(30.0, 40.0, 0).as_dict()
    assert d["measurable"] is False and d["noise_floor_s"] == 40 and d["paired"] is True


def test_without_a_baseline_recovery_is_read_against_the_pre_fault_level():
    base, run = lesson_runs(5, NOTHING)
    [f] = fault_figures(run)
    assert not f.paired and f.recovery_s == 70 == f.pre_level_recovery_s
    assert f.noise_floor_s is None and f.goodput_lost is None


# -- overlapping faults --------------------------------------------------------------------

def test_overlapping_faults_share_the_goodput_lost_by_when_they_struck():
    req = generate(FAULT_LOAD, 0, duration_s=300.0)
    faults = (parse_fault("worker:0@100+40"), parse_fault("worker:1@120+30"))
    base = simulate(req, FAULT_DESIGN)
    run = simulate(req, FAULT_DESIGN, faults=faults)
    first, second = fault_figures(run, base)
    lost = met_slo(base) & ~met_slo(run)
    assert first.goodput_lost_run == second.goodput_lost_run == int(lost.sum()) > 0
    assert first.goodput_lost + second.goodput_lost == first.goodput_lost_run
    ends = base.done_s[lost]
    assert second.goodput_lost == int((ends >= 120.0).sum()) > 0
    assert first.goodput_lost == int((ends < 120.0).sum()) > 0
    # each fault's recovery is still measured from its own strike
    assert first.recovery_s == paired_recovery(run, base, 100.0)
    assert second.recovery_s == paired_recovery(run, base, 120.0)


# -- acceptance and what it writes ----------------------------------------------------------

def lesson_load(seed):
    return generate(FAULT_LOAD, seed, duration_s=300.0)


def test_accept_reuses_its_runs_without_faults_as_the_paired_baselines(monkeypatch):
    calls = []
    for module in (accept_module, acceptance):
        real = module.simulate

        def counted(req, design, *args, _real=real, **kw):
            calls.append(bool(args[1] if len(args) > 1 else kw.get("faults")))
            return _real(req, design, *args, **kw)
        monkeypatch.setattr(module, "simulate", counted)
    accept([FAULT_DESIGN], lesson_load, (parse_fault(CRASH),), runs=2, seed=0)
    assert sorted(calls) == [False, False, True, True]     # once per seed without, once with


def test_no_measurable_damage_meets_any_recovery_limit_and_a_crash_does_not():
    tight = FaultCriteria(max_recovery_s=0)
    [quiet] = accept([FAULT_DESIGN], lesson_load, (parse_fault(NOTHING),), runs=1, seed=5,
                     criteria=Criteria(), fault_criteria=tight)
    assert quiet.fault_figures[0][0].pre_level_recovery_s == 70    # the old rule refused it
    assert not [r for r in quiet.fault_misses() if "recovered" in r]
    [crash] = accept([FAULT_DESIGN], lesson_load, (parse_fault(CRASH),), runs=1, seed=5,
                     criteria=Criteria(), fault_criteria=tight, resilience=WEIGHTS_ONLY)
    # one run decides nothing by the share of runs (lesson 12), but the run's miss is named
    assert "run 1: worker:0@120+30 recovered 30 s (at most 0 s)" in crash.fault_misses()
    assert crash.status != "pass" and quiet.fault_decision.met == 1

    # the record, the runbook and the JSON carry the paired recovery and its floor
    record = decision_record([crash], "test", "load", Criteria(), tight, True)
    assert "paired baseline" in record and "30 s (floor 70 s)" in record
    book = runbook([quiet])
    assert "noise floor (what the run without the fault reads" in book
    assert f"verdict: {NO_DAMAGE}" in book
    d = accept_json([crash])
    assert d["recovery_rule"]["tolerance"] == 0.25 and d["recovery_rule"]["hold"] == 3
    [[f]] = d["designs"][0]["faults"]
    assert f["recovery_s"] == 30 and f["noise_floor_s"] == 70 and f["measurable"] is True
    assert f["pre_level_recovery_s"] == 70 and f["goodput_lost"] == f["goodput_lost_run"] > 0
    json.dumps(d, allow_nan=False)


def test_serving_run_with_a_fault_prints_the_noise_floor(capsys):
    code = main(["serving", "run", "--rate", "6", "--duration", "150", "--replicas", "3",
                 "--fault", "link:0@60+0.1:1.01", "--slo-ttft", "1", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "recovery time 0 s against the run without the faults, noise floor" in out
    assert "no measurable damage" in out


@pytest.mark.parametrize("hold", [0, 1.5, True, 1001])
def test_fault_criteria_hold_is_a_whole_number_of_windows(hold):
    with pytest.raises(InputError, match=f"hold must be a whole number.*got {hold!r}"):
        FaultCriteria(hold=hold)
