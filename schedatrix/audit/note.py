"""The fleet note: the audit's intake form as a TOML file, parsed and validated.

The note mirrors the form field for field (``../shared/seeds/fleet-note.txt``)::

    [fleet]
    gpus = "8 x NVIDIA A100 80GB"          # required: "COUNT x GPU TYPE"
    serving_stack = "vLLM"                  # helpful
    objectives = ["TTFT p99 < 1 s"]         # helpful: apply to every pool
    routing = "Router sends simpler requests to the small-model pool ..."   # helpful
    trace_window = "Sept. 2, 2:00-3:00 PM ET"                             # helpful
    price_per_gpu_hour = 2.50               # optional: dollars, so the audit speaks dollars

    [pools.small]                           # one table per serving pool; the key is its id
    model = "Llama 3.2 3B"                  # required (a list = several models: beyond first pass)
    capacity = "autoscaled, 1-4 replicas, 1 GPU/replica"   # required, the form's own words
    replica_capacity = "~6 requests/s per replica"         # helpful; blank = first-pass assumption

    [pools.large]
    model = "Llama 3.1 70B"
    capacity = "autoscaled, 1-2 replicas, 2 GPUs/replica"
    replica_capacity = 3                    # a bare number is requests/s per replica

Instead of the ``capacity`` phrase a pool may give ``scaling = "fixed" | "autoscaled"``,
``replicas = 3`` (fixed) or ``replicas = [1, 4]`` (autoscaled), and ``gpus_per_replica = 1``.
Optional pool fields: ``role = "small" | "large"`` (default: taken from the pool's id),
``objectives = [...]`` (added to the fleet's), ``aliases = ["GPT-4"]`` (names that mean this
pool in a trace's pool or model column, e.g. BurstGPT's Model).

Every problem in a note is reported at once, in one :class:`~schedatrix.errors.InputError`.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..traces.blocks import regular_file
from .objective import Objective, parse_objective

__all__ = ["PoolConfig", "FleetNote", "load_note", "parse_note", "ASSUMED_REPLICA_RPS",
           "MIN_REPLICA_RPS", "MAX_REPLICA_RPS", "MAX_GPUS", "MAX_PRICE"]

#: The form's first-pass per-replica capacity, requests/s, by pool role (None = role unknown).
ASSUMED_REPLICA_RPS = {"small": 6.0, "large": 3.0, None: 3.0}
#: The range a per-replica capacity may take, requests/s.
MIN_REPLICA_RPS, MAX_REPLICA_RPS = 1e-6, 1_000_000
#: The most GPUs a fleet may have.
MAX_GPUS = 1_000_000
#: The highest price per GPU-hour a note may give, dollars (the bill then stays finite).
MAX_PRICE = 1_000_000

_FLEET_KEYS = {"gpus", "serving_stack", "objectives", "routing", "trace_window",
               "price_per_gpu_hour"}
_POOL_KEYS = {"model", "capacity", "scaling", "replicas", "gpus_per_replica",
              "replica_capacity", "role", "objectives", "aliases"}
_GPUS = re.compile(r"^\s*(\d{1,9})\s*[x×*]\s*(\S.*?)\s*$", re.IGNORECASE)
_CAPACITY = re.compile(
    r"^\s*(?P<scaling>fixed|autoscaled)\s*,\s*(?P<lo>\d{1,9})(?:\s*-\s*(?P<hi>\d{1,9}))?\s*"
    r"replicas?\s*,\s*(?P<gpus>\d{1,9})\s*GPUs?\s*/\s*replica\s*$",
    re.IGNORECASE,
)
_RPS = re.compile(r"^\s*~?\s*(?P<v>-?\d+(?:\.\d+)?)\s*(?:req(?:uest)?s?\s*/\s*s)?"
                  r"(?:\s*per\s+replica)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class PoolConfig:
    """One serving pool: its model(s), deployment constraints and per-replica capacity.

    A fixed pool has ``min_replicas == max_replicas``. ``replica_rps`` is requests/s one
    replica serves; ``replica_rps_assumed`` says it is the first-pass assumption.
    """

    pool_id: str
    role: str | None
    models: tuple[str, ...]
    scaling: str
    min_replicas: int
    max_replicas: int
    gpus_per_replica: int
    replica_rps: float
    replica_rps_assumed: bool
    objectives: tuple[Objective, ...] = ()
    aliases: tuple[str, ...] = ()

    @property
    def max_gpus(self) -> int:
        """GPUs the pool holds at its largest configuration."""
        return self.max_replicas * self.gpus_per_replica

    @property
    def capacity_text(self) -> str:
        """The configuration in the form's words."""
        count = (f"{self.max_replicas}" if self.scaling == "fixed"
                 else f"{self.min_replicas}-{self.max_replicas}")
        gpus = "GPU" if self.gpus_per_replica == 1 else "GPUs"
        return f"{self.scaling}, {count} replicas, {self.gpus_per_replica} {gpus}/replica"


