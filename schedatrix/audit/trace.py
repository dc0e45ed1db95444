"""Request-trace readers: generic CSV / JSON lines and the public formats, read in chunks.

Formats, recognised from the header (CSV) or the first record's keys (JSON lines):

- generic (CSV or JSON lines): ``timestamp``, ``pool``, ``input_tokens``, ``output_tokens``;
  optional ``ttft_s`` or ``ttft_ms``, ``e2e_s`` or ``e2e_ms``, ``status``, ``replica``.
  Timestamps are ISO-8601, or epoch seconds (``timestamp_s``) or milliseconds
  (``timestamp_ms``); a bare numeric ``timestamp`` above 1e11 is read as ms, else as seconds.
  Without a ``pool`` column the pool is given per file.
- Azure LLM inference 2023: ``TIMESTAMP, ContextTokens, GeneratedTokens``; ISO-8601 times;
  the pool is given per file.
- Mooncake (JSON lines): ``timestamp`` (ms), ``input_length``, ``output_length``,
  ``hash_ids``; the pool is given per file. A JSON lines file's ``hash_ids`` (lists of
  integers: prefix-block hashes) are carried per request in the chunks.
- BurstGPT: ``Timestamp`` (s), ``Model``, ``Request tokens``, ``Response tokens``,
  ``Total tokens``, ``Log Type``; Model names map to pools through the note's pool ids, models
  and aliases.

A file may end in ``.gz``. Naive ISO times are read as UTC. Arrivals need not be sorted.
Without a fleet note (``note=None``) every request is in one pool, index 0 (a pool or model
column is then not used): the serving simulator replays traces this way.

Privacy: a column that carries request or response text (by its name, or by long free-text
values in a column the reader doesn't know) stops the read with an error that names the column;
the text is never printed. Bad rows (unparseable timestamp, negative or non-integer tokens,
unknown pool, missing field) stop the read with the file and line number: nothing is dropped.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from ..errors import InputError
from .note import FleetNote

__all__ = ["Chunk", "TraceFormat", "read_trace", "detect_format", "CHUNK_ROWS"]

#: Rows per chunk: bounds memory whatever the trace's size (about 100 MB peak at 50,000).
CHUNK_ROWS = 50_000

_ALIASES = {
    "time": ("timestamp", "timestamp_s", "timestamp_ms", "arrival", "arrival_time",
             "arrival_s", "arrival_ms", "time", "ts"),
    "pool": ("pool", "pool_id"),
    "model": ("model",),
    "input": ("input_tokens", "prompt_tokens", "contexttokens", "context_tokens",
              "request_tokens", "input_length"),
    "output": ("output_tokens", "completion_tokens", "generatedtokens", "generated_tokens",
               "response_tokens", "output_length"),
    "ttft": ("ttft_s", "ttft", "ttft_ms", "time_to_first_token_s", "time_to_first_token_ms"),
    "e2e": ("e2e_s", "e2e", "e2e_ms", "latency_s", "latency_ms", "e2e_latency_s",
            "e2e_latency_ms"),
    "status": ("status", "status_code"),
    "replica": ("replica", "replica_id", "instance", "instance_id"),
}
#: Columns known to carry no text and nothing the audit needs.
_IGNORED = {"total_tokens", "log_type", "hash_ids", "request_id", "id"}
#: Words that, in a column's name, mean it may carry request or response text.
_TEXT_WORDS = {"prompt", "completion", "text", "content", "contents", "message", "messages",
               "body", "query", "question", "answer", "instruction", "request", "response",
               "input", "output", "conversation", "chat", "reply"}
#: Last words of a name that mark a number, not text ("prompt_tokens", "response_length").
_NUMERIC_ENDINGS = {"tokens", "token", "length", "len", "count", "ms", "s", "id", "ids", "size"}
_OK_STATUS = {"", "ok", "success", "succeeded", "successful", "completed", "complete", "true"}


@dataclass(frozen=True)
class TraceFormat:
    """How one file is read: its format's name and which column plays which role."""

    name: str
    columns: dict[str, str]
    time_scale: float | None  # seconds per unit for numeric times; None = decide from values


