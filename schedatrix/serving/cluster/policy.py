"""What a deployment does at the front door and when things break: router, admission control,
priority preemption, the fault schedule and how it recovers (all off by default)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import InputError
from ..perf.client_path import ClientPath
from .admission import Admission
from .faults import Fault, Resilience
from .routing import ROUTERS

__all__ = ["Policy", "PREEMPTION_MODES"]

#: How a preempted request gives up its KV: drop and recompute it later, or swap it to host
#: memory over PCIe and back.
PREEMPTION_MODES = ("recompute", "swap")


@dataclass(frozen=True)
class Policy:
    """router : one of ``routing.ROUTERS``
    admission : token buckets and shedding by class
    priority_preemption : a waiting request of a higher class preempts running requests of a
        lower class when it can't otherwise be admitted
    preemption : "recompute" or "swap" (to host memory over PCIe, at ``pcie_gb_s`` a GPU)
    faults, resilience : injected failures and how the fleet recovers
    seed : the router's random choices (power of two)
    client_path : the request's path outside the GPU (:class:`~..perf.client_path.ClientPath`;
        None: the engine's own times)"""

    router: str = "round-robin"
    admission: Admission = field(default_factory=Admission)
    priority_preemption: bool = False
    preemption: str = "recompute"
    pcie_gb_s: float = 25.0
    faults: tuple[Fault, ...] = ()
    resilience: Resilience = field(default_factory=Resilience)
    seed: int = 0
    client_path: ClientPath | None = None

    def __post_init__(self):
        if self.router not in ROUTERS:
            raise InputError(f"router must be one of {', '.join(ROUTERS)}, got {self.router!r}")
        if not isinstance(self.priority_preemption, bool):
            raise InputError(f"priority_preemption must be true or false, got "
                             f"{self.priority_preemption!r}")
        if self.preemption not in PREEMPTION_MODES:
            raise InputError(f"preemption must be one of {', '.join(PREEMPTION_MODES)}, got "
                             f"{self.preemption!r}")
        if not self.pcie_gb_s > 0:
            raise InputError(f"pcie_gb_s must be above 0, got {self.pcie_gb_s!r}")
        if self.client_path is not None and not isinstance(self.client_path, ClientPath):
            raise InputError(f"client_path must be a ClientPath or None, got "
                             f"{self.client_path!r}")
        object.__setattr__(self, "faults", tuple(self.faults))
        for f in self.faults:
            if not isinstance(f, Fault):
                raise InputError(f"faults must be Fault objects, got {f!r}")
