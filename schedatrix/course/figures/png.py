"""PNG bytes of a picture, quickly: the rows unfiltered, deflated at zlib's fastest level.

A live picture is encoded again on every knob turn. PIL's encoder chooses a filter for each
row, which makes the file a tenth smaller and takes about twice as long (32 against 17 ms for
the walkthrough's 640 x 432 RGBA pixels, at zlib level 1 both, on the 2-core machine at load
average 7); the picture is the same either way.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from ...errors import InputError

__all__ = ["png"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOUR_TYPE = {3: 2, 4: 6}  # channels -> PNG colour type: RGB, RGBA


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(pixels: np.ndarray) -> bytes:
    """``pixels`` (rows top down, each pixel RGB or RGBA, uint8) as a PNG of the same kind."""
    if pixels.ndim != 3 or pixels.shape[2] not in _COLOUR_TYPE or pixels.dtype != np.uint8:
        raise InputError(f"pixels: an array of rows x columns x 3 or 4 uint8 is allowed, got "
                         f"shape {pixels.shape} of {pixels.dtype}")
    height, width, channels = pixels.shape
    rows = np.zeros((height, 1 + channels * width), np.uint8)  # each row: filter 0 (none)
    rows[:, 1:] = pixels.reshape(height, channels * width)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPE[channels], 0, 0, 0)
    return (_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + _chunk(b"IEND", b""))
