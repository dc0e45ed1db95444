"""The privacy rule: no error, warning or report quotes a field of a trace that was refused,
whatever it looks like.

A trace is sanitized (the fleet note: no prompt or completion text), but a misaligned row, a
headerless file or a careless export can still put text where a count should be, and personal
data can be number-shaped (an SSN, a card or a phone number in a token or time column). So
every message about a refused field goes through :func:`described`, which says what kind of
value it is and what is wrong with it ("a text of 11 characters", "a negative number", "a
number above 1,000,000,000") and never its content, and names the file, the line and the
column. Columns are named by :func:`column`, which quotes only the names the audit itself knows
and otherwise gives the column's position. :func:`shown` (numbers and timestamps quoted) is for
values that are not refused fields, such as a header cell's kind.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["shown", "described", "quotable", "column", "looks_like_text", "MAX_QUOTED_CHARS"]

#: The longest number or timestamp a message quotes; longer ones are described by their length.
MAX_QUOTED_CHARS = 40
# Digits with the signs, separators and letters of numbers and ISO-8601 times (1e19, -4,
# 2023-11-16T18:17:03.97Z, 2024-09-02 14:00:00+01:00, 12/31/2023), and at least one digit.
_NUMBER_OR_TIME = re.compile(r"^[0-9+\-.:eE ,/_TZtz]*[0-9][0-9+\-.:eE ,/_TZtz]*$")


def quotable(text: str) -> bool:
    """Whether a field's text may appear in a message: a short number or timestamp."""
    return len(text) <= MAX_QUOTED_CHARS and bool(_NUMBER_OR_TIME.match(text))


def shown(value) -> str:
    """A field's value as a message may show it: quoted when it is a number or a timestamp,
    otherwise described without its content (blank, true, a JSON list, a text of N
    characters)."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        value = int(value)  # a count read as a float (Parquet, pyarrow) shows as written
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        text = repr(value)
        return text if len(text) <= MAX_QUOTED_CHARS else f"a number of {len(text)} digits"
    if isinstance(value, list):
        return "a JSON list"
    if isinstance(value, dict):
        return "a JSON object"
    text = str(value).strip()
    if not text:
        return "blank"
    if quotable(text):
        return repr(text)
    if re.fullmatch(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?", text):
        return f"a number of {len(text)} characters"
    return f"a text of {len(text)} characters"


def described(value) -> str:
    """A refused field as a message names it: its kind and size, never its content (blank,
    null, true, a JSON list, a JSON object, a JSON string, a number, a text of N characters).
    Numbers are described, not quoted: a card or phone number is a number too."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a JSON list"
    if isinstance(value, dict):
        return "a JSON object"
    text = str(value).strip()
    return "blank" if not text else f"a text of {len(text)} characters"


def column(name: str, position: int, known: bool) -> str:
    """How a message names a column: by name when the audit knows the name (a column name in a
    headerless file is a field's value), otherwise by its 1-based position."""
    return repr(name) if known else f"column {position}"


def looks_like_text(values) -> bool:
    """Whether any value reads as free text: a string of more than 40 characters holding a
    space (a sentence, not an id or a count). `values`: a numpy string array or any iterable."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "U":
        if values.size == 0 or values.dtype.itemsize <= 4 * 40:
            return False   # no value longer than 40 characters
        long = values[np.char.str_len(values) > 40]
        return bool(long.size) and bool((np.char.find(np.char.strip(long), " ") >= 0).any())
    return any(isinstance(v, str) and len(v) > 40 and " " in v.strip() for v in values)
