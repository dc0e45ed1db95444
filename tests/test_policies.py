"""Eviction policies over a month of reviews, and the window's trade-off."""

import pytest

from schedatrix.errors import InputError
from schedatrix.fleet.policies import below_median, consecutive, tradeoff, watch, worst_first


def test_worst_first_evicts_its_share_at_every_review():
    w = watch(worst_first(0.10), 24, cards=16, months=20)
    assert w.evictions_per_month == 30  # 1 card at each of 30 daily reviews
    w = watch(worst_first(0.20), 168, cards=16, months=20)
    assert w.evictions_per_month == 4 * 3  # 3 cards at each of 4 weekly reviews


def test_short_windows_evict_healthy_cards_long_ones_miss_the_bad_card():
    hour = watch(worst_first(0.10), 1, months=60)
    week = watch(worst_first(0.10), 168, months=60)
    assert hour.wrong_share > 0.05 > week.wrong_share
    assert hour.degraded_days < 0.1 < 3 < week.degraded_days


def test_consecutive_trades_delay_for_fewer_wrong_evictions():
    one = watch(worst_first(0.10), 1, months=60)
    two = watch(consecutive(2, 0.10), 1, months=60)
    assert two.wrong_share < one.wrong_share
    assert two.degraded_days > one.degraded_days
    assert two.evictions_per_month < one.evictions_per_month


def test_below_median_margin_is_fast_and_clean_on_flagships():
    w = watch(below_median(0.25, 1.0), 1, months=60)
    assert w.wrong_share == 0
    assert w.degraded_days < 0.1 and w.missed == 0


def test_watch_is_seeded():
    a = watch(consecutive(2, 0.1), 6, months=30, seed=4)
    b = watch(consecutive(2, 0.1), 6, months=30, seed=4)
    assert a == b
    assert watch(consecutive(2, 0.1), 6, months=30, seed=5) != a


def test_tradeoff_runs_every_pair_with_progress():
    ticks = []
    out = tradeoff([worst_first(0.1), below_median()], windows=(6, 24), months=10,
                   progress=lambda: ticks.append(1))
    assert [(w.policy, w.hours) for w in out] == [
        ("worst-first 10%", 6), ("worst-first 10%", 24),
        ("25% below median + 1 x error", 6), ("25% below median + 1 x error", 24)]
    assert len(ticks) == 4


@pytest.mark.parametrize("make, word", [
    (lambda: worst_first(1.5), "share"),
    (lambda: consecutive(0), "k"),
    (lambda: below_median(gap=1.0), "gap"),
    (lambda: below_median(margin=-1), "margin"),
    (lambda: watch(worst_first(), 0), "hours"),
    (lambda: watch(worst_first(), 24, cards=1), "cards"),
    (lambda: watch(worst_first(), 24, card_class_key="gold"), "card_class"),
])
def test_bad_input_names_the_parameter(make, word):
    with pytest.raises(InputError, match=word):
        make()
