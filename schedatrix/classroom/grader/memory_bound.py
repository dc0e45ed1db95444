"""One memory bound for a whole sandboxed run: every process a notebook starts shares it.

A limit per process (``RLIMIT_AS``) lets a notebook fork four children of 1.5 GB each and hold
6 GB; enough children wake the machine's out-of-memory killer, which may end a neighbour. So
each sandboxed run (the evaluation, the nbval run) gets one bound for its whole process tree:

* a **cgroup** (v2) of its own where the machine offers a writable one with the memory
  controller (:func:`cgroup_parent`): ``memory.max`` is the bound, ``memory.oom.group`` ends
  every process of the run together when it is reached, and the run starts inside it (a shell
  moves itself in, then execs the sandbox), so no process of it is ever outside;
* otherwise a **watchdog** (:class:`Watchdog`): a thread of the grader that sums the memory
  of the run's processes (the run's descendants, and every process of the run's own uid where
  it has one; each process's proportional share, PSS, so pages forked children share count
  once, as a cgroup counts them) ten times a second and ends them all when the sum is over
  the bound. The process cap (``RLIMIT_NPROC``, per uid) keeps the tree small enough to sum.

:class:`Bound` is either; :func:`bound_for` picks. Either way a run that went over says so
(:attr:`Bound.exceeded`) and the grade names the bound, not a crash.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
from pathlib import Path

__all__ = ["Bound", "CgroupBound", "Watchdog", "bound_for", "cgroup_parent", "tree",
           "resident_bytes", "WATCH_INTERVAL_S"]

#: How often the watchdog sums the tree's memory.
WATCH_INTERVAL_S = 0.1
_CGROUP_ROOT = Path("/sys/fs/cgroup")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class Bound:
    """The memory bound of one run (a base that bounds nothing)."""

    kind = "none"

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self.exceeded = False
        self.peak_bytes = 0

    def wrap(self, argv: list[str]) -> list[str]:
        """The command that starts the run under this bound."""
        return argv

    def watch(self, pid: int, uid: int | None, kill) -> None:
        """Start bounding the run whose first process is ``pid`` (``kill()`` ends it all)."""

    def close(self) -> None:
        """Stop bounding; whatever the run left is gone or ended by the caller."""


# ----------------------------------------------------------------------------- cgroup v2


@functools.cache
def cgroup_parent() -> Path | None:
    """A cgroup (v2) this process may make children in, with the memory controller handed
    down to them, or ``None`` (cgroup v1, a read-only ``/sys/fs/cgroup``, no memory controller
    delegated: most containers)."""
    try:
        own = next(line.partition("::")[2] for line in
                   Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::"))
    except (OSError, StopIteration):
        return None
    for parent in (_CGROUP_ROOT / own.strip("/"), _CGROUP_ROOT):
        try:
            controllers = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if "memory" in controllers and os.access(parent, os.W_OK):
            probe = parent / f"schedatrix-probe-{os.getpid()}"
            try:
                probe.mkdir()
                (probe / "memory.max").write_text("max")
            except OSError:
                continue
            finally:
                with contextlib.suppress(OSError):
                    probe.rmdir()
            return parent
    return None


class CgroupBound(Bound):
    """A cgroup of the run's own: ``memory.max``, the whole group ended together at it."""

    kind = "cgroup"
    _count = 0
    _lock = threading.Lock()

    def __init__(self, limit_bytes: int, parent: Path) -> None:
        super().__init__(limit_bytes)
        with CgroupBound._lock:
            CgroupBound._count += 1
            n = CgroupBound._count
        self.path = parent / f"schedatrix-{os.getpid()}-{n}"
        self.path.mkdir()
        (self.path / "memory.max").write_text(str(limit_bytes))
        for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
            with contextlib.suppress(OSError):
                (self.path / name).write_text(value)

    def wrap(self, argv: list[str]) -> list[str]:
        # the shell moves itself into the group, then becomes the run: nothing starts outside
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"',
                str(self.path / "cgroup.procs"), *argv]

    def _events(self) -> dict[str, int]:
        try:
            lines = (self.path / "memory.events").read_text().splitlines()
        except OSError:
            return {}
        return {k: int(v) for k, _, v in (line.partition(" ") for line in lines)
                if v.strip().isdigit()}

    def close(self) -> None:
        events = self._events()
        self.exceeded = bool(events.get("oom_kill") or events.get("oom_group_kill"))
        with contextlib.suppress(OSError, ValueError):
            self.peak_bytes = int((self.path / "memory.peak").read_text())
        with contextlib.suppress(OSError):
            (self.path / "cgroup.kill").write_text("1")
        for _ in range(20):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.05)


# ----------------------------------------------------------------------------- the watchdog


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, resident bytes) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        return int(fields[1]), int(fields[21]) * _PAGE
    except (OSError, IndexError, ValueError):
        return None


def _proportional(pid: int, resident: int) -> int:
    """A process's proportional share of memory (PSS: a page shared by n processes counts
    1/n in each, so forked children that share their parent's pages are not counted n
    times over), or its resident memory where the kernel does not say."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resident


def tree(root: int, uid: int | None = None) -> dict[int, int]:
    """The processes of a run, pid -> memory (proportional, :func:`_proportional`): ``root``,
    its descendants, and (with ``uid``) every process of that uid, wherever it was
    reparented."""
    table: dict[int, tuple[int, int]] = {}
    owned: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        found = _stat(pid)
        if found is None:
            continue
        table[pid] = found
        if uid is not None:
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    owned.add(pid)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    members, todo = set(), [root, *owned]
    while todo:
        pid = todo.pop()
        if pid in members or pid not in table:
            continue
        members.add(pid)
        todo += children.get(pid, [])
    return {pid: _proportional(pid, table[pid][1]) for pid in members}


def resident_bytes(root: int, uid: int | None = None) -> int:
    """The memory a run's processes hold together (each shared page once)."""
    return sum(tree(root, uid).values())


class Watchdog(Bound):
    """Sums the run's resident memory every :data:`WATCH_INTERVAL_S` and ends the run (every
    process of it) when the sum is over the bound."""

    kind = "watchdog"

    def __init__(self, limit_bytes: int) -> None:
        super().__init__(limit_bytes)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, pid: int, uid: int | None, kill) -> None:
        def run() -> None:
            while not self._stop.wait(WATCH_INTERVAL_S):
                members = tree(pid, uid)
                if not members:
                    return
                used = sum(members.values())
                self.peak_bytes = max(self.peak_bytes, used)
                if used > self.limit_bytes:
                    self.exceeded = True
                    for member in members:
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.kill(member, signal.SIGKILL)
                    kill()
                    return

        self._thread = threading.Thread(target=run, name="schedatrix-memory-watchdog",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def bound_for(limit_mb: int, how: str = "auto") -> Bound:
    """The bound of one run: a cgroup where the machine offers one (``how="auto"``), else the
    watchdog (``how="watchdog"`` forces it)."""
    limit = limit_mb * 1024 * 1024
    parent = cgroup_parent() if how == "auto" else None
    if parent is not None:
        try:
            return CgroupBound(limit, parent)
        except OSError:
            pass
    return Watchdog(limit)
