"""Checks for the numbers a serving knob takes: every real type numpy and Python have, no bools."""

from __future__ import annotations

import argparse
import math
import numbers

from ..errors import InputError

__all__ = ["check_int", "check_real", "positive_arg"]


def check_int(name: str, value, low: int, high: int) -> int:
    """``value`` as an int in [low, high], or an InputError naming the knob."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and not isinstance(value, bool) \
                and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise InputError(f"{name} must be a whole number from {low:,} to {high:,}, "
                             f"got {value!r}")
    value = int(value)
    if not low <= value <= high:
        raise InputError(f"{name} must be from {low:,} to {high:,}, got {value:,}")
    return value


def check_real(name: str, value, low: float, high: float, *, low_open: bool = False) -> float:
    """``value`` as a finite float in [low, high] (or (low, high] with ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a number, got {value!r}")
    value = float(value)
    bad_low = value <= low if low_open else value < low
    if not math.isfinite(value) or bad_low or value > high:
        bracket = "(" if low_open else "["
        raise InputError(f"{name} must be in {bracket}{low:g}, {high:g}], got {value!r}")
    return value


def positive_arg(kind, flag: str):
    """An argparse ``type`` for ``flag``: a ``kind`` (int or float) above 0 and finite, else
    the flag's one-line error."""
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} must be {'a whole number' if kind is int else 'a number'}, "
                f"got {text!r}") from None
        if not (v > 0) or v != v or v in (float("inf"),):
            raise argparse.ArgumentTypeError(f"{flag} must be above 0, got {text!r}")
        return v
    return parse
