"""The fleet library refuses what it cannot read, and reads every real number type there is.

Issue 7, section 2: each item seen on main has a test here.
"""

import io
import json
import math
import sys
import tracemalloc
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import strategies  # tests/strategies.py
from hypothesis import given, settings
from hypothesis import strategies as st

import schedatrix as sx
from schedatrix.cli import main
from schedatrix.fleet import odds
from schedatrix.fleet.draws import below, hashes, to_unit
from schedatrix.fleet.odds import check_odds

WHOLE_TYPES = [int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64]
REAL_TYPES = WHOLE_TYPES + [float, np.float16, np.float32, np.float64, np.longdouble,
                            Fraction, Decimal]
NOT_NUMBERS = [True, np.True_, "0.2", None, 1 + 0j, [0.2], np.array([0.2])]


def _real(kind, text: str):
    """``text`` (a decimal like "0.5") as a number of type ``kind``."""
    return kind(text) if kind in (Fraction, Decimal) else kind(float(text))


def _error(call) -> str:
    with pytest.raises(sx.InputError) as err:
        call()
    return str(err.value)


# --- wrong_evictions ------------------------------------------------------------------------

def test_wrong_evictions_reads_a_boolean_mask_as_the_evicted_cards():
    true = [10, 20, 30, 40]  # median 25
    assert sx.wrong_evictions(true, [False, False, True, False]) == 1
    assert sx.wrong_evictions(true, np.array([True, True, False, True])) == 1
    assert sx.wrong_evictions(true, np.zeros(4, dtype=bool)) == 0
    assert "one entry per card (4), got 3" in _error(
        lambda: sx.wrong_evictions(true, [True, False, True]))
    assert "mixes bools and numbers" in _error(lambda: sx.wrong_evictions(true, [True, 2]))


@pytest.mark.parametrize("evicted, words", [
    ([3.9], "got 3.9 (float)"),  # was truncated to card 3
    ([2.0], "got 2.0 (float)"),  # a float is no card index, even whole
    (np.array([1.0]), "(float64)"),
    ([3, 3, 3, 3], "evicted must name each card once, got 3 4 times"),  # was 4 wrong
    ([0, 2, 0], "got 0 2 times"),
    ([4], "must lie in [0, 4), got 4"),
    ([-1], "got -1"),
    (None, "got None (NoneType)"),
    (3, "got 3 (int)"),
    ("12", "got '12' (str)"),
    ([[1]], "shape (1, 1)"),
])
def test_wrong_evictions_refuses_indices_it_cannot_read(evicted, words):
    message = _error(lambda: sx.wrong_evictions([10, 20, 30, 40], evicted))
    assert message.startswith("evicted") and words in message


@pytest.mark.parametrize("rates, words", [
    ([10, math.nan, 30], "got nan"),  # was 0 wrong evictions
    ([10, -20, 30], "got -20.0"),
    ([10, math.inf, 30], "got inf"),
    ([], "got an empty one"),
    ([True, False], "array of bool"),
    (None, "got None"),
])
def test_wrong_evictions_refuses_rates_it_cannot_read(rates, words):
    message = _error(lambda: sx.wrong_evictions(rates, [0]))
    assert message.startswith("true_tok_s") and words in message


@pytest.mark.parametrize("kind", WHOLE_TYPES)
def test_wrong_evictions_takes_indices_of_every_integer_type(kind):
    assert sx.wrong_evictions([10, 20, 30, 40], [kind(2), kind(0)]) == 1
    assert sx.wrong_evictions(np.array([10, 20, 30, 40], dtype=np.float32),
                              np.array([2, 3], dtype=kind)) == 2


# --- greedy_run_set -------------------------------------------------------------------------

