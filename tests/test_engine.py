"""The vectorised engine gives the reference's figures on the same draws."""

import numpy as np
import pytest
import strategies  # tests/strategies.py
from hypothesis import given, settings

import schedatrix as sx
from schedatrix.fleet.engine import draw_pools

FIELDS = [
    "warm", "evicted", "wrong_evictions", "wrong_share", "bill", "run_rent", "churn_fees",
    "idle_bill", "delivered_tok_s", "run_true_tok_s", "unmet_share", "mtok_per_dollar",
    "ideal_bill", "ideal_cards", "ideal_mtok_per_dollar", "convergence", "median_true_tok_s",
    "capacity_ok", "convergence_ok", "evictions_ok",
]


def assert_same(plan, months=25, start=0):
    many = sx.simulate_many(plan, months, start)
    for i in range(months):
        one = sx.simulate(plan.with_knobs(seed=start + i))
        for f in FIELDS:
            a, b = getattr(one, f), getattr(many, f)[i]
            assert a == b, (plan, start + i, f, a, b)  # exact: the same floats, in order


@pytest.mark.parametrize("name", list(sx.PRESETS))
def test_engine_equals_reference_on_the_presets(name):
    plan = sx.preset(name).plan
    assert_same(plan, months=1, start=plan.seed)
    assert_same(plan, months=30, start=1_000)


plans = strategies.plans(max_cards=120)


@settings(max_examples=60, deadline=None)
@given(plans)
def test_engine_equals_reference_on_random_plans(plan):
    assert_same(plan, months=4, start=min(plan.seed, 2**63 - 4))  # seeds stay in range


def test_draw_pools_match_the_reference_pool():
    plan = sx.Plan(cards=64, card_class="b-stock", window="hour", seed=42)
    true, measured = draw_pools(plan, np.array([42], dtype=np.uint64))
    pool = sx.simulate(plan).pool
    assert true[0].tolist() == list(pool.true_tok_s)
    assert measured[0].tolist() == list(pool.measured_tok_s)


def test_simulate_many_defaults_to_the_plans_seed_and_validates():
    plan = sx.preset("golden-idler").plan
    assert sx.simulate_many(plan, 1).bill[0] == 69_940
    with pytest.raises(sx.InputError, match="months"):
        sx.simulate_many(plan, 0)
    with pytest.raises(sx.InputError, match="seed"):
        sx.simulate_many(plan, 5, seed=-1)


def test_row_sorts_break_ties_by_lower_index_like_the_reference():
    from schedatrix.fleet.engine import _sort_by_measured

    x = 7_000.0
    up = np.nextafter(x, np.inf)  # differs only in the last bit: the fast sort can't tell
    values = np.array([[3.0, 1.0, 3.0, 1.0, 2.0, 3.0], [5.0, 4.0, 3.0, 2.0, 1.0, 0.5],
                       [2.0, 2.0, 2.0, 2.0, 2.0, 2.0], [up, x, up, x, 9.0, 1.0],
                       [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    true = values * 10 + np.arange(6)  # tells the cards apart
    for k in range(6):
        got_measured, got_true = np.empty_like(values.T), np.empty_like(values.T)
        _sort_by_measured(values, true, k, got_measured, got_true)  # card-major: (rank, month)
        for row in range(len(values)):
            ref = sorted(range(6), key=lambda i: (values[row][i], i))
            survivors_best_first = sorted(ref[k:], key=lambda i: (-values[row][i], i))
            want = ref[:k] + survivors_best_first[::-1]  # the engine reads survivors backwards
            assert got_measured[:, row].tolist() == [values[row][i] for i in want]
            assert got_true[:, row].tolist() == [true[row][i] for i in want]


def test_engine_equals_reference_on_large_pools_and_any_worker_count():
    # Beyond 128 cards the running sums take numpy's cumsum; blocks then hold few months, so
    # a few hundred months cross many block and thread boundaries.
    plan = sx.Plan(cards=700, evict_share=0.35, window="hour", card_class="bargain")
    assert_same(plan, months=3, start=77)
    one = sx.simulate_many(plan, 300, 5, workers=1).as_dict()
    for workers in (2, 3):
        many = sx.simulate_many(plan, 300, 5, workers=workers).as_dict()
        assert all(np.array_equal(one[f], many[f]) for f in one)
