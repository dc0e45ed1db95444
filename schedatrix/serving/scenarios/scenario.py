"""A scenario: the load, its SLO classes, the candidate designs and how to judge them (TOML).

```toml
[load]                      # one of: rate | users (closed loop) | trace
rate = 8                    # requests/s (open loop)
burstiness = 1.0            # gamma shape of the gaps: 1 = Poisson, below 1 burstier
requests = 4000             # or: duration = 600 (seconds)
input_len = "lognormal:1000,0.8"     # N | uniform:A-B | lognormal:MEDIAN,SIGMA | exp:MEAN
output_len = "lognormal:150,0.7"
# lengths_from = "trace.csv"         # draw (input, output) pairs from a trace instead
# trace = "trace.csv"; speed = 1.0   # replay a trace (any format the audit reads)
# users = 32; think_s = 2.0          # closed loop (all users send at once, as AIPerf's
# ramp_s = 30; ramp = "random"       #  concurrency mode; or first sends spread over ramp_s
# [[load.bursts]]  start_s = 60, end_s = 120, multiplier = 3

[[classes]]                 # SLO classes: share of the traffic, priority (0 first), thresholds
name = "chat"
share = 0.8
priority = 0
ttft_s = 0.5
tpot_s = 0.05

[defaults]                  # design knobs every design starts from
model = "llama-3.1-8b"
gpu = "a100-80gb"

[[designs]]                 # the candidates
replicas = 4

[[designs]]
tp = 2
replicas = 2

[[designs]]                 # stage 3 knobs, per design (or in [defaults])
replicas = 4
router = "prefix"           # round-robin | least-work | power-of-two | session | prefix
priority_preemption = true  # a higher class preempts lower ones to get in
preemption = "recompute"    # or "swap" (KV to host memory over PCIe, pcie_gb_s = 25)
buckets = { batch = [5, 20] }   # token bucket per class: rate_rps, burst
max_queue = 64              # shed when this many wait (lower classes earlier)
shed_ttft = true            # shed when the estimated TTFT is beyond the class's SLO
kv_offload_gb = 200         # a CPU tier for the prefix cache: GB of host memory a replica

[acceptance]
runs = 3                    # repeated runs (seeds seed, seed + 1, ...), or "auto"
max_runs = 60               # runs = "auto": add runs (doubling) until decided, at most this
seed = 0
attainment = 0.95           # share of each class's requests within its SLOs, for a run to meet
run_share = 0.9             # share of runs that must meet: decided at 95% confidence
confidence = 0.95           # ... of each one-sided bound on that share
fault_attainment = 0.90     # ... with the faults (schedatrix serving accept)
max_recovery_s = 60         # every fault's recovery time (against the run without it) at most this
recovery_required = true    # without max_recovery_s: never recovering fails (default true)

[faults]                    # run, accept: worker | node | link | drain (see faults.py)
schedule = ["worker:0@120+30", "link:1@200+30:4", "drain:2@300+20"]

[resilience]
health_check_s = 5          # the router notices a crash after this long
retry_budget = 3
backoff_s = 0.5             # a retry waits backoff_s x 2^(attempt - 1)

[restart]                   # what a restarted replica takes before it serves (restart.py)
weights_from = "disk"       # page-cache (5 GB/s a GPU) | disk (2) | network (0.5)
weight_load_gb_s = 2        # optional: this rate instead of weights_from's
engine_start_s = 24         # compile_s = 7.5, graph_capture_s = 17, warmup_s = 9.6 by default

[compare]
models = ["llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b"]   # optional: how the answer moves
baseline = true             # add a one-replica one-machine design when none is given
```
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import InputError
from ..cluster.deployment import DESIGN_KNOBS, Design, build, design_from_dict
from ..cluster.faults import Resilience, check_faults, parse_fault
from ..cluster.restart import RESTART_KEYS, RestartCosts
from ..intake.footprint import check_fits
from ..intake.toml_tables import file_path, read_toml, table, tables, unknown
from ..load.arrivals import Burst
from ..load.lengths import PairedLengths
from ..load.replay import replay
from ..load.requests import RAMPS, ClosedLoop, Requests, SLOClass
from ..load.workload import Load, Tenant, generate
from ..numbers import check_int, check_real
from ..perf.catalog import MODELS
from ..sim.simulate import IMPLEMENTATIONS
from ..studies.accept import FaultCriteria
from ..studies.acceptance import Criteria
from ..studies.run_share import MAX_RUNS, check_runs

__all__ = ["Scenario", "load_scenario", "scenario_from_dict", "DEMO_LOAD"]

#: The load a bare ``schedatrix serving run`` serves: vLLM's random dataset's default lengths.
DEMO_LOAD = {"rate": 4.0, "requests": 2000, "input_len": "1024", "output_len": "128"}

_LOAD_KEYS = {"rate", "burstiness", "requests", "duration", "input_len", "output_len",
              "lengths_from", "trace", "speed", "users", "think_s", "ramp_s", "ramp", "bursts",
              "max_input_tokens", "max_output_tokens"}
_CLASS_KEYS = {"name", "share", "priority", "ttft_s", "tpot_s", "rate", "burstiness",
               "input_len", "output_len"}
#: The load model's messages name command-line flags; in a file the keys are these.
_FLAG_KEYS = {"--input-len": "input_len", "--output-len": "output_len", "--rate": "rate",
              "--burstiness": "burstiness", "--requests": "requests", "--duration": "duration",
              "--trace": "trace", "--speed": "speed"}


def source_is_file(where: str) -> bool:
    return bool(where)


_TOP_KEYS = {"load", "classes", "defaults", "designs", "acceptance", "compare", "simulator",
             "faults", "resilience", "restart"}


@dataclass(frozen=True)
class Scenario:
    """Everything a run or a comparison needs (see the module docstring for the file)."""

    load: Load
    requests: int | None
    duration_s: float | None
    designs: tuple[Design, ...]
    runs: int | str = 1
    seed: int = 0
    criteria: Criteria = field(default_factory=Criteria)
    models: tuple[str, ...] = ()
    baseline: bool = True
    implementation: str = "fast"
    source: str = ""
    faults: tuple = ()
    resilience: Resilience = field(default_factory=Resilience)
    fault_criteria: FaultCriteria = field(default_factory=FaultCriteria)
    max_runs: int = MAX_RUNS

    @property
    def planned_runs(self) -> int:
        """Runs per design: ``runs``, at most ``max_runs`` with "auto", 1 for a replay."""
        if self.load.trace is not None:
            return 1
        return self.max_runs if self.runs == "auto" else self.runs

    def make_requests(self) -> Callable[[int], Requests]:
        """seed -> the load's requests (a replayed trace is read once)."""
        if self.load.trace is not None:
            cache: dict = {}

            def replayed(seed: int) -> Requests:
                if "r" not in cache:
                    cache["r"] = generate(self.load, seed, self.requests, self.duration_s)
                return cache["r"]
            return replayed
        return lambda seed: generate(self.load, seed, self.requests, self.duration_s)