@pytest.mark.parametrize("rates, target, words", [
    ([3, 9, 5], None, "target_tok_s must be a number of tok/s >= 0 (inf: every card), "
                      "got None (NoneType)"),  # was numpy's TypeError text
    ([3, 9, 5], "10", "got '10' (str)"),
    ([3, 9, 5], -1, "target_tok_s must be a number of tok/s >= 0 (inf: every card), got -1"),
    ([3, 9, 5], math.nan, "got nan"),
    ([3, -9, 5], 10, "rates_tok_s must be finite rates >= 0 tok/s, got -9.0 at index 1"),
    ([3, math.nan], 10, "got nan at index 1"),
    ([3, math.inf], 10, "got inf at index 1"),
    ([True, False], 1, "array of bool"),
    (None, 1, "rates_tok_s"),
    ([[1, 2]], 1, "shape (1, 2)"),
])
def test_greedy_run_set_refuses_what_it_cannot_read(rates, target, words):
    assert words in _error(lambda: sx.greedy_run_set(rates, target))


@pytest.mark.parametrize("kind", REAL_TYPES)
def test_greedy_run_set_takes_every_real_type(kind):
    rates = [kind(v) for v in (3, 9, 5, 9, 1)]
    assert sx.greedy_run_set(rates, kind(10)).tolist() == [1, 3]
    assert sx.greedy_run_set(np.array([3, 9, 5, 9, 1], dtype=np.int16), kind(18)).tolist() == [1, 3]


# --- evict_worst, evict_count, Plan, simulate_many, check_odds: every real type ---------------

@pytest.mark.parametrize("kind", REAL_TYPES)
def test_evict_worst_takes_every_real_type(kind):
    scores = [kind(v) for v in (5, 1, 3, 1, 9, 2)]
    share = kind(0) if kind in WHOLE_TYPES else _real(kind, "0.5")
    want = [] if kind in WHOLE_TYPES else [1, 3, 5]
    assert sx.evict_worst(scores, share).tolist() == want


@pytest.mark.parametrize("share", NOT_NUMBERS)
def test_evict_worst_refuses_shares_that_are_not_numbers_by_name(share):
    message = _error(lambda: sx.evict_worst([1, 2, 3], share))
    assert message.startswith("share must be a fraction in [0, 1), got")
    assert f"({type(share).__name__})" in message


@pytest.mark.parametrize("kind", WHOLE_TYPES)
def test_plan_and_simulate_many_take_every_integer_type(kind):
    plan = sx.Plan(cards=kind(24), seed=kind(7))
    assert plan == sx.Plan(cards=24, seed=7)
    assert type(plan.cards) is int and type(plan.seed) is int
    want = sx.simulate_many(sx.Plan(cards=24), 5, 7).bill
    assert np.array_equal(sx.simulate_many(plan, kind(5)).bill, want)
    assert np.array_equal(sx.simulate_many(sx.Plan(cards=24), kind(5), kind(7)).bill, want)
    assert sx.evict_count(0.25, kind(24)) == 6
    assert check_odds(plan, months=kind(50), seed=kind(7)).months == 50


@pytest.mark.parametrize("kind", [float, np.float16, np.float32, np.float64, np.longdouble,
                                  Fraction, Decimal, np.int64, int])
def test_plan_takes_every_real_type_and_keeps_python_numbers(kind):
    plan = sx.Plan(demand_tok_s=kind(60_000), headroom=kind(0) if kind in WHOLE_TYPES else
                   _real(kind, "0.25"), window=kind(36), evict_share=kind(0))
    for knob in ("demand_tok_s", "headroom", "window", "evict_share"):
        assert type(getattr(plan, knob)) in (int, float), knob
    assert json.loads(json.dumps(plan.to_dict())) == plan.to_dict()
    assert plan.window_hours == 36.0 and plan.demand_tok_s == 60_000
    assert sx.simulate(plan).bill == sx.simulate(sx.Plan(
        demand_tok_s=60_000.0, headroom=float(plan.headroom), window=36.0,
        evict_share=0.0)).bill
    confidence = 0.9 if kind in WHOLE_TYPES else _real(kind, "0.9")
    assert check_odds(plan, months=20, confidence=confidence).months == 20


def test_a_float32_knob_is_kept_as_the_float_it_is():
    plan = sx.Plan(headroom=np.float32(0.1), evict_share=np.float32(0.2))
    assert plan.headroom == float(np.float32(0.1)) == 0.10000000149011612
    assert plan.evict_share == float(np.float32(0.2))


