"""The two pools planned within the fleet note's GPU count.

The note names the fleet's GPUs ("8 x NVIDIA A100 80GB"); both pools share them. Three answers,
each from the audit's own figures:

- **at the trace's peak**: each pool's replicas needed in its busiest bucket (the audit's
  sizing: the peak rate with the headroom, over the per-replica capacity in use) times its GPUs
  per replica, and whether the pools together fit the count;
- **the configured ranges**: the pools' largest configurations together against the count
  (the note is refused when they exceed it, so this says how much is left);
- **the cheapest placement meeting the note's objective**: for each pool whose capacity the
  simulator gave (the note left it blank), every GPUs-per-replica the catalog allows for its
  model on the fleet's GPU (tensor parallelism within a node), each at the simulator's capacity
  within the note's latency objectives (:func:`.capacity.derive_capacity`), the replicas the
  peak needs, and the fewest GPUs; sizes are tried from the smallest up and stop once a size
  alone would take as many GPUs as the best found. A pool whose capacity the note (or a
  setting) gives, or the audit assumed, is placed at its configured size only: a measured
  figure and the simulator's would not compare. The two pools together fit the count or not.

Every answer says where its capacities came from. It is asked when a report is written (not
at every re-run of the audit's widgets).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .audit import Audit, PoolAudit
from .capacity import derive_capacity
from .needs import replicas_needed

__all__ = ["PoolPlacement", "Placement", "plan_pools", "objective_text"]


@dataclass(frozen=True)
class PoolPlacement:
    """One pool's place: ``replicas`` of ``gpus_per_replica`` GPUs at ``replica_rps`` each."""

    pool_id: str
    gpus_per_replica: int
    replica_rps: float
    replicas: int
    source: str
    basis: str

    @property
    def gpus(self) -> int:
        return self.replicas * self.gpus_per_replica

    def text(self) -> str:
        gpus = "GPU" if self.gpus_per_replica == 1 else "GPUs"
        return f"{self.pool_id} {self.replicas} x {self.gpus_per_replica} {gpus}"


@dataclass(frozen=True)
class Placement:
    """The pools against the note's GPU count (see the module docstring)."""

    gpu_count: int
    at_peak: tuple[PoolPlacement, ...]
    configured_gpus: int
    cheapest: tuple[PoolPlacement, ...]
    notes: tuple[str, ...]

    @property
    def peak_gpus(self) -> int:
        return sum(p.gpus for p in self.at_peak)

    @property
    def peak_fits(self) -> bool:
        return self.peak_gpus <= self.gpu_count

    @property
    def configured_fits(self) -> bool:
        return self.configured_gpus <= self.gpu_count

    @property
    def cheapest_gpus(self) -> int:
        return sum(p.gpus for p in self.cheapest)

    @property
    def cheapest_fits(self) -> bool:
        return self.cheapest_gpus <= self.gpu_count

    def sentence(self, objective: str) -> str:
        """The placement in one sentence, for the report."""
        n = self.gpu_count
        peak = ", ".join(p.text() for p in self.at_peak)
        best = ", ".join(p.text() for p in self.cheapest)
        return (f"At the trace's peak the pools need {self.peak_gpus} of the fleet's {n} GPUs "
                f"({peak}: {'fits' if self.peak_fits else 'does not fit'}); the note's "
                f"configured ranges reach {self.configured_gpus} "
                f"({'within' if self.configured_fits else 'beyond'} the count); the cheapest "
                f"placement meeting {objective} at the peak uses {self.cheapest_gpus} GPUs "
                f"({best}), "
                + (f"{n - self.cheapest_gpus} idle." if self.cheapest_fits else
                   f"{self.cheapest_gpus - n} more than the fleet has."))

    def as_dict(self) -> dict:
        def rows(ps):
            return [{"pool": p.pool_id, "replicas": p.replicas,
                     "gpus_per_replica": p.gpus_per_replica, "gpus": p.gpus,
                     "replica_rps": p.replica_rps, "capacity_source": p.source,
                     "capacity_basis": p.basis} for p in ps]
        return {"gpu_count": self.gpu_count,
                "at_peak": {"pools": rows(self.at_peak), "gpus": self.peak_gpus,
                            "fits": self.peak_fits},
                "configured": {"gpus": self.configured_gpus, "fits": self.configured_fits},
                "cheapest": {"pools": rows(self.cheapest), "gpus": self.cheapest_gpus,
                             "fits": self.cheapest_fits,
                             "idle_gpus": max(self.gpu_count - self.cheapest_gpus, 0)},
                "notes": list(self.notes)}


def objective_text(a: Audit) -> str:
    """The note's latency objectives as one phrase (what "meeting the objective" means)."""
    texts = []
    for p in a.pools:
        for o in p.config.objectives:
            if o.metric in ("ttft", "e2e") and o.text not in texts:
                texts.append(o.text)
    return " and ".join(texts) if texts else "the per-replica capacities in use"