def _where(path) -> str:
    return f"{path}: " if path else ""


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; paths in it are relative to the file."""
    path = Path(path)
    return scenario_from_dict(read_toml(path, "scenario"), base=path.parent, source=str(path))


def scenario_from_dict(data: dict, base: Path | None = None, source: str = "") -> Scenario:
    """A Scenario from parsed TOML (or the command line's dict of the same shape)."""
    where = _where(source)
    unknown(data, _TOP_KEYS, where)
    load_t = table(data, "load", where)
    unknown(load_t, _LOAD_KEYS, f"{where}[load] ")
    classes, tenants = _classes(tables(data, "classes", where), where)
    load, requests, duration = _load(load_t, classes, tenants, base, where)
    defaults = table(data, "defaults", where)
    unknown(defaults, DESIGN_KNOBS, f"{where}[defaults] ")
    design_tables = tables(data, "designs", where) or [{}]
    designs = tuple(design_from_dict({**defaults, **d}, f"{where}design {k + 1}")
                    for k, d in enumerate(design_tables))
    names = [d.name for d in designs]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"{where}two designs share the name {dup[0]!r}; give each a name")
    acc = table(data, "acceptance", where)
    fault_keys = {"max_recovery_s", "fault_attainment", "recovery_window_s",
                  "recovery_tolerance", "recovery_hold", "recovery_required"}
    unknown(acc, {"runs", "max_runs", "seed", "attainment", "spare", "kv_spare", "run_share",
                  "confidence"} | fault_keys,
             f"{where}[acceptance] ")
    try:
        criteria = Criteria(**{k: acc[k] for k in ("attainment", "spare", "kv_spare",
                                                   "run_share", "confidence") if k in acc})
        runs = check_runs(acc.get("runs", 1))
        max_runs = check_int("max_runs", acc.get("max_runs", MAX_RUNS), 1, 10_000)
        seed = check_int("seed", acc.get("seed", 0), 0, 2**63 - 1)
        fault_criteria = FaultCriteria(
            acc.get("max_recovery_s"), acc.get("fault_attainment"),
            acc.get("recovery_window_s", 10.0), acc.get("recovery_tolerance", 0.25),
            check_int("recovery_hold", acc.get("recovery_hold", 3), 1, 1000),
            acc.get("recovery_required", True))
    except InputError as e:
        raise InputError(f"{where}[acceptance] {e}") from None
    faults_t = table(data, "faults", where)
    unknown(faults_t, {"schedule"}, f"{where}[faults] ")
    schedule = faults_t.get("schedule", [])
    if not isinstance(schedule, list) or not all(isinstance(x, str) for x in schedule):
        raise InputError(f"{where}[faults] schedule must be a list of strings like "
                         f"\"worker:0@60+30\"")
    faults = tuple(parse_fault(x) for x in schedule)
    res_t = table(data, "resilience", where)
    unknown(res_t, {"health_check_s", "retry_budget", "backoff_s"}, f"{where}[resilience] ")
    restart_t = table(data, "restart", where)
    unknown(restart_t, RESTART_KEYS, f"{where}[restart] ")
    try:
        restart = RestartCosts(**restart_t)
    except InputError as e:
        raise InputError(f"{where}[restart] {e}") from None
    try:
        resilience = Resilience(**res_t, restart=restart)
    except InputError as e:
        raise InputError(f"{where}[resilience] {e}") from None
    for d in designs:
        try:
            check_faults(faults, build(d).layout)
        except InputError as e:
            raise InputError(f"{where}design {d.name!r}: {e}") from None
    cmp_t = table(data, "compare", where)
    unknown(cmp_t, {"models", "baseline"}, f"{where}[compare] ")
    models = cmp_t.get("models", [])
    if not isinstance(models, list) or any(m not in MODELS for m in models):
        raise InputError(f"{where}[compare] models must be a list of "
                         f"{', '.join(MODELS)}; got {models!r}")
    baseline = cmp_t.get("baseline", True)
    if not isinstance(baseline, bool):
        raise InputError(f"{where}[compare] baseline must be true or false, got {baseline!r}")
    sim = table(data, "simulator", where)
    unknown(sim, {"implementation"}, f"{where}[simulator] ")
    impl = sim.get("implementation", "fast")
    if impl not in IMPLEMENTATIONS:
        raise InputError(f"{where}[simulator] implementation must be one of "
                         f"{', '.join(IMPLEMENTATIONS)}, got {impl!r}")
    return Scenario(load, requests, duration, designs, runs, seed, criteria, tuple(models),
                    baseline, impl, source, faults, resilience, fault_criteria, max_runs)


