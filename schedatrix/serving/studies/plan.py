"""Several models on one constrained pool of GPUs: the cheapest placement meeting every model's
SLOs within the pool's GPU count, found by simulation (``schedatrix serving plan POOL.toml``).

```toml
[pool]
gpu = "h100-80gb"        # one kind, or two: ["h100-80gb", "a100-80gb"]
count = 16               # GPUs of it (a list for two kinds: [8, 8])
attainment = 0.9         # share of each model's requests within its SLOs (DistServe's goodput)
requests = 1000          # each rate's run starts here (at least 1,000), grown to steady state
seed = 0
splits = false           # also try prefill/decode splits (one prefill : one decode replica)
drift = true             # a trace's model keeps its fitted per-minute profile (false: one rate)
adapters = false         # also price the models of one base model as its LoRA adapters

[[models]]
name = "chat"            # default: the model
model = "llama-3.2-3b"   # a catalog model
rate = 6.0               # requests/s; or trace = "file.csv": its mean rate, burstiness, lengths
                         # and per-minute profile (with rate too: the profile raised to it)
burstiness = 1.0
input_len = "lognormal:1000,0.8"
output_len = "lognormal:150,0.7"
ttft_s = 0.5             # the model's SLOs (at least one)
tpot_s = 0.05
dtype = "bf16"           # or "fp8", or ["bf16", "fp8"] to let the planner choose
```

The search, DistServe's placement search on a budget:

1. For each model, every *unit* it could be served by: one replica of each tensor-parallel
   degree that holds it on each kind of GPU (pipeline stages only where no TP degree holds
   it), in each precision allowed, with expert parallelism on and off for a mixture of experts,
   and one prefill : one decode split where ``splits`` asks for it (one side per kind when the
   pool has two). A unit whose weights do not fit says why.
2. Each unit's goodput (:func:`.capacity.goodput_capacity`: the highest rate at which
   ``attainment`` of the requests meet the model's SLOs, same seed at every rate, each at
   steady state: :mod:`.steady`) gives the
   units the model's rate needs, ``ceil(rate / goodput)``; that count is then simulated at the
   model's rate and trimmed (round-robin over more replicas smooths their arrivals, so fewer
   may do) or grown until it just meets the SLOs. Units are tried from the fewest GPUs up, and
   a unit is skipped (pruned) once a placement found for that kind of GPU costs no more than
   one such unit alone.
3. The cheapest combination of one placement per model whose GPUs of each kind fit the pool
   (replicas packed whole on nodes of eight; a replica of more than eight GPUs on whole nodes)
   is the plan; ties go to fewer GPUs. The combination is found by branch and bound
   (:func:`_cheapest`): models in order, each option's cost added to the cheapest the models
   left could cost, a branch cut once that bound reaches the best found or its GPUs of a kind
   exceed the pool's; the same answer as trying every combination, in seconds for 50 models.
   Each chosen placement's headroom is its goodput over the model's rate: how far its load
   may grow before it misses the attainment; the model with the
   least breaks first.
4. With ``adapters = true``, each group of two or more models of one base model (each a rate,
   none placed as a split) is also priced as LoRA adapters of that model on one shared pool
   of its first member's unit, against each on replicas of its own, and the plan says which is
   cheaper (:mod:`.adapters_or_models`); the placement above is not changed by it.
5. When no combination fits: which model cannot be served and why (no unit holds it, none meets
   its SLOs at any rate, or its cheapest placement alone is over the count), and the smallest
   count that would hold them all.

Every run is seeded, so the same file gives the same plan. The load of a trace is planned as
its fitted twin (``serving fit``): its mean rate, burstiness within the profile, (input,
output) pairs and per-minute rate profile, each run over the whole profile; ``rate`` raises
the profile to another mean, its shape kept; ``drift = false`` (``serving plan --no-drift``)
plans the drift-free twin (one rate) instead, for comparison.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ...errors import InputError
from ..cluster.deployment import Design
from ..figures.metrics import met_slo
from ..intake.toml_tables import file_path, read_toml, table, tables, unknown
from ..load.fit import fit
from ..load.replay import replay
from ..load.requests import SLOClass
from ..load.workload import Load, Tenant
from ..numbers import check_int, check_real
from ..perf.catalog import DTYPES, GPUS, GPUS_PER_NODE, MODELS, gpu, model
from ..perf.model import allowed_tp
from .adapters_or_models import adapters_or_models
from .capacity import Goodput, goodput_capacity
from .steady import MIN_REQUESTS, check_requests, steady_run

__all__ = ["Pool", "ModelLoad", "PoolFile", "Option", "ModelPlan", "Plan", "load_pool",
           "pool_from_dict", "plan", "packs", "MAX_POOL_GPUS"]

#: The most GPUs a pool may hold, by a file's ``count`` or by ``serving plan --gpus``.
MAX_POOL_GPUS = 100_000

_POOL_KEYS = {"gpu", "count", "attainment", "requests", "seed", "splits", "drift", "adapters"}
_MODEL_KEYS = {"name", "model", "rate", "burstiness", "input_len", "output_len", "lengths_from",
               "trace", "ttft_s", "tpot_s", "dtype"}
#: How far a unit count is trimmed or grown from ``ceil(rate / goodput)`` when simulated.
_TRIM, _GROW = 2, 3


@dataclass(frozen=True)
class Pool:
    """The GPUs: ``kinds`` = ((GPU, count), ...), one or two kinds; the search's settings."""

    kinds: tuple[tuple[str, int], ...]
    attainment: float = 0.9
    requests: int = MIN_REQUESTS
    seed: int = 0
    splits: bool = False
    drift: bool = True
    adapters: bool = False
    #: (knob, value) pairs put on every design the search tries: a user's calibration
    #: (``serving plan --calibration``: the host step and the client path it fitted)
    design_knobs: tuple = ()

    def count(self, kind: str) -> int:
        return dict(self.kinds).get(kind, 0)

    def describe(self) -> str:
        return " + ".join(f"{n} x {k}" for k, n in self.kinds)


