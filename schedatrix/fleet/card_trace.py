"""One card's month hour by hour: where the window's error comes from.

A card serves at its true rate, but any single hour reads it up to 25% high or low (load
mix, batch sizes, neighbours: an hour is a short sample), and a silent blip, starting in a
given hour with chance 1% and lasting that hour, takes ``dip_depth`` of the hour's rate.
Average T such hours and the noise shrinks like 1/sqrt(T): that is the window's error.

The library's month (:mod:`schedatrix.fleet.window`) keeps one number per card instead of a whole
trace: a misread ``e`` uniform in [-1, 1) scaled by ``25% / sqrt(T)``. Its standard deviation,
``25% / sqrt(3 T)``, is exactly that of the average of T hourly readings each uniform within
+-25%, so the model and the trace spread the same way (:func:`window_errors` measures it).
Traces draw from numpy's PCG64 seeded with ``seed``: same seed, same trace, everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .constants import HOUR_WINDOW_ERROR
from .inputs import real_number, whole_number
from .window import BLIP_CHANCE_PER_HOUR, error_bound

__all__ = [
    "HOURS_PER_MONTH",
    "CardTrace",
    "card_trace",
    "window_averages",
    "WindowError",
    "window_errors",
    "law_sd",
]

#: 365 x 24 / 12 hours.
HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class CardTrace:
    """A card's month, one reading per hour (tok/s), and which hours held a blip.

    ``true_tok_s`` has one entry per hour too: it is flat unless the card degrades.
    """

    true_tok_s: np.ndarray
    hourly_tok_s: np.ndarray
    blips: np.ndarray


def _positive(name: str, value: float) -> float:
    return float(real_number(name, value, "a finite number > 0",
                             lambda x: math.isfinite(x) and x > 0))


def card_trace(
    true_tok_s: float,
    dip_depth: float = 0.20,
    seed: int = 0,
    hours: int = HOURS_PER_MONTH,
    degrade_at: int | None = None,
    degraded_tok_s: float | None = None,
) -> CardTrace:
    """Draw a card's hourly readings over ``hours`` hours.

    Each hour reads ``true x (1 + 25% x u)`` with ``u`` uniform in [-1, 1), times
    ``(1 - dip_depth)`` in a blip hour. With ``degrade_at`` the true rate falls to
    ``degraded_tok_s`` from that hour on (a card going bad mid-month).
    """
    true_tok_s = _positive("true_tok_s", true_tok_s)
    hours = whole_number("hours", hours, low=1)
    dip_depth = real_number("dip_depth", dip_depth, "a fraction in [0, 1)",
                            lambda x: 0 <= x < 1)
    true = np.full(hours, true_tok_s)
    if degrade_at is not None:
        degrade_at = whole_number("degrade_at", degrade_at, low=0, high=hours - 1,
                                  allowed=f"an hour in [0, {hours})")
        true[degrade_at:] = _positive("degraded_tok_s", degraded_tok_s)
    rng = np.random.default_rng(seed)
    noise = rng.uniform(-1.0, 1.0, hours)
    blips = rng.random(hours) < BLIP_CHANCE_PER_HOUR
    hourly = true * (1 + HOUR_WINDOW_ERROR * noise) * np.where(blips, 1 - dip_depth, 1.0)
    return CardTrace(true_tok_s=true, hourly_tok_s=hourly, blips=blips)


def window_averages(hourly_tok_s, hours: int) -> np.ndarray:
    """Average consecutive windows of ``hours`` hours (a trailing part-window is dropped).

    Works on the last axis, so a (cards, hours) array gives (cards, windows).
    """
    values = np.asarray(hourly_tok_s, dtype=float)
    hours = whole_number("hours", hours, low=1, high=values.shape[-1])
    count = values.shape[-1] // hours
    trimmed = values[..., : count * hours]
    return trimmed.reshape(*values.shape[:-1], count, hours).mean(axis=-1)


def law_sd(hours: float) -> float:
    """Standard deviation of the relative error of a T-hour average of hourly readings each
    uniform within +-25% (no blips): 25% / sqrt(3 T). The model's misread has the same."""
    return HOUR_WINDOW_ERROR / math.sqrt(3 * hours)


@dataclass(frozen=True)
class WindowError:
    """How far T-hour averages strayed from the truth over many cards' months.

    ``sd`` is the measured standard deviation of (reading / true - 1); ``law`` is
    :func:`law_sd`; ``bound`` the model's 25%/sqrt(T); ``outside`` the share of windows that
    read further from the truth than ``bound``; ``bias`` the mean error (blips pull it down).
    """

    hours: int
    windows: int
    sd: float
    law: float
    bound: float
    outside: float
    bias: float


def window_errors(
    hours_list=(1, 6, 24, 72, 168), cards: int = 400, dip_depth: float = 0.20, seed: int = 0
) -> list[WindowError]:
    """Measure the window's error for each length in ``hours_list`` over ``cards`` card-months
    of hourly traces (all at the same true rate: the error is relative)."""
    cards = whole_number("cards", cards, low=1)
    rng = np.random.default_rng(seed)
    noise = rng.uniform(-1.0, 1.0, (cards, HOURS_PER_MONTH))
    blips = rng.random((cards, HOURS_PER_MONTH)) < BLIP_CHANCE_PER_HOUR
    relative = (1 + HOUR_WINDOW_ERROR * noise) * np.where(blips, 1 - dip_depth, 1.0)
    out = []
    for hours in hours_list:
        err = window_averages(relative, int(hours)).ravel() - 1.0
        bound = error_bound(hours)
        out.append(WindowError(
            hours=int(hours), windows=err.size, sd=float(err.std()), law=law_sd(hours),
            bound=bound, outside=float(np.mean(np.abs(err) > bound)), bias=float(err.mean()),
        ))
    return out
