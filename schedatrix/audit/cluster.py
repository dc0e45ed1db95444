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

from collections.abc import Callable

from ..errors import InputError
from ..serving.sweeps import ray_start
from ..serving.sweeps.ray_start import LOCAL
from .note import FleetNote
from .tally import FileJob, Tally, tally_file

__all__ = ["RayRunner", "LOCAL"]


def _tally_task(note: FleetNote, job: FileJob, bucket_s: int, edges: tuple[int, ...],
                offset_s: float, engine: str) -> Tally:
    return tally_file(note, job, bucket_s, edges, offset_s, engine=engine)


def _ray():
    return ray_start.import_ray("--cluster")


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
        ray_start.start(ray, self.address, f"--cluster {self.address}",
                        **ray_start.settings(self.address, self.num_cpus))
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
