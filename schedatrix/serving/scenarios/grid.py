"""A sweep's grid (TOML): designs x loads x seeds, each point a scenario of one design.

A grid is a scenario (:mod:`.scenario`: ``[load]``, ``[[classes]]``, ``[defaults]``,
``[[designs]]``, ``[acceptance]``, ``[simulator]``) plus a ``[grid]`` table that lists values:

```toml
[load]                      # the base load: a scenario's [load] keys
requests = 2000
input_len = "lognormal:1000,0.8"
output_len = "lognormal:150,0.7"

[[classes]]                 # as in a scenario (the same for every point)
name = "chat"
ttft_s = 1.0
tpot_s = 0.06

[defaults]                  # design knobs every point starts from
model = "llama-3.1-8b"

[[designs]]                 # optional: named starting designs, each crossed with [grid.design]
name = "split"
prefill_replicas = 1
decode_replicas = 2

[acceptance]
attainment = 0.95           # (runs and seed: the grid's seeds below)

[grid]
seeds = [0, 1, 2]           # a list of seeds, or a count: seeds = 3 means 0, 1, 2 (default [0])

[grid.design]               # a list of values per design knob: their Cartesian product
replicas = [1, 2, 4]
tp = [1, 2]
gpu = ["a100-80gb", "h100-80gb"]

[grid.load]                 # a list of values per load key: their Cartesian product
rate = [4, 8, 16]
burstiness = [1.0, 0.5]
```

The design points are every ``[[designs]]`` entry (or one empty entry) times the Cartesian
product of ``[grid.design]``; each point is ``[defaults]``, then the entry, then the grid's
values. The load points are ``[load]`` with the product of ``[grid.load]``. Every point is
validated by the scenario's own parser, so its messages and rules are the scenario's. A key
swept by the grid may not also be set in ``[defaults]``, an entry or ``[load]`` (say it in
one place). ``bursts`` is not swept (it is a list already).

A design point that cannot hold its model (the model does not fit, the TP degree does not
split its heads, the PP stages do not divide its layers) is *skipped* with the reason, as
``compare`` does with model sizes: a product of knobs often has such corners. Any other bad
value (an unknown GPU, a negative rate, a key that does not exist) is an error that names the
key. A replayed trace is the same for every seed, so a load that replays one runs once, on
the first seed.

Each task is one (design, load, seed): the load's requests are ``generate(load, seed)``,
exactly what ``schedatrix serving run --seed SEED`` serves, so every design at one (load,
seed) meets the same arrivals (common random numbers, as ``compare`` does) and a task's result
depends on nothing but the grid's values and its seed: the same grid gives the same table in
one process, in many, or on a Ray cluster.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError
from ..cluster.deployment import DESIGN_KNOBS, Design
from ..intake.toml_tables import read_toml, table
from ..numbers import check_int
from ..perf.catalog import gpu as gpu_named
from ..perf.catalog import model as model_named
from .scenario import scenario_from_dict

__all__ = ["Grid", "Task", "load_grid", "grid_from_dict", "GRID_LOAD_KEYS"]

#: The scenario keys a grid file may hold besides ``[grid]`` (``[compare]`` is the grid's job).
_SCENARIO_KEYS = {"load", "classes", "defaults", "designs", "acceptance", "simulator"}
#: Load keys a grid may sweep (a scenario's ``[load]`` keys but ``bursts``).
GRID_LOAD_KEYS = ("rate", "burstiness", "requests", "duration", "input_len", "output_len",
                  "lengths_from", "trace", "speed", "users", "think_s", "ramp_s", "ramp",
                  "max_input_tokens", "max_output_tokens")
#: Design knobs the design's automatic name already shows.
_IN_LABEL = {"tp", "pp", "replicas", "prefill_replicas", "decode_replicas", "router"}
#: A probe that every GPU holds, to tell a point that cannot hold its model from a bad value.
_PROBE_MODEL = "llama-3.2-3b"


@dataclass(frozen=True)
class Task:
    """One (design, load, seed) of a sweep: everything a worker needs, as plain data (it
    travels to worker processes and Ray nodes). ``scenario`` is a scenario's dict of one
    design; ``base`` is the folder relative paths in it start from."""

    index: int
    design: str
    load: str
    seed: int
    load_values: tuple[tuple[str, object], ...]
    scenario: dict
    base: str | None


@dataclass(frozen=True)
class Grid:
    """A parsed, validated grid: its tasks in order (load, then seed, then design), the
    design points skipped with their reasons, and what was swept."""

    source: str
    tasks: tuple[Task, ...]
    designs: tuple[str, ...]
    loads: tuple[str, ...]
    seeds: tuple[int, ...]
    design_keys: tuple[str, ...]
    load_keys: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        runs = len(self.tasks)
        return (f"{len(self.designs)} design{'s' if len(self.designs) != 1 else ''} x "
                f"{len(self.loads)} load{'s' if len(self.loads) != 1 else ''} x "
                f"{len(self.seeds)} seed{'s' if len(self.seeds) != 1 else ''} = "
                f"{runs} run{'s' if runs != 1 else ''}")


def load_grid(path: str | Path) -> Grid:
    """Read and validate a grid file; paths in it are relative to the file."""
    path = Path(path)
    return grid_from_dict(read_toml(path, "grid"), base=path.resolve().parent, source=str(path))


def _values(table: dict, allowed, section: str, where: str) -> dict[str, list]:
    """A [grid.*] table: known keys, each a non-empty list of distinct scalars."""
    out = {}
    for key, values in table.items():
        if key not in allowed:
            raise InputError(f"{where}[{section}] unknown key {key!r}; allowed: "
                             f"{', '.join(sorted(allowed))}")
        if not isinstance(values, list) or not values:
            raise InputError(f"{where}[{section}] {key} must be a non-empty list of values, "
                             f"got {values!r}")
        for v in values:
            if isinstance(v, (list, dict)):
                raise InputError(f"{where}[{section}] {key}: each value must be a number, "
                                 f"string or boolean, got {v!r}")
        seen = []
        for v in values:
            if any(type(v) is type(s) and v == s for s in seen):
                raise InputError(f"{where}[{section}] {key} lists {v!r} twice")
            seen.append(v)
        out[key] = values
    return out


def _seeds(value, where: str) -> tuple[int, ...]:
    if isinstance(value, list):
        if not value:
            raise InputError(f"{where}[grid] seeds must not be empty")
        seeds = []
        for v in value:
            try:
                seeds.append(check_int("seed", v, 0, 2**63 - 1))
            except InputError as e:
                raise InputError(f"{where}[grid] seeds: {e}") from None
        if len(set(seeds)) != len(seeds):
            raise InputError(f"{where}[grid] seeds lists a seed twice: {value!r}")
        return tuple(seeds)
    try:
        n = check_int("seeds", value, 1, 100_000)
    except InputError as e:
        raise InputError(f"{where}[grid] {e} (a count, or a list of seeds)") from None
    return tuple(range(n))


def _product(values: dict[str, list]) -> list[dict]:
    keys = list(values)
    return [dict(zip(keys, combo, strict=True))
            for combo in itertools.product(*(values[k] for k in keys))]


def _point_text(point: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())


def grid_from_dict(data: dict, base: Path | None = None, source: str = "") -> Grid:
    """A Grid from parsed TOML (see the module docstring). Raises InputError naming the key."""
    where = f"{source}: " if source else ""
    extra = sorted(set(data) - _SCENARIO_KEYS - {"grid"})
    if extra:
        hint = (" (a sweep sweeps models in [grid.design] model)" if "compare" in extra else
                " (a sweep runs without faults: judge faults with schedatrix serving accept)"
                if {"faults", "resilience"} & set(extra) else "")
        raise InputError(f"{where}unknown key {', '.join(map(repr, extra))}; allowed: "
                         f"{', '.join(sorted(_SCENARIO_KEYS | {'grid'}))}{hint}")
    grid_t = table(data, "grid", where)
    bad = sorted(set(grid_t) - {"seeds", "design", "load"})
    if bad:
        raise InputError(f"{where}[grid] unknown key {', '.join(map(repr, bad))}; allowed: "
                         f"seeds, design, load")
    seeds = _seeds(grid_t.get("seeds", [0]), where)
    design_grid = _values(table(grid_t, "design", f"{where}[grid] "),
                          [k for k in DESIGN_KNOBS if k != "name"], "grid.design", where)
    load_grid_ = _values(table(grid_t, "load", f"{where}[grid] "), GRID_LOAD_KEYS,
                         "grid.load", where)
    acc = table(data, "acceptance", where)
    for key in ("runs", "seed"):
        if key in acc:
            raise InputError(f"{where}[acceptance] {key}: a sweep's runs are its seeds; give "
                             f"[grid] seeds = [...] instead")
    defaults = table(data, "defaults", where)
    entries = data.get("designs", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError(f"{where}[[designs]] must be a list of tables")
    load_t = table(data, "load", where)
    for knobs, at in [(defaults, "[defaults]")] + [
            (e, f"design {k + 1}") for k, e in enumerate(entries)]:
        unknown = sorted(set(knobs) - set(DESIGN_KNOBS))
        if unknown:
            raise InputError(f"{where}{at}: unknown knob {', '.join(map(repr, unknown))}; "
                             f"allowed: {', '.join(DESIGN_KNOBS)}")
    for key in design_grid:
        if key in defaults:
            raise InputError(f"{where}[grid.design] {key} is also set in [defaults]; set it in "
                             f"one place")
        for k, e in enumerate(entries):
            if key in e:
                raise InputError(f"{where}[grid.design] {key} is also set in design {k + 1} "
                                 f"({e.get('name', 'unnamed')!r}); set it in one place")
    for key in load_grid_:
        if key in load_t:
            raise InputError(f"{where}[grid.load] {key} is also set in [load]; set it in one "
                             f"place")
    for key, values in design_grid.items():
        _check_design_values(key, values, where)

    common = {k: data[k] for k in ("classes", "acceptance", "simulator") if k in data}
    # -- design points ---------------------------------------------------------------------
    design_points, skipped = [], []
    for k, entry in enumerate(entries or [{}]):
        for point in _product(design_grid):
            knobs = {**defaults, **entry, **point}
            knobs.pop("name", None)
            design, reason = _feasible(knobs, where, entry, k, point)
            if design is None:
                where_ = f"[{_point_text(point)}]" if point else f"design {k + 1}"
                skipped.append((f"{entry['name']} {where_}" if "name" in entry else where_,
                                reason))
                continue
            design_points.append((_name(entry, point, design.label()), knobs))
    names = [n for n, _ in design_points]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"{where}two design points are both {dup!r}: give the designs "
                         f"distinct names or knobs")
    if not design_points:
        name, reason = skipped[0]
        raise InputError(f"{where}no design point can hold its model (e.g. {name}: {reason})")
    # -- load points, validated with the first design ------------------------------------
    load_points = []
    first_name, first_knobs = design_points[0]
    for point in _product(load_grid_):
        load = {**load_t, **point}
        scenario = {**common, "load": load, "designs": [{**first_knobs, "name": first_name}]}
        try:
            scenario_from_dict(scenario, base=base, source=source or "grid")
        except InputError as e:
            text = str(e)
            prefix = f"{source or 'grid'}: "
            text = text[len(prefix):] if text.startswith(prefix) else text
            at = f"[grid.load] {_point_text(point)}: " if point else ""
            raise InputError(f"{where}{at}{text}") from None
        load_points.append((_point_text(point) or "load", point, load))
    # -- tasks: load, seed, design -----------------------------------------------------------
    tasks = []
    base_s = str(base) if base is not None else None
    for load_name, point, load in load_points:
        replay = "trace" in load
        for seed in (seeds[:1] if replay else seeds):
            for name, knobs in design_points:
                scenario = {**common, "load": load, "designs": [{**knobs, "name": name}]}
                tasks.append(Task(len(tasks), name, load_name, seed, tuple(point.items()),
                                  scenario, base_s))
    return Grid(source or "(dict)", tuple(tasks), tuple(names),
                tuple(n for n, _, _ in load_points), seeds, tuple(design_grid),
                tuple(load_grid_), tuple(skipped))


def _check_design_values(key: str, values: list, where: str) -> None:
    """Each value of a swept design knob alone: names known, whole numbers in range."""
    for v in values:
        try:
            if key == "model":
                model_named(v)
            elif key == "gpu":
                gpu_named(v)
            elif key == "tp":
                check_int("tp", v, 1, 8)
            elif key == "pp":
                check_int("pp", v, 1, 1024)
        except InputError as e:
            raise InputError(f"{where}[grid.design] {key} = {v!r}: {e}") from None


def _feasible(knobs: dict, where: str, entry: dict, k: int,
              point: dict) -> tuple[Design | None, str]:
    """(the design, '') for a design; (None, reason) when only its model does not fit or
    split on its GPUs; any other bad value is an InputError naming the point."""
    try:
        return Design(**knobs), ""
    except InputError as e:
        reason = str(e)
    probe = {**knobs, "model": _PROBE_MODEL, "tp": 1, "pp": 1}
    try:
        model_named(knobs.get("model", Design.model))
        Design(**probe)
    except InputError:
        at = f"[grid.design] {_point_text(point)}" if point else f"design {k + 1}"
        name = entry.get("name")
        at += f" ({name!r})" if name else ""
        raise InputError(f"{where}{at}: {reason}") from None
    return None, reason


def _name(entry: dict, point: dict, label: str) -> str:
    """A point's name: the entry's name, or the design's label, then the swept values the
    label does not show, e.g. ``2 x TP1 [gpu=h100-80gb]``."""
    base = entry.get("name", label)
    shown = {} if entry.get("name") is not None else {k: v for k, v in point.items()
                                                      if k in _IN_LABEL}
    rest = {k: v for k, v in point.items() if k not in shown}
    return f"{base} [{_point_text(rest)}]" if rest else str(base)
