"""Counter-based random draws: one uniform number per (seed, stream, card index).

A card's draws depend only on the month's seed, which stream is asked (ticket, misread,
dip) and the card's index, never on the pool's size or any other knob. So raising the card
count keeps the cards already there, and changing the window, share, demand, headroom or
shape never redraws the pool. The hash is splitmix64 (Steele, Lea and Flood, 2014), done
the same way in plain Python (the reference) and in numpy (the engine): same seed, same
month, on every machine.
"""

from __future__ import annotations

import numpy as np

__all__ = ["STREAMS", "uniform", "uniforms"]

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
#: Salts that separate the independent streams of one card.
STREAMS = {"ticket": 0x7469636B6574, "misread": 0x6D6973726561, "dip": 0x646970}


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


def _mix_np(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array, in place (it wraps mod 2**64 like C)."""
    z += np.uint64(_GOLDEN)
    z ^= z >> np.uint64(30)
    z *= np.uint64(_M1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_M2)
    z ^= z >> np.uint64(31)
    return z


def uniforms(seeds, stream: str, n: int) -> np.ndarray:
    """Uniform numbers for cards 0..n-1 of each seed: shape (len(seeds), n) (numpy)."""
    s = np.array(seeds, dtype=np.uint64).reshape(-1, 1)
    h = _mix_np(_mix_np(s) ^ np.uint64(STREAMS[stream]))
    h = _mix_np(h + np.arange(n, dtype=np.uint64))
    h >>= np.uint64(11)
    out = h.astype(np.float64)
    out *= 2.0**-53
    return out
