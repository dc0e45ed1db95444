"""Counter-based random draws: one uniform number per (seed, stream, card index).

A card's draws depend only on the month's seed, which stream is asked (ticket, misread,
dip) and the card's index, never on the pool's size or any other knob. So raising the card
count keeps the cards already there, and changing the window, share, demand, headroom or
shape never redraws the pool. The hash is splitmix64 (Steele, Lea and Flood, 2014), done
the same way in plain Python (the reference) and in numpy (the engine): same seed, same
month, on every machine.

The engine asks for the three streams in one pass (:func:`hashes`) and turns the 64-bit
hashes into uniforms (:func:`to_unit`) or compares them with a chance without making the
uniform at all (:func:`below`); both give exactly what :func:`uniform` gives.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["STREAMS", "uniform", "uniforms", "hashes", "to_unit", "below"]

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
#: Salts that separate the independent streams of one card.
STREAMS = {"ticket": 0x7469636B6574, "misread": 0x6D6973726561, "dip": 0x646970}
_U64 = np.uint64


def _mix(x: int) -> int:
    z = (x + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def uniform(seed: int, stream: str, index: int) -> float:
    """One uniform number in [0, 1) for card ``index`` of month ``seed`` (plain Python)."""
    h = _mix(_mix(seed & _MASK) ^ STREAMS[stream])
    h = _mix((h + index) & _MASK)
    return (h >> 11) * 2.0**-53


def _finish(z: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser after its first addition, in place on a uint64 array (it wraps
    mod 2**64 like C); ``tmp`` is scratch of the same shape."""
    z ^= np.right_shift(z, _U64(30), out=tmp)
    z *= _U64(_M1)
    z ^= np.right_shift(z, _U64(27), out=tmp)
    z *= _U64(_M2)
    z ^= np.right_shift(z, _U64(31), out=tmp)
    return z


def _mix_np(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array, in place."""
    z += _U64(_GOLDEN)
    return _finish(z, np.empty_like(z))


def hashes(seeds, streams: tuple[str, ...], n: int, out: np.ndarray | None = None,
           scratch: np.ndarray | None = None) -> np.ndarray:
    """The 64-bit hashes of cards 0..n-1 of each seed, for several streams in one pass.

    Returns a uint64 array of shape (len(streams), len(seeds), n) (``out`` if given, and
    ``scratch``, of the same shape, as work space); :func:`to_unit` turns it into the
    uniforms :func:`uniform` gives.
    """
    s = np.array(seeds, dtype=np.uint64).reshape(1, -1, 1)
    salts = np.array([STREAMS[name] for name in streams], dtype=np.uint64).reshape(-1, 1, 1)
    base = _mix_np(_mix_np(s) ^ salts)  # (streams, months, 1): one key per month and stream
    base += _U64(_GOLDEN)  # the card's mix starts by adding the constant: do it once per key
    z = np.add(base, np.arange(n, dtype=np.uint64), out=out)  # mod 2**64, like C
    return _finish(z, np.empty_like(z) if scratch is None else scratch)


def to_unit(h: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Uniforms in [0, 1) from hashes: the top 53 bits over 2**53 (``h`` is overwritten)."""
    h >>= _U64(11)
    if out is None:
        out = h.astype(np.float64)
    else:
        np.copyto(out, h, casting="unsafe")  # exact: every value is below 2**53
    out *= 2.0**-53
    return out


def below(h: np.ndarray, chance: float, out: np.ndarray | None = None) -> np.ndarray:
    """``to_unit(h) < chance`` without making the uniforms: an exact integer comparison.

    ``(h >> 11) * 2**-53 < chance`` holds exactly when ``h < ceil(chance * 2**53) * 2**11``
    (scaling by a power of two is exact, and a whole number is below a real number exactly
    when it is below its ceiling).
    """
    out = np.empty(h.shape, dtype=bool) if out is None else out
    if not chance > 0:
        out[...] = False
        return out
    limit = math.ceil(min(chance, 1.0) * 2.0**53) << 11
    if limit > _MASK:
        out[...] = True
        return out
    return np.less(h, _U64(limit), out=out)


def uniforms(seeds, stream: str, n: int) -> np.ndarray:
    """Uniform numbers for cards 0..n-1 of each seed: shape (len(seeds), n) (numpy)."""
    return to_unit(hashes(seeds, (stream,), n)[0])
