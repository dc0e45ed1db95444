"""Every knob is validated where the plan is made, with a message naming knob, value, rule."""

import math

import pytest

import schedatrix as sx


@pytest.mark.parametrize(
    "knob, value, words",
    [
        ("cards", 0, "cards must be a whole number from 1 to 4096, got 0"),
        ("cards", 4097, "got 4097"),
        ("cards", 2.5, "got 2.5"),
        ("cards", True, "got True"),
        ("card_class", "gold", "card_class must be one of flagship, b-stock, bargain, got 'gold'"),
        ("demand_tok_s", 0, "demand_tok_s must be a finite number > 0"),
        ("demand_tok_s", -5.0, "got -5.0"),
        ("demand_tok_s", math.nan, "got nan"),
        ("demand_tok_s", math.inf, "got inf"),
        ("headroom", -0.1, "headroom must be a finite fraction >= 0"),
        ("headroom", math.nan, "got nan"),
        ("shape", "bursty", "shape must be one of steady, lazy, jumpy, got 'bursty'"),
        ("window", "month", "window must be hour, day, week or a number of hours from 0.1 to 730"),
        ("window", 0, "got 0"),
        ("window", -3, "got -3"),
        ("window", math.inf, "got inf"),
        ("window", 0.05, "got 0.05"),
        ("window", 731, "got 731"),
        ("window", "nan", "got 'nan'"),
        ("evict_share", 1.0, "evict_share must be a fraction in [0, 1)"),
        ("evict_share", -0.01, "got -0.01"),
        ("evict_share", math.nan, "got nan"),
        ("seed", -1, "seed must be a whole number from 0 to 2**63 - 1, got -1"),
        ("seed", 2**63, "got 9223372036854775808"),
        ("seed", 1.0, "got 1.0"),
    ],
)
def test_bad_knobs_are_refused_by_name(knob, value, words):
    with pytest.raises(sx.InputError) as err:
        sx.Plan(**{knob: value})
    assert words in str(err.value)


def test_good_knobs_are_kept_as_given():
    plan = sx.Plan(cards=7, window=36, evict_share=0.0, headroom=0.0)
    assert plan.window == 36 and plan.window_hours == 36.0
    assert sx.Plan(window="168").window_hours == 168.0
    assert plan.to_dict()["cards"] == 7
    with pytest.raises(sx.InputError):
        plan.with_knobs(cards=-1)


def test_plans_are_frozen():
    with pytest.raises(AttributeError):
        sx.Plan().cards = 3


def test_unknown_preset_is_named():
    with pytest.raises(sx.InputError, match="preset must be one of walkthrough"):
        sx.preset("golden")
