"""Tenants as LoRA adapters of one base model, or each on replicas of its own: which is cheaper.

Each tenant is a :class:`~..load.workload.Tenant` of one load (its own rate, lengths and SLO
class) whose fine-tune of the base model is either an adapter, served beside the others on a
shared pool of replicas of the base model (``lora_by_class``: tenant c's requests use adapter
c), or merged into the weights and served alone on replicas of its own (no LoRA cost, no
sharing). Both are sized the same way: the fewest replicas of the design at which every
tenant's share of requests within its SLOs reaches ``attainment`` on the same seeded requests
(the tenants' streams merged for the shared pool, each alone for its own replicas). The
answer is the cheaper in dollars an hour (then fewer GPUs; ``either`` when both tie). The
shared pool wins when the tenants' loads are small beside a replica (separate replicas sit
mostly idle) and loses when the slots make requests wait or the adapters' kernels slow every
step; whole replicas make the answer jump with the rates (tests/test_serving_lora.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design
from ..figures.metrics import met_slo
from ..load.workload import Load, generate
from ..sim.simulate import simulate

__all__ = ["Sizing", "AdaptersOrModels", "adapters_or_models", "MAX_REPLICAS"]

#: The most replicas a placement is grown to before it is called out of reach.
MAX_REPLICAS = 64


@dataclass(frozen=True)
class Sizing:
    """A placement: ``replicas`` replicas of ``design`` (0: none reached the attainment within
    ``MAX_REPLICAS``), its GPUs and dollars an hour, and each tenant's attainment there."""

    design: Design
    replicas: int
    gpus: int
    dollars_per_hour: float
    attainment: tuple[float, ...]


@dataclass(frozen=True)
class AdaptersOrModels:
    """The shared pool of adapters, each tenant's own replicas, and which is cheaper."""

    shared: Sizing
    separate: tuple[Sizing, ...]

    @property
    def separate_gpus(self) -> int:
        return sum(s.gpus for s in self.separate)

    @property
    def separate_dollars_per_hour(self) -> float:
        return sum(s.dollars_per_hour for s in self.separate)

    @property
    def cheaper(self) -> str:
        """``adapters`` or ``models``; ``either`` when they cost the same on as many GPUs,
        ``none`` when neither reaches the attainment."""
        shared_ok = self.shared.replicas > 0
        separate_ok = all(s.replicas > 0 for s in self.separate)
        if not (shared_ok or separate_ok):
            return "none"
        if shared_ok != separate_ok:
            return "adapters" if shared_ok else "models"
        shared = (round(self.shared.dollars_per_hour, 9), self.shared.gpus)
        separate = (round(self.separate_dollars_per_hour, 9), self.separate_gpus)
        if shared == separate:
            return "either"
        return "adapters" if shared < separate else "models"


def _attainment(run, classes: int) -> tuple[float, ...]:
    ok = met_slo(run)
    cid = run.requests.class_id
    return tuple(float(np.mean(ok[cid == c])) if np.any(cid == c) else 1.0
                 for c in range(classes))


def _size(design: Design, requests, wanted: tuple[int, ...], attainment: float) -> Sizing:
    """The fewest replicas of ``design`` at which the classes ``wanted`` all reach
    ``attainment`` on ``requests``: doubled from one until they do (at most ``MAX_REPLICAS``),
    then bisected between the last count that missed and the first that met it."""
    def meets(replicas: int):
        d = design.with_(replicas=replicas)
        every = _attainment(simulate(requests, d), len(requests.classes))
        shares = tuple(every[c] for c in wanted)
        return min(shares) >= attainment, d, shares

    low, high = 0, 1
    ok, d, shares = meets(high)
    found = (d, shares) if ok else None
    while not ok:
        if high == MAX_REPLICAS:
            return Sizing(design, 0, 0, 0.0, shares)
        low, high = high, min(2 * high, MAX_REPLICAS)
        ok, d, shares = meets(high)
        if ok:
            found = (d, shares)
    while high - low > 1:
        mid = (low + high) // 2
        ok, d, shares = meets(mid)
        if ok:
            high, found = mid, (d, shares)
        else:
            low = mid
    d, shares = found
    return Sizing(d, d.replicas, d.gpus, d.dollars_per_hour, shares)


def adapters_or_models(load: Load, design: Design, max_loras: int | None = None,
                       lora_rank: int = 16, requests: int = 1000, attainment: float = 0.9,
                       seed: int = 0) -> AdaptersOrModels:
    """Size ``load``'s tenants both ways on ``design`` (the base model, no adapters): the
    shared pool serves one adapter of ``lora_rank`` a tenant in ``max_loras`` slots (None: one
    a tenant); ``requests`` of the merged load (each tenant alone: its own of them), the same
    ``seed``."""
    tenants = load.tenants
    if not tenants or load.rate_rps is not None or load.trace is not None \
            or load.closed_loop is not None:
        raise InputError("adapters_or_models: the load must be tenants only (each its own "
                         "rate and SLO class), no shared stream, trace or closed loop")
    if design.lora_adapters:
        raise InputError(f"adapters_or_models: design {design.name!r} serves adapters "
                         "already; give the base model's design (lora_adapters 0)")
    if not 0 < attainment <= 1 or isinstance(attainment, bool):
        raise InputError(f"attainment: {attainment!r}; must be a share above 0 and at most 1")
    classes = len(load.all_classes)
    base = classes - len(tenants)
    merged = generate(load, seed, requests)
    slots = len(tenants) if max_loras is None else max_loras
    shared_design = design.with_(lora_adapters=classes, lora_by_class=True, lora_rank=lora_rank,
                                 max_loras=min(slots, classes), max_cpu_loras=classes)
    wanted = tuple(range(base, classes))
    shared = _size(shared_design, merged, wanted, attainment)
    separate = []
    for k, cid in enumerate(wanted):
        own = replace(load, tenants=(tenants[k],))
        mine = generate(own, seed, max(1, int(np.sum(merged.class_id == cid))))
        separate.append(_size(design, mine, (len(own.all_classes) - 1,), attainment))
    return AdaptersOrModels(shared, tuple(separate))
