"""Run a grid's tasks (:mod:`.grid`) and gather one row per (design, load, seed).

Three ways to run the same tasks, giving the same table:

- in this process (``workers=1``);
- in local worker processes (``workers=N``): :class:`concurrent.futures.ProcessPoolExecutor`;
- on Ray (``ray_address``): ``"local"`` starts a Ray instance on this machine with
  ``workers`` CPUs, ``"auto"`` joins the cluster this machine belongs to, and any other
  address is handed to ``ray.init`` (``ray://HEAD:10001``, ``HEAD:6379``). On a cluster the
  driver's copy of ``schedatrix`` travels to the workers (Ray's ``py_modules``), so every
  node runs the same code; numpy and scipy must be installed there, and files the grid names
  (``trace``, ``lengths_from``) must be at the same path on every node. Ray is the optional
  extra ``cluster``: ``pip install 'schedatrix[cluster]'``.

No scheduling of our own: each task is one call of :func:`run_task`, a pure function of the
task (its design, load, seed), and the executor or Ray decides where it runs. Rows are put back
in the grid's task order, so the table never depends on which worker finished first.

A row holds the task (``design``, ``load``, ``seed``, the swept load values as ``load.KEY``),
the design's knobs (``design.KNOB``) and every figure of the simulator's JSON for one run
(:func:`~schedatrix.serving.reports.report.design_json`), nested keys joined by dots
(``per_class.chat.ttft_p95``, ``rejected_by_reason.context.chat``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import InputError
from ...traces.threads import cores
from ..scenarios.grid import Grid, Task
from ..studies.outcome_json import design_json
from ..studies.run_share import CONFIDENCE, RUN_SHARE, decide_share
from . import ray_start

__all__ = ["run_task", "run_tasks", "run_sweep", "Sweep", "Point", "pareto_front",
           "columns_of", "default_workers", "ray_available", "start_ray"]

#: Keys of the simulator's JSON a one-run row leaves out (the name is the ``design`` column;
#: one run has no intervals).
_SKIP = {"name", "runs", "intervals"}


def default_workers() -> int:
    """One worker for each CPU this process may use."""
    return cores()


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


# -- one task -------------------------------------------------------------------------------

def run_task(task: Task) -> dict:
    """Serve one (design, load, seed) and return its row; ``{"error": text}`` for bad input
    only found when it runs (it travels back as data from any worker)."""
    from ..scenarios.scenario import scenario_from_dict
    from ..studies.acceptance import evaluate
    try:
        scenario = scenario_from_dict(task.scenario, base=Path(task.base) if task.base
                                      else None, source="grid")
        design = scenario.designs[0]
        outcome = evaluate(design, scenario.make_requests(), 1, task.seed, scenario.criteria,
                           scenario.implementation)
    except InputError as e:
        return {"error": f"design {task.design!r}, load {task.load!r}, seed {task.seed}: {e}"}
    figures = design_json(outcome)
    row: dict = {"design": task.design, "load": task.load, "seed": task.seed}
    row.update({f"load.{k}": v for k, v in task.load_values})
    _flatten(figures.pop("design"), "design.", row, skip={"name"})
    _flatten(figures, "", row, skip=_SKIP)
    # one seed decides nothing: the row says whether this run met the SLOs, and the point
    # (over the seeds) decides the share of runs that meet them
    row["met"] = bool(outcome.meets()[0]) if outcome.has_slo else None
    return row


def _flatten(d: dict, prefix: str, out: dict, skip=frozenset()) -> None:
    for k, v in d.items():
        if k in skip:
            continue
        if isinstance(v, dict):
            _flatten(v, f"{prefix}{k}.", out)
        elif isinstance(v, (list, tuple)):
            out[prefix + k] = json.dumps(v)
        else:
            out[prefix + k] = v


# -- many tasks -----------------------------------------------------------------------------

def run_tasks(tasks: list[Task] | tuple[Task, ...], workers: int = 1,
              ray_address: str | None = None,
              on_done: Callable[[int], None] | None = None) -> list[dict]:
    """Rows of ``tasks`` in their order. ``workers`` > 1: local processes; ``ray_address``:
    Ray (see the module docstring). ``on_done(n)`` is told each time n more tasks end."""
    tick = on_done or (lambda n: None)
    if ray_address is not None:
        rows = _on_ray(tasks, ray_address, workers, tick)
    elif workers <= 1 or len(tasks) <= 1:
        rows = []
        for t in tasks:
            rows.append(_checked(run_task(t)))
            tick(1)
    else:
        rows = _in_processes(tasks, workers, tick)
    return rows


def _checked(row: dict) -> dict:
    if "error" in row:
        raise InputError(row["error"])
    return row


def _in_processes(tasks, workers: int, tick) -> list[dict]:
    rows: list = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
        futures = {pool.submit(run_task, t): k for k, t in enumerate(tasks)}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    rows[futures[f]] = _checked(f.result())
                tick(len(done))
        except BaseException:
            for f in pending:
                f.cancel()
            raise
    return rows


def _import_ray():
    return ray_start.import_ray("--ray", " (or run in local processes: --workers N)")


def start_ray(address: str, workers: int) -> bool:
    """Start (``"local"``) or join Ray unless this process already is connected; True when
    this call connected (the caller then shuts it down)."""
    ray = _import_ray()
    if ray.is_initialized():
        return False
    ray_start.start(ray, address, f"--ray {address}", **ray_start.settings(address, workers))
    return True


def _on_ray(tasks, address: str, workers: int, tick) -> list[dict]:
    started = start_ray(address, workers)
    import ray
    try:
        remote = ray.remote(num_cpus=1)(run_task)
        refs = [remote.remote(t) for t in tasks]
        where = {ref: k for k, ref in enumerate(refs)}
        rows: list = [None] * len(tasks)
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=len(pending), timeout=0.5)
                for ref, row in zip(done, ray.get(done), strict=True):
                    rows[where[ref]] = _checked(row)
                if done:
                    tick(len(done))
        except BaseException:
            for ref in pending:
                ray.cancel(ref)
            raise
        return rows
    finally:
        if started:
            ray.shutdown()


# -- the table and the Pareto front -----------------------------------------------------------

def columns_of(rows: list[dict]) -> list[str]:
    """Every key of the rows, in order of first appearance (rows in task order, so the same
    grid gives the same columns everywhere)."""
    seen: dict[str, None] = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    return list(seen)


@dataclass(frozen=True)
class Point:
    """One design on one load, over the sweep's seeds: mean p95 TTFT (s) and mean cost per
    million output tokens ($); ``status`` the share of seeds that met the SLOs decided
    (:mod:`..studies.run_share`: "pass", "fail", "undecided"; None: no SLOs), ``passed`` True
    or False once decided (None: undecided or no SLOs), ``met`` how many seeds met them;
    ``front``: on the load's Pareto front (no other design both faster and cheaper)."""

    load: str
    design: str
    gpus: int
    ttft_p95_s: float
    cost_per_mtok: float
    passed: bool | None
    seeds: int
    front: bool = False
    status: str | None = None
    met: int = 0