def _classes(tables: list[dict], where: str):
    classes, tenants = [], []
    for k, t in enumerate(tables):
        w = f"{where}class {k + 1} "
        unknown(t, _CLASS_KEYS, w)
        try:
            slo = SLOClass(
                name=str(t.get("name", f"class{k + 1}")),
                share=check_real("share", t.get("share", 1.0 if "rate" not in t else 0.0),
                                 0.0, 1.0),
                priority=check_int("priority", t.get("priority", k), 0, 1000),
                ttft_s=None if "ttft_s" not in t else check_real("ttft_s", t["ttft_s"], 0.0,
                                                                 1e9, low_open=True),
                tpot_s=None if "tpot_s" not in t else check_real("tpot_s", t["tpot_s"], 0.0,
                                                                 1e9, low_open=True))
            if "rate" in t:
                tenants.append(Tenant(slo, t["rate"], t.get("burstiness", 1.0),
                                      input_len=t.get("input_len"),
                                      output_len=t.get("output_len")))
            else:
                if "burstiness" in t or "input_len" in t or "output_len" in t:
                    raise InputError("burstiness and lengths of its own need a 'rate' (a "
                                     "tenant with its own arrivals)")
                classes.append(slo)
        except InputError as e:
            raise InputError(f"{w}({t.get('name', k + 1)!r}): {e}") from None
    names = [c.name for c in classes] + [t.slo.name for t in tenants]
    if len(set(names)) != len(names):
        raise InputError(f"{where}two classes share a name: {names}")
    return classes, tenants


