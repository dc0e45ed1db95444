"""Mixed-class covers: greedy by rate and by score against the exact minimum rent."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import schedatrix as s
from schedatrix.errors import InputError
from schedatrix.fleet.cover import cheapest_cover, covers, greedy_cover, mixed_pool
from schedatrix.fleet.draws import uniform


def brute_force(rates, rents, target):
    """The cheapest covering subset by trying all 2^n (small n only)."""
    best = None
    for k in range(len(rates) + 1):
        for combo in itertools.combinations(range(len(rates)), k):
            if sum(rates[i] for i in combo) >= target:
                cost = sum(rents[i] for i in combo)
                if best is None or cost < best:
                    best = cost
    return best


def test_small_case_where_both_greedies_lose():
    # rate, rent: the fast card is dear, the best-per-dollar card is too small alone
    rates = [10.0, 6.0, 5.0, 5.0]
    rents = [10.0, 4.0, 5.0, 5.0]
    target = 10.0
    found = covers(rates, rents, target)
    assert found["greedy by rate"].indices == (0,) and found["greedy by rate"].rent_per_month == 10
    # 6/4 first, then the score-1 tie goes to the lower index: the dear fast card
    assert found["greedy by score"].indices == (0, 1)
    assert found["greedy by score"].rent_per_month == 14
    best = found["cheapest (milp)"]
    assert best.rent_per_month == brute_force(rates, rents, target) == 9
    assert best.covered and best.tok_s >= target


def test_greedy_by_score_loses_where_rate_wins():
    rates = [9.0, 1.0, 1.0]
    rents = [5.0, 0.1, 0.1]
    found = covers(rates, rents, 9.0)
    assert found["greedy by score"].rent_per_month == pytest.approx(5.2)  # takes the small ones
    assert found["greedy by rate"].rent_per_month == pytest.approx(5.0)
    assert found["cheapest (milp)"].rent_per_month == pytest.approx(5.0)
    found = covers(rates, rents, 9.5)
    assert found["greedy by score"].rent_per_month == pytest.approx(5.2)
    assert found["cheapest (milp)"].rent_per_month == pytest.approx(5.1) == brute_force(
        rates, rents, 9.5)


@pytest.mark.parametrize("seed", range(25))
def test_milp_matches_brute_force_on_random_small_pools(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 11))
    rates = rng.integers(1, 20, size=n).astype(float).tolist()
    rents = rng.integers(1, 15, size=n).astype(float).tolist()
    target = float(rng.integers(1, int(sum(rates)) + 5))
    best = cheapest_cover(rates, rents, target)
    want = brute_force(rates, rents, target)
    if want is None:
        assert not best.covered and best.indices == tuple(range(n))
    else:
        assert best.covered and best.rent_per_month == pytest.approx(want)
        for method, cover in covers(rates, rents, target).items():
            assert cover.rent_per_month >= want - 1e-9, method


def test_one_class_greedy_by_rate_is_the_run_set_and_optimal():
    pool = mixed_pool({"flagship": 16}, seed=s.Plan().seed)
    month = s.simulate()
    assert pool.true_tok_s.tolist() == list(month.pool.true_tok_s)
    target = month.target_tok_s
    by_rate = greedy_cover(pool.true_tok_s, pool.rent_per_month, target, "rate")
    assert by_rate.indices == tuple(sorted(month.pool.ideal_run))
    assert by_rate.rent_per_month == month.ideal_bill
    assert cheapest_cover(pool.true_tok_s, pool.rent_per_month, target).rent_per_month == \
        month.ideal_bill


def test_mixed_pool_draws_each_class_lottery():
    pool = mixed_pool({"flagship": 4, "b-stock": 3, "bargain": 5}, seed=7)
    assert pool.classes == ("flagship",) * 4 + ("b-stock",) * 3 + ("bargain",) * 5
    assert pool.rent_per_month.tolist() == [2600.0] * 4 + [1700.0] * 3 + [1400.0] * 5
    for i, key in enumerate(pool.classes):
        assert pool.true_tok_s[i] == s.CARD_CLASSES[key].true_tok_s(uniform(7, "ticket", i))
        assert pool.true_tok_s[i] <= s.CARD_CLASSES[key].rated_tok_s
    assert pool.score == pytest.approx(s.score(pool.true_tok_s, pool.rent_per_month))


def test_uncovered_target_runs_everyone():
    found = covers([1.0, 2.0], [1.0, 1.0], 10.0)
    for cover in found.values():
        assert cover.indices == (0, 1) and not cover.covered


def test_bad_input():
    with pytest.raises(InputError, match="card_class"):
        mixed_pool({"gold": 3})
    with pytest.raises(InputError, match="at least one card"):
        mixed_pool({"flagship": 0})
    with pytest.raises(InputError, match="same|one length"):
        cheapest_cover([1.0, 2.0], [1.0], 1.0)
    with pytest.raises(InputError, match="rents"):
        greedy_cover([1.0], [0.0], 1.0)
    with pytest.raises(InputError, match="target_tok_s"):
        greedy_cover([1.0], [1.0], 0.0)
    with pytest.raises(InputError, match="by must be"):
        greedy_cover([1.0], [1.0], 1.0, by="price")
