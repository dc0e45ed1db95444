"""Request-trace readers: CSV and JSON lines, optionally gzipped, read in chunks of rows.

The formats and their columns are in :mod:`.formats`, the checks of every row and the time
base in :mod:`.convert`, the privacy rule in :mod:`.privacy`. A file is read in blocks of bytes
(a line longer than `MAX_LINE_BYTES` stops the read), so memory stays bounded whatever the
file holds. A UTF-8 byte-order mark at the start is skipped. Arrivals need not be sorted.

Refused, with the file and line: text that isn't UTF-8, a corrupt gzip file, a row with the
wrong number of fields, a quoted field that runs past the end of its line, a JSON line that
isn't a flat object (or repeats a key), and every bad value :mod:`.convert` names.
"""

from __future__ import annotations

import csv
import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from .convert import Chunk, Converter, refuse_free_text
from .formats import IGNORED, TraceFormat, detect_format, norm
from .note import FleetNote
from .privacy import column

__all__ = ["Chunk", "TraceFormat", "TraceReader", "TraceInfo", "read_trace", "peek_trace",
           "detect_format", "CHUNK_ROWS", "MAX_LINE_BYTES"]

#: Rows per chunk: bounds memory whatever the trace's size.
CHUNK_ROWS = 50_000
#: The longest line a trace may have, in bytes (a trace line holds a few numbers).
MAX_LINE_BYTES = 1 << 20
_BLOCK_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"


def is_jsonl(path: Path) -> bool:
    """Whether a file is read as JSON lines (by its name: .jsonl, .ndjson, .json, + .gz)."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return name.endswith((".jsonl", ".ndjson", ".json"))


class _Lines:
    """A file's lines, read in blocks of bytes and decoded as UTF-8; `line` counts the lines
    handed out, `bytes_read` the file's bytes read so far (compressed, for a .gz)."""

    def __init__(self, path: Path, source: str):
        self.source = source
        try:
            self.raw = open(path, "rb")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise InputError(f"trace {str(path)!r} can't be read: "
                             f"{exc.strerror or exc}") from None
        self.stream = gzip.GzipFile(fileobj=self.raw) if path.name.endswith(".gz") else self.raw
        self.line = 0
        self.pending: list[str] = []
        self.at = 0
        self.rest = b""
        self.eof = False
        self.first = True

    @property
    def bytes_read(self) -> int:
        return self.raw.tell() if not self.raw.closed else 0

    def close(self) -> None:
        self.raw.close()

    def _read(self) -> bytes:
        try:
            return self.stream.read(_BLOCK_BYTES)
        except (gzip.BadGzipFile, EOFError, zlib.error):
            raise InputError(f"trace {self.source} can't be read: not a valid gzip file "
                             "(corrupt or truncated)") from None
        except OSError as exc:
            raise InputError(f"trace {self.source} can't be read: "
                             f"{exc.strerror or 'read error'}") from None

    def _fill(self) -> bool:
        """Decode the next block of whole lines into `pending`; False at the end."""
        while not self.eof:
            data = self._read()
            if self.first:
                data = data[3:] if data.startswith(_BOM) else data
                self.first = False
            if not data:
                self.eof = True
                block, self.rest = self.rest, b""
            else:
                buf = self.rest + data
                cut = buf.rfind(b"\n") + 1
                if cut == 0:
                    if len(buf) > MAX_LINE_BYTES:
                        self._too_long(self.line + len(self.pending) - self.at + 1)
                    self.rest = buf
                    continue
                block, self.rest = buf[:cut], buf[cut:]
                if len(self.rest) > MAX_LINE_BYTES:
                    self._too_long(self.line + len(self.pending) - self.at
                                   + block.count(b"\n") + 1)
            if not block:
                return False
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError as exc:
                line = (self.line + len(self.pending) - self.at
                        + block[:exc.start].count(b"\n") + 1)
                raise InputError(f"trace {self.source} line {line}: not UTF-8 text (save "
                                 "the file as UTF-8)") from None
            lines = text.replace("\r\n", "\n").split("\n")
            if lines[-1] == "":
                lines.pop()
            longest = max(map(len, lines), default=0)
            if longest > MAX_LINE_BYTES:
                at = next(i for i, ln in enumerate(lines) if len(ln) > MAX_LINE_BYTES)
                self._too_long(self.line + len(self.pending) - self.at + at + 1)
            self.pending = self.pending[self.at:] + lines
            self.at = 0
            return True
        return False

    def _too_long(self, line: int):
        raise InputError(f"trace {self.source} line {line}: longer than {MAX_LINE_BYTES:,} "
                         "bytes; a trace line holds a few numbers (is this a trace?)")

    def take(self, n: int) -> tuple[list[str], int]:
        """Up to `n` lines and the line number of the first; no lines at the end."""
        while len(self.pending) - self.at < n and self._fill():
            pass
        got = self.pending[self.at: self.at + n]
        self.at += len(got)
        first = self.line + 1
        self.line += len(got)
        return got, first


