"""A text file's bytes in blocks of whole lines: the one place that opens a trace file.

Decompresses ``.gz``, skips a UTF-8 byte-order mark at the start, and hands out blocks of at
most `n` lines, and of about `BLOCK_BYTES` at most, with the number of their first line. A line
longer than `MAX_LINE_BYTES` stops the read (a trace line holds a few numbers). So a block holds
at most `BLOCK_BYTES` + 1 MiB, short lines or long, and memory stays bounded whatever the file
holds.
"""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from pathlib import Path

import numpy as np

from ..errors import InputError

__all__ = ["Blocks", "MAX_LINE_BYTES", "BLOCK_BYTES", "blank_lines", "regular_file"]

#: The longest line a trace may have, in bytes.
MAX_LINE_BYTES = 1 << 20
#: The most bytes a block of lines holds (a block ends at the last whole line once it has this
#: many): 262,144 short lines fit; long lines (Mooncake's hash_ids) make blocks of fewer rows.
BLOCK_BYTES = 8 << 20
_BOM = b"\xef\xbb\xbf"
_READ_BYTES = 1 << 20


def regular_file(path: Path, what: str) -> None:
    """Refuse a path that is not a regular file (a FIFO, a socket, a device) before anything
    opens it: reading a FIFO waits forever for a writer. ``what`` names it ("trace x.csv").
    A path that can't be found is left to the open, which says why."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if
                stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a folder" if stat.S_ISDIR(mode) else "not a regular file")
        raise InputError(f"{what} is {kind}, not a file: give a file (a pipe or a device is "
                         "never read, it could wait forever)")


def blank_lines(data: bytes, newlines: np.ndarray | None = None) -> np.ndarray:
    """Whether each line of a block is blank: empty, or (among lines of at most 16 bytes)
    white space only. A longer line of spaces counts as a row (the reference skips it; a
    columnar parse then disagrees on the row count and hands the block to the reference).
    `newlines`: the block's line-break offsets, when known."""
    nl = np.flatnonzero(np.frombuffer(data, np.uint8) == 10) if newlines is None else newlines
    ends = nl if data.endswith(b"\n") else np.append(nl, len(data))
    starts = np.concatenate([[0], nl[: len(ends) - 1] + 1])
    short = np.flatnonzero(ends - starts <= 16)
    blank = np.zeros(len(ends), dtype=bool)
    for i in short.tolist():
        blank[i] = not data[starts[i]: ends[i]].strip()
    return blank


class Blocks:
    """Blocks of whole lines of one file. ``take(n)`` returns (bytes, first line number,
    lines); no lines at the end; `newlines` then holds the block's line-break offsets.
    `bytes_read` counts the file's bytes read so far (compressed for a .gz)."""

    def __init__(self, path: Path, source: str):
        self.source = source
        regular_file(path, f"trace {source}")
        try:
            self.raw = open(path, "rb")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise InputError(f"trace {str(path)!r} can't be read: "
                             f"{exc.strerror or exc}") from None
        self.stream = gzip.GzipFile(fileobj=self.raw) if path.name.endswith(".gz") else self.raw
        self.line = 0
        self.buf = b""
        self.eof = False
        self.first = True
        self.bytes_per_line = 64.0
        self.newlines = np.zeros(0, np.int64)
        self.nl = np.zeros(0, np.int64)  # line breaks in buf

    @property
    def bytes_read(self) -> int:
        return self.raw.tell() if not self.raw.closed else 0

    def close(self) -> None:
        self.raw.close()

    def _read(self, n: int) -> bytes:
        try:
            data = self.stream.read(n)
        except (gzip.BadGzipFile, EOFError, zlib.error):
            raise InputError(f"trace {self.source} can't be read: not a valid gzip file "
                             "(corrupt or truncated)") from None
        except OSError as exc:
            raise InputError(f"trace {self.source} can't be read: "
                             f"{exc.strerror or 'read error'}") from None
        if self.first:
            self.first = False
            data = data[3:] if data.startswith(_BOM) else data
        return data

    def _too_long(self, line: int):
        raise InputError(f"trace {self.source} line {line}: longer than {MAX_LINE_BYTES:,} "
                         "bytes; a trace line holds a few numbers (is this a trace?)")

    def take(self, n: int) -> tuple[bytes, int, int]:
        """Up to `n` whole lines (with their line breaks), the first one's number, how many."""
        nl = self.nl
        while len(nl) < n and not self.eof and len(self.buf) < BLOCK_BYTES:
            want = max(_READ_BYTES, int((n - len(nl)) * self.bytes_per_line * 1.1))
            data = self._read(min(want, max(_READ_BYTES, BLOCK_BYTES - len(self.buf))))
            if not data:
                self.eof = True
                break
            more = np.flatnonzero(np.frombuffer(data, np.uint8) == 10) + len(self.buf)
            self.buf += data
            nl = np.concatenate([nl, more])
            tail = len(self.buf) - (nl[-1] + 1 if len(nl) else 0)
            if tail > MAX_LINE_BYTES:
                self._too_long(self.line + len(nl) + 1)
        if len(nl) >= n:
            cut = int(nl[n - 1]) + 1
        elif not self.eof:
            cut = int(nl[-1]) + 1  # a block's worth of bytes: the whole lines it holds
        elif self.buf:
            cut = len(self.buf)  # the end: the last line may lack its line break
        else:
            self.newlines = np.zeros(0, np.int64)
            return b"", self.line + 1, 0
        data, self.buf = self.buf[:cut], self.buf[cut:]
        k = int(np.searchsorted(nl, cut))
        ends, self.nl = nl[:k], nl[k:] - cut
        self.newlines = ends
        lengths = np.diff(np.concatenate([[-1], ends]))
        if len(lengths) and lengths.max() > MAX_LINE_BYTES + 1:
            self._too_long(self.line + int(np.argmax(lengths > MAX_LINE_BYTES + 1)) + 1)
        count = len(ends) + (0 if data.endswith(b"\n") else 1)
        first = self.line + 1
        self.line += count
        self.bytes_per_line = 0.8 * self.bytes_per_line + 0.2 * (len(data) / max(count, 1))
        return data, first, count
