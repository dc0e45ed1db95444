"""Beyond one machine: tally a trace's files in parallel on Ray, the project's one engine for
work beyond one machine (the serving sweeps use it too).

``schedatrix audit ... --cluster local`` starts Ray on this machine (a worker per core);
``--cluster ADDRESS`` joins a running cluster: ``auto`` or ``HOST:PORT`` from a node of it, or
``ray://HOST:10001`` from elsewhere (Ray Client). Each trace file is one Ray task that reads
and tallies it (:func:`~.tally.tally_file`); the tallies come back and merge exactly (integer
counts), so every figure is identical to the single-machine run. On a cluster the driver's
copy of schedatrix travels to the workers (Ray's ``py_modules``); numpy and pyarrow must be
installed on every node, and the files readable at the same path there (a shared file
system). Install with ``pip install 'schedatrix[cluster]'``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

from ..errors import InputError
from .note import FleetNote
from .tally import FileJob, Tally, tally_file

__all__ = ["RayRunner", "LOCAL"]

#: The address that starts a Ray instance on this machine.
LOCAL = "local"


def _tally_task(note: FleetNote, job: FileJob, bucket_s: int, edges: tuple[int, ...],
                offset_s: float, engine: str) -> Tally:
    return tally_file(note, job, bucket_s, edges, offset_s, engine=engine)


def _ray():
    try:
        import ray  # noqa: PLC0415 - an optional extra
    except ImportError:
        raise InputError("--cluster needs Ray: pip install 'schedatrix[cluster]'") from None
    return ray


class RayRunner:
    """A ``run`` for :func:`~.tally.tally_traces` that tallies each file as a Ray task and
    returns the tallies in the jobs' order. Use it as a context manager: Ray is started (or
    joined) on entry and shut down (or left) on exit.

    `address` is ``"local"`` or a cluster's address; `on_progress(rows)` is called as each
    file's tally comes back; `num_cpus` bounds a local instance's workers."""

    def __init__(self, address: str, engine: str = "arrow",
                 on_progress: Callable[[int], None] | None = None, num_cpus: int | None = None):
        self.address, self.engine = address, engine
        self.on_progress, self.num_cpus = on_progress, num_cpus
        self.ray = _ray()

    def __enter__(self) -> RayRunner:
        ray = self.ray
        local = self.address == LOCAL
        kw = {"include_dashboard": False, "log_to_driver": False, "logging_level": "warning"}
        if local:
            kw |= {"num_cpus": self.num_cpus, "object_store_memory": 256 * 2**20}
        else:  # the driver's schedatrix travels to the workers: every node runs this code
            kw["runtime_env"] = {"py_modules": [str(Path(__file__).resolve().parents[1])]}
        # Ray's raylet gives its agents a fixed 15 s to start, which a loaded machine can miss
        # (ray-project/ray#65983): a local start is tried once more, on a warm disk cache
        for attempt in range(2 if local else 1):
            try:
                with warnings.catch_warnings():   # Ray's tips about future defaults
                    warnings.simplefilter("ignore", FutureWarning)
                    ray.init(address="local" if local else self.address, **kw)
                break
            except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception on a slow start
                ray.shutdown()
                if attempt == 0 and local and "timed out during startup" in str(exc):
                    continue
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
                raise InputError(f"--cluster {self.address}: can't start or join Ray "
                                 f"({first})") from None
        self.task = ray.remote(num_cpus=1)(_tally_task)
        return self

    def __exit__(self, *exc) -> None:
        self.ray.shutdown()

    def __call__(self, note: FleetNote, jobs: list[FileJob], bucket_s: int,
                 edges: tuple[int, ...], offset_s: float) -> list[Tally]:
        ray = self.ray
        pending = {self.task.remote(note, job, bucket_s, edges, offset_s, self.engine): i
                   for i, job in enumerate(jobs)}
        done: dict[int, Tally] = {}
        waiting = list(pending)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            try:
                tally = ray.get(ready[0])
            except ray.exceptions.RayTaskError as exc:
                cause = getattr(exc, "cause", None)
                if isinstance(cause, InputError):
                    raise InputError(str(cause)) from None
                raise
            done[pending[ready[0]]] = tally
            if self.on_progress is not None:
                self.on_progress(tally.n)
        return [done[i] for i in range(len(jobs))]
