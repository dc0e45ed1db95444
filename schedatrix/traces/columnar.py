"""The columnar reader: blocks of CSV or JSON lines parsed by pyarrow, and Parquet files.

For CSV and JSON lines the fast path is a shortcut, never a second opinion: a block it can't
read exactly as the reference (:mod:`.textrows`) would (a quote, a null, a value pyarrow
parses differently, a failed check) raises :class:`Slow`, and the reference reads that block
instead, reading it or stopping with the file, line and reason. So both give the same rows,
the same figures and the same errors. Parquet has no text to fall back on: its typed columns
go straight to the checks (:mod:`.convert`), and errors name the row.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq

from ..errors import InputError
from .blocks import regular_file
from .convert import Labels
from .formats import IGNORED, TraceFormat, norm
from .privacy import column, looks_like_text
from .threads import size_pools

__all__ = ["Slow", "csv_columns", "json_columns", "ParquetFile", "parquet_columns",
           "is_parquet", "arrow_text", "role_columns"]

_NUMBERS = ("input", "output", "total", "ttft", "e2e")
_COUNTS = ("input", "output", "total")
_TEXTS = ("pool", "model", "status", "replica")
_OPTIONAL = ("ttft", "e2e")
size_pools()


class Slow(Exception):
    """This block needs the reference reader."""


def is_parquet(path: Path) -> bool:
    """Whether a path is read as Parquet: a .parquet file, or a folder of them."""
    return path.suffix == ".parquet" or path.is_dir()


def _is_text_type(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def arrow_text(arr) -> bool:
    """Whether a string column carries free text (as :func:`~.privacy.looks_like_text`)."""
    if not _is_text_type(arr.type):
        return False
    if pa.types.is_dictionary(arr.type):
        return looks_like_text(arr.dictionary.to_pylist())
    long = pc.greater(pc.utf8_length(arr), 40)
    if not pc.any(long).as_py():
        return False
    candidates = pc.filter(arr, long)
    return bool(pc.any(pc.match_substring(pc.utf8_trim_whitespace(candidates), " ")).as_py())


def _labels(arr) -> Labels:
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    names = arr.dictionary.to_pylist()
    if len(set(names)) < len(names):  # a dictionary may repeat a value (Parquet chunks)
        uniq = sorted(set(names))
        remap = np.array([uniq.index(n) for n in names], dtype=np.int64)
        return Labels(remap[arr.indices.to_numpy(zero_copy_only=False)], tuple(uniq))
    return Labels(arr.indices.to_numpy(zero_copy_only=False).astype(np.int64), tuple(names))


def _floats(arr) -> np.ndarray:
    return pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False)


def _epoch_us(arr) -> np.ndarray:
    """A timestamp or date column as numpy datetime64[us] (tz-aware ones are UTC)."""
    if pa.types.is_date(arr.type):
        arr = pc.cast(arr, pa.timestamp("us"))
    unit = arr.type.unit
    raw = pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False)
    per_us = {"s": None, "ms": None, "us": 1, "ns": 1000}[unit]
    if per_us is None:
        raw = raw * (1_000_000 if unit == "s" else 1000)
    elif per_us > 1:
        raw = raw // per_us
    return raw.astype("datetime64[us]")


def _iso(arr) -> np.ndarray:
    """ISO-8601 text as datetime64[us] when pyarrow reads every value, else as numpy strings
    (numpy parses those, exactly as the reference does)."""
    try:
        ns = pc.cast(arr, pa.timestamp("ns")).to_numpy(zero_copy_only=False)
        return ns.astype("datetime64[us]")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=str)


def _check_type(t: pa.DataType, role: str, name: str, source: str) -> None:
    """Refuse a Parquet column whose type can't hold its role: a bool, a struct or a list of
    token counts, a map of times (the type is named; no value is read)."""
    value = t.value_type if pa.types.is_dictionary(t) else t
    text = _is_text_type(value)
    if role in _COUNTS:
        ok = pa.types.is_integer(value) or pa.types.is_floating(value) or text
        allowed = "integers (or whole numbers, or their decimal digits as text)"
    elif role in _NUMBERS:
        ok = pa.types.is_integer(value) or pa.types.is_floating(value) or text
        allowed = "numbers (or their decimal digits as text)"
    elif role == "time":
        ok = (pa.types.is_integer(value) or pa.types.is_floating(value) or text
              or pa.types.is_timestamp(value) or pa.types.is_date(value))
        allowed = "a timestamp or date type, numbers, or ISO-8601 text"
    else:
        ok = text or pa.types.is_integer(value)
        allowed = "text or integers (ids and codes)"
    if not (ok or pa.types.is_null(value)):
        raise InputError(f"trace {source}: column {name!r} is of Parquet type {value}, which "
                         f"can't hold its {role} values; allowed: {allowed}")


def role_columns(table: pa.Table, fmt: TraceFormat, iso: bool, strict: bool,
                 source: str = "trace") -> dict:
    """The role columns of a table as numpy arrays (numbers, times) or Labels (texts).

    `strict` (CSV, JSON lines): a null where a value is needed raises Slow. Otherwise
    (Parquet) nulls become NaN or the text "null", and the checks name their row."""
    cols = {}
    for role, name in fmt.columns.items():
        if role == "hashes":
            cols[role] = _hashes(table, name, strict)
            continue
        arr = table.column(name).combine_chunks()
        if not strict:
            _check_type(arr.type, role, name, source)
        if arr.null_count and role not in _OPTIONAL:
            if strict:
                raise Slow
            arr = pc.fill_null(pc.cast(arr, pa.string()), "null") if role in _TEXTS else arr
        if (strict and role in _OPTIONAL and pa.types.is_floating(arr.type)
                and pc.any(pc.is_nan(arr)).as_py()):
            raise Slow  # a NaN written as text: the reference refuses it, a null is blank
        if role == "time":
            t = arr.type
            if pa.types.is_timestamp(t) or pa.types.is_date(t):
                cols[role] = _epoch_us(arr)
            elif _is_text_type(t):
                cols[role] = _iso(pc.cast(arr, pa.string())) if iso else _text_numbers(arr)
            else:
                cols[role] = _floats(arr)
        elif role in _COUNTS and pa.types.is_integer(arr.type) and not arr.null_count:
            cols[role] = arr.to_numpy(zero_copy_only=False)   # counts stay integers
        elif role in _NUMBERS:
            cols[role] = _text_numbers(arr) if _is_text_type(arr.type) else _floats(arr)
        else:
            cols[role] = _labels(arr if _is_text_type(arr.type) else pc.cast(arr, pa.string()))
    return cols


def _hashes(table: pa.Table, name: str, strict: bool) -> tuple[np.ndarray, np.ndarray]:
    """A column of integer lists (Mooncake's hash_ids; missing = none) as CSR (offsets,
    values), int64; any other type raises Slow (the reference names the bad row)."""
    n = table.num_rows
    if name not in table.column_names:
        return np.zeros(n + 1, np.int64), np.zeros(0, np.int64)
    arr = table.column(name).combine_chunks()
    if pa.types.is_null(arr.type):
        return np.zeros(n + 1, np.int64), np.zeros(0, np.int64)
    if not ((pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type))
            and (pa.types.is_integer(arr.type.value_type) or pa.types.is_null(
                arr.type.value_type))):
        raise Slow
    lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = arr.flatten()
    if flat.null_count or (pa.types.is_unsigned_integer(flat.type) and len(flat)
                           and pc.max(flat).as_py() >= 2**63):
        raise Slow
    return offsets, flat.to_numpy(zero_copy_only=False).astype(np.int64)


def _text_numbers(arr) -> np.ndarray:
    """Numbers written as text: float64 when pyarrow reads them all, else numpy strings."""
    try:
        return _floats(arr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return np.asarray(pc.fill_null(arr, "").to_numpy(zero_copy_only=False), dtype=str)


def _check_unknown(table: pa.Table, fmt: TraceFormat, names: list[str], jsonl: bool,
                   source: str, strict: bool) -> None:
    used = set(fmt.columns.values())
    position = {n: i for i, n in enumerate(names, start=1)}
    for name in table.column_names:
        if name in used or norm(name) in IGNORED:
            continue
        if arrow_text(table.column(name).combine_chunks()):
            if strict:
                raise Slow
            where = "a field the audit doesn't use" if jsonl else column(
                name, position.get(name, 0), fmt.known(name))
            raise InputError(
                f"trace {source}: {where} carries request or response text (a value of more "
                "than 40 characters with spaces); the audit takes a sanitized trace (the fleet "
                "note: do not include prompt or completion text). Drop it and send token "
                "counts only")


def _types(fmt: TraceFormat, iso: bool, csv: bool = False) -> dict[str, pa.DataType]:
    """The type each role's column is parsed as. In CSV, token counts parse as integers (a
    block with "12.0" fails and goes to the reference, which reads it) and texts as
    dictionaries (a few distinct values: pools, replicas, status codes)."""
    types = {}
    for role, name in fmt.columns.items():  # (pyarrow reads 0x10 as 16: see csv_columns)
        if role == "hashes":
            continue   # a list per row, read by _hashes
        if role == "time":
            types[name] = pa.string() if iso else pa.float64()
        elif role in _COUNTS and csv:
            types[name] = pa.int64()
        elif role in _NUMBERS:
            types[name] = pa.float64()
        else:
            types[name] = pa.dictionary(pa.int32(), pa.string()) if csv else pa.string()
    return types


def csv_columns(data: bytes, names: list[str], fmt: TraceFormat, iso: bool, source: str,
                rows: int) -> dict:
    """A block of CSV lines (no header) as role columns; `rows` is how many non-blank lines it
    has. Raises Slow where the reference must decide."""
    if b'"' in data or b"0x" in data or b"0X" in data:   # pyarrow reads "0x10" as 16
        raise Slow
    types = {n: pa.string() for n in names} | _types(fmt, iso, csv=True)
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(column_names=names, use_threads=True,
                                          block_size=1 << 20),
            parse_options=pcsv.ParseOptions(ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(column_types=types, null_values=[""],
                                                strings_can_be_null=False,
                                                quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise Slow from None
    if table.num_rows != rows:
        raise Slow
    _check_unknown(table, fmt, names, False, source, strict=True)
    return role_columns(table, fmt, iso, True, source)


def json_columns(data: bytes, fmt: TraceFormat, iso: bool, source: str, rows: int) -> dict:
    """A block of JSON lines as role columns; `rows` is how many non-blank lines it has.
    Text roles (pool, status, replica) may hold JSON strings or integers (read as their
    digits, as the reference does); anything else goes to the reference."""
    texts = {fmt.columns[r] for r in _TEXTS if r in fmt.columns}
    schema = pa.schema([(n, t) for n, t in _types(fmt, iso).items() if n not in texts])
    try:
        table = pjson.read_json(
            pa.py_buffer(data), read_options=pjson.ReadOptions(use_threads=True,
                                                                block_size=1 << 22),
            parse_options=pjson.ParseOptions(explicit_schema=schema,
                                             unexpected_field_behavior="infer"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise Slow from None
    if table.num_rows != rows or any(n not in table.column_names for n in texts):
        raise Slow
    for name in texts:
        t = table.schema.field(name).type
        if pa.types.is_integer(t):
            table = table.set_column(table.column_names.index(name), name,
                                     pc.cast(table.column(name), pa.string()))
        elif not pa.types.is_string(t):
            raise Slow
    _check_unknown(table, fmt, table.column_names, True, source, strict=True)
    return role_columns(table, fmt, iso, True, source)


class ParquetFile:
    """A Parquet trace (one file, or a folder of .parquet files read in name order): its
    column names and its record batches as role columns with row numbers."""

    def __init__(self, path: Path, source: str):
        self.source = source
        files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
        if not files:
            raise InputError(f"trace {source}: a folder with no .parquet file")
        for f in files:
            regular_file(f, f"trace {source}" if f == path else f"trace {source}/{f.name}")
        try:
            self.files = [pq.ParquetFile(f) for f in files]
        except (OSError, pa.ArrowInvalid) as exc:
            raise InputError(f"trace {source} can't be read as Parquet: "
                             f"{str(exc).splitlines()[0][:120]}") from None
        self.rows_total = sum(f.metadata.num_rows for f in self.files)
        schemas = [f.schema_arrow for f in self.files]
        self.names = list(schemas[0].names)
        for f, s in zip(files[1:], schemas[1:], strict=True):
            if list(s.names) != self.names:
                raise InputError(f"trace {source}: {f.name} has other columns than "
                                 f"{files[0].name}; the files of a folder share one schema")
        self.schema = schemas[0]

    def batches(self, fmt: TraceFormat, chunk_rows: int):
        """(table of the columns to read, its first row's number), in order; the next batch
        is decoded (in a readahead thread) while this one is checked and counted."""
        used = set(fmt.columns.values())
        wanted = [n for n in self.names if n in used or (
            norm(n) not in IGNORED and _is_text_type(self.schema.field(n).type))]

        def batches():
            row = 1
            for f in self.files:
                for batch in f.iter_batches(batch_size=chunk_rows, columns=wanted):
                    yield pa.Table.from_batches([batch]), row
                    row += batch.num_rows

        source = batches()

        def step():
            try:
                return next(source, None)
            except (OSError, pa.ArrowInvalid) as exc:
                raise InputError(f"trace {self.source} can't be read as Parquet: "
                                 f"{str(exc).splitlines()[0][:120]}") from None

        with ThreadPoolExecutor(1, thread_name_prefix="parquet-readahead") as ahead:
            job = ahead.submit(step)
            while (got := job.result()) is not None:
                job = ahead.submit(step)
                yield got

    def first_value(self, name: str):
        """The first value of a column (to tell ISO text from numbers), or None."""
        for f in self.files:
            for batch in f.iter_batches(batch_size=1, columns=[name]):
                if batch.num_rows:
                    return batch.column(0)[0].as_py()
        return None


def parquet_columns(table: pa.Table, fmt: TraceFormat, iso: bool, source: str,
                    names: list[str]) -> dict:
    """A Parquet batch as role columns (errors name rows: no reference to fall back on)."""
    _check_unknown(table, fmt, names, False, source, strict=False)
    return role_columns(table, fmt, iso, False, source)
