"""The measurement window: how far a card's measured rate can stray from its true rate.

Through a window of T hours a card reads up to ``25% / sqrt(T)`` better or worse than it is
(the 1/sqrt(T) law of an average: an hour 25%, a day 5.1%, a week 1.9%; the page rounds
these to 25%, 5% and 2%). Each card has a fixed direction and size of misreading, its draw
``e`` in [-1, 1), scaled by the window's bound, so a longer window reads the same card the
same way, only closer to the truth.

Short windows also catch a card inside a dip: a one-hour blip starts in any given hour with
chance 1%, so a window of T hours holds one with chance min(1, T / 100), and the blip costs
the card's class ``dip_depth`` x min(1, 1 / T) of the window's average. An hour window that
lands on a blip reads the card a full dip low; a week window hardly notices it.
"""

from __future__ import annotations

import math

from ..errors import InputError
from .constants import HOUR_WINDOW_ERROR
from .inputs import is_real, shown

__all__ = [
    "NAMED_WINDOWS",
    "MIN_WINDOW_HOURS",
    "MAX_WINDOW_HOURS",
    "BLIP_HOURS",
    "BLIP_CHANCE_PER_HOUR",
    "window_hours",
    "error_bound",
    "dip_chance",
    "dip_cost",
    "measured_tok_s",
]

NAMED_WINDOWS = {"hour": 1.0, "day": 24.0, "week": 168.0}
#: The shortest window offered: 6 minutes, whose bound (79%) still reads every card above zero.
MIN_WINDOW_HOURS = 0.1
#: The longest window offered: the whole month (730 hours).
MAX_WINDOW_HOURS = 730.0
BLIP_HOURS = 1.0
BLIP_CHANCE_PER_HOUR = 0.01


_ALLOWED = (
    f"hour, day, week or a number of hours from {MIN_WINDOW_HOURS:g} to {MAX_WINDOW_HOURS:g}"
)


def window_hours(window) -> float:
    """A window's length in hours: ``hour``, ``day``, ``week`` or 0.1 to 730 hours.

    A number of hours may be any real type (Python's or numpy's) or a string of one
    ("36"); a bool is refused.
    """
    if isinstance(window, str):
        key = window.strip().lower()
        if key in NAMED_WINDOWS:
            return NAMED_WINDOWS[key]
        try:
            hours = float(key)
        except ValueError:
            raise InputError(f"window must be {_ALLOWED}, got {window!r}") from None
    elif is_real(window):
        hours = float(window)
    else:
        raise InputError(f"window must be {_ALLOWED}, got {shown(window)}")
    if not (math.isfinite(hours) and MIN_WINDOW_HOURS <= hours <= MAX_WINDOW_HOURS):
        raise InputError(f"window must be {_ALLOWED}, got {window!r}")
    return hours


def error_bound(hours: float) -> float:
    """The largest share by which a card can misread through a window of ``hours``."""
    return HOUR_WINDOW_ERROR / math.sqrt(hours)


def dip_chance(hours: float) -> float:
    """Chance that a window of ``hours`` holds one of the card's blips."""
    return min(1.0, BLIP_CHANCE_PER_HOUR * hours)


def dip_cost(hours: float) -> float:
    """Share of a window's average one blip takes, per unit of dip depth."""
    return min(1.0, BLIP_HOURS / hours)


def measured_tok_s(
    true_tok_s: float, misread: float, dip_draw: float, hours: float, dip_depth: float
) -> float:
    """What the autoscaler reads for one card through a window of ``hours``.

    ``misread`` in [-1, 1) is the card's direction of misreading; ``dip_draw`` in [0, 1) says
    whether this window caught the card in a blip (when below ``dip_chance(hours)``).
    """
    reading = true_tok_s * (1 + error_bound(hours) * misread)
    if dip_draw < dip_chance(hours):
        reading *= 1 - dip_depth * dip_cost(hours)
    return reading
