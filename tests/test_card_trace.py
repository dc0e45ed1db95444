"""A card's hourly trace and the window's 1/sqrt(T) law."""

import math

import numpy as np
import pytest

from schedatrix.errors import InputError
from schedatrix.fleet.card_trace import (
    HOURS_PER_MONTH,
    card_trace,
    law_sd,
    window_averages,
    window_errors,
)


def test_trace_stays_within_the_hour_error_and_blips():
    t = card_trace(7_000, dip_depth=0.2, seed=3)
    assert t.hourly_tok_s.shape == (HOURS_PER_MONTH,)
    ratio = t.hourly_tok_s / 7_000
    plain = ratio[~t.blips]
    assert plain.min() >= 0.75 and plain.max() < 1.25
    assert np.all(ratio[t.blips] < 1.25 * 0.8)
    assert 0 < t.blips.sum() < 30  # about 1% of 730 hours


def test_trace_is_seeded():
    a, b = card_trace(5_000, seed=11), card_trace(5_000, seed=11)
    assert np.array_equal(a.hourly_tok_s, b.hourly_tok_s)
    assert not np.array_equal(a.hourly_tok_s, card_trace(5_000, seed=12).hourly_tok_s)


def test_degrading_card_drops_at_its_hour():
    t = card_trace(7_000, seed=1, degrade_at=300, degraded_tok_s=2_400)
    assert np.all(t.true_tok_s[:300] == 7_000) and np.all(t.true_tok_s[300:] == 2_400)
    assert t.hourly_tok_s[300:].max() < 2_400 * 1.25


def test_window_averages_shape_and_values():
    x = np.arange(10.0)
    assert window_averages(x, 5).tolist() == [2.0, 7.0]
    assert window_averages(x, 3).tolist() == [1.0, 4.0, 7.0]  # tail dropped
    assert window_averages(np.ones((4, 730)), 24).shape == (4, 30)


def test_window_error_follows_one_over_sqrt_t():
    rows = window_errors((1, 24, 168), cards=300, seed=1)
    for r in rows:
        assert r.law == pytest.approx(0.25 / math.sqrt(3 * r.hours))
        assert r.sd == pytest.approx(r.law, rel=0.08)  # blips add a little
        assert r.bound == pytest.approx(0.25 / math.sqrt(r.hours))
        assert r.bias < 0  # blips only ever pull a reading down
    # sd x sqrt(T) is the same for every window
    scaled = [r.sd * math.sqrt(r.hours) for r in rows]
    assert max(scaled) / min(scaled) < 1.1


def test_law_equals_the_models_misread_spread():
    e = np.random.default_rng(0).uniform(-1, 1, 200_000)
    for hours in (1, 24, 168):
        assert np.std(0.25 / math.sqrt(hours) * e) == pytest.approx(law_sd(hours), rel=0.01)


@pytest.mark.parametrize("kwargs, word", [
    ({"true_tok_s": 0}, "true_tok_s"),
    ({"true_tok_s": 100, "hours": 0}, "hours"),
    ({"true_tok_s": 100, "degrade_at": 900, "degraded_tok_s": 1}, "degrade_at"),
    ({"true_tok_s": 100, "degrade_at": 9}, "degraded_tok_s"),
])
def test_bad_input_names_the_parameter(kwargs, word):
    with pytest.raises(InputError, match=word):
        card_trace(**kwargs)


def test_window_averages_rejects_too_long():
    with pytest.raises(InputError, match="hours"):
        window_averages(np.ones(10), 11)