def pareto_front(points: list[tuple[float, float]]) -> list[bool]:
    """For (x, y) points to minimize both: True where no other point is at most as large in
    both and smaller in one. Points with a non-finite coordinate are never on the front."""
    ok = [math.isfinite(x) and math.isfinite(y) for x, y in points]
    out = []
    for k, (x, y) in enumerate(points):
        if not ok[k]:
            out.append(False)
            continue
        dominated = any(ok[j] and x2 <= x and y2 <= y and (x2 < x or y2 < y)
                        for j, (x2, y2) in enumerate(points) if j != k)
        out.append(not dominated)
    return out


def _mean(values) -> float:
    xs = [float(v) for v in values if v is not None]
    return sum(xs) / len(xs) if len(xs) == len(values) and xs else math.nan


def points_of(rows: list[dict], grid: Grid) -> list[Point]:
    """Per load, per design (grid order): means over the seeds, the front marked."""
    by: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by.setdefault((r["load"], r["design"]), []).append(r)
    out = []
    for load in grid.loads:
        pts = []
        for design in grid.designs:
            rs = by.get((load, design), [])
            if not rs:
                continue
            verdicts = [r.get("met") for r in rs]
            if any(v is None for v in verdicts):
                status, met, passed = None, 0, None
            else:
                met = sum(bool(v) for v in verdicts)
                d = decide_share(met, len(rs), rs[0].get("decision.run_share", RUN_SHARE),
                                 rs[0].get("decision.confidence", CONFIDENCE))
                status, passed = d.state, d.passed
            pts.append(Point(load, design, int(rs[0]["gpus"]),
                             _mean([r.get("ttft_p95") for r in rs]),
                             _mean([r.get("cost_per_mtok") for r in rs]), passed, len(rs),
                             status=status, met=met))
        front = pareto_front([(p.ttft_p95_s, p.cost_per_mtok) for p in pts])
        out += [Point(**{**p.__dict__, "front": f}) for p, f in zip(pts, front, strict=True)]
    return out


@dataclass
class Sweep:
    """A finished sweep: the grid, its rows (task order) and columns, the points per load."""

    grid: Grid
    rows: list[dict]
    columns: list[str]
    points: list[Point] = field(default_factory=list)

    def cheapest(self, load: str) -> Point | None:
        """The passing design with the lowest mean cost on ``load`` (fewer GPUs on a tie)."""
        ok = [p for p in self.points if p.load == load and p.passed and
              math.isfinite(p.cost_per_mtok)]
        return min(ok, key=lambda p: (p.cost_per_mtok, p.gpus), default=None)


def run_sweep(grid: Grid, workers: int = 1, ray_address: str | None = None,
              on_done: Callable[[int], None] | None = None) -> Sweep:
    """Run every task of ``grid`` (see :func:`run_tasks`) and gather the table."""
    rows = run_tasks(grid.tasks, workers, ray_address, on_done)
    return Sweep(grid, rows, columns_of(rows), points_of(rows, grid))
