"""What the model's public functions accept as numbers, checked in one place.

* A **real number** is any real type Python or numpy has: ``int``, ``float``,
  ``fractions.Fraction``, ``decimal.Decimal``, ``np.int8`` ... ``np.uint64``, ``np.float16`` ...
  ``np.longdouble``. It is kept as a Python ``int`` (whole types) or ``float`` (the others:
  the nearest float, so ``np.float32(0.1)`` is kept as the float it is, 0.10000000149011612).
* A **whole number** (a count, an index, a seed) is an ``int`` or a numpy integer. A float is
  refused even when whole (``16.0``): a float cannot hold every seed, and a count worked out
  in floats may be a hair off (0.29 x 100 is 28.999999999999996).
* A **bool is neither**: Python lets ``True`` pass for 1, which hides mistakes (a mask given
  where a count was meant), so ``True``, ``np.True_`` and boolean arrays are refused where a
  number is wanted. So are strings, ``None``, complex numbers and arrays where one number is
  wanted. Every refusal is an :class:`~schedatrix.errors.InputError` naming the parameter,
  the value (with its type when the type is what is wrong) and what is allowed.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from decimal import Decimal

import numpy as np

from ..errors import InputError

__all__ = ["is_real", "is_whole", "real_number", "whole_number", "real_array", "shown"]


def shown(value) -> str:
    """A value as an error message shows it: its repr and, for a wrong type, the type."""
    return f"{value!r} ({type(value).__name__})"


def is_real(value) -> bool:
    """Whether ``value`` is one real number of a Python or numpy real type (not a bool)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    return isinstance(value, (numbers.Real, Decimal))


def is_whole(value) -> bool:
    """Whether ``value`` is an ``int`` or a numpy integer (not a bool)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def real_number(name: str, value, allowed: str,
                test: Callable[[float], bool] | None = None) -> int | float:
    """``value`` as a Python int or float, when it is a real number that passes ``test``.

    ``allowed`` says in words what is allowed ("a finite number > 0"); NaN fails every test
    written as a comparison.
    """
    if not is_real(value):
        raise InputError(f"{name} must be {allowed}, got {shown(value)}")
    number = int(value) if isinstance(value, numbers.Integral) else float(value)
    if test is not None and not test(number):
        raise InputError(f"{name} must be {allowed}, got {value!r}")
    return number


def whole_number(name: str, value, low: int | None = None, high: int | None = None,
                 allowed: str | None = None) -> int:
    """``value`` as a Python int, when it is a whole number from ``low`` to ``high``."""
    if allowed is None:
        allowed = ("a whole number" + (f" from {low} to {high}" if low is not None and high
                                       is not None else f" >= {low}" if low is not None
                                       else f" <= {high}" if high is not None else ""))
    if not is_whole(value):
        raise InputError(f"{name} must be {allowed}, got {shown(value)}")
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise InputError(f"{name} must be {allowed}, got {value!r}")
    return number


def real_array(name: str, values, allowed: str) -> np.ndarray:
    """A one-dimensional sequence of real numbers as a float64 array.

    Accepts lists, tuples and arrays of any real dtype (Python or numpy numbers, Fractions,
    Decimals); refuses booleans, strings, complex numbers, ``None``, nesting and other shapes.
    Values are not range-checked here.
    """
    if isinstance(values, (str, bytes)) or values is None or is_real(values):
        raise InputError(f"{name} must be {allowed}, got {shown(values)}")
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError):  # ragged nesting
        raise InputError(f"{name} must be {allowed}, got {values!r}") from None
    if arr.ndim != 1:
        raise InputError(f"{name} must be {allowed}, got an array of shape {arr.shape}")
    if arr.dtype.kind == "O":
        for v in arr:
            if not is_real(v):
                raise InputError(f"{name} must be {allowed}, got an element {shown(v)}")
        return np.array([float(v) for v in arr], dtype=float)
    if arr.size and arr.dtype.kind not in "iuf":
        raise InputError(f"{name} must be {allowed}, got an array of {arr.dtype}")
    if not isinstance(values, np.ndarray) and any(isinstance(v, (bool, np.bool_)) for v in values):
        raise InputError(f"{name} must be {allowed}, got a bool among them: {values!r}")
    return arr.astype(float)
