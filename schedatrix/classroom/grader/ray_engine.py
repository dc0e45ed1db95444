"""Grading a class on a Ray cluster: one task per notebook, each in its worker's own sandbox.

For a class that outgrows one machine. The grader reads every submission here and sends its
bytes with the task; each worker grades it exactly as ``--engine threads`` does on one machine
(:func:`~schedatrix.classroom.grader.grade_notebook.grade_notebook`: the evaluation and its checks
in the worker's process, the notebook in the worker's sandbox) and sends back the grade. Every
worker needs schedatrix and a sandbox (bubblewrap, or root for setuid); each chooses its own, and a
worker that has none stops the whole class with its reason, unless ``--sandbox none`` was asked for.

Start a cluster (``ray start --head`` on one machine, ``ray start --address=HEAD:6379`` on the
others), then grade with ``RAY_ADDRESS=HEAD:6379 schedatrix grade DIR --engine ray``. Without
``RAY_ADDRESS`` Ray starts a cluster of this machine alone.
"""

from __future__ import annotations

import os

from ...errors import InputError
from ...serving.sweeps import ray_start
from .grade_notebook import Grade, grade_notebook
from .sandbox import Limits, choose
from .submissions import Submission

__all__ = ["grade_on_ray", "grade_task"]


def grade_task(student: str, exercise: str, data: bytes, kind: str, limits: Limits,
               solution: list[str], seed: int | None = None) -> Grade | str:
    """Grade one notebook's bytes on this worker: its grade, or (text) why this worker cannot
    grade. A Ray task runs one at a time per worker process, and each process has uids of its
    own, so slot 0 is this task's."""
    try:
        box = choose(kind)
    except InputError as exc:
        return f"a Ray worker (process {os.getpid()}) cannot grade: {exc}"
    passed, failure, note = grade_notebook(data, exercise, box, limits, 0,
                                           {exercise: solution}, seed)
    return Grade(student, exercise, passed, failure, note, box.kind, seed)


def grade_on_ray(handed_in: list[tuple[Submission, bytes, str]], kind: str, limits: Limits,
                 solutions: dict[str, list[str]], seed: int | None = None) -> list[Grade]:
    """Grade submissions already read (each with its bytes, or why it is not a notebook) as
    Ray tasks, one CPU each, in the order given."""
    ray = ray_start.import_ray("--engine ray")
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS") or None
        ray_start.start(ray, address, "--engine ray" + (f" (RAY_ADDRESS={address})"
                                                        if address else ""),
                        include_dashboard=False, log_to_driver=False, configure_logging=False)
    task = ray.remote(num_cpus=1)(grade_task)
    slots: list[Grade | object] = []
    for sub, data, problem in handed_in:
        if problem:
            slots.append(Grade(sub.student, sub.exercise, False, problem))
        else:
            slots.append(task.remote(sub.student, sub.exercise, data, kind, limits,
                                     solutions.get(sub.exercise, []), seed))
    pending = [s for s in slots if not isinstance(s, Grade)]
    done = iter(ray.get(pending))
    grades = [s if isinstance(s, Grade) else next(done) for s in slots]
    refusal = next((g for g in grades if isinstance(g, str)), None)
    if refusal is not None:
        raise InputError(refusal)
    return grades