@dataclass(frozen=True)
class ModelLoad:
    """One model of the pool: its catalog model, its load (one SLO class) and the precisions
    the planner may give it."""

    name: str
    model: str
    load: Load
    dtypes: tuple[str, ...] = ("bf16",)
    source: str = "rate"

    @property
    def rate_rps(self) -> float:
        return float(self.load.rate_rps)

    @property
    def slo(self) -> SLOClass:
        return self.load.classes[0]

    def slo_text(self) -> str:
        c = self.slo
        parts = ([f"TTFT <= {c.ttft_s:g} s"] if c.ttft_s is not None else []) + (
            [f"TPOT <= {c.tpot_s:g} s"] if c.tpot_s is not None else [])
        return ", ".join(parts)


@dataclass(frozen=True)
class PoolFile:
    pool: Pool
    models: tuple[ModelLoad, ...]
    source: str = ""


@dataclass(frozen=True)
class Option:
    """One way to serve a model: ``units`` units of ``unit`` (replicas, or prefill : decode
    pairs), which met the SLOs at the model's rate with ``attained`` of its requests."""

    model: str
    unit: Design
    unit_goodput_rps: float
    units: int
    design: Design
    attained: float

    @property
    def gpus_by_kind(self) -> dict[str, int]:
        return self.design.gpus_by_kind()

    @property
    def gpus(self) -> int:
        return self.design.gpus

    @property
    def dollars_per_hour(self) -> float:
        return self.design.dollars_per_hour

    def replica_sizes(self) -> dict[str, list[int]]:
        """GPUs of each replica, by kind (what the nodes must hold)."""
        out: dict[str, list[int]] = {}
        d = self.design
        for role in d.roles():
            out.setdefault(d.gpu_of(role), []).extend(
                [d.gpus_per_replica_of(role)] * d.replicas_of(role))
        return out


@dataclass(frozen=True)
class ModelPlan:
    """A model's place in the plan: its placement, its verdict at its rate, its headroom."""

    spec: ModelLoad
    option: Option
    goodput: Goodput

    @property
    def headroom(self) -> float:
        """The placement's goodput over the model's rate (how far the load may grow)."""
        return self.goodput.max_rate_rps / self.spec.rate_rps

    @property
    def meets(self) -> bool:
        return self.option.attained >= self.goodput.attainment


