"""Over the lottery: failure odds with intervals, and mattered vs noise."""

import pytest

import schedatrix as sx
from schedatrix.fleet.odds import check_odds, knob_steps, mattered_vs_noise


def test_odds_count_failures_consistently_with_the_engine():
    plan = sx.preset("noise-evictor").plan
    odds = check_odds(plan, months=4_000, seed=10, chunk=1_500)  # chunks must not matter
    many = sx.simulate_many(plan, 4_000, 10)
    assert odds.failures["evictions"] == int((~many.evictions_ok).sum())
    assert odds.failures["capacity"] == int((~many.capacity_ok).sum())
    assert sum(odds.signatures.values()) == 4_000
    low, high = odds.interval["evictions"]
    assert low < odds.fail_share["evictions"] < high
    assert high - low < 0.05


def test_the_hour_window_fails_evictions_far_more_often_than_the_day_window():
    hour = check_odds(sx.preset("noise-evictor").plan, months=3_000)
    day = check_odds(sx.preset("noise-evictor-day").plan, months=3_000)
    assert hour.interval["evictions"][0] > day.interval["evictions"][1]


def test_a_clean_plan_can_show_zero_failures_with_an_honest_interval():
    odds = check_odds(sx.Plan(cards=16, evict_share=0.0), months=1_000)
    assert odds.failures["evictions"] == 0
    assert odds.interval["evictions"][0] == 0 and 0 < odds.interval["evictions"][1] < 0.01


def test_odds_refuse_bad_arguments():
    with pytest.raises(sx.InputError, match="confidence"):
        check_odds(sx.Plan(), confidence=1.5)
    with pytest.raises(sx.InputError, match="months"):
        check_odds(sx.Plan(), months=0)


def test_every_knob_gets_a_step():
    knobs = {k for k, _, _ in knob_steps(sx.Plan())}
    assert knobs == {"cards", "card class", "demand", "headroom", "shape", "window",
                     "evict share"}


def test_mattered_vs_noise_on_the_golden_idler():
    steps = {s.step: s for s in mattered_vs_noise(sx.preset("golden-idler").plan, months=300)}
    # Moving off jumpy is the repair: it moves the bill far more than the lottery does.
    steady = steps["jumpy -> steady"]
    assert steady.shift < -20_000 and steady.mattered and steady.ratio > 5
    # On jumpy every survivor runs: a longer window changes nobody's rent.
    assert not steps["day -> week"].mattered
    assert all(s.noise == steady.noise for s in steps.values())
