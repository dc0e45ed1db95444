"""The readers' threads and address space, sized to what this process may use.

pyarrow sizes its CPU pool to the machine's cores (not the ones this process may run on) and
its I/O pool to 8 threads, and its allocator (mimalloc) reserves address space in arenas of
1 GiB. Each is harmless on a large machine and fatal under an address-space limit
(``ulimit -v``): the packaged hour reserved about 2 GB once the reader's threads started.
So, before pyarrow loads, mimalloc is asked for arenas of 64 MiB (unless the environment says
otherwise), and once it has loaded both pools are cut to the cores this process may use.
"""

from __future__ import annotations

import os

__all__ = ["cores", "size_pools"]

os.environ.setdefault("MIMALLOC_ARENA_RESERVE", "64MiB")


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def size_pools() -> None:
    """Cut pyarrow's CPU and I/O thread pools to :func:`cores` (never raise them)."""
    import pyarrow as pa

    n = cores()
    if pa.cpu_count() > n:
        pa.set_cpu_count(n)
    if pa.io_thread_count() > n:
        pa.set_io_thread_count(n)
