"""Mattered vs noise compares paired months: a knob's shift against zero, and against luck."""

import numpy as np
import pytest

import schedatrix as sx
from schedatrix.fleet.constants import CHURN_FEE_SHARE
from schedatrix.fleet.odds import KnobStep, mattered_vs_noise


@pytest.fixture(scope="module")
def opening():
    return {s.knob + ": " + s.step: s for s in mattered_vs_noise(sx.Plan(), months=400)}


def test_one_more_eviction_is_one_churn_fee_in_every_paired_month(opening):
    step = opening["evict share: 20% -> 30%"]
    fee = CHURN_FEE_SHARE * sx.CARD_CLASSES["flagship"].rent_per_month
    # floor(0.3 x 16) - floor(0.2 x 16) = 1 more eviction: one fee, and nothing else moves.
    base = sx.simulate_many(sx.Plan(), 400, 0).bill
    stepped = sx.simulate_many(step.plan, 400, 0).bill
    assert np.all(stepped - base == fee)
    assert step.shift == fee == 390 and step.shift_sd == 0
    assert step.interval == (390, 390)
    # A real effect, and still smaller than one month's luck: not "noise".
    assert step.real and not step.beats_luck and not step.mattered
    assert step.label == "real, smaller than one month's luck"
    assert step.noise > 1_000


def test_noise_is_a_shift_the_paired_months_cannot_tell_from_zero(opening):
    week = opening["window: day -> week"]
    low, high = week.interval
    assert low < 0 < high and not week.real and week.label == "noise"
    jumpy = opening["shape: steady -> jumpy"]
    assert jumpy.mattered and jumpy.label == "mattered" and jumpy.interval[0] > jumpy.noise


def test_the_interval_is_the_mean_plus_minus_1_96_standard_errors(opening):
    step = opening["demand: +10%"]
    base = sx.simulate_many(sx.Plan(), 400, 0).bill
    diff = sx.simulate_many(step.plan, 400, 0).bill - base
    assert step.shift == pytest.approx(diff.mean())
    assert step.shift_sd == pytest.approx(diff.std(ddof=1))
    half = 1.96 * diff.std(ddof=1) / 20
    assert step.interval == pytest.approx((diff.mean() - half, diff.mean() + half), rel=1e-4)
    assert step.noise == pytest.approx(base.std())


def test_a_zero_shift_is_never_real():
    step = KnobStep(knob="x", step="y", plan=sx.Plan(), shift=0.0, noise=10.0, shift_sd=0.0,
                    months=100)
    assert not step.real and step.label == "noise" and step.ratio == 0


def test_progress_is_called_once_per_run_and_months_are_checked():
    calls = []
    steps = mattered_vs_noise(sx.Plan(cards=8), months=20, progress=calls.append)
    assert calls == [1] * (len(steps) + 1)
    with pytest.raises(sx.InputError, match="months"):
        mattered_vs_noise(sx.Plan(), months=1)
