"""The reference parsers: a block of CSV or JSON lines read in plain Python, row by row.

They decide every question about a block: the columnar reader (:mod:`.columnar`) hands a
block it can't read, or that fails a check, to these, which either read it or stop with the
file, the line and what is allowed. Blank lines are skipped; every row must have the header's
width; a quoted field may not run past the end of its line; a JSON line must be one flat object
with each key once.
"""

from __future__ import annotations

import csv
import json

import numpy as np

from ..errors import InputError
from .convert import refuse_free_text
from .formats import IGNORED, TraceFormat, norm
from .privacy import column

__all__ = ["decode", "csv_header", "csv_block", "json_record", "json_block"]


def decode(data: bytes, first_line: int, source: str) -> list[str]:
    """A block's lines as text (UTF-8; line breaks removed)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data[: exc.start].count(b"\n")
        raise InputError(f"trace {source} line {line}: not UTF-8 text (save the file as "
                         "UTF-8)") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _split(text: str, line: int, source: str) -> list[str]:
    if text.count('"') % 2:
        raise InputError(f"trace {source} line {line}: a quoted field runs past the end of the "
                         "line (a field holding a line break); a trace holds no text")
    return next(csv.reader([text]))


def csv_header(text: str, source: str) -> list[str]:
    """The column names of a CSV header line."""
    if not text.strip():
        raise InputError(f"trace {source}: empty file or no header line")
    return [h.strip() for h in _split(text, 1, source)]


def _table(body: list[str], lines: np.ndarray, width: int, source: str) -> np.ndarray:
    """Rows x columns of strings; raises naming the first row of the wrong width."""
    quoted = [i for i, ln in enumerate(body) if '"' in ln]
    if quoted:
        rows = [ln.split(",") for ln in body]
        for i in quoted:
            rows[i] = _split(body[i], int(lines[i]), source)
        widths = np.array([len(r) for r in rows])
    else:
        widths = np.fromiter((ln.count(",") for ln in body), dtype=np.int64,
                             count=len(body)) + 1
    wrong = np.flatnonzero(widths != width)
    if len(wrong):
        i = int(wrong[0])
        raise InputError(f"trace {source} line {lines[i]}: {widths[i]} fields, the header has "
                         f"{width}")
    if quoted:
        return np.array(rows, dtype=str).reshape(len(rows), width)
    return np.array(",".join(body).split(",")).reshape(len(body), width)


def csv_block(data: bytes, first_line: int, names: list[str], fmt: TraceFormat,
              source: str) -> tuple[dict, np.ndarray] | None:
    """A block of CSV lines: (role -> string column, line numbers), or None when it holds
    only blank lines."""
    text = decode(data, first_line, source)
    lines = np.arange(first_line, first_line + len(text))
    keep = [i for i, ln in enumerate(text) if ln.strip()]
    if len(keep) < len(text):
        text, lines = [text[i] for i in keep], lines[keep]
    if not text:
        return None
    table = _table(text, lines, len(names), source)
    used = set(fmt.columns.values())
    for i, name in enumerate(names):
        if name not in used and norm(name) not in IGNORED:
            refuse_free_text(source, column(name, i + 1, fmt.known(name)), table[:, i])
    index = {name: i for i, name in enumerate(names)}
    return {role: table[:, index[c]] for role, c in fmt.columns.items()}, lines


class _Repeated(ValueError):
    pass


def _flat_object(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) < len(keys):
        raise _Repeated
    return dict(pairs)


def json_record(text: str, line: int, source: str) -> dict:
    """One JSON line as a flat object."""
    where = f"trace {source} line {line}"
    try:
        rec = json.loads(text, object_pairs_hook=_flat_object)
    except _Repeated:
        raise InputError(f"{where}: a key appears twice in the object; the audit can't tell "
                         "which to read") from None
    except RecursionError:
        raise InputError(f"{where}: not a flat JSON object (nested too deep)") from None
    except ValueError as exc:  # JSONDecodeError, and integers too long for Python
        reason = getattr(exc, "msg", "a number too long to read")
        raise InputError(f"{where}: not a JSON object ({reason})") from None
    if not isinstance(rec, dict):
        raise InputError(f"{where}: not a JSON object")
    return rec


def json_block(data: bytes, first_line: int, fmt: TraceFormat, source: str
               ) -> tuple[dict, np.ndarray] | None:
    """A block of JSON lines: (role -> list of values, line numbers), or None when it holds
    only blank lines."""
    text = decode(data, first_line, source)
    pending = [(first_line + k, json_record(t, first_line + k, source))
               for k, t in enumerate(text) if t.strip()]
    if not pending:
        return None
    lines = np.array([ln for ln, _ in pending], dtype=np.int64)
    recs = [r for _, r in pending]
    known = set(fmt.columns.values())
    for k in set().union(*recs) - known:
        if norm(k) not in IGNORED:
            refuse_free_text(source, "a field the audit doesn't use", [r.get(k) for r in recs])
    cols = {}
    for role, key in fmt.columns.items():
        if role in ("time", "input", "output", "pool", "model"):
            missing = [i for i, r in enumerate(recs) if key not in r]
            if missing:
                raise InputError(f"trace {source} line {lines[missing[0]]}: field {key!r} is "
                                 "missing")
        cols[role] = [r.get(key) for r in recs]
    return cols, lines