@dataclass(frozen=True)
class Chunk:
    """A block of requests. Times in seconds (epoch or trace-relative), tokens as int64,
    `pool` an index into the note's pools; optional columns are None when absent.
    `lines` are the rows' line numbers in the file; `bytes_read` the file's bytes so far;
    `format_name` the format the file was read as. `hash_offsets`, `hash_values` (int64):
    the rows' ``hash_ids`` in CSR form, row i's being
    ``hash_values[hash_offsets[i]:hash_offsets[i + 1]]`` (offsets from 0 in each chunk);
    None when the file has no ``hash_ids``."""

    t_s: np.ndarray
    pool: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    ttft_s: np.ndarray | None
    e2e_s: np.ndarray | None
    ok: np.ndarray | None
    replica: np.ndarray | None
    lines: np.ndarray
    bytes_read: int
    format_name: str
    hash_offsets: np.ndarray | None = None
    hash_values: np.ndarray | None = None


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def detect_format(names: list[str], jsonl: bool) -> TraceFormat:
    """Which format a header (or first record's keys) is, and the column of each role."""
    norm = {_norm(n): n for n in names}
    cols: dict[str, str] = {}
    for role, aliases in _ALIASES.items():
        for a in aliases:
            if a in norm:
                cols[role] = norm[a]
                break
    if jsonl and "hash_ids" in norm:
        cols["hashes"] = norm["hash_ids"]
    keys = set(norm)
    if {"timestamp", "contexttokens", "generatedtokens"} <= keys:
        name, scale = "Azure LLM inference trace", None
    elif {"request_tokens", "response_tokens", "model"} <= keys:
        name, scale = "BurstGPT", 1.0
    elif jsonl and {"input_length", "output_length"} <= keys:
        name, scale = "Mooncake", 0.001
    else:
        name = "generic JSON lines" if jsonl else "generic CSV"
        tcol = _norm(cols.get("time", ""))
        scale = 0.001 if tcol.endswith("_ms") else 1.0 if tcol.endswith("_s") else None
    return TraceFormat(name, cols, scale)


class _CountingReader(io.RawIOBase):
    """A raw binary reader that counts the bytes it has read (for progress)."""

    def __init__(self, raw):
        self.raw = raw
        self.n = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        got = self.raw.readinto(b)
        self.n += got or 0
        return got

    def close(self) -> None:
        self.raw.close()
        super().close()


def _open_text(path: Path) -> tuple[io.TextIOWrapper, _CountingReader]:
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed through the wrapper
    except OSError as exc:
        raise InputError(f"trace {str(path)!r} can't be read: {exc.strerror}") from None
    counter = _CountingReader(raw)
    stream = io.BufferedReader(counter, buffer_size=1 << 20)
    if path.suffix == ".gz":
        stream = gzip.GzipFile(fileobj=stream)
    return io.TextIOWrapper(stream, encoding="utf-8", newline=""), counter


def read_trace(path: str | Path, note: FleetNote | None, pool: str | None = None,
               chunk_rows: int = CHUNK_ROWS) -> Iterator[Chunk]:
    """Read one trace file in chunks of `chunk_rows` requests.

    `pool` names the pool of every request in the file (needed when the file has no pool or
    model column, as Azure and Mooncake files don't). With `note` None every request is in
    pool 0 and `pool` is not used. Raises InputError for a refused column or a bad row,
    naming the file and line.
    """
    path = Path(path)
    fixed_pool = None
    if note is None:
        fixed_pool = 0
    elif pool is not None:
        try:
            fixed_pool = note.pools.index(note.pool(pool))
        except KeyError:
            raise InputError(f"--pool-of {path.name}={pool}: no pool {pool!r} in the note; "
                             f"pools: {', '.join(p.pool_id for p in note.pools)}") from None
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    jsonl = name.endswith((".jsonl", ".ndjson", ".json"))
    text, counter = _open_text(path)
    with text:
        try:
            reader = _JsonlReader(text, path) if jsonl else _CsvReader(text, path)
            fmt = detect_format(reader.names, jsonl)
            _check_columns(path, fmt, reader.names)
            if fixed_pool is None and "pool" not in fmt.columns and "model" not in fmt.columns:
                if len(note.pools) != 1:
                    raise InputError(
                        f"trace {path.name} ({fmt.name}) has no pool column: give its pool "
                        f"with --pool-of {path.name}=POOL (pools: "
                        f"{', '.join(p.pool_id for p in note.pools)})")
                fixed_pool = 0
            for missing in ("time", "input", "output"):
                if missing not in fmt.columns:
                    raise InputError(
                        f"trace {path.name}: no {missing} column; a generic trace has "
                        "timestamp, pool, input_tokens, output_tokens (got columns "
                        f"{', '.join(reader.names)})")
            conv = _Converter(path, fmt, note, fixed_pool)
            for columns, lines in reader.chunks(chunk_rows, fmt):
                yield conv.chunk(columns, lines, counter.n)
        except UnicodeDecodeError as exc:
            raise InputError(f"trace {path.name}: not UTF-8 text ({exc.reason})") from None
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise InputError(f"trace {path.name} can't be read: {exc}") from None


