"""The load model (stage 1): when requests arrive, how long they are, real traces replayed and
fitted, shared-prefix loads; everything lands in one record, :class:`Requests`.

Modules: ``requests`` (the record, SLO classes), ``arrivals``, ``lengths``, ``workload`` (the
``Load`` of knobs and ``generate``), ``replay``, ``fit``, ``prefixes``.
"""

from .arrivals import Burst
from .lengths import PairedLengths
from .requests import ClosedLoop, Requests, SLOClass
from .workload import Load, Tenant, generate

__all__ = ["Burst", "ClosedLoop", "Load", "PairedLengths", "Requests", "SLOClass", "Tenant",
           "generate"]
