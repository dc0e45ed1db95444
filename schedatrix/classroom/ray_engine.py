"""Grading a class on a Ray cluster: one task per notebook, each in its worker's own sandbox.

For a class that outgrows one machine. The grader reads every submission here and sends its
bytes with the task; each worker grades it exactly as ``--engine threads`` does on one machine
(sandbox, limits, checker in the worker's process) and sends back the grade. Every worker
needs schedatrix and, for the full sandbox, bubblewrap; each chooses its own sandbox, the
strongest it can run unless ``--sandbox`` names one.

Start a cluster (``ray start --head`` on one machine, ``ray start --address=HEAD:6379`` on the
others), then grade with ``RAY_ADDRESS=HEAD:6379 schedatrix grade DIR --engine ray``. Without
``RAY_ADDRESS`` Ray starts a cluster of this machine alone.
"""

from __future__ import annotations

import os

from ..errors import InputError
from .grade_folder import Grade, Submission, grade_notebook, read_notebook
from .sandbox import Limits, choose

__all__ = ["grade_on_ray", "grade_task"]


def grade_task(student: str, exercise: str, data: bytes, kind: str, limits: Limits,
               solution: list[str]) -> Grade:
    """Grade one notebook's bytes on this worker (a Ray task runs one at a time per process,
    so the process id gives each running sandbox a uid of its own)."""
    box = choose(kind)
    slot = 1_000 + os.getpid() % 1_000_000
    passed, failure, note = grade_notebook(data, exercise, box, limits, slot,
                                           {exercise: solution})
    return Grade(student, exercise, passed, failure, note)


def grade_on_ray(subs: list[Submission], kind: str, limits: Limits,
                 solutions: dict[str, list[str]]) -> list[Grade]:
    """Grade ``subs`` as Ray tasks (one CPU each), in the order given."""
    try:
        import ray
    except ImportError:
        raise InputError("--engine ray needs Ray: pip install 'schedatrix[cluster]'") from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    task = ray.remote(num_cpus=1)(grade_task)
    slots: list[Grade | object] = []
    for sub in subs:
        data, problem = read_notebook(sub.path)
        if problem:
            slots.append(Grade(sub.student, sub.exercise, False, problem))
        else:
            slots.append(task.remote(sub.student, sub.exercise, data, kind, limits,
                                     solutions.get(sub.exercise, [])))
    pending = [s for s in slots if not isinstance(s, Grade)]
    done = iter(ray.get(pending))
    return [s if isinstance(s, Grade) else next(done) for s in slots]