@dataclass(frozen=True)
class Plan:
    """The answer for a pool file: the placements (when one fits), what each model could be
    served by, and, when nothing fits, why and the smallest count that would."""

    pool: Pool
    models: tuple[ModelPlan, ...]
    fits: bool
    options: dict
    unservable: tuple[tuple[str, str], ...]
    smallest_budget: dict | None
    tried: tuple
    source: str = ""
    adapters: tuple = ()     # (names, base model, AdaptersOrModels) of models sharing a base

    @property
    def gpus_used(self) -> dict[str, int]:
        used = {k: 0 for k, _ in self.pool.kinds}
        for m in self.models:
            for k, n in m.option.gpus_by_kind.items():
                used[k] += n
        return used

    @property
    def gpus_idle(self) -> dict[str, int]:
        return {k: n - self.gpus_used[k] for k, n in self.pool.kinds}

    @property
    def dollars_per_hour(self) -> float:
        return sum(m.option.dollars_per_hour for m in self.models)

    @property
    def breaks_first(self) -> ModelPlan | None:
        """The model with the least headroom: the first to miss its SLOs as loads grow."""
        return min(self.models, key=lambda m: m.headroom) if self.models else None


# -- the file -----------------------------------------------------------------------------------
def load_pool(path: str | Path) -> PoolFile:
    """Read and validate a pool file (TOML); paths in it are relative to the file."""
    path = Path(path)
    return pool_from_dict(read_toml(path, "pool file"), base=path.parent, source=str(path))


def pool_from_dict(data: dict, base: Path | None = None, source: str = "") -> PoolFile:
    """A PoolFile from parsed TOML; every refusal names the key."""
    where = f"{source}: " if source else ""
    unknown(data, {"pool", "models"}, where)
    p = table(data, "pool", where)
    unknown(p, _POOL_KEYS, f"{where}[pool] ")
    pool = _pool(p, f"{where}[pool] ")
    specs = tables(data, "models", where)
    if not specs:
        raise InputError(f"{where}[[models]] is missing: give at least one model, with model, "
                         "rate (or trace), lengths and an SLO (ttft_s, tpot_s)")
    models = tuple(_model(t, k, base, f"{where}model {k + 1} ") for k, t in enumerate(specs))
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})[0]
        raise InputError(f"{where}two models share the name {dup!r}; give each a name")
    return PoolFile(pool, models, source)


def _pool(p: dict, where: str) -> Pool:
    if "gpu" not in p or "count" not in p:
        raise InputError(f"{where}needs gpu and count, e.g. gpu = \"h100-80gb\", count = 16")
    kinds, counts = p["gpu"], p["count"]
    kinds = kinds if isinstance(kinds, list) else [kinds]
    counts = counts if isinstance(counts, list) else [counts]
    if not 1 <= len(kinds) <= 2 or len(kinds) != len(counts):
        raise InputError(f"{where}gpu and count: one kind and its count, or two kinds and two "
                         f"counts; got gpu = {p['gpu']!r}, count = {p['count']!r}")
    for k in kinds:
        if not isinstance(k, str) or k not in GPUS:
            raise InputError(f"{where}gpu: unknown GPU {k!r}; allowed: {', '.join(GPUS)}")
    if len(set(kinds)) != len(kinds):
        raise InputError(f"{where}gpu: {kinds[0]!r} twice; give two different kinds")
    try:
        counts = [check_int("count", c, 1, MAX_POOL_GPUS) for c in counts]
        attainment = check_real("attainment", p.get("attainment", 0.9), 0.0, 1.0,
                                low_open=True)
        requests = check_requests(p.get("requests", MIN_REQUESTS), "requests")
        seed = check_int("seed", p.get("seed", 0), 0, 2**63 - 1)
    except InputError as e:
        raise InputError(f"{where}{e}") from None
    splits, drift = p.get("splits", False), p.get("drift", True)
    adapters = p.get("adapters", False)
    for key, value in (("splits", splits), ("drift", drift), ("adapters", adapters)):
        if not isinstance(value, bool):
            raise InputError(f"{where}{key}: {value!r}; allowed: true or false")
    return Pool(tuple(zip(kinds, counts, strict=True)), float(attainment), requests, seed, splits,
                drift, adapters)