def _split_csv_line(text: str, line: int, source: str) -> list[str]:
    if text.count('"') % 2:
        raise InputError(f"trace {source} line {line}: a quoted field runs past the end of the "
                         "line (a field holding a line break); a trace holds no text")
    return next(csv.reader([text]))


class _CsvRows:
    """CSV rows in blocks: rows without quotes are split with str.split (fast path); rows with
    quotes go through the csv module. Every row must have the header's width."""

    def __init__(self, lines: _Lines, source: str):
        self.lines, self.source = lines, source
        first, _ = lines.take(1)
        if not first or not first[0].strip():
            raise InputError(f"trace {source}: empty file or no header line")
        self.names = [h.strip() for h in _split_csv_line(first[0], 1, source)]

    def _table(self, body: list[str], lines: np.ndarray) -> np.ndarray:
        """Rows x columns of strings; raises naming the first row of the wrong width."""
        width = len(self.names)
        commas = np.fromiter((ln.count(",") for ln in body), dtype=np.int64, count=len(body))
        quoted = [i for i, ln in enumerate(body) if '"' in ln]
        if quoted:
            rows = [ln.split(",") for ln in body]
            for i in quoted:
                rows[i] = _split_csv_line(body[i], int(lines[i]), self.source)
            widths = np.array([len(r) for r in rows])
        else:
            widths = commas + 1
        wrong = np.flatnonzero(widths != width)
        if len(wrong):
            i = int(wrong[0])
            raise InputError(f"trace {self.source} line {lines[i]}: {widths[i]} fields, the "
                             f"header has {width}")
        if quoted:
            return np.array(rows, dtype=str).reshape(len(rows), width)
        return np.array(",".join(body).split(",")).reshape(len(body), width)

    def blocks(self, n: int, fmt: TraceFormat) -> Iterator[tuple[dict, np.ndarray]]:
        index = {name: i for i, name in enumerate(self.names)}
        used = set(fmt.columns.values())
        unknown = [i for i, name in enumerate(self.names)
                   if name not in used and norm(name) not in IGNORED]
        while True:
            raw, first = self.lines.take(n)
            if not raw:
                return
            lines = np.arange(first, first + len(raw))
            keep = [i for i, ln in enumerate(raw) if ln.strip()]
            if len(keep) < len(raw):
                raw, lines = [raw[i] for i in keep], lines[keep]
                if not raw:
                    continue
            table = self._table(raw, lines)
            for i in unknown:
                name = self.names[i]
                refuse_free_text(self.source, column(name, i + 1, fmt.known(name)), table[:, i])
            yield {role: table[:, index[c]] for role, c in fmt.columns.items()}, lines


def _flat_object(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) < len(keys):
        raise _Repeated
    return dict(pairs)


class _Repeated(ValueError):
    pass


class _JsonRows:
    """JSON lines: one flat object per line; blank lines are skipped."""

    def __init__(self, lines: _Lines, source: str):
        self.lines, self.source = lines, source
        self.first: list[tuple[int, dict]] = []
        while not self.first:
            got, at = lines.take(1)
            if not got:
                raise InputError(f"trace {source}: empty file")
            if got[0].strip():
                self.first = [(at, self._load(got[0], at))]
        self.names = list(self.first[0][1])

    def _load(self, raw: str, line: int) -> dict:
        where = f"trace {self.source} line {line}"
        try:
            rec = json.loads(raw, object_pairs_hook=_flat_object)
        except _Repeated:
            raise InputError(f"{where}: a key appears twice in the object; the audit can't "
                             "tell which to read") from None
        except RecursionError:
            raise InputError(f"{where}: not a flat JSON object (nested too deep)") from None
        except ValueError as exc:  # JSONDecodeError, and integers too long for Python
            reason = getattr(exc, "msg", "a number too long to read")
            raise InputError(f"{where}: not a JSON object ({reason})") from None
        if not isinstance(rec, dict):
            raise InputError(f"{where}: not a JSON object")
        return rec

    def blocks(self, n: int, fmt: TraceFormat) -> Iterator[tuple[dict, np.ndarray]]:
        known = set(fmt.columns.values())
        pending = self.first
        self.first = []
        while True:
            raw, first = self.lines.take(n - len(pending))
            for k, text in enumerate(raw):
                if text.strip():
                    pending.append((first + k, self._load(text, first + k)))
            if not pending:
                if not raw:
                    return
                continue
            lines = np.array([ln for ln, _ in pending], dtype=np.int64)
            recs = [r for _, r in pending]
            for k in set().union(*recs) - known:
                if norm(k) in IGNORED:
                    continue
                refuse_free_text(self.source, "a field the audit doesn't use",
                                 [r.get(k) for r in recs])
            cols = {}
            for role, key in fmt.columns.items():
                col = [r.get(key) for r in recs]
                if role in ("time", "input", "output", "pool", "model"):
                    missing = [i for i, r in enumerate(recs) if key not in r]
                    if missing:
                        raise InputError(f"trace {self.source} line {lines[missing[0]]}: field "
                                         f"{key!r} is missing")
                cols[role] = col
            yield cols, lines
            pending = []
            if not raw:
                return


