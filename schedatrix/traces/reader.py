"""Request-trace readers: CSV, JSON lines (optionally gzipped) and Parquet, read in chunks.

The formats and their columns are in :mod:`.formats`, the checks of every row and the time
base in :mod:`.convert`, the privacy rule in :mod:`.privacy`. A text file is read in blocks of
whole lines (:mod:`.blocks`): each block is parsed by pyarrow (:mod:`.columnar`, the default
``engine="arrow"``) or, where pyarrow can't read it exactly as the reference would, by the
plain-Python reference (:mod:`.textrows`, alone with ``engine="python"``); both give the same
chunks and the same errors. A Parquet file (or a folder of them) is read batch by batch.
Arrivals need not be sorted.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..errors import InputError
from . import columnar, textrows
from .blocks import MAX_LINE_BYTES, Blocks, blank_lines
from .convert import Chunk, Converter, _is_number_like
from .formats import TraceFormat, detect_format
from .pools import Pools

__all__ = ["Chunk", "TraceFormat", "TraceReader", "TraceInfo", "read_trace", "peek_trace",
           "detect_format", "CHUNK_ROWS", "MAX_LINE_BYTES", "ENGINES", "stop_readers"]

#: Rows per chunk: bounds memory whatever the trace's size.
CHUNK_ROWS = 262_144
#: How a text file's blocks are parsed: pyarrow first ("arrow"), or the reference only.
ENGINES = ("arrow", "python")
_FAST_FAILS = (columnar.Slow, InputError, pa.ArrowException, ValueError, TypeError)
#: The readers being read (their readahead threads running), to stop before the process exits.
_READING: weakref.WeakSet = weakref.WeakSet()


def stop_readers() -> None:
    """Stop every reader still being read: cancel its readahead and wait for the block it is
    parsing, so that no thread of ours (nor a pyarrow task one started) runs while the
    interpreter shuts down. The command line calls it before it exits, whatever happened."""
    for reader in list(_READING):
        reader.close()


@dataclass
class _Block:
    """Where a text file's reading stands: its blocks, the first JSON record to read again,
    the header's names, the format, and whether its times are ISO text (from the first row)."""

    blocks: Blocks
    head: bytes
    head_line: int
    names: list[str]
    fmt: TraceFormat
    jsonl: bool
    iso: bool | None = None


def is_jsonl(path: Path) -> bool:
    """Whether a file is read as JSON lines (by its name: .jsonl, .ndjson, .json, + .gz)."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return name.endswith((".jsonl", ".ndjson", ".json"))


@dataclass
class TraceInfo:
    """What reading a file's header and first row tells: its format, whether its times count
    from the trace's start (relative), and what it warns about."""

    source: str
    format_name: str
    relative: bool
    warnings: list[str] = field(default_factory=list)