def _model(t: dict, k: int, base: Path | None, where: str) -> ModelLoad:
    unknown(t, _MODEL_KEYS, where)
    name = t.get("model")
    if not isinstance(name, str) or name not in MODELS:
        raise InputError(f"{where}model: {name!r}; allowed: {', '.join(MODELS)}")
    label = t.get("name", name)
    if not isinstance(label, str) or not label.strip() or not label.isprintable() \
            or len(label) > 64:
        raise InputError(f"{where}name: {label!r}; must be a name of printable characters "
                         "(no newlines or escape sequences), at most 64")
    where = f"{where}({label}) "
    if "ttft_s" not in t and "tpot_s" not in t:
        raise InputError(f"{where}needs an SLO: ttft_s and/or tpot_s (seconds)")
    try:
        slo = SLOClass(label, 1.0, 0,
                       None if "ttft_s" not in t else check_real("ttft_s", t["ttft_s"], 0.0,
                                                                 1e6, low_open=True),
                       None if "tpot_s" not in t else check_real("tpot_s", t["tpot_s"], 0.0,
                                                                 1e6, low_open=True))
    except InputError as e:
        raise InputError(f"{where}{e}") from None
    dtypes = t.get("dtype", "bf16")
    dtypes = tuple(dtypes) if isinstance(dtypes, list) else (dtypes,)
    if not dtypes or any(not isinstance(d, str) or d not in DTYPES for d in dtypes) \
            or len(set(dtypes)) != len(dtypes):
        raise InputError(f"{where}dtype: {t.get('dtype')!r}; allowed: "
                         f"{', '.join(map(repr, DTYPES))} or a list of them")
    try:
        load, source = _load(t, base, where, slo)
    except InputError as e:
        text = str(e)
        for flag, key in (("--input-len", "input_len"), ("--output-len", "output_len"),
                          ("--rate", "rate"), ("--burstiness", "burstiness")):
            text = text.replace(flag, key)
        raise InputError(text if text.startswith(where) else f"{where}{text}") from None
    return ModelLoad(label, name, load, dtypes, source)


def _load(t: dict, base: Path | None, where: str, slo: SLOClass) -> tuple[Load, str]:
    if "trace" in t:
        if "lengths_from" in t or "input_len" in t or "output_len" in t:
            raise InputError(f"{where}trace gives the lengths: drop input_len, output_len and "
                             "lengths_from")
        path = file_path(t["trace"], base, "trace", where)
        load = dataclasses.replace(fit(replay(path)).load, classes=(slo,))
        if "rate" in t:
            load = dataclasses.replace(load, rate_rps=check_real("rate", t["rate"], 0.0, 1e6,
                                                                 low_open=True))
        if "burstiness" in t:
            load = dataclasses.replace(load, burstiness=t["burstiness"])
        return load, str(path)
    if "rate" not in t:
        raise InputError(f"{where}needs rate (requests/s) or trace (a file to fit)")
    kw = {"rate_rps": t["rate"], "burstiness": t.get("burstiness", 1.0), "classes": (slo,)}
    if "lengths_from" in t:
        from ..load.lengths import PairedLengths
        kw["pairs"] = PairedLengths.from_requests(
            replay(file_path(t["lengths_from"], base, "lengths_from", where)))
    for key in ("input_len", "output_len"):
        if key in t:
            kw[key] = t[key]
    return Load(**kw), "rate"


