"""Checking a block of rows and turning it into a :class:`Chunk`: times, tokens, pools.

The readers (CSV, JSON lines) hand over raw columns: numpy string arrays (CSV) or lists of JSON
values. Every row is checked; the first bad one stops the read with the file, the line and what
is allowed, quoting the value only when it is a number or a timestamp (:mod:`.privacy`).

Times (the time base, docs/audit.md):

- ISO-8601 text is an absolute time (naive = UTC), read to the microsecond.
- A number is in the unit its column names (``timestamp_s``, ``timestamp_ms``; Mooncake: ms;
  BurstGPT: s). A bare numeric ``timestamp`` is milliseconds when its first value is above
  1e11, else seconds.
- A numeric time of `ABSOLUTE_FROM_S` (1e8 s, March 1973) or more is epoch time; below that,
  it counts from the trace's start (relative). The file's first row decides its time base. A
  relative time whose unit the column doesn't name is read as seconds, with a warning.
- Every time, in seconds, lies in [0, `TIME_END_S`): epoch times run from 1970 to 2199.

Numbers written as text (CSV, text columns of Parquet) are plain ASCII decimal notation: digits,
a sign, a decimal point, an exponent (``12``, ``12.0``, ``1.2e3``). Python and numpy would
also read ``１２`` (full-width), ``٣`` (Arabic-Indic), ``1_000`` and ``inf``, and pyarrow
``0x10``: all refused. In JSON a count is a JSON number (``"500"`` is refused). A refused
field is never quoted (:func:`~.privacy.described`).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .formats import TraceFormat, norm
from .pools import Pools
from .privacy import described, looks_like_text

__all__ = ["Chunk", "Labels", "Converter", "ABSOLUTE_FROM_S", "TIME_END_S", "MAX_TOKENS",
           "MAX_LATENCY_S", "refuse_free_text", "plain_number"]

#: A numeric time (in seconds) at least this large is epoch time (after 3 March 1973).
ABSOLUTE_FROM_S = 1e8
#: Times must be below this many seconds: 2200-01-01 as epoch time.
TIME_END_S = 7_258_118_400
#: The largest token count a request may have (a billion).
MAX_TOKENS = 1_000_000_000
#: The longest latency a row may give, in seconds (a year).
MAX_LATENCY_S = 31_536_000
_OK_STATUS = {"", "ok", "success", "succeeded", "successful", "completed", "complete", "true"}
#: The characters of a number written in ASCII decimal notation (with white space around it).
_PLAIN = frozenset(" \t+-.0123456789eE")
_PLAIN_NUMBER = re.compile(r"\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*",
                           re.ASCII)
_TIMES = ("allowed: ISO-8601 (2023-11-16 18:17:03.97) from 1970 to 2199, or a number of "
          "seconds or milliseconds (epoch, or from the trace's start) >= 0")


@dataclass(frozen=True)
class Labels:
    """Short text values per row (replica ids, status codes), as codes into their distinct
    names: counting them is a bincount, whatever reader made them."""

    codes: np.ndarray          # int64 per row: an index into names
    names: tuple[str, ...]

    @classmethod
    def of(cls, values: np.ndarray) -> Labels:
        """Labels of a numpy string array."""
        names, inverse = np.unique(values, return_inverse=True)
        return cls(inverse.reshape(-1).astype(np.int64), tuple(names.tolist()))

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, rows) -> Labels:
        return Labels(self.codes[rows], self.names)

    def tolist(self) -> list[str]:
        return [self.names[c] for c in self.codes.tolist()]

    def counts(self) -> dict[str, int]:
        """How many rows carry each name (names that occur only)."""
        n = np.bincount(self.codes, minlength=len(self.names))
        return {name: int(c) for name, c in zip(self.names, n.tolist(), strict=True) if c}


@dataclass(frozen=True)
class Chunk:
    """A block of requests. Times in seconds (epoch, or from the trace's start when
    `relative`), tokens as int64, `pool` an index into the note's pools (0 without a note);
    optional columns are None when absent. `lines` are the rows' line numbers in the file;
    `bytes_read` the file's bytes so far; `format_name` the format the file was read as.
    `hash_offsets`, `hash_values` (int64): the rows' ``hash_ids`` in CSR form, row i's being
    ``hash_values[hash_offsets[i]:hash_offsets[i + 1]]`` (offsets from 0 in each chunk);
    None when the file has no ``hash_ids``."""

    t_s: np.ndarray
    pool: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    ttft_s: np.ndarray | None
    e2e_s: np.ndarray | None
    ok: np.ndarray | None
    replica: Labels | None
    lines: np.ndarray
    bytes_read: int
    format_name: str
    relative: bool = False
    hash_offsets: np.ndarray | None = None
    hash_values: np.ndarray | None = None


def plain_number(text: str) -> bool:
    """Whether a text is a number in plain ASCII decimal notation (12, -4, 12.0, 1.2e3)."""
    return _PLAIN_NUMBER.fullmatch(text) is not None


def _is_number_like(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        return True
    return isinstance(v, str) and plain_number(v)


def _first_not_plain(texts: np.ndarray) -> int | None:
    """The index of the first text that is not a plain ASCII decimal number, or None."""
    values = texts.tolist()
    if set("".join(values)) <= _PLAIN:   # only digits, signs, points and exponents: float()
        return None                      # reads exactly the plain ones and refuses the rest
    for i, v in enumerate(values):
        if not plain_number(v):
            return i
    return None


def _floats(values, text_ok: bool = True) -> tuple[np.ndarray | None, int | None]:
    """The values as float64 and None, or None and the index of the first value that isn't a
    plain number: a JSON true, list or null, a JSON string unless `text_ok`, a text that is not
    ASCII decimal notation (numpy string arrays: CSV, Parquet text)."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "U":
            bad = _first_not_plain(values)
            if bad is not None:
                return None, bad
        try:
            return values.astype(np.float64), None
        except (ValueError, OverflowError):
            pass
    else:
        for i, v in enumerate(values):
            if type(v) not in (int, float, str) or (type(v) is str and (
                    not text_ok or not plain_number(v))):
                return None, i
        try:
            return np.asarray(values, dtype=np.float64), None
        except (ValueError, TypeError, OverflowError):
            pass
    out = []
    for i, v in enumerate(values):   # one by one (a huge integer overflows only in bulk)
        try:
            out.append(float(v))
        except OverflowError:
            if type(v) is not int:
                return None, i
            out.append(np.inf if v > 0 else -np.inf)   # a JSON integer of 400 digits
        except (ValueError, TypeError):
            return None, i
    return np.array(out, dtype=np.float64), None