@dataclass(frozen=True)
class FleetNote:
    """The whole note. ``beyond_first_pass`` lists why the note is beyond the standard first
    pass (not two pools, several models in a pool, no small/large pair); empty = standard."""

    gpu_count: int
    gpu_type: str
    pools: tuple[PoolConfig, ...]
    price_per_gpu_hour: float | None = None
    serving_stack: str | None = None
    routing: str | None = None
    trace_window: str | None = None
    beyond_first_pass: tuple[str, ...] = ()
    source: str = "fleet note"

    def pool(self, name: str) -> PoolConfig:
        """The pool whose id, model or alias is `name` (case-insensitive); KeyError if none."""
        key = name.strip().lower()
        for p in self.pools:
            if key == p.pool_id.lower() or key in (m.lower() for m in p.models + p.aliases):
                return p
        raise KeyError(name)

    def pool_by_role(self, role: str) -> PoolConfig | None:
        """The one pool with this role, or None when there is none or several."""
        found = [p for p in self.pools if p.role == role]
        return found[0] if len(found) == 1 else None


def load_note(path: str | Path) -> FleetNote:
    """Read and validate a fleet note file (TOML)."""
    path = Path(path)
    regular_file(path, f"fleet note {str(path)!r}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"fleet note {str(path)!r} can't be read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark at the start is skipped
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"fleet note {str(path)!r} line {line}: not UTF-8 text (save the note "
                         "as UTF-8)") from None
    return parse_note(text, source=str(path))