# -- the units a model could be served by --------------------------------------------------------
def _units(m: ModelLoad, pool: Pool) -> tuple[list[Design], list[str]]:
    """Every unit of ``m`` on the pool's kinds (fewest GPUs first) and why others are not."""
    shape = model(m.model)
    units, why = [], []
    extra = pool.design_knobs                 # a calibration's knobs, on every unit
    for kind, _ in pool.kinds:
        for dtype in m.dtypes:
            if dtype == "fp8" and gpu(kind).tflops_fp8 is None:
                why.append(f"fp8 on {kind}: no FP8 tensor cores")
                continue
            found = []
            for tp in allowed_tp(shape):
                for ep in ((1, tp) if shape.moe and tp > 1 and shape.experts % tp == 0
                           else (1,)):
                    d = _design(m, why, extra, gpu=kind, tp=tp, ep=ep, dtype=dtype)
                    if d is not None:
                        found.append(d)
            if not found:       # no TP degree holds it: pipeline stages at the widest TP
                for pp in (2, 4, 8):
                    d = _design(m, why, extra, gpu=kind, tp=max(allowed_tp(shape)), pp=pp,
                                dtype=dtype)
                    if d is not None:
                        found.append(d)
                        break
            units += found
            if pool.splits:
                tps = sorted({d.tp for d in found if d.pp == 1})
                for tp in tps:
                    d = _design(m, why, extra, gpu=kind, tp=tp, dtype=dtype, replicas=0,
                                prefill_replicas=1, decode_replicas=1)
                    if d is not None:
                        units.append(d)
    if pool.splits and len(pool.kinds) == 2:
        (a, _), (b, _) = pool.kinds
        for pre, dec in ((a, b), (b, a)):
            for dtype in m.dtypes:
                tp_p, tp_d = _smallest_tp(units, pre, dtype), _smallest_tp(units, dec, dtype)
                if tp_p and tp_d:
                    d = _design(m, why, extra, gpu=pre, tp=tp_p, dtype=dtype, replicas=0,
                                prefill_replicas=1, decode_replicas=1, prefill_gpu=pre,
                                decode_gpu=dec, prefill_tp=tp_p, decode_tp=tp_d)
                    if d is not None:
                        units.append(d)
    units.sort(key=lambda d: (d.gpus, d.dollars_per_hour))      # stable: ties keep order
    return units, why


def _smallest_tp(units: list[Design], kind: str, dtype: str) -> int | None:
    tps = [d.tp for d in units if d.gpu == kind and d.dtype == dtype and not d.split
           and d.pp == 1 and d.ep == 1]
    return min(tps) if tps else None


def _design(m: ModelLoad, why: list[str], extra: tuple = (), **knobs) -> Design | None:
    try:
        return Design(model=m.model, **dict(extra), **knobs)
    except InputError as e:
        why.append(str(e))
        return None


def _scaled(unit: Design, n: int) -> Design:
    if unit.split:
        return unit.with_(prefill_replicas=n, decode_replicas=n, replicas=0)
    return unit.with_(replicas=n)


# -- the search ---------------------------------------------------------------------------------
#: Searches and runs this process has made, by their inputs. Each is a pure function of them
#: (the same seed gives the same run), so a plan after another on the same models (a model's
#: precision or the pool changed, the rest not) and the headroom of a unit already searched
#: reuse them instead of simulating again. A load holding arrays (a trace's lengths) has no
#: hash and is simulated each time.
_MEMO: dict = {}
_MEMO_MAX = 4096


def _memo(key: tuple, compute: Callable[[], object]):
    try:
        found = _MEMO.get(key)
    except TypeError:
        return compute()
    if found is None:
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        found = _MEMO[key] = compute()
    return found


def _load_of(m: ModelLoad, pool: Pool) -> Load:
    return m.load if pool.drift else dataclasses.replace(m.load, bursts=())


def _goodput(design: Design, m: ModelLoad, pool: Pool) -> Goodput:
    load = _load_of(m, pool)
    return _memo(("goodput", design, load, pool.attainment, pool.requests, pool.seed),
                 lambda: goodput_capacity(design, load, pool.attainment,
                                          requests=pool.requests, seed=pool.seed))


def _attained(design: Design, m: ModelLoad, pool: Pool) -> float:
    """The share of ``m``'s judged requests within its SLOs on ``design`` at its rate, at
    steady state (lengthened while it passes)."""
    load = _load_of(m, pool)

    def share() -> float:
        steady = steady_run(design, load, pool.seed, pool.requests,
                            passes=lambda s: s.share(met_slo(s.run)) >= pool.attainment)
        return steady.share(met_slo(steady.run))

    return _memo(("attained", design, load, pool.requests, pool.seed, pool.attainment), share)


def _option(m: ModelLoad, unit: Design, good: Goodput, pool: Pool) -> Option | None:
    """The fewest units that meet ``m``'s SLOs at its rate, from ``ceil(rate / goodput)``."""
    start = max(1, math.ceil(m.rate_rps / good.max_rate_rps * (1 - 1e-9)))
    met: dict[int, float] = {}

    def share(n: int) -> float:
        if n not in met:
            met[n] = _attained(_scaled(unit, n), m, pool)
        return met[n]

    n = start
    if share(n) >= pool.attainment:
        while n > 1 and n > start - _TRIM and share(n - 1) >= pool.attainment:
            n -= 1
    else:
        while share(n) < pool.attainment:
            if n >= start + _GROW:
                return None
            n += 1
    return Option(m.name, unit, good.max_rate_rps, n, _scaled(unit, n), met[n])