@pytest.mark.parametrize("knob, value, words", [
    ("cards", True, "cards must be a whole number from 1 to 4096, got True (bool)"),
    ("cards", np.True_, "got np.True_ (bool)"),
    ("cards", 16.0, "got 16.0 (float)"),  # a count is a whole-number type
    ("cards", np.float64(16), "(float64)"),
    ("seed", np.float32(3), "(float32)"),
    ("seed", False, "got False (bool)"),
    ("demand_tok_s", True, "demand_tok_s must be a finite number > 0 tok/s, got True (bool)"),
    ("demand_tok_s", "60000", "got '60000' (str)"),
    ("headroom", None, "got None (NoneType)"),
    ("headroom", 1j, "got 1j (complex)"),
    ("evict_share", np.array(0.2), "(ndarray)"),
    ("window", True, "got True (bool)"),
    ("window", None, "got None (NoneType)"),
])
def test_plan_refuses_the_rest_by_name(knob, value, words):
    assert words in _error(lambda: sx.Plan(**{knob: value}))


@pytest.mark.parametrize("months", [True, 10.0, np.float64(10), "10", None])
def test_simulate_many_and_check_odds_refuse_months_that_are_not_counts(months):
    for call in (lambda: sx.simulate_many(sx.Plan(), months),
                 lambda: check_odds(sx.Plan(), months=months)):
        message = _error(call)
        assert message.startswith("months must be a whole number >= 1, got")
        assert f"({type(months).__name__})" in message


def test_simulate_many_refuses_bad_workers_and_seeds():
    assert "workers must be a whole number >= 1, got 0" in _error(
        lambda: sx.simulate_many(sx.Plan(), 5, workers=0))
    assert "got 2.0 (float)" in _error(lambda: sx.simulate_many(sx.Plan(), 5, workers=2.0))
    assert "seed must be a whole number from 0 to 2**63 - months" in _error(
        lambda: sx.simulate_many(sx.Plan(), 5, seed=2**63 - 3))
    assert "confidence must be a fraction in (0, 1), got True (bool)" in _error(
        lambda: check_odds(sx.Plan(), months=5, confidence=True))


# --- every figure is a finite number: JSON never says Infinity ------------------------------