def _out_of_range(v: float, high: float, whole: bool = False, unit: str = "") -> str:
    """What is wrong with a number outside [0, high] (or not whole), in words."""
    if v != v:
        return "not a number (null or NaN)"
    if v < 0:
        return "a negative number"
    if v > high:
        return f"a number above {high:,}{unit}"
    return "a number that is not whole" if whole else "a number"


def _strings(values) -> np.ndarray:
    """The values as a numpy string array (CSV columns already are one)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "U":
        return values
    return np.asarray([v if isinstance(v, str) else str(v) for v in values], dtype=str)


class Converter:
    """Turns a file's blocks of raw columns into Chunks, checking every row.

    `note` None reads every request into pool 0 (a trace without a fleet note); `fixed_pool`
    is the pool index of every request (``--pool-of``), or None to read the pool or model
    column. `warnings` collects what the file's reading warns about (the time base).
    """

    def __init__(self, source: str, fmt: TraceFormat, note: Pools | None,
                 fixed_pool: int | None, row_word: str = "line"):
        self.source, self.fmt, self.note, self.fixed_pool = source, fmt, note, fixed_pool
        self.row_word = row_word
        self.unit_s = fmt.time_unit_s
        self.iso: bool | None = None
        self.relative: bool | None = None
        self.pool_index: dict[str, int] = {}
        self.warnings: list[str] = []

    def _bad(self, lines: np.ndarray, i: int, col: str, what: str, allowed: str) -> InputError:
        """The refusal of one field: where it is and `what` it is, never its value."""
        return InputError(f"trace {self.source} {self.row_word} {lines[i]}: {col} is "
                          f"{what}: {allowed}")

    def chunk(self, cols: dict, lines: np.ndarray, bytes_read: int) -> Chunk:
        """Check one block's columns (role -> raw values) and make its Chunk."""
        n = len(lines)
        t = self._times(cols["time"], lines)
        inp = self._tokens(cols["input"], lines, self.fmt.columns["input"])
        out = self._tokens(cols["output"], lines, self.fmt.columns["output"])
        if "total" in cols:
            self._total(cols["total"], inp, out, lines)
        if self.fixed_pool is not None or self.note is None:
            pool = np.full(n, self.fixed_pool or 0, dtype=np.int16)
        else:
            role = "pool" if "pool" in cols else "model"
            pool = self._pools(cols[role], lines, self.fmt.columns[role])
        ttft = self._seconds(cols, "ttft", lines)
        e2e = self._seconds(cols, "e2e", lines)
        ok = None
        if "status" in cols:
            st = self._labels(cols, "status", lines)
            names = np.char.lower(np.char.strip(np.array(st.names, dtype=str)))
            code = (np.char.isdigit(names) & (np.char.str_len(names) == 3)
                    & np.char.startswith(names, "2"))
            ok = (np.isin(names, list(_OK_STATUS)) | code)[st.codes]
        replica = self._labels(cols, "replica", lines) if "replica" in cols else None
        offsets, values = self._hashes(cols["hashes"], lines) if "hashes" in cols else (
            None, None)
        return Chunk(t, pool, inp, out, ttft, e2e, ok, replica, lines, bytes_read,
                     self.fmt.name, bool(self.relative), offsets, values)

    def _hashes(self, values, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """JSON ``hash_ids`` (a list of integers per row; missing = none) in CSR form; a
        columnar reader hands them over as (offsets, values) already."""
        if isinstance(values, tuple):
            return values
        col = self.fmt.columns["hashes"]
        rows = [[] if v is None else v for v in values]
        for i, r in enumerate(rows):
            if not isinstance(r, list) or not all(
                    isinstance(h, int) and not isinstance(h, bool) for h in r):
                raise self._bad(lines, i, col, described(values[i]),
                                "allowed: a list of integers (prefix-block hashes)")
            if any(abs(h) >= 2**63 for h in r):
                raise self._bad(lines, i, col, "a list holding a number that does not fit in "
                                "64 bits", "allowed: integers that fit in 64 bits")
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=offsets[1:])
        flat = np.fromiter((h for r in rows for h in r), dtype=np.int64, count=int(offsets[-1]))
        return offsets, flat

    def _labels(self, cols: dict, role: str, lines: np.ndarray) -> Labels:
        """A text column (status, replica) as Labels: refused when it carries free text."""
        values = cols[role]
        if not isinstance(values, Labels):
            for i, v in enumerate(values if not isinstance(values, np.ndarray) else ()):
                if isinstance(v, list | dict) or v is None:
                    raise self._bad(lines, i, self.fmt.columns[role], described(v),
                                    "allowed: a short id or code")
            values = Labels.of(_strings(values))
        if looks_like_text(values.names):
            raise InputError(
                f"trace {self.source}: column {self.fmt.columns[role]!r} carries free text "
                "(a value of more than 40 characters with spaces); the audit takes a sanitized "
                "trace: ids and codes only")
        return values

    def _times(self, values, lines: np.ndarray) -> np.ndarray:
        col = self.fmt.columns["time"]
        parsed = isinstance(values, np.ndarray) and values.dtype.kind == "M"
        if self.iso is None:
            first = values[0]
            self.iso = parsed or (isinstance(first, str) and not _is_number_like(first))
        if parsed:  # epoch times a columnar reader parsed already
            us = values.astype("datetime64[us]")
            if np.isnat(us).any():
                i = int(np.flatnonzero(np.isnat(us))[0])
                raise self._bad(lines, i, f"timestamp ({col})", "null", _TIMES)
            t = us.astype(np.int64) / 1e6
        elif self.iso:
            t = self._iso(values, lines, col)
        else:
            t = self._numeric_times(values, lines, col)
        bad = ~((t >= 0) & (t < TIME_END_S))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = ("a time before 1970" if t[i] < 0 else "a time after 2199") if (
                parsed or self.iso) else ("a negative number" if t[i] < 0 else
                                          "a number past 2199 as a time")
            raise self._bad(lines, i, f"timestamp ({col})", what, _TIMES)
        if self.relative is None:
            self.relative = bool(t[0] < ABSOLUTE_FROM_S)
            if self.relative and not self.iso and self.fmt.time_unit_s is None:
                self.warnings.append(
                    f"trace {self.source}: column {col!r} names no unit and its times are small "
                    "(counted from the trace's start): read as seconds; if they are "
                    "milliseconds, name the column timestamp_ms")
        return t

    def _iso(self, values, lines: np.ndarray, col: str) -> np.ndarray:
        arr = np.char.strip(_strings(values))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy deprecates parsing a UTC offset
            try:
                us = arr.astype("datetime64[us]")
            except (ValueError, OverflowError):
                us = None
            if us is None or np.isnat(us).any():
                for i, v in enumerate(arr.tolist()):
                    try:
                        ok = not np.isnat(np.datetime64(v, "us"))
                    except (ValueError, OverflowError):
                        ok = False
                    if not ok:
                        raise self._bad(lines, i, f"timestamp ({col})", described(values[i]),
                                        _TIMES)
        return us.astype(np.int64) / 1e6

    def _numeric_times(self, values, lines: np.ndarray, col: str) -> np.ndarray:
        t, bad = _floats(values)
        if t is None:
            raise self._bad(lines, bad, f"timestamp ({col})", described(values[bad]), _TIMES)
        finite = np.isfinite(t)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise self._bad(lines, i, f"timestamp ({col})", "not a finite number", _TIMES)
        if self.unit_s is None:
            self.unit_s = 0.001 if abs(t[0]) > 1e11 else 1.0
        return t * self.unit_s

    def _tokens(self, values, lines: np.ndarray, col: str) -> np.ndarray:
        allowed = (f"tokens must be a whole number from 0 to {MAX_TOKENS:,}, in decimal "
                   "digits")
        if isinstance(values, np.ndarray) and values.dtype.kind in "iu":  # integers already
            wrong = (values < 0) | (values > MAX_TOKENS)
            if wrong.any():
                i = int(np.flatnonzero(wrong)[0])
                raise self._bad(lines, i, col, _out_of_range(float(values[i]), MAX_TOKENS),
                                allowed)
            return values.astype(np.int64, copy=False)
        v, bad = _floats(values, text_ok=False)   # in JSON, "500" is a text, not a count
        if v is None:
            what = described(values[bad])
            if isinstance(values, list) and isinstance(values[bad], str):
                what = "a JSON string"
            raise self._bad(lines, bad, col, what, allowed)
        wrong = ~((v >= 0) & (v <= MAX_TOKENS)) | (v != np.floor(v))
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise self._bad(lines, i, col, _out_of_range(float(v[i]), MAX_TOKENS, True),
                            allowed)
        return v.astype(np.int64)

    def _total(self, values, inp: np.ndarray, out: np.ndarray, lines: np.ndarray) -> None:
        """A total-tokens column (BurstGPT's) must be the input plus the output tokens."""
        col = self.fmt.columns["total"]
        total = self._tokens(values, lines, col)
        wrong = total != inp + out
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise InputError(
                f"trace {self.source} {self.row_word} {lines[i]}: {col} is not "
                f"{self.fmt.columns['input']} + {self.fmt.columns['output']}: a row's total "
                "must be its input plus its output tokens (which of them is wrong?)")

    def _seconds(self, cols: dict, role: str, lines: np.ndarray) -> np.ndarray | None:
        if role not in cols:
            return None
        col = self.fmt.columns[role]
        raw = cols[role]
        if isinstance(raw, np.ndarray) and raw.dtype.kind == "f":  # nulls read as NaN
            blank = np.isnan(raw)
            values = raw
        elif isinstance(raw, np.ndarray):
            blank = np.char.str_len(np.char.strip(raw)) == 0
            values = np.where(blank, "0", raw) if blank.any() else raw
        else:
            blank = np.array([v is None or (isinstance(v, str) and not v.strip()) for v in raw],
                             dtype=bool)
            values = [0 if b else v for v, b in zip(raw, blank, strict=True)]
        allowed = f"a latency must be a number of seconds from 0 to {MAX_LATENCY_S:,} (or blank)"
        v, bad = _floats(values)
        if v is None:
            raise self._bad(lines, bad, col, described(values[bad]), allowed)
        scale = 0.001 if norm(col).endswith("_ms") else 1.0
        v = v * scale
        if blank.any() and not (isinstance(raw, np.ndarray) and raw.dtype.kind == "f"):
            v[blank] = np.nan
        wrong = ~blank & ~((v >= 0) & (v <= MAX_LATENCY_S))
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise self._bad(lines, i, col, _out_of_range(float(v[i]), MAX_LATENCY_S,
                                                         unit=" s"), allowed)
        return v

    def _pools(self, values, lines: np.ndarray, col: str) -> np.ndarray:
        if not isinstance(values, Labels):
            for i, v in enumerate(values if not isinstance(values, np.ndarray) else ()):
                if not isinstance(v, str):
                    raise self._bad(lines, i, col, described(v),
                                    "allowed: a pool id, model or alias")
            values = Labels.of(_strings(values))
        names, inverse = values.names, values.codes
        index = np.empty(len(names), dtype=np.int16)
        for j, name in enumerate(names):
            if name not in self.pool_index:
                try:
                    self.pool_index[name] = self.note.pools.index(self.note.pool(name))
                except KeyError:
                    i = int(np.flatnonzero(inverse == j)[0])
                    known = ", ".join(p.pool_id for p in self.note.pools)
                    raise InputError(
                        f"trace {self.source} {self.row_word} {lines[i]}: {col} names no pool "
                        f"of the note ({described(name)}); allowed: the note's pools ({known}), "
                        "their models or aliases") from None
            index[j] = self.pool_index[name]
        return index[inverse]


def refuse_free_text(source: str, where: str, values) -> None:
    """Refuse a column the audit doesn't use when it carries free text; `where` names it
    (by position, or as a field: never by a name the audit doesn't know)."""
    if looks_like_text(values):
        raise InputError(
            f"trace {source}: {where} carries request or response text (a value of more than "
            "40 characters with spaces); the audit takes a sanitized trace (the fleet note: do "
            "not include prompt or completion text). Drop it and send token counts only")