def _peak_replicas(p: PoolAudit, replica_rps: float, headroom: float) -> int:
    return max(1, int(replicas_needed([p.peak_rps], replica_rps, headroom)[0]))


def _sizes(a: Audit, p: PoolAudit) -> tuple[list[int], str | None]:
    """The GPUs per replica the catalog allows for the pool's model on the fleet's GPU (the
    configured size first), or only the configured size and why."""
    from ..serving.perf.catalog import model as shape
    from ..serving.perf.model import allowed_tp
    from ..serving.studies.capacity import catalog_gpu, catalog_model

    cfg = p.config
    if a.settings.capacity != "simulate":
        return [cfg.gpus_per_replica], "the audit was told to assume capacities"
    if p.replica_rps_source in ("note", "given"):
        return [cfg.gpus_per_replica], (
            f"its capacity ({p.replica_rps:.3g} requests/s a replica) is {p.replica_rps_source} "
            "for that size, and the simulator's figures for other sizes would not compare "
            "with it (leave it blank to have every size simulated)")
    if len(cfg.models) != 1 or catalog_model(cfg.models[0]) is None:
        return [cfg.gpus_per_replica], f"the simulator's catalog has no model {cfg.models[0]!r}"
    if catalog_gpu(a.note.gpu_type) is None:
        return [cfg.gpus_per_replica], f"the simulator's catalog has no GPU {a.note.gpu_type!r}"
    if not any(o.metric in ("ttft", "e2e") for o in cfg.objectives):
        return [cfg.gpus_per_replica], "the note states no TTFT or E2E objective"
    if p.n_requests == 0:
        return [cfg.gpus_per_replica], "the traces hold no requests of the pool"
    if p.replica_rps_source != "simulated":
        return [cfg.gpus_per_replica], "the simulator gave no capacity at that size"
    tps = allowed_tp(shape(catalog_model(cfg.models[0])))
    return sorted(set(tps) | {cfg.gpus_per_replica}), None


def _holds(a: Audit, p: PoolAudit, tp: int) -> str | None:
    """Why a replica of ``tp`` GPUs cannot hold the pool's model (None: it can)."""
    from ..serving.perf.model import PerfModel
    from ..serving.studies.capacity import catalog_gpu, catalog_model

    model, gpu = catalog_model(p.config.models[0]), catalog_gpu(a.note.gpu_type)
    if model is None or gpu is None:
        return None
    try:
        PerfModel(model, gpu, tp=tp)
    except InputError as e:
        if "does not fit" in str(e):
            return f"{model} in BF16 does not fit on {tp} x {gpu}"
        return f"{model} does not split over {tp} GPUs"
    return None


def plan_pools(a: Audit) -> Placement:
    """The pools of audit ``a`` against its note's GPU count (see the module docstring)."""
    head = a.settings.headroom
    at_peak, cheapest, notes = [], [], []
    for p in a.pools:
        cfg = p.config
        at_peak.append(PoolPlacement(cfg.pool_id, cfg.gpus_per_replica, p.replica_rps,
                                     _peak_replicas(p, p.replica_rps, head),
                                     p.replica_rps_source, p.replica_rps_basis))
        sizes, why = _sizes(a, p)
        sample = p.lengths
        if why is None and sample is None:
            sizes, why = [cfg.gpus_per_replica], "the audit kept no length sample to simulate"
        if why is not None:
            notes.append(f"Pool {cfg.pool_id} is placed at its configured "
                         f"{cfg.gpus_per_replica} GPU(s) per replica only: {why}.")
        held = _holds(a, p, cfg.gpus_per_replica)
        if held:
            notes.append(f"Pool {cfg.pool_id}: in the simulator {held}, the note's GPUs per "
                         "replica; the fleet must run it otherwise (quantized weights?), so "
                         f"that size is placed at the audit's capacity ({p.replica_rps_basis}).")
        best: PoolPlacement | None = None
        for tp in sizes:
            if best is not None and tp >= best.gpus:
                break                       # one replica alone would take as many GPUs
            if tp == cfg.gpus_per_replica:
                rps, source, basis = p.replica_rps, p.replica_rps_source, p.replica_rps_basis
            else:
                if _holds(a, p, tp):
                    continue
                answer = derive_capacity(a.note, cfg, sample, gpus_per_replica=tp,
                                         profile=p.rate_profile)
                if answer.rps is None:
                    continue
                rps, source, basis = answer.rps, answer.source, answer.basis
            option = PoolPlacement(cfg.pool_id, tp, rps, _peak_replicas(p, rps, head),
                                   source, basis)
            if best is None or (option.gpus, option.gpus_per_replica) < (
                    best.gpus, best.gpus_per_replica):
                best = option
        cheapest.append(best if best is not None else at_peak[-1])
    configured = sum(p.config.max_gpus for p in a.pools)
    return Placement(a.note.gpu_count, tuple(at_peak), configured, tuple(cheapest), tuple(notes))