def _check_columns(path: Path, fmt: TraceFormat, names: list[str]) -> None:
    """Refuse a column whose name says it carries request or response text."""
    used = set(fmt.columns.values())
    for n in names:
        if n in used or _norm(n) in _IGNORED:
            continue
        if _names_text(n):
            raise _privacy(path, n)


def _names_text(column: str) -> bool:
    """Whether a column's name says it carries text: a text word, and not a count's ending."""
    words = _norm(column).split("_")
    return bool(set(words) & _TEXT_WORDS) and words[-1] not in _NUMERIC_ENDINGS


def _privacy(path: Path, column: str) -> InputError:
    return InputError(
        f"trace {path.name}: column {column!r} carries request or response text; the audit "
        "takes a sanitized trace (the fleet note: do not include prompt or completion text). "
        "Drop the column and send token counts only")


def _looks_like_text(values) -> bool:
    return any(isinstance(v, str) and len(v) > 40 and " " in v.strip() for v in values)


class _CsvReader:
    """CSV in blocks of lines: a block without quotes is split with str.split into one numpy
    string array (fast path); a block with quotes goes through the csv module. A quoted field
    may not span lines (a trace carries no text)."""

    def __init__(self, text: io.TextIOWrapper, path: Path):
        self.path = path
        self.text = text
        self.line = 1
        header = next(csv.reader([next(text, "")]), None)
        if not header or not any(h.strip() for h in header):
            raise InputError(f"trace {path.name}: empty file or no header line")
        self.names = [h.strip() for h in header]

    def _split(self, block: list[str], lines: np.ndarray) -> np.ndarray:
        """Rows x columns of strings; raises naming the first row of the wrong width."""
        width = len(self.names)
        if '"' not in "".join(block):
            flat = ",".join(block).split(",")
            if len(flat) == width * len(block):
                return np.array(flat).reshape(len(block), width)
            rows = [ln.split(",") for ln in block]
        else:
            rows = list(csv.reader(block))
        for i, r in enumerate(rows):
            if len(r) != width:
                raise InputError(f"trace {self.path.name} line {lines[i]}: {len(r)} fields, "
                                 f"the header has {width}")
        return np.array(rows, dtype=str).reshape(len(rows), width)

    def chunks(self, n: int, fmt: TraceFormat) -> Iterator[tuple[dict, np.ndarray]]:
        index = {name: i for i, name in enumerate(self.names)}
        unknown = [i for i, name in enumerate(self.names)
                   if name not in fmt.columns.values() and _norm(name) not in _IGNORED]
        while True:
            raw = list(islice(self.text, n))
            if not raw:
                return
            body = [ln.rstrip("\r\n") for ln in raw]
            lines = np.arange(self.line + 1, self.line + 1 + len(raw))
            self.line += len(raw)
            keep = [i for i, ln in enumerate(body) if ln.strip()]
            if len(keep) < len(body):
                body, lines = [body[i] for i in keep], lines[keep]
                if not body:
                    continue
            table = self._split(body, lines)
            for i in unknown:
                if _looks_like_text(table[:, i]):
                    raise _privacy(self.path, self.names[i])
            yield {role: table[:, index[c]] for role, c in fmt.columns.items()}, lines