def _options(m: ModelLoad, pool: Pool, tick: Callable[[str], None]) -> tuple[list, list, list]:
    """(options, every unit tried with its goodput, reasons none could serve)."""
    units, why = _units(m, pool)
    options, tried, misses = [], [], []
    best: dict[str, float] = {}
    for unit in units:
        kind = "+".join(sorted(unit.gpus_by_kind()))
        if best.get(kind, math.inf) <= unit.dollars_per_hour:
            tried.append((m.name, unit, None, "pruned: a placement on these GPUs costs no more "
                                              "than this unit alone"))
            tick(f"{m.name}: {unit.name} pruned")
            continue
        tick(f"{m.name}: {unit.name}")
        good = _goodput(unit, m, pool)
        if good.max_rate_rps <= 0:
            tried.append((m.name, unit, good, "meets the SLOs at no rate"))
            misses.append(f"{unit.name} on {unit.gpu} meets {m.slo_text()} for "
                          f"{pool.attainment:.0%} of requests at no rate, even alone")
            continue
        option = _option(m, unit, good, pool)
        if option is None:
            tried.append((m.name, unit, good, "more units did not meet the SLOs"))
            continue
        tried.append((m.name, unit, good,
                      f"{option.units} unit{'' if option.units == 1 else 's'}"))
        options.append(option)
        best[kind] = min(best.get(kind, math.inf), option.dollars_per_hour)
    if not units:
        misses.append("no replica of the pool's GPUs holds it: " + "; ".join(why[:2]))
    return options, tried, misses


def packs(sizes: list[int], count: int) -> bool:
    """Whether replicas of ``sizes`` GPUs fit ``count`` GPUs on nodes of eight (the last node
    holds the rest): one of at most eight GPUs inside a node, a larger one on whole nodes."""
    nodes = [GPUS_PER_NODE] * (count // GPUS_PER_NODE) + (
        [count % GPUS_PER_NODE] if count % GPUS_PER_NODE else [])
    for s in sorted(sizes, reverse=True):
        if s > GPUS_PER_NODE:
            whole = [i for i, free in enumerate(nodes) if free == GPUS_PER_NODE]
            need = math.ceil(s / GPUS_PER_NODE)
            if len(whole) < need:
                return False
            for i in whole[:need]:
                nodes[i] = 0
            continue
        for i, free in enumerate(nodes):
            if free >= s:
                nodes[i] -= s
                break
        else:
            return False
    return True


def _fits(combo: tuple[Option, ...], counts: dict[str, int]) -> bool:
    sizes: dict[str, list[int]] = {}
    for o in combo:
        for k, s in o.replica_sizes().items():
            sizes.setdefault(k, []).extend(s)
    return all(k in counts and packs(s, counts[k]) for k, s in sizes.items())


def _pareto(options: list[Option]) -> list[Option]:
    """The options no other beats: one that needs no more GPUs of any kind and costs no more
    (of equals, the first) leaves the other out."""
    def beats(p: Option, o: Option) -> bool:
        kinds = set(p.gpus_by_kind) | set(o.gpus_by_kind)
        no_worse = p.dollars_per_hour <= o.dollars_per_hour and all(
            p.gpus_by_kind.get(k, 0) <= o.gpus_by_kind.get(k, 0) for k in kinds)
        same = (p.dollars_per_hour, p.gpus_by_kind) == (o.dollars_per_hour, o.gpus_by_kind)
        return no_worse and (not same or options.index(p) < options.index(o))

    return [o for o in options if not any(p is not o and beats(p, o) for p in options)]


