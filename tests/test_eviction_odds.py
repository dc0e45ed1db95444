"""The eviction check's odds: the closed form against the engine's Monte Carlo."""

import numpy as np
import pytest

import schedatrix as s
from schedatrix.errors import InputError
from schedatrix.fleet.engine import draw_pools
from schedatrix.fleet.eviction_odds import closed_form, measured_cdf, odds_table, ratio_cdf


def test_ratio_cdf_is_a_cdf():
    x = np.linspace(0.5, 1.5, 201)
    f = ratio_cdf(x, 1.0, 0.2)
    assert f[0] == 0 and f[-1] == 1
    assert np.all(np.diff(f) >= 0)


@pytest.mark.parametrize("cls,window", [("flagship", "hour"), ("bargain", "day"),
                                        ("b-stock", "hour")])
def test_measured_cdf_matches_drawn_pools(cls, window):
    plan = s.Plan(cards=64, card_class=cls, window=window)
    _, measured = draw_pools(plan, np.arange(400, dtype=np.uint64))
    for q in (0.1, 0.3, 0.5, 0.8):
        m = float(np.quantile(measured, q))
        assert measured_cdf(m, s.CARD_CLASSES[cls], plan.window_hours) == pytest.approx(
            q, abs=0.01)


def test_closed_form_wrong_rate_matches_a_large_pool():
    plan = s.Plan(cards=1024, card_class="bargain", window="hour", evict_share=0.40)
    cf = closed_form(plan)
    mc = s.simulate_many(plan, 60, seed=0).wrong_share.mean()
    assert cf.evicted == 409
    assert cf.wrong_rate == pytest.approx(mc, abs=0.01)
    assert cf.median_tok_s == pytest.approx(s.CARD_CLASSES["bargain"].true_tok_s(0.5))


def test_closed_form_fail_beside_monte_carlo_on_the_noise_evictor():
    rows = odds_table(s.preset("noise-evictor").plan, windows=("hour", "day"),
                      shares=(0.40,), months=1_000)
    hour, day = rows
    assert hour.mc_fail == pytest.approx(hour.closed_fail, abs=0.06)
    assert 0.15 < hour.mc_fail < 0.4
    assert day.mc_fail < 0.01 and day.closed_fail < 0.01
    assert hour.mc_interval[0] <= hour.mc_fail <= hour.mc_interval[1]


def test_longer_windows_never_fail_more():
    fails = [closed_form(s.Plan(cards=32, card_class="bargain", window=w, evict_share=0.4)).fail
             for w in ("hour", 6, "day", "week")]
    assert fails == sorted(fails, reverse=True)
    assert fails[0] > 0.1 and fails[-1] == 0


def test_no_evictions_never_fail():
    cf = closed_form(s.Plan(evict_share=0.0))
    assert cf.evicted == 0 and cf.fail == 0 and cf.wrong_rate == 0


def test_large_pool_limit_is_sharp():
    cf = closed_form(s.Plan(cards=64, card_class="bargain", window="hour", evict_share=0.5))
    assert cf.fail_large_pool == float(cf.wrong_rate > 0.2)


def test_progress_runs_once_per_row():
    ticks = []
    odds_table(s.Plan(), windows=("day",), shares=(0.1, 0.2), months=20,
               progress=lambda: ticks.append(1))
    assert len(ticks) == 2


def test_bad_class_for_closed_form(monkeypatch):
    from schedatrix.fleet import eviction_odds

    heavy = s.CARD_CLASSES["flagship"].__class__(**{
        **s.CARD_CLASSES["flagship"].__dict__, "bad_chance": 0.6})
    monkeypatch.setattr(eviction_odds, "card_class", lambda _k: heavy)
    with pytest.raises(InputError, match="bad_chance"):
        closed_form(s.Plan())