def parse_note(text: str, source: str = "fleet note") -> FleetNote:
    """Parse and validate a note's TOML text; every problem is reported in one InputError."""
    try:
        data = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source}: not valid TOML: {exc}") from None
    except ValueError as exc:  # an integer too long to read
        raise InputError(f"{source}: not valid TOML: {str(exc).split(';')[0]}") from None
    except RecursionError:
        raise InputError(f"{source}: not valid TOML: arrays or tables nested too deep to read "
                         "(a note nests two levels)") from None
    problems: list[str] = []
    fleet = data.get("fleet")
    if not isinstance(fleet, dict):
        problems.append("[fleet] table is missing (required: gpus = \"8 x NVIDIA A100 80GB\")")
        fleet = {}
    for key in sorted(set(data) - {"fleet", "pools"}):
        problems.append(f"unknown table or field {_short(key)} (allowed: [fleet], [pools.ID])")
    for key in sorted(set(fleet) - _FLEET_KEYS):
        problems.append(f"unknown field {_short(key)} in [fleet] (allowed: "
                        f"{', '.join(sorted(_FLEET_KEYS))})")

    gpu_count, gpu_type = 0, ""
    gpus = fleet.get("gpus")
    if _blank(gpus):
        problems.append("[fleet] gpus is missing: required, e.g. \"8 x NVIDIA A100 80GB\"")
    else:
        m = _GPUS.match(str(gpus))
        if not m or not 1 <= int(m[1]) <= MAX_GPUS:
            problems.append(f"[fleet] gpus = {_short(gpus)} can't be read: write \"COUNT x GPU "
                            f"TYPE\" with COUNT from 1 to {MAX_GPUS:,}, e.g. \"8 x NVIDIA A100 "
                            "80GB\"")
        else:
            gpu_count, gpu_type = int(m[1]), m[2]

    price = fleet.get("price_per_gpu_hour")
    if _blank(price):
        price = None
    elif not _is_number(price) or not math.isfinite(price) or not 0 <= price <= MAX_PRICE:
        problems.append(f"[fleet] price_per_gpu_hour = {_short(price)}: must be a finite "
                        f"number from 0 to {MAX_PRICE:,} (dollars per GPU-hour)")
        price = None
    fleet_objectives = _objectives(fleet.get("objectives"), "[fleet] objectives", problems)

    raw_pools = data.get("pools")
    pools: list[PoolConfig] = []
    if not isinstance(raw_pools, dict) or not raw_pools:
        problems.append("[pools] is missing: required, one table per pool, e.g. [pools.small] "
                        "and [pools.large] with model and capacity")
        raw_pools = {}
    for pool_id, raw in raw_pools.items():
        pool = _pool(pool_id, raw, fleet_objectives, problems)
        if pool is not None:
            pools.append(pool)

    _alias_clashes(pools, problems)
    if gpu_count:
        for p in pools:
            if p.max_gpus > gpu_count:
                problems.append(
                    f"[pools.{p.pool_id}] at its largest ({p.max_replicas} replicas x "
                    f"{p.gpus_per_replica} GPUs) needs {p.max_gpus} GPUs, the fleet has "
                    f"{gpu_count}")
        total = sum(p.max_gpus for p in pools)
        if len(pools) > 1 and total > gpu_count:
            problems.append(f"the pools at their largest need {total} GPUs together, "
                            f"the fleet has {gpu_count}")
    if problems:
        # one problem per "; "-separated part: no problem's own text contains "; "
        raise InputError(f"{source}: " + "; ".join(problems))

    beyond = []
    if len(pools) != 2:
        beyond.append(f"{len(pools)} pools (the standard first pass has two)")
    for p in pools:
        if len(p.models) > 1:
            beyond.append(f"pool {p.pool_id!r} serves {len(p.models)} models "
                          "(the standard first pass has one per pool)")
    if len(pools) == 2 and {p.role for p in pools} != {"small", "large"}:
        beyond.append("the two pools are not one small-model and one large-model pool")
    return FleetNote(
        gpu_count=gpu_count, gpu_type=gpu_type, pools=tuple(pools), price_per_gpu_hour=price,
        serving_stack=_text(fleet.get("serving_stack")), routing=_text(fleet.get("routing")),
        trace_window=_text(fleet.get("trace_window")), beyond_first_pass=tuple(beyond),
        source=source,
    )


def _pool(pool_id: str, raw, fleet_objectives, problems: list[str]) -> PoolConfig | None:
    where = f"[pools.{pool_id}]"
    if not isinstance(raw, dict):
        problems.append(f"{where} must be a table with model and capacity")
        return None
    n_before = len(problems)
    for key in sorted(set(raw) - _POOL_KEYS):
        problems.append(f"unknown field {_short(key)} in {where} (allowed: "
                        f"{', '.join(sorted(_POOL_KEYS))})")

    model = raw.get("model")
    models = tuple(str(m) for m in model) if isinstance(model, list) else (
        () if _blank(model) else (str(model),))
    if not models or any(_blank(m) for m in models):
        problems.append(f"{where} model is missing: required, e.g. \"Llama 3.2 3B\"")

    role = raw.get("role", pool_id if pool_id.lower() in ("small", "large") else None)
    if role is not None:
        role = str(role).lower()
        if role not in ("small", "large"):
            problems.append(f"{where} role = {_short(raw.get('role'))}: allowed \"small\" or "
                            "\"large\"")

    scaling, lo, hi, gpus = _capacity(raw, where, problems)

    rps_raw = raw.get("replica_capacity")
    assumed = _blank(rps_raw)
    rps = ASSUMED_REPLICA_RPS.get(role if role in ("small", "large") else None)
    if not assumed:
        value = rps_raw if _is_number(rps_raw) else None
        if value is None and isinstance(rps_raw, str) and (m := _RPS.match(rps_raw)):
            value = float(m["v"])
        if value is None or not MIN_REPLICA_RPS <= value <= MAX_REPLICA_RPS:
            problems.append(f"{where} replica_capacity = {_short(rps_raw)}: must be requests/s "
                            f"per replica > 0 (up to {MAX_REPLICA_RPS:,}), e.g. 6 or \"~6 "
                            "requests/s per replica\", or blank")
        else:
            rps = float(value)

    objectives = fleet_objectives + _objectives(raw.get("objectives"), f"{where} objectives",
                                                problems)
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        problems.append(f"{where} aliases = {_short(aliases)}: must be a list of names")
        aliases = []
    if len(problems) > n_before:
        return None
    return PoolConfig(pool_id=pool_id, role=role, models=models, scaling=scaling,
                      min_replicas=lo, max_replicas=hi, gpus_per_replica=gpus,
                      replica_rps=rps, replica_rps_assumed=assumed, objectives=objectives,
                      aliases=tuple(aliases))


