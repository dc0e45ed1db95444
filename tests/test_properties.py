"""Invariants of the month over random plans (hypothesis)."""

import math
from decimal import Decimal

import pytest
import strategies  # tests/strategies.py
from hypothesis import given, settings
from hypothesis import strategies as st

import schedatrix as sx
from schedatrix.fleet.constants import CHURN_FEE_SHARE

plans = strategies.plans(max_cards=200)


@settings(max_examples=150, deadline=None)
@given(plans)
def test_month_invariants(plan):
    m = sx.simulate(plan)
    rent = m.card_class.rent_per_month
    # the bill splits exactly into run rent plus churn fees, each whole cards
    assert m.bill == pytest.approx(m.run_rent + m.churn_fees)
    assert m.run_rent == pytest.approx(rent * m.warm)
    assert m.churn_fees == pytest.approx(CHURN_FEE_SHARE * rent * m.evicted)
    # card counts
    assert m.evicted == math.floor(Decimal(repr(plan.evict_share)) * plan.cards)
    assert 1 <= m.warm <= plan.cards - m.evicted
    assert m.warm + m.evicted + m.skipped == plan.cards
    assert 0 <= m.wrong_evictions <= m.evicted
    assert 0 <= m.wrong_share <= 1
    # delivered never exceeds demand or the run set's true capacity
    assert m.delivered_tok_s <= m.demand_tok_s
    assert m.delivered_tok_s <= m.run_true_tok_s + 1e-6
    assert 0 <= m.unmet_share <= 1
    assert 0 <= m.idle_bill <= m.run_rent + 1e-6
    # the ideal never runs more cards than the pool holds, and convergence is its ratio
    assert 1 <= m.ideal_cards <= plan.cards
    assert m.convergence == pytest.approx(m.ideal_bill / m.bill)
    # no evictions: nothing can be wrong
    if m.evicted == 0:
        assert m.evictions_ok
    assert m.signature == "".join("1" if ok else "0" for ok in m.checks.values())
    # jumpy keeps every survivor warm
    if plan.shape == "jumpy":
        assert m.warm == plan.cards - m.evicted


@settings(max_examples=100, deadline=None)
@given(plans, st.floats(0, 1))
def test_more_headroom_never_means_fewer_warm_cards(plan, extra):
    plan = plan.with_knobs(shape="steady")
    more = plan.with_knobs(headroom=plan.headroom + extra)
    assert sx.simulate(more).warm >= sx.simulate(plan).warm
    assert sx.simulate(more).ideal_cards >= sx.simulate(plan).ideal_cards


@settings(max_examples=100, deadline=None)
@given(plans)
def test_lazy_never_runs_more_than_steady_nor_steady_more_than_jumpy(plan):
    warm = {s: sx.simulate(plan.with_knobs(shape=s)).warm for s in sx.SHAPES}
    assert warm["lazy"] <= warm["steady"] <= warm["jumpy"]


@settings(max_examples=100, deadline=None)
@given(plans)
def test_the_ideal_is_never_beaten_on_cards_for_a_covered_target(plan):
    m = sx.simulate(plan)
    pool = m.pool
    # the ideal's prefix is the shortest: no smaller set of true rates reaches the target
    best = sorted(pool.true_tok_s, reverse=True)
    if sum(best) >= m.target_tok_s:
        assert sum(best[: m.ideal_cards - 1]) < m.target_tok_s