def _branch_and_bound(per_model: list[list[Option]], value, leaf_key, counts=None):
    """The combination (one option a model) of the smallest ``leaf_key(combo, summed)`` (None:
    not allowed), the first of equals in ``product`` order: what trying every combination
    finds, by depth-first search with a cut. ``value(option)`` is a pair summed over the
    combination (``summed``), never above its leaf key: the partial sum plus the least the
    models left can add bounds every combination below a branch, which is cut when that bound
    is above the best found, or equal to it and the branch comes after it in product order.
    Each model's options are visited least ``value`` first (good answers early, more cut).
    With ``counts``, a branch whose GPUs of a kind (plus the fewest the models left need)
    exceed the count is cut too: it cannot pack."""
    n = len(per_model)
    kinds = sorted({k for opts in per_model for o in opts for k in o.gpus_by_kind})
    values = [[value(o) for o in opts] for opts in per_model]
    order = [sorted(range(len(opts)), key=lambda i, v=v: v[i]) for opts, v in
             zip(per_model, values, strict=True)]
    gpus = [[[o.gpus_by_kind.get(k, 0) for k in kinds] for o in opts] for opts in per_model]
    rest_value, rest_gpus = [(0, 0)], [[0] * len(kinds)]
    for d in range(n - 1, -1, -1):
        low = (min(v[0] for v in values[d]), min(v[1] for v in values[d]))
        rest_value.append((rest_value[-1][0] + low[0], rest_value[-1][1] + low[1]))
        rest_gpus.append([r + min(g[j] for g in gpus[d]) for j, r in enumerate(rest_gpus[-1])])
    rest_value, rest_gpus = rest_value[::-1], rest_gpus[::-1]
    limit = [counts.get(k, 0) for k in kinds] if counts is not None else None
    best: list = [None, None, None]         # combo, key, its indices
    partial: list[Option] = []
    at: list[int] = []

    def visit(depth: int, summed: tuple, used: list[int]) -> None:
        if best[1] is not None:
            lower = (summed[0] + rest_value[depth][0], summed[1] + rest_value[depth][1])
            after = tuple(at) > best[2][:depth]
            if lower > best[1] or (lower == best[1] and after):
                return
        if depth == n:
            key = leaf_key(tuple(partial), summed)
            if key is not None and (best[1] is None or key < best[1]
                                    or (key == best[1] and tuple(at) < best[2])):
                best[:] = [tuple(partial), key, tuple(at)]
            return
        for i in order[depth]:
            g = gpus[depth][i]
            now = [u + x for u, x in zip(used, g, strict=True)]
            if limit is not None and any(u + r > c for u, r, c in
                                         zip(now, rest_gpus[depth + 1], limit, strict=True)):
                continue
            v = values[depth][i]
            partial.append(per_model[depth][i])
            at.append(i)
            visit(depth + 1, (summed[0] + v[0], summed[1] + v[1]), now)
            partial.pop()
            at.pop()

    if n:
        visit(0, (0, 0), [0] * len(kinds))
    return best[0]


def _exact(x: float) -> Fraction:
    return Fraction(x)


def _cheapest(per_model: list[list[Option]], counts: dict[str, int] | None):
    """The cheapest combination (one option a model) that fits ``counts`` (None: any); ties
    go to fewer GPUs, then to the first in order. Branch and bound on (cost, GPUs), costs
    summed exactly."""
    if any(not opts for opts in per_model):
        return None

    def leaf(combo, summed):
        return summed if counts is None or _fits(combo, counts) else None

    return _branch_and_bound(per_model, lambda o: (_exact(o.dollars_per_hour), o.gpus), leaf,
                             counts)


def _need(combo: tuple[Option, ...]) -> dict[str, int]:
    """The fewest GPUs of each kind that hold ``combo``'s replicas packed on nodes."""
    need: dict[str, int] = {}
    for o in combo:
        for k, n in o.gpus_by_kind.items():
            need[k] = need.get(k, 0) + n
    for k in need:          # round up until the replicas pack on nodes
        sizes = [s for o in combo for s in o.replica_sizes().get(k, [])]
        while not packs(sizes, need[k]):
            need[k] += 1
    return need


def _smallest_budget(per_model: list[list[Option]], pool: Pool) -> dict[str, int] | None:
    """The fewest GPUs of each kind that would hold the cheapest combination by GPU count
    (branch and bound on (GPUs needed, cost): the GPUs a combination needs are at least the
    sum of its options')."""
    if not per_model or any(not opts for opts in per_model):
        return None
    combo = _branch_and_bound(per_model, lambda o: (o.gpus, _exact(o.dollars_per_hour)),
                              lambda combo, summed: (sum(_need(combo).values()), summed[1]))
    need = _need(combo)
    return {k: need.get(k, 0) for k, _ in pool.kinds if need.get(k)}


