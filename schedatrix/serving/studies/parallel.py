"""Independent runs on several processes at once, when the machine has cores to spare.

A study that runs several seeds of one design (acceptance's runs, the faulted copies of
them) hands them to :func:`simulate_all`, which gives the runs back in order, each exactly
what :func:`~..sim.simulate.simulate` gives: a run is a pure function of its inputs, so a
worker process makes the same run as this one. Runs this process has kept (:mod:`..sim.memo`)
are taken from it, and the runs the workers make are kept here.

The workers are forked from this process (no re-import; Linux and macOS's fork). They are
used only where they can help: at least :data:`MIN_CPUS` cores this process may use, not
inside a pytest-xdist worker (the suite already keeps every core busy), and two runs or more
to make. ``SCHEDATRIX_WORKERS`` overrides: ``0`` or ``1`` makes every run here, in turn;
``N`` uses up to N processes, even on a small machine (for measuring).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

from ...errors import InputError
from ..sim import memo
from ..sim.simulate import simulate

__all__ = ["simulate_all", "workers", "WORKERS_ENV", "MIN_CPUS", "MAX_WORKERS"]

WORKERS_ENV = "SCHEDATRIX_WORKERS"
#: Cores the process must be allowed before runs go to workers by default (on 2, the
#: learner's kernel and the browser, or the suite's two pytest workers, already use them).
MIN_CPUS = 3
#: The most worker processes used by default.
MAX_WORKERS = 8


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                      # macOS: no affinity
        return os.cpu_count() or 1


def workers() -> int:
    """How many processes :func:`simulate_all` may use (1: none besides this one)."""
    given = os.environ.get(WORKERS_ENV)
    if given is not None and given.strip():
        try:
            n = int(given)
        except ValueError:
            n = -1
        if n < 0:
            raise InputError(f"{WORKERS_ENV}: got {given!r}; allowed: a whole number of "
                             "processes, 0 or 1 for none besides this one")
        return max(n, 1)
    if os.environ.get("PYTEST_XDIST_WORKER") or "fork" not in \
            multiprocessing.get_all_start_methods():
        return 1
    cpus = _cpus()
    return 1 if cpus < MIN_CPUS else min(cpus - 1, MAX_WORKERS)


def _make(job):
    """In a worker: one run (kept nowhere: the caller keeps it) and its CPU seconds."""
    requests, design, implementation, faults, resilience = job
    started = time.process_time()
    with memo.off():
        run = simulate(requests, design, implementation, faults, resilience)
    return run, time.process_time() - started


def simulate_all(jobs):
    """The runs of ``jobs`` (an iterable of ``(requests, design, implementation, faults,
    resilience)``), yielded in order. With one process, each job is taken, run and yielded
    in turn, as a loop over :func:`simulate` would; with workers, every job is taken first
    and the runs the memo does not hold are made at once."""
    if workers() < 2:
        for job in jobs:
            yield simulate(*job)
        return
    jobs = list(jobs)
    keys = [memo.key(*job) for job in jobs]
    runs = [memo.get(k, job[0]) for k, job in zip(keys, jobs, strict=True)]
    todo = [k for k, run in enumerate(runs) if run is None]
    if len(todo) < 2:
        for k, run in enumerate(runs):
            yield run if run is not None else simulate(*jobs[k])
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(min(workers(), len(todo)), mp_context=context) as pool:
        made = {k: pool.submit(_make, jobs[k]) for k in todo}
        for k, run in enumerate(runs):
            if k in made:
                try:
                    run, cost_s = made[k].result()
                except Exception:      # a job that can't be pickled, a worker lost: here, in
                    yield simulate(*jobs[k])     # turn (a run that fails fails here too)
                    continue
                run.requests = jobs[k][0]              # the caller's own, as simulate gives
                memo.put(keys[k], run, cost_s)
            yield run