@dataclass
class TraceInfo:
    """What reading a file's header and first row tells: its format, whether its times count
    from the trace's start (relative), and what it warns about."""

    source: str
    format_name: str
    relative: bool
    warnings: list[str] = field(default_factory=list)


class TraceReader:
    """One trace file read in Chunks of `chunk_rows` requests (iterate over it once).

    `note` None reads every request into pool 0 (a trace without a fleet note). `pool` names
    the pool of every request in the file (needed when the file has no pool or model column,
    as Azure and Mooncake files don't). After reading, `warnings` holds what the file warns
    about and `relative` its time base. Raises InputError for a refused column or a bad row,
    naming the file and line.
    """

    def __init__(self, path: str | Path, note: FleetNote | None = None, pool: str | None = None,
                 chunk_rows: int = CHUNK_ROWS):
        self.path = Path(path)
        self.note, self.pool, self.chunk_rows = note, pool, chunk_rows
        self.source = self.path.name
        self.warnings: list[str] = []
        self.relative = False
        self.format_name = "no rows"

    def _fixed_pool(self) -> int | None:
        if self.pool is None or self.note is None:
            return None
        try:
            return self.note.pools.index(self.note.pool(self.pool))
        except KeyError:
            raise InputError(f"--pool-of {self.source}={self.pool}: no pool {self.pool!r} in the "
                             f"note; pools: {', '.join(p.pool_id for p in self.note.pools)}"
                             ) from None

    def __iter__(self) -> Iterator[Chunk]:
        fixed_pool = self._fixed_pool()
        jsonl = is_jsonl(self.path)
        lines = _Lines(self.path, self.source)
        try:
            rows = _JsonRows(lines, self.source) if jsonl else _CsvRows(lines, self.source)
            fmt = detect_format(rows.names, jsonl, self.source)
            self.format_name = fmt.name
            fixed_pool = self._pool_rule(fmt, fixed_pool)
            own = list(self.warnings)
            self._check_roles(fmt, rows.names)
            conv = Converter(self.source, fmt, self.note, fixed_pool)
            for cols, line_numbers in rows.blocks(self.chunk_rows, fmt):
                chunk = conv.chunk(cols, line_numbers, lines.bytes_read)
                self.relative = chunk.relative
                self.warnings = own + conv.warnings
                yield chunk
        finally:
            lines.close()

    def _pool_rule(self, fmt: TraceFormat, fixed_pool: int | None) -> int | None:
        has_column = "pool" in fmt.columns or "model" in fmt.columns
        if self.note is None:
            return None
        if fixed_pool is not None and has_column:
            col = fmt.columns.get("pool") or fmt.columns["model"]
            self.warnings.append(
                f"trace {self.source}: --pool-of puts every request in pool {self.pool}; its "
                f"column {col!r} is not read")
        if fixed_pool is None and not has_column:
            if len(self.note.pools) != 1:
                raise InputError(
                    f"trace {self.source} ({fmt.name}) has no pool column: give its pool with "
                    f"--pool-of {self.source}=POOL (pools: "
                    f"{', '.join(p.pool_id for p in self.note.pools)})")
            fixed_pool = 0
        return fixed_pool

    def _check_roles(self, fmt: TraceFormat, names: list[str]) -> None:
        for missing in ("time", "input", "output"):
            if missing not in fmt.columns:
                known = [n for n in names if fmt.known(n)]
                other = len(names) - len(known)
                got = ", ".join(known) if known else "none the audit knows"
                raise InputError(
                    f"trace {self.source}: no {missing} column; a generic trace has "
                    f"timestamp, pool, input_tokens, output_tokens (got columns: {got}"
                    + (f", and {other} the audit doesn't use" if known and other else "") + ")")


def read_trace(path: str | Path, note: FleetNote | None = None, pool: str | None = None,
               chunk_rows: int = CHUNK_ROWS) -> Iterator[Chunk]:
    """Read one trace file in Chunks of `chunk_rows` requests (see :class:`TraceReader`)."""
    yield from TraceReader(path, note, pool, chunk_rows)


def peek_trace(path: str | Path, note: FleetNote | None = None,
               pool: str | None = None) -> TraceInfo:
    """Read a file's header and first row: its format, time base and warnings (an empty
    trace reads as absolute)."""
    reader = TraceReader(path, note, pool, chunk_rows=1)
    chunks = iter(reader)
    next(chunks, None)
    chunks.close()
    return TraceInfo(reader.source, reader.format_name, reader.relative, list(reader.warnings))
