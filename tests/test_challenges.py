"""The three challenge functions: their exact semantics, ties and edge cases."""

import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedatrix as sx


def test_score_on_arrays_and_units():
    got = sx.score(np.array([10_000, 4_500]), np.array([2_600, 1_400]))
    assert got == pytest.approx([10.1077, 8.4471], abs=1e-4)
    assert sx.score(0, 1_000) == 0
    # a month is 730 hours
    assert sx.score(1, 2.628) == pytest.approx(1.0)


@pytest.mark.parametrize("rate, rent", [(-1, 100), (1, 0), (1, -5), (math.nan, 1), (1, math.inf)])
def test_score_refuses_bad_input(rate, rent):
    with pytest.raises(sx.InputError, match="true_tok_s|rent_per_month"):
        sx.score(rate, rent)


def test_greedy_takes_the_shortest_best_first_prefix():
    rates = [3, 9, 5, 9, 1]
    assert sx.greedy_run_set(rates, 10).tolist() == [1, 3]  # tie at 9: lower index first
    assert sx.greedy_run_set(rates, 18).tolist() == [1, 3]  # exactly reaching counts
    assert sx.greedy_run_set(rates, 18.5).tolist() == [1, 3, 2]
    assert sx.greedy_run_set(rates, 1_000).tolist() == [1, 3, 2, 0, 4]  # none reaches: all
    assert sx.greedy_run_set(rates, 0).tolist() == [1]
    assert sx.greedy_run_set([], 5).tolist() == []
    assert sx.greedy_run_set(rates, math.inf).tolist() == [1, 3, 2, 0, 4]


def test_evict_worst_floors_and_breaks_ties_by_index():
    scores = [5, 1, 3, 1, 9, 2]
    assert sx.evict_worst(scores, 0.5).tolist() == [1, 3, 5]
    assert sx.evict_worst(scores, 0.49).tolist() == [1, 3]  # floor(2.94) = 2
    assert sx.evict_worst(scores, 0).tolist() == []
    assert sx.evict_count(0.20, 24) == 4  # floor, not round (4.8)
    assert sx.evict_count(0.29, 100) == 29  # 0.29 * 100 is 28.999999999999996 in floats
    assert sx.evict_count(0.40, 32) == 12
    assert sx.evict_count(1 - 1e-12, 1) == 0  # a share below 1 always leaves a card
    assert sx.evict_count(0.999999, 4096) == 4095


@pytest.mark.parametrize("share", [1, 1.5, -0.1, math.nan, "0.2"])
def test_evict_worst_refuses_bad_shares(share):
    with pytest.raises(sx.InputError, match="share"):
        sx.evict_worst([1, 2, 3], share)


def test_wrong_evictions_use_the_whole_pools_median():
    true = [10, 20, 30, 40]  # median 25
    assert sx.wrong_evictions(true, [0, 1]) == 0
    assert sx.wrong_evictions(true, [2]) == 1
    assert sx.wrong_evictions([10, 20, 30], [1]) == 1  # at the median counts as wrong
    assert sx.wrong_evictions(true, []) == 0
    with pytest.raises(sx.InputError, match="evicted"):
        sx.wrong_evictions(true, [4])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=30), st.integers(0, 800))  # < 0: refused
def test_greedy_matches_its_definition(rates, target):
    chosen = sx.greedy_run_set(rates, target).tolist()
    order = sorted(range(len(rates)), key=lambda i: (-rates[i], i))
    assert chosen == order[: len(chosen)]
    if sum(rates) >= target and rates:
        assert sum(rates[i] for i in chosen) >= target
        assert sum(rates[i] for i in chosen[:-1]) < target or len(chosen) == 1
    else:
        assert len(chosen) == len(rates)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=40), st.floats(0, 0.999))
def test_evict_worst_matches_its_definition(scores, share):
    got = sx.evict_worst(scores, share).tolist()
    k = math.floor(Decimal(repr(share)) * len(scores))
    assert got == sorted(range(len(scores)), key=lambda i: (scores[i], i))[:k]