class TraceReader:
    """One trace file read in Chunks of up to `chunk_rows` requests (iterate over it once).

    `note` None reads every request into pool 0 (a trace without a fleet note). `pool` names
    the pool of every request in the file (needed when the file has no pool or model column,
    as Azure and Mooncake files don't). After reading, `warnings` holds what the file warns
    about, `relative` its time base, `slow_blocks` how many blocks the reference read. Raises
    InputError for a refused column or a bad row, naming the file and line (row, in Parquet).
    """

    def __init__(self, path: str | Path, note: Pools | None = None, pool: str | None = None,
                 chunk_rows: int = CHUNK_ROWS, engine: str = "arrow"):
        if engine not in ENGINES:
            raise ValueError(f"engine = {engine!r}: one of {ENGINES}")
        self.path = Path(path)
        self.note, self.pool, self.chunk_rows, self.engine = note, pool, chunk_rows, engine
        self.source = self.path.name
        self.warnings: list[str] = []
        self.relative = False
        self.format_name = "no rows"
        self.slow_blocks = 0
        self._chunks: Iterator[Chunk] | None = None

    def _fixed_pool(self) -> int | None:
        if self.pool is None or self.note is None:
            return None
        try:
            return self.note.pools.index(self.note.pool(self.pool))
        except KeyError:
            raise InputError(f"--pool-of {self.source}={self.pool}: no pool {self.pool!r} in the "
                             f"note; pools: {', '.join(p.pool_id for p in self.note.pools)}"
                             ) from None

    def _setup(self, names: list[str], jsonl: bool, row_word: str = "line") -> Converter:
        fixed_pool = self._fixed_pool()
        fmt = detect_format(names, jsonl, self.source)
        self.format_name = fmt.name
        fixed_pool = self._pool_rule(fmt, fixed_pool)
        self._check_roles(fmt, names)
        return Converter(self.source, fmt, self.note, fixed_pool, row_word)

    def _made(self, conv: Converter, own: list[str], chunk: Chunk) -> Chunk:
        self.relative = chunk.relative
        self.warnings = own + conv.warnings
        return chunk

    def __iter__(self) -> Iterator[Chunk]:
        """The file's chunks (one pass). Leaving the loop early (a break, an error in the loop's
        body) leaves the readahead running until :meth:`close` or the garbage collector; use
        ``with reader:`` to close it at once."""
        self._chunks = self._read()
        _READING.add(self)
        return self._chunks

    def close(self) -> None:
        """Stop reading: cancel the readahead, wait for the block it parses, close the file."""
        chunks, self._chunks = self._chunks, None
        _READING.discard(self)
        if chunks is not None:
            chunks.close()

    def __enter__(self) -> TraceReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _read(self) -> Iterator[Chunk]:
        if columnar.is_parquet(self.path):
            yield from self._parquet()
            return
        jsonl = is_jsonl(self.path)
        blocks = Blocks(self.path, self.source)
        ahead = ThreadPoolExecutor(1, thread_name_prefix="trace-readahead")
        try:
            head, head_line, names = self._header(blocks, jsonl)
            conv = self._setup(names, jsonl)
            own = list(self.warnings)
            state = _Block(blocks, head, head_line, names, conv.fmt, jsonl)
            # one block ahead: the next is read and parsed by pyarrow (which releases the GIL)
            # while this one is checked and handed on
            job = ahead.submit(self._prepare, state)
            while True:
                got = job.result()
                if got is None:
                    return
                job = ahead.submit(self._prepare, state)
                data, first, lines, cols, bytes_read = got
                if not len(lines):
                    continue
                chunk = None
                if cols is not None:
                    try:
                        chunk = conv.chunk(cols, lines, bytes_read)
                    except _FAST_FAILS:
                        pass
                if chunk is None:
                    self.slow_blocks += self.engine == "arrow"
                    fmt, source = conv.fmt, self.source
                    parsed = (textrows.json_block(data, first, fmt, source) if jsonl
                              else textrows.csv_block(data, first, names, fmt, source))
                    if parsed is None:
                        continue
                    chunk = conv.chunk(*parsed, bytes_read)
                yield self._made(conv, own, chunk)
        finally:
            ahead.shutdown(wait=True, cancel_futures=True)
            blocks.close()

    def _prepare(self, b: _Block):
        """Take the next block of lines and parse it with pyarrow (None where the reference
        must): (bytes, first line, line numbers of its rows, columns, bytes read), or None at
        the end of the file."""
        want = self.chunk_rows - (1 if b.head else 0)   # the first JSON record is read again
        data, first, count = b.blocks.take(want) if want else (b"", 0, 0)
        newlines = b.blocks.newlines
        if b.head:
            head = b.head
            newlines = (np.concatenate([[len(head) - 1], newlines + len(head)])
                        if head.endswith(b"\n") else newlines + len(head))
            data, first, count, b.head = head + data, b.head_line, count + 1, b""
        if not count:
            return None
        blank = blank_lines(data, newlines)
        lines = first + np.flatnonzero(~blank)
        cols = None
        if len(lines) and self.engine == "arrow":
            if b.iso is None:
                b.iso = self._first_is_iso(data, blank, b.names, b.fmt, b.jsonl)
            try:
                cols = (columnar.json_columns(data, b.fmt, b.iso, self.source, len(lines))
                        if b.jsonl else columnar.csv_columns(data, b.names, b.fmt, b.iso,
                                                             self.source, len(lines)))
            except _FAST_FAILS:
                cols = None
        return data, first, lines, cols, b.blocks.bytes_read

    def _header(self, blocks: Blocks, jsonl: bool) -> tuple[bytes, int, list[str]]:
        """(the first JSON record's bytes and line, to read again with the rows; the names)."""
        if not jsonl:
            data, _, count = blocks.take(1)
            if not count:
                raise InputError(f"trace {self.source}: empty file or no header line")
            return b"", 0, textrows.csv_header(textrows.decode(data, 1, self.source)[0],
                                               self.source)
        while True:
            data, line, count = blocks.take(1)
            if not count:
                raise InputError(f"trace {self.source}: empty file")
            text = textrows.decode(data, line, self.source)[0]
            if text.strip():
                return data, line, list(textrows.json_record(text, line, self.source))

    def _first_is_iso(self, data: bytes, blank: np.ndarray, names: list[str],
                      fmt: TraceFormat, jsonl: bool) -> bool:
        """Whether the first row's time is ISO text (the rule of :class:`Converter`)."""
        k = int(np.flatnonzero(~blank)[0])
        try:
            text = data.split(b"\n", k + 1)[k].decode("utf-8").rstrip("\r")
            if jsonl:
                value = textrows.json_record(text, 0, self.source).get(fmt.columns["time"])
            else:
                value = textrows._split(text, 0, self.source)[names.index(fmt.columns["time"])]
        except (InputError, UnicodeDecodeError, IndexError):
            return False  # the reference reads this block and says what is wrong
        return isinstance(value, str) and not _is_number_like(value)

    def _parquet(self) -> Iterator[Chunk]:
        pf = columnar.ParquetFile(self.path, self.source)
        conv = self._setup(pf.names, False, row_word="row")
        own = list(self.warnings)
        col = conv.fmt.columns["time"]
        iso = False
        if columnar._is_text_type(pf.schema.field(col).type):  # ISO text, or numbers as text
            first = pf.first_value(col)
            iso = isinstance(first, str) and not _is_number_like(first)
        with closing(pf.batches(conv.fmt, self.chunk_rows)) as batches:  # its readahead too
            for table, row in batches:
                cols = columnar.parquet_columns(table, conv.fmt, iso, self.source, pf.names)
                lines = np.arange(row, row + table.num_rows)
                yield self._made(conv, own, conv.chunk(cols, lines, 0))

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


def read_trace(path: str | Path, note: Pools | None = None, pool: str | None = None,
               chunk_rows: int = CHUNK_ROWS, engine: str = "arrow") -> Iterator[Chunk]:
    """Read one trace file in Chunks of `chunk_rows` requests (see :class:`TraceReader`)."""
    with TraceReader(path, note, pool, chunk_rows, engine) as reader:
        yield from reader


def peek_trace(path: str | Path, note: Pools | None = None,
               pool: str | None = None) -> TraceInfo:
    """Read a file's header and first row: its format, time base and warnings (an empty
    trace reads as absolute)."""
    with TraceReader(path, note, pool, chunk_rows=1) as reader:
        next(iter(reader), None)
    return TraceInfo(reader.source, reader.format_name, reader.relative, list(reader.warnings))