class _JsonlReader:
    def __init__(self, text: io.TextIOWrapper, path: Path):
        self.path = path
        self.text = text
        self.line = 0
        self.first: list[tuple[int, dict]] = []
        for raw in text:
            self.line += 1
            if raw.strip():
                self.first = [(self.line, self._load(raw, self.line))]
                break
        if not self.first:
            raise InputError(f"trace {path.name}: empty file")
        self.names = list(self.first[0][1])

    def _load(self, raw: str, line: int) -> dict:
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"trace {self.path.name} line {line}: not a JSON object "
                             f"({exc.msg})") from None
        if not isinstance(rec, dict):
            raise InputError(f"trace {self.path.name} line {line}: not a JSON object")
        return rec

    def chunks(self, n: int, fmt: TraceFormat) -> Iterator[tuple[dict[str, list], np.ndarray]]:
        known = set(fmt.columns.values())
        pending = self.first
        while True:
            want, got = n - len(pending), 0
            for raw in islice(self.text, want):
                got += 1
                self.line += 1
                if raw.strip():
                    pending.append((self.line, self._load(raw, self.line)))
            if not pending:
                if got < want:
                    return
                continue
            lines = np.array([ln for ln, _ in pending])
            recs = [r for _, r in pending]
            keys = set().union(*recs) - known
            for k in keys:
                if _norm(k) in _IGNORED:
                    continue
                if _names_text(k) or _looks_like_text(r.get(k) for r in recs):
                    raise _privacy(self.path, k)
            cols = {}
            for role, key in fmt.columns.items():
                col = [r.get(key) for r in recs]
                if role in ("time", "input", "output", "pool", "model") and None in col:
                    i = col.index(None)
                    raise InputError(f"trace {self.path.name} line {lines[i]}: field "
                                     f"{key!r} is missing")
                cols[role] = col
            yield cols, lines
            pending = []
            if got < want:
                return


def _first_bad(path: Path, lines: np.ndarray, bad: np.ndarray, what: str, values,
               allowed: str) -> InputError:
    i = int(np.flatnonzero(bad)[0])
    shown = str(values[i])
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return InputError(f"trace {path.name} line {lines[i]}: {what} {shown!r}: {allowed}")