def _load(t: dict, classes, tenants, base, where):
    if not t and not tenants:
        t = dict(DEMO_LOAD)
    requests = t.get("requests")
    duration = t.get("duration")
    try:
        if requests is not None:
            requests = check_int("requests", requests, 1, 100_000_000)
            check_fits(requests, "requests")
        if duration is not None:
            duration = check_real("duration", duration, 0.0, 1e9, low_open=True)
        kw: dict = {}
        if "rate" in t:
            kw["rate_rps"] = t["rate"]
        if "burstiness" in t:
            kw["burstiness"] = t["burstiness"]
        if "bursts" in t:
            bursts = t["bursts"]
            if not isinstance(bursts, list) or not all(isinstance(b, dict) for b in bursts):
                raise InputError("bursts must be a list of tables {start_s, end_s, multiplier}")
            for b in bursts:
                unknown(b, {"start_s", "end_s", "multiplier"}, "burst ")
            kw["bursts"] = [Burst(b.get("start_s"), b.get("end_s"), b.get("multiplier"))
                            for b in bursts]
        for key in ("input_len", "output_len", "max_input_tokens", "max_output_tokens"):
            if key in t:
                kw[key] = t[key]
        if "lengths_from" in t:
            pairs = replay(file_path(t["lengths_from"], base, "lengths_from", where))
            kw["pairs"] = PairedLengths.from_requests(pairs)
        if "users" in t:
            ramp = t.get("ramp", "even")
            if ramp not in RAMPS:
                raise InputError(f"ramp: {ramp!r}; allowed: {', '.join(RAMPS)}")
            kw["closed_loop"] = ClosedLoop(check_int("users", t["users"], 1, 10_000_000),
                                           check_real("think_s", t.get("think_s", 0.0), 0.0,
                                                      1e9),
                                           ramp_s=check_real("ramp_s", t.get("ramp_s", 0.0),
                                                             0.0, 1e9),
                                           ramp=ramp)
        else:
            for key in ("think_s", "ramp_s", "ramp"):
                if key in t:
                    raise InputError(f"{key} needs users (a closed loop)")
        if "trace" in t:
            kw["trace"] = file_path(t["trace"], base, "trace", where)
            if "speed" in t:
                kw["speed"] = t["speed"]
        elif "speed" in t:
            raise InputError("speed needs a trace to replay")
        if classes:
            kw["classes"] = classes
        if tenants:
            kw["tenants"] = tenants
        if not any(k in kw for k in ("rate_rps", "closed_loop", "trace", "tenants")):
            raise InputError("give the arrivals: rate (requests/s), users (a closed loop) or "
                             "trace (a file to replay)")
        if "trace" not in kw and requests is None and duration is None:
            raise InputError("give requests (a count) or duration (seconds)")
        load = Load(**kw)
    except InputError as e:
        text = str(e)
        if source_is_file(where):   # the load model names flags; a file has keys
            for flag, key in _FLAG_KEYS.items():
                text = text.replace(flag, key)
        raise InputError(f"{where}[load] {text}" if where else text) from None
    if duration is not None and not math.isfinite(duration):
        raise InputError(f"{where}[load] duration must be finite")
    if requests is None and duration is not None and load.trace is None and load.rate_rps:
        try:   # the mean count of an open-loop load given by its duration
            check_fits(min(load.rate_rps * duration, 1e15), "rate x duration (requests)")
        except InputError as e:
            raise InputError(f"{where}[load] {e}" if where else str(e)) from None
    return load, requests, duration