def plan(spec: PoolFile, on_progress: Callable[[str], None] | None = None) -> Plan:
    """The plan for a pool file (see the module docstring). ``on_progress(text)`` is called
    before each unit's search (a long search says where it is)."""
    pool = spec.pool
    tick = on_progress or (lambda text: None)
    per_model, tried, unservable = [], [], []
    for m in spec.models:
        options, t, misses = _options(m, pool, tick)
        tried += t
        per_model.append(_pareto(options))
        if not options:
            unservable.append((m.name, "; ".join(misses) or "no unit meets its SLOs"))
    options = {m.name: tuple(o) for m, o in zip(spec.models, per_model, strict=True)}
    counts = dict(pool.kinds)
    combo = None if unservable else _cheapest(per_model, counts)
    if combo is None:
        if not unservable:
            unservable = _why_not(spec, per_model, counts)
        smallest = None if any(not o for o in per_model) else _smallest_budget(per_model, pool)
        return Plan(pool, (), False, options, tuple(unservable), smallest, tuple(tried),
                    spec.source)
    tick("headroom of the chosen placements")
    chosen = tuple(ModelPlan(m, o, _goodput(o.design, m, pool))
                   for m, o in zip(spec.models, combo, strict=True))
    shared = _as_adapters(chosen, pool, tick) if pool.adapters else ()
    return Plan(pool, chosen, True, options, (), None, tuple(tried), spec.source, shared)


def _as_adapters(chosen: tuple[ModelPlan, ...], pool: Pool, tick) -> tuple:
    """With ``adapters = true``: each group of two or more models of one base model (and
    precision), each a rate, priced as adapters of that model on its first member's unit
    against each on replicas of its own (:mod:`.adapters_or_models`); a model replayed from a
    trace, or placed as a split, is left out."""
    groups: dict[tuple, list[ModelPlan]] = {}
    for m in chosen:
        unit = m.option.unit
        if m.spec.source == "rate" and not unit.split and m.spec.load.rate_rps is not None:
            groups.setdefault((m.spec.model, unit.dtype), []).append(m)
    out = []
    for (base, _), members in groups.items():
        if len(members) < 2:
            continue
        names = tuple(m.spec.name for m in members)
        tick(f"{', '.join(names)} as adapters of {base}")
        tenants = tuple(_tenant(m) for m in members)
        unit = members[0].option.unit.with_(replicas=1)
        out.append((names, base, adapters_or_models(
            Load(tenants=tenants), unit, requests=pool.requests, attainment=pool.attainment,
            seed=pool.seed)))
    return tuple(out)


def _tenant(m: ModelPlan) -> Tenant:
    """A model's load as a tenant of a shared pool: its rate, burstiness, lengths and SLO."""
    load = m.spec.load
    return Tenant(dataclasses.replace(m.spec.slo, name=m.spec.name), load.rate_rps, load.burstiness,
                  load.bursts, load.input_len, load.output_len, load.pairs)


def _why_not(spec: PoolFile, per_model: list[list[Option]], counts: dict[str, int]) -> list:
    """Which models cannot be served within ``counts``, and why."""
    out = []
    for m, options in zip(spec.models, per_model, strict=True):
        if not any(_fits((o,), counts) for o in options):
            o = min(options, key=lambda o: (o.gpus, o.dollars_per_hour))
            out.append((m.name, f"its smallest placement, {o.design.name} on "
                                f"{', '.join(o.design.gpus_by_kind())}, needs {o.gpus} GPUs "
                                f"and the pool has {_counts_text(counts)}"))
    if not out:
        least = _smallest_budget(per_model, Pool(tuple(counts.items())))
        need = _counts_text(least or {})
        out.append(("all", f"each fits alone, but together they need {need} and the pool "
                           f"has {_counts_text(counts)}"))
    return out


def _counts_text(counts: dict[str, int]) -> str:
    return " + ".join(f"{n} x {k}" for k, n in counts.items())
