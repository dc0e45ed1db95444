"""PNG bytes of a picture, quickly: the rows unfiltered, deflated at zlib's fastest level.

A live picture is encoded again on every knob turn. PIL's encoder chooses a filter for each
row, which makes the file a tenth smaller and takes twice as long (13 against 6.5 ms for the
walkthrough's 640 x 432 pixels on a busy 2-core machine); the picture is the same either way.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from ..errors import InputError

__all__ = ["png"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(pixels: np.ndarray) -> bytes:
    """``pixels`` (rows top down, each pixel RGB or RGBA, uint8) as an RGB PNG: an alpha
    channel is dropped (the pictures here are opaque)."""
    if pixels.ndim != 3 or pixels.shape[2] not in (3, 4) or pixels.dtype != np.uint8:
        raise InputError(f"pixels: an array of rows x columns x 3 or 4 uint8 is allowed, got "
                         f"shape {pixels.shape} of {pixels.dtype}")
    height, width = pixels.shape[:2]
    rows = np.zeros((height, 1 + 3 * width), np.uint8)  # each row: filter 0 (none), RGB
    rows[:, 1:] = pixels[..., :3].reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, RGB, no interlace
    return (_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + _chunk(b"IEND", b""))