def _alias_clashes(pools: list[PoolConfig], problems: list[str]) -> None:
    """Refuse an alias that names another pool too (its id, a model or an alias of it): a
    trace's pool or model column would then move that pool's rows silently."""
    for p in pools:
        for alias in p.aliases:
            key = alias.strip().lower()
            for q in pools:
                if q is p:
                    continue
                what = ("the id" if key == q.pool_id.lower() else
                        "a model" if key in (m.lower() for m in q.models) else
                        "an alias" if key in (a.strip().lower() for a in q.aliases) else None)
                if what:
                    problems.append(f"[pools.{p.pool_id}] aliases: {_short(alias)} is also "
                                    f"{what} of pool {q.pool_id}: a trace's pool or model "
                                    "column would name two pools (an alias names one pool)")


def _capacity(raw: dict, where: str, problems: list[str]) -> tuple[str, int, int, int]:
    """(scaling, min, max, gpus per replica) from the form's phrase or the structured fields."""
    phrase = raw.get("capacity")
    if not _blank(phrase):
        m = _CAPACITY.match(str(phrase))
        if not m:
            problems.append(f"{where} capacity = {_short(phrase)} can't be read: write "
                            "\"fixed, 3 replicas, 1 GPU/replica\" or "
                            "\"autoscaled, 1-4 replicas, 1 GPU/replica\"")
            return "fixed", 0, 0, 0
        scaling = m["scaling"].lower()
        lo = int(m["lo"])
        hi = int(m["hi"]) if m["hi"] else lo
        gpus = int(m["gpus"])
        if scaling == "fixed" and m["hi"] and lo != hi:
            problems.append(f"{where} capacity = {_short(phrase)}: a fixed pool has one replica "
                            "count")
    else:
        scaling = str(raw.get("scaling", "")).lower()
        replicas = raw.get("replicas")
        gpus = raw.get("gpus_per_replica")
        missing = [k for k, v in (("scaling", raw.get("scaling")), ("replicas", replicas),
                                  ("gpus_per_replica", gpus)) if _blank(v)]
        if missing:
            problems.append(f"{where} capacity is missing: required, e.g. capacity = "
                            "\"autoscaled, 1-4 replicas, 1 GPU/replica\" "
                            f"(or {', '.join(missing)})")
            return "fixed", 0, 0, 0
        if scaling not in ("fixed", "autoscaled"):
            problems.append(f"{where} scaling = {_short(raw.get('scaling'))}: allowed \"fixed\" or "
                            "\"autoscaled\"")
        if isinstance(replicas, list) and len(replicas) == 2 and all(
                isinstance(r, int) and not isinstance(r, bool) for r in replicas):
            lo, hi = replicas
        elif isinstance(replicas, int) and not isinstance(replicas, bool):
            lo = hi = replicas
        else:
            problems.append(f"{where} replicas = {_short(replicas)}: an integer (fixed) or "
                            "[min, max] (autoscaled)")
            lo = hi = 0
        if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 0:
            problems.append(f"{where} gpus_per_replica = {_short(gpus)}: must be an integer >= 1")
            gpus = -1  # reported
    if lo > hi:
        problems.append(f"{where} replica range {lo}-{hi}: min {lo} > max {hi}")
    elif hi < 1 or lo < 0:
        problems.append(f"{where} replicas {lo}-{hi}: need at least 1 replica at the largest")
    if gpus == 0:
        problems.append(f"{where} gpus per replica = 0: must be >= 1")
    return scaling, lo, hi, gpus


def _objectives(raw, where: str, problems: list[str]) -> tuple[Objective, ...]:
    if _blank(raw):
        return ()
    items = raw if isinstance(raw, list) else [raw]
    out = []
    for item in items:
        try:
            out.append(parse_objective(str(item)))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    return tuple(out)


def _short(value) -> str:
    """A note's value for a message, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value) -> str | None:
    return None if _blank(value) else str(value)