def test_month_headroom_1e308_is_refused_not_printed_as_infinity(capsys):
    assert main(["month", "--headroom", "1e308", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == ("schedatrix: error: headroom must keep the steady target "
                           "(demand_tok_s x (1 + headroom)) a finite number of tok/s, got "
                           "1e+306 (with demand_tok_s 60000.0)")
    assert "demand_tok_s must keep the jumpy target" in _error(
        lambda: sx.Plan(demand_tok_s=1e308))


@settings(max_examples=60, deadline=None)
@given(strategies.plans(max_cards=64), st.floats(0, 1e300), st.floats(100, 1e300))
def test_every_plan_prints_as_strict_json(plan, headroom, demand):
    try:
        plan = plan.with_knobs(headroom=headroom, demand_tok_s=demand)
    except sx.InputError:
        return  # a target that overflows is refused (tested above)
    text = json.dumps(sx.simulate(plan).to_dict(), allow_nan=False)  # raises on inf or NaN
    assert json.loads(text)["plan"]["headroom"] == headroom


# --- odds: memory bounded whatever the knobs, progress that also shows in logs ---------------

def test_odds_memory_stays_under_its_cap_whatever_the_pool():
    # 2,500 months of 4,096 cards: one (months, cards) array of them would be 78 MiB.
    tracemalloc.start()
    try:
        check_odds(sx.Plan(cards=4096), months=2_500, progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < odds.ODDS_MEMORY_CAP, f"peak {peak / 2**20:.1f} MiB"


def test_odds_chunks_never_change_the_answer():
    plan = sx.Plan(cards=40, window="hour")
    whole = check_odds(plan, months=3_000, seed=3)
    for chunk in (1, 7, 2_999):
        assert check_odds(plan, months=3_000, seed=3, chunk=chunk) == whole
    assert "chunk must be a whole number of months from 1 to 65536" in _error(
        lambda: check_odds(plan, months=10, chunk=10**6))


def _bar_text(monkeypatch, **kw) -> str:
    err = io.StringIO()  # not a terminal, like a log file or a notebook's stream
    monkeypatch.setattr(sys, "stderr", err)
    check_odds(sx.Plan(cards=16), months=4_000, **kw)
    return err.getvalue()


def test_long_runs_show_progress_when_stderr_is_not_a_terminal(monkeypatch):
    assert _bar_text(monkeypatch) == ""  # 64,000 card-months: not long
    monkeypatch.setattr(odds, "PROGRESS_CARD_MONTHS", 10_000)
    text = _bar_text(monkeypatch)
    assert "lottery draws" in text and "4.00k/4.00k" in text  # the last line stays in a log
    assert _bar_text(monkeypatch, progress=False) == ""


def test_progress_in_a_log_does_not_flood_it(monkeypatch):
    monkeypatch.setattr(odds, "PROGRESS_CARD_MONTHS", 10_000)
    text = _bar_text(monkeypatch, chunk=10)  # 400 updates of the bar
    assert text.count("lottery draws") <= 3, text  # first, final, at most one 10 s refresh


def test_the_odds_command_shows_progress_on_a_long_run(monkeypatch, capsys):
    monkeypatch.setattr(odds, "PROGRESS_CARD_MONTHS", 10_000)
    assert main(["odds", "--months", "2000"]) == 0
    assert "lottery draws: 100%" in capsys.readouterr().err


# --- the engine's exact shortcuts -----------------------------------------------------------

@pytest.mark.parametrize("chance", [0.0, 2**-53, 3 * 2**-53, 1e-17, 0.01, 0.24, 0.5,
                                    1 - 2**-53, 1.0, 1.7])
def test_below_is_exactly_the_uniform_comparison(chance):
    h = hashes(range(200), ("dip",), 64)[0].reshape(-1)
    limit = math.ceil(min(chance, 1.0) * 2.0**53) << 11
    edges = [limit - 1, limit, limit + 1, limit - 2048, 0, 2**64 - 1]
    h = np.concatenate([h, np.array([e for e in edges if 0 <= e < 2**64], dtype=np.uint64)])
    assert np.array_equal(below(h, chance), to_unit(h.copy()) < chance)


# --- the rest of the fleet wing follows the same rules ---------------------------------------

def test_the_other_fleet_functions_take_numpy_numbers_and_refuse_bools():
    from schedatrix.fleet.card_trace import card_trace, window_averages
    from schedatrix.fleet.cover import mixed_pool
    from schedatrix.fleet.policies import below_median, consecutive, worst_first

    trace = card_trace(np.float32(7_000), hours=np.int64(48), degrade_at=np.uint16(10),
                       degraded_tok_s=Decimal(3_000))
    assert trace.true_tok_s[:10].tolist() == [float(np.float32(7_000))] * 10
    assert window_averages(trace.hourly_tok_s, np.int32(24)).shape == (2,)
    assert consecutive(k=np.int64(2), share=np.float32(0.25)) == consecutive(2, 0.25)
    assert below_median(np.float32(0.25), np.int8(1)).margin == 1
    assert worst_first(Fraction(1, 10)).share == 0.1
    assert mixed_pool({"flagship": np.int64(3), "bargain": np.uint8(2)}).n == 5
    for call, words in [
        (lambda: card_trace(7_000, hours=True), "hours must be a whole number >= 1, got True"),
        (lambda: card_trace(7_000, hours=24.0), "got 24.0 (float)"),
        (lambda: card_trace(True), "true_tok_s must be a finite number > 0, got True (bool)"),
        (lambda: consecutive(k=True), "k must be a whole number >= 1, got True (bool)"),
        (lambda: below_median(gap="0.2"), "gap must be a fraction in [0, 1), got '0.2' (str)"),
        (lambda: worst_first(np.True_), "share must be a fraction in [0, 1), got np.True_"),
        (lambda: mixed_pool({"flagship": True}), "counts['flagship'] must be a whole number"),
    ]:
        assert words in _error(call)
