"""What a run needs in memory, checked before it starts: a load too large for this process is
refused in one line that says how much it needs and how much there is, not a MemoryError
halfway through generating it.

A run holds its requests' arrays (arrival, lengths, class, status, times: about 30 numbers a
request), the simulator's state per request and the figures' sorts. Measured
(``benchmarks/bench_serving.py``, docs/serving.md): 1,000,000 requests peak at 685 to 776 MB
in a fresh process, the interpreter and libraries included; so :data:`BYTES_PER_REQUEST` (800)
and :data:`BASE_BYTES` (250 MB) bound it from above.
"""

from __future__ import annotations

import os
import resource

from ...errors import InputError

__all__ = ["BYTES_PER_REQUEST", "BASE_BYTES", "available_bytes", "needed_bytes", "check_fits"]

#: Peak bytes one request costs a run (generate, simulate, figures), from above.
BYTES_PER_REQUEST = 800
#: What a run needs whatever its size: Python, numpy, scipy, the package.
BASE_BYTES = 250 * 10**6


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _address_space_left() -> int | None:
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        used = 0
    return max(0, limit - used)


def available_bytes() -> tuple[int, str] | None:
    """(bytes this process may still take, what bounds it), or None when nothing says."""
    found = [(b, why) for b, why in ((_meminfo_available(), "the memory this machine has "
                                      "available"),
                                     (_address_space_left(), "this process's address-space "
                                      "limit (ulimit -v)"))
             if b is not None]
    return min(found) if found else None


def needed_bytes(requests: int) -> int:
    """About what a run of ``requests`` requests needs at its peak (from above)."""
    return BASE_BYTES + BYTES_PER_REQUEST * int(requests)


def check_fits(requests: int, what: str) -> None:
    """Refuse a run of ``requests`` requests that this process can't hold; ``what`` names the
    knob in the message ("requests", "rate x duration")."""
    have = available_bytes()
    need = needed_bytes(requests)
    if have is None or need <= have[0]:
        return
    most = max(0, (have[0] - BASE_BYTES) // BYTES_PER_REQUEST)
    raise InputError(f"{what} = {int(requests):,}: a run of that many requests needs about "
                     f"{need / 1e9:,.1f} GB of memory, and {have[1]} leaves {have[0] / 1e9:,.1f} "
                     f"GB; allowed here: about {most:,} requests at most")