class _Converter:
    """Turns a chunk's raw columns (strings or JSON values) into a Chunk, checking every row."""

    def __init__(self, path: Path, fmt: TraceFormat, note: FleetNote, fixed_pool: int | None):
        self.path, self.fmt, self.note, self.fixed_pool = path, fmt, note, fixed_pool
        self.time_scale = fmt.time_scale
        self.iso: bool | None = None
        self.pool_index: dict[str, int] = {}

    def chunk(self, cols: dict, lines: np.ndarray, bytes_read: int) -> Chunk:
        n = len(lines)
        t = self._times(cols["time"], lines)
        inp = self._tokens(cols["input"], lines, self.fmt.columns["input"])
        out = self._tokens(cols["output"], lines, self.fmt.columns["output"])
        if self.fixed_pool is not None:
            pool = np.full(n, self.fixed_pool, dtype=np.int16)
        else:
            pool = self._pools(cols["pool"] if "pool" in cols else cols["model"], lines)
        ttft = self._seconds(cols, "ttft", lines)
        e2e = self._seconds(cols, "e2e", lines)
        ok = None
        if "status" in cols:
            st = np.char.lower(np.char.strip(_strings(cols["status"])))
            code = np.char.isdigit(st)
            ok = np.isin(st, list(_OK_STATUS)) | (code & (np.char.str_len(st) == 3)
                                                  & np.char.startswith(st, "2"))
        replica = _strings(cols["replica"]) if "replica" in cols else None
        offsets, values = self._hashes(cols["hashes"], lines) if "hashes" in cols else (None,
                                                                                      None)
        return Chunk(t, pool, inp, out, ttft, e2e, ok, replica, lines, bytes_read,
                     self.fmt.name, offsets, values)

    def _hashes(self, values: list, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """JSON ``hash_ids`` (a list of integers per row; missing = none) in CSR form."""
        rows = [[] if v is None else v for v in values]
        bad = np.array([not isinstance(r, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) for h in r) for r in rows])
        if bad.any():
            raise _first_bad(self.path, lines, bad, self.fmt.columns["hashes"], values,
                             "allowed: a list of integers (prefix-block hashes)")
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=offsets[1:])
        try:
            flat = np.fromiter((h for r in rows for h in r), dtype=np.int64, count=offsets[-1])
        except OverflowError:
            big = np.array([any(abs(h) >= 2**63 for h in r) for r in rows])
            raise _first_bad(self.path, lines, big, self.fmt.columns["hashes"], values,
                             "allowed: integers that fit in 64 bits") from None
        return offsets, flat

    def _times(self, values, lines: np.ndarray) -> np.ndarray:
        col = self.fmt.columns["time"]
        allowed = "allowed: ISO-8601 (2023-11-16 18:17:03.97), epoch seconds or milliseconds"
        if self.iso is None:
            first = values[0]
            self.iso = not _is_number_like(first)
        if self.iso:
            arr = np.char.strip(_strings(values))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ns = arr.astype("datetime64[ns]")
            except ValueError:
                bad = np.array([not _parses_iso(v) for v in arr])
                raise _first_bad(self.path, lines, bad, f"timestamp ({col})", arr,
                                 allowed) from None
            bad = np.isnat(ns)
            if bad.any():
                raise _first_bad(self.path, lines, bad, f"timestamp ({col})", arr, allowed)
            return ns.astype(np.int64) / 1e9
        t = _floats(values)
        if t is None:
            bad = np.array([not _is_number_like(v) for v in values])
            raise _first_bad(self.path, lines, bad, f"timestamp ({col})", values, allowed)
        bad = ~np.isfinite(t)
        if bad.any():
            raise _first_bad(self.path, lines, bad, f"timestamp ({col})", values, allowed)
        if self.time_scale is None:
            self.time_scale = 0.001 if abs(t[0]) > 1e11 else 1.0
        return t * self.time_scale

    def _tokens(self, values, lines: np.ndarray, col: str) -> np.ndarray:
        allowed = "tokens must be a non-negative integer"
        v = _floats(values)
        if v is None:
            bad = np.array([not _is_number_like(x) for x in values])
            raise _first_bad(self.path, lines, bad, f"{col}", values, allowed)
        bad = ~np.isfinite(v) | (v < 0) | (v != np.floor(v))
        if bad.any():
            raise _first_bad(self.path, lines, bad, f"{col}", values, allowed)
        return v.astype(np.int64)

    def _seconds(self, cols: dict, role: str, lines: np.ndarray) -> np.ndarray | None:
        if role not in cols:
            return None
        col = self.fmt.columns[role]
        values = ["nan" if v is None or (isinstance(v, str) and not v.strip()) else v
                  for v in cols[role]]
        v = _floats(values)
        allowed = "a latency must be a number >= 0 (or blank)"
        if v is None:
            bad = np.array([not _is_number_like(x) for x in values])
            raise _first_bad(self.path, lines, bad, col, values, allowed)
        bad = v < 0
        if bad.any():
            raise _first_bad(self.path, lines, bad, col, values, allowed)
        return v * (0.001 if _norm(col).endswith("_ms") else 1.0)

    def _pools(self, values, lines: np.ndarray) -> np.ndarray:
        values = _strings(values)
        names, inverse = np.unique(values, return_inverse=True)
        index = np.empty(len(names), dtype=np.int16)
        for j, name in enumerate(names):
            if name not in self.pool_index:
                try:
                    self.pool_index[name] = self.note.pools.index(self.note.pool(name))
                except KeyError:
                    bad = np.asarray(inverse == j)
                    col = self.fmt.columns.get("pool") or self.fmt.columns["model"]
                    known = ", ".join(p.pool_id for p in self.note.pools)
                    raise _first_bad(self.path, lines, bad, f"unknown pool ({col})",
                                     values,
                                     f"allowed: the note's pools ({known}), their models or "
                                     "aliases") from None
            index[j] = self.pool_index[name]
        return index[inverse]


def _strings(values) -> np.ndarray:
    """The values as a numpy string array (CSV columns already are one)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "U":
        return values
    return np.asarray([str(v) for v in values])


def _floats(values) -> np.ndarray | None:
    """The values as float64, or None when one of them isn't a number."""
    try:
        if isinstance(values, np.ndarray) or (values and isinstance(values[0], str)):
            return np.asarray(values).astype(np.float64)
        return np.asarray(values, dtype=np.float64)
    except (ValueError, TypeError):
        return None


def _is_number_like(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        return True
    try:
        float(str(v))
        return True
    except ValueError:
        return False


def _parses_iso(v: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return not np.isnat(np.datetime64(v, "ns"))
    except ValueError:
        return False
