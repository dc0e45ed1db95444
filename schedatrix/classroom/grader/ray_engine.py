"""Grading a class on a Ray cluster: one task per notebook, each in its worker's own sandbox.

For a class that outgrows one machine. The grader reads every submission here and sends its
bytes with the task; each worker grades it exactly as ``--engine threads`` does on one machine
(:func:`~schedatrix.classroom.grader.grade_notebook.grade_notebook`: the evaluation and its checks
in the worker's process, the notebook in the worker's sandbox) and sends back the grade. Every
worker needs schedatrix and a sandbox (bubblewrap, or root for setuid); each chooses its own, and a
worker that has none stops the whole class with its reason, unless ``--sandbox none`` was asked for.

Start a cluster (``ray start --head`` on one machine, ``ray start --address=HEAD:6379`` on the
others), then grade with ``schedatrix grade DIR --engine ray --address HEAD:6379`` (or
``RAY_ADDRESS=HEAD:6379``); ``--address local`` starts a cluster of this machine alone. With
neither, the grader says so in one line instead of waiting for a cluster. The class has a
deadline: its notebooks' time (``--timeout`` each, as many at once as the cluster has CPUs)
and a minute more; a notebook no worker graded by then gets a row saying so.
"""

from __future__ import annotations

import math
import os

from ...errors import InputError
from ...serving.sweeps import ray_start
from . import answer_free
from .grade_notebook import Grade, grade_notebook
from .sandbox import Limits, choose
from .submissions import Submission

__all__ = ["grade_on_ray", "grade_task", "class_deadline_s", "NO_ADDRESS"]

#: What a class may take beyond its notebooks' own time (starting workers, sandboxes).
SLACK_S = 60
#: The line when no cluster is named.
NO_ADDRESS = ("--engine ray needs a Ray cluster: name it with --address HOST:6379 (or "
              "RAY_ADDRESS=HOST:6379), or --address local to start one on this machine")


def class_deadline_s(notebooks: int, cpus: float, limits: Limits) -> float:
    """How long a class of ``notebooks`` may take on a cluster of ``cpus`` CPUs: each
    notebook's ``--timeout``, as many at once as there are CPUs, and :data:`SLACK_S`."""
    rounds = math.ceil(notebooks / max(1, int(cpus)))
    return rounds * limits.notebook_timeout_s + SLACK_S


def grade_task(student: str, exercise: str, data: bytes, kind: str, limits: Limits,
               solution: list[str], seed: int | None = None) -> Grade | str:
    """Grade one notebook's bytes on this worker: its grade, or (text) why this worker cannot
    grade. A Ray task runs one at a time per worker process, and each process has uids of its
    own, so slot 0 is this task's."""
    try:
        box = choose(kind)
    except InputError as exc:
        return f"a Ray worker (process {os.getpid()}) cannot grade: {exc}"
    try:
        passed, failure, note = grade_notebook(data, exercise, box, limits, 0,
                                               {exercise: solution}, seed)
    finally:  # Ray ends its workers without their exit handlers: nothing is left in /tmp
        answer_free.release()
    return Grade(student, exercise, passed, failure, note, box.kind, seed)


def grade_on_ray(handed_in: list[tuple[Submission, bytes, str]], kind: str, limits: Limits,
                 solutions: dict[str, list[str]], seed: int | None = None,
                 address: str | None = None) -> list[Grade]:
    """Grade submissions already read (each with its bytes, or why it is not a notebook) as
    Ray tasks, one CPU each, in the order given, on the cluster at ``address`` (else
    ``RAY_ADDRESS``; ``local``: this machine), within :func:`class_deadline_s`."""
    ray = ray_start.import_ray("--engine ray")
    if not ray.is_initialized():
        said = f"--engine ray --address {address}" if address else None
        if address is None and os.environ.get("RAY_ADDRESS"):
            address = os.environ["RAY_ADDRESS"]
            said = f"--engine ray (RAY_ADDRESS={address})"
        if address is None:
            raise InputError(NO_ADDRESS)
        ray_start.start(ray, address, said, include_dashboard=False, log_to_driver=False,
                        configure_logging=False)
    task = ray.remote(num_cpus=1)(grade_task)
    slots: list[Grade | object] = []
    for sub, data, problem in handed_in:
        if problem:
            slots.append(Grade(sub.student, sub.exercise, False, problem))
        else:
            slots.append(task.remote(sub.student, sub.exercise, data, kind, limits,
                                     solutions.get(sub.exercise, []), seed))
    pending = [s for s in slots if not isinstance(s, Grade)]
    cpus = float(ray.cluster_resources().get("CPU", 1) or 1)
    deadline_s = class_deadline_s(len(pending), cpus, limits)
    ready, late = ray.wait(pending, num_returns=len(pending), timeout=deadline_s) \
        if pending else ([], [])
    for ref in late:
        ray.cancel(ref, force=True)
    answers = dict(zip(ready, ray.get(ready), strict=True)) if ready else {}
    grades = []
    for sub_slot, (sub, _, _) in zip(slots, handed_in, strict=True):
        if isinstance(sub_slot, Grade):
            grades.append(sub_slot)
        elif sub_slot in answers:
            grades.append(answers[sub_slot])
        else:
            grades.append(Grade(sub.student, sub.exercise, False,
                                f"not graded: the Ray cluster ({cpus:g} CPUs) graded no answer "
                                f"for it within the class's {deadline_s:,.0f} s",
                                seed=seed))
    refusal = next((g for g in grades if isinstance(g, str)), None)
    if refusal is not None:
        raise InputError(refusal)
    return grades
