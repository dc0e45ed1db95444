"""Admission control at the front door, by SLO class: token buckets and shedding.

- **token buckets**: a class (a tenant) may have ``(rate_rps, burst)``: its bucket holds up to
  ``burst`` requests and refills at ``rate_rps``; a request finding it empty is rejected
  ("over its tenant's rate");
- **shedding by queue length**: when the replica chosen for a request already has
  ``max_queue`` requests waiting, a request of the most important class is rejected; a class
  of rank r (0 = most important) is shed earlier, at ``max_queue x shed_share^r``: the lowest
  class goes first;
- **shedding by estimated TTFT**: a request whose estimated TTFT (the prompt tokens queued
  ahead of it on that replica plus its own, at the replica's full-chunk prefill rate) is above
  its class's TTFT threshold x ``shed_share^r`` is rejected, lowest class first (a class with
  no TTFT threshold is never shed by this rule).

Every rejected request carries its reason, counted per class.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import InputError
from ..load.requests import SLOClass
from ..numbers import check_int, check_real

__all__ = ["Admission", "FrontDoor", "OVER_RATE", "QUEUE_FULL", "TTFT_TOO_LONG"]

OVER_RATE = "over its tenant's rate (token bucket)"
QUEUE_FULL = "shed: queue too long for its class"
TTFT_TOO_LONG = "shed: estimated TTFT beyond its class's SLO"


@dataclass(frozen=True)
class Admission:
    """The front door's rules (all off by default). ``buckets``: class name -> (rate_rps,
    burst); ``max_queue``: waiting requests at which the top class is shed; ``shed_ttft``:
    shed by estimated TTFT; ``shed_share``: how much earlier each lower class is shed."""

    buckets: dict = field(default_factory=dict)
    max_queue: int | None = None
    shed_ttft: bool = False
    shed_share: float = 0.5

    def __post_init__(self):
        buckets = {}
        for name, value in dict(self.buckets).items():
            if not isinstance(value, list | tuple) or len(value) != 2:
                raise InputError(f"admission bucket {name!r}: give (rate_rps, burst), got "
                                 f"{value!r}")
            rate = check_real(f"bucket {name!r} rate_rps", value[0], 0.0, 1e9, low_open=True)
            burst = check_real(f"bucket {name!r} burst", value[1], 1.0, 1e12)
            buckets[str(name)] = (rate, burst)
        object.__setattr__(self, "buckets", buckets)
        if self.max_queue is not None:
            object.__setattr__(self, "max_queue", check_int("max_queue", self.max_queue, 1,
                                                            10**9))
        if not isinstance(self.shed_ttft, bool):
            raise InputError(f"shed_ttft must be true or false, got {self.shed_ttft!r}")
        check_real("shed_share", self.shed_share, 0.0, 1.0, low_open=True)

    @property
    def active(self) -> bool:
        return bool(self.buckets) or self.max_queue is not None or self.shed_ttft


class FrontDoor:
    """One run's admission state (the buckets' levels)."""

    def __init__(self, admission: Admission, classes: tuple[SLOClass, ...],
                 prefill_tok_s: float):
        self.rules = admission
        names = [c.name for c in classes]
        unknown = sorted(set(admission.buckets) - set(names))
        if unknown:
            raise InputError(f"admission buckets name unknown class {unknown[0]!r}; the "
                             f"load's classes: {', '.join(names)}")
        self.bucket = [admission.buckets.get(c.name) for c in classes]
        self.level = [b[1] if b else 0.0 for b in self.bucket]
        self.last = [0.0] * len(classes)
        prios = sorted({c.priority for c in classes})
        self.rank = [prios.index(c.priority) for c in classes]
        self.ttft = [c.ttft_s for c in classes]
        self.prefill_tok_s = prefill_tok_s

    def at_door(self, c: int, t: float) -> str | None:
        """The class's token bucket, before routing."""
        b = self.bucket[c]
        if b is None:
            return None
        rate, burst = b
        self.level[c] = min(burst, self.level[c] + (t - self.last[c]) * rate)
        self.last[c] = t
        if self.level[c] < 1.0:
            return OVER_RATE
        self.level[c] -= 1.0
        return None

    def at_replica(self, c: int, waiting: int, queued_prefill_tokens: int,
                   prompt_tokens: int) -> str | None:
        """Shedding, once the replica is chosen."""
        rules = self.rules
        scale = rules.shed_share ** self.rank[c]
        if rules.max_queue is not None and waiting >= rules.max_queue * scale:
            return QUEUE_FULL
        if rules.shed_ttft and self.ttft[c] is not None:
            estimate = (queued_prefill_tokens + prompt_tokens) / self.prefill_tok_s
            if estimate > self.ttft[c] * scale:
                return TTFT_TOO_LONG
        return None
