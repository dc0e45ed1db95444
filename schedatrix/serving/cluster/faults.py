"""Injected failures: a fault schedule, and how a run recovers (health checks, retries).

Faults, as the command line writes them (times in seconds from the run's start):

- ``worker:REPLICA@T+DOWN``: replica REPLICA's worker crashes at T; its restart begins DOWN
  seconds later, and it serves again once the restart is done (engine start, its weights
  read back, compile, CUDA-graph capture, warm-up: :class:`~.restart.RestartCosts`);
- ``node:NODE@T+DOWN``: node NODE fails: every replica with a GPU on it crashes (a TP or PP
  group spanning nodes too);
- ``link:NODE@T+DOWN[:SLOWDOWN]``: node NODE's link to the other nodes is down (no SLOWDOWN)
  or SLOWDOWN times slower for DOWN seconds: pipeline stages sending across it and KV moves
  of a prefill/decode split crossing it wait for it (down) or slow down;
- ``drain:REPLICA@T[+DOWN]``: from T the router sends REPLICA nothing new; it finishes what it
  holds, then leaves (for good, or restarts: back DOWN seconds plus its restart later). A
  rolling restart is a sequence of drains.

Recovery (:class:`Resilience`): the router notices a crashed replica ``health_check_s`` after
the crash (requests it sends there meanwhile are lost too); every request lost in a crash is
retried at the front door (keeping its arrival time and the tokens already delivered) once the
crash is noticed, after a backoff of ``backoff_s x 2^(attempt - 1)``; a request lost more than
``retry_budget`` times fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...errors import InputError
from ..numbers import check_int, check_real
from .layout import Layout
from .restart import RestartCosts

__all__ = ["Fault", "Resilience", "parse_fault", "check_faults", "KINDS"]

KINDS = ("worker", "node", "link", "drain")
_SPEC = re.compile(r"^(worker|node|link|drain):(\d+)@([0-9.eE+]+?)(?:\+([0-9.eE+]+?))?"
                   r"(?::([0-9.eE+]+))?$")


@dataclass(frozen=True)
class Fault:
    """One fault: ``kind`` on ``target`` (a replica, or a node for node and link faults) at
    ``at_s`` for ``down_s`` seconds (None: a drain for good); ``slowdown`` for a link (None:
    down)."""

    kind: str
    target: int
    at_s: float
    down_s: float | None = None
    slowdown: float | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise InputError(f"fault kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        check_int("fault target", self.target, 0, 10**6)
        check_real("fault time", self.at_s, 0.0, 1e12)
        if self.down_s is None and self.kind != "drain":
            raise InputError(f"a {self.kind} fault needs +DOWN (seconds), e.g. "
                             f"{self.kind}:{self.target}@{self.at_s:g}+30")
        if self.down_s is not None:
            check_real("fault duration", self.down_s, 0.0, 1e12, low_open=self.kind != "drain")
        if self.slowdown is not None:
            if self.kind != "link":
                raise InputError(f"only a link fault takes a slowdown, got {self.text()!r}")
            check_real("link slowdown", self.slowdown, 1.0, 1e9)

    def text(self) -> str:
        s = f"{self.kind}:{self.target}@{self.at_s:g}"
        if self.down_s is not None:
            s += f"+{self.down_s:g}"
        if self.slowdown is not None:
            s += f":{self.slowdown:g}"
        return s


def parse_fault(text: str) -> Fault:
    """A fault from its command-line form (see the module docstring)."""
    m = _SPEC.match(text.strip())
    if not m:
        raise InputError(f"--fault {text!r}: allowed forms worker:REPLICA@T+DOWN, "
                         f"node:NODE@T+DOWN, link:NODE@T+DOWN[:SLOWDOWN], drain:REPLICA@T[+DOWN] "
                         f"(seconds)")
    kind, target, at, down, slow = m.groups()
    try:
        numbers = (float(at), None if down is None else float(down),
                   None if slow is None else float(slow))
    except ValueError:
        raise InputError(f"--fault {text!r}: times must be numbers of seconds") from None
    try:
        return Fault(kind, int(target), *numbers)
    except InputError as e:
        raise InputError(f"--fault {text!r}: {e}") from None


@dataclass(frozen=True)
class Resilience:
    """How the fleet notices and recovers from a crash (seconds), and what a restart costs."""

    health_check_s: float = 5.0
    retry_budget: int = 3
    backoff_s: float = 0.5
    restart: RestartCosts = field(default_factory=RestartCosts)

    def __post_init__(self):
        check_real("health_check_s", self.health_check_s, 0.0, 1e6)
        check_int("retry_budget", self.retry_budget, 0, 1000)
        check_real("backoff_s", self.backoff_s, 0.0, 1e6)
        if not isinstance(self.restart, RestartCosts):
            raise InputError(f"restart must be a RestartCosts, got {self.restart!r}")


def check_faults(faults, layout: Layout) -> tuple[Fault, ...]:
    """Faults must name replicas and nodes that exist, and one replica's faults (its own and
    its nodes') must not overlap."""
    faults = tuple(faults)
    nodes = sorted({n for r in layout.replicas for n in r.nodes})
    spans: dict[int, list[tuple[float, float, str]]] = {}
    for f in faults:
        if f.kind in ("worker", "drain"):
            if f.target >= len(layout.replicas):
                raise InputError(f"fault {f.text()}: there is no replica {f.target} (replicas "
                                 f"0 to {len(layout.replicas) - 1})")
            hit = [f.target]
        else:
            if f.target not in nodes:
                raise InputError(f"fault {f.text()}: there is no node {f.target} (nodes "
                                 f"{nodes[0]} to {nodes[-1]})")
            hit = [r for r, plan in enumerate(layout.replicas) if f.target in plan.nodes]
        if f.kind == "link":
            continue
        end = f.at_s + (f.down_s if f.down_s is not None else float("inf"))
        for r in hit:
            for a, b, other in spans.get(r, []):
                if f.at_s < b and a < end:
                    raise InputError(f"faults {other} and {f.text()} overlap on replica {r}")
            spans.setdefault(r, []).append((f.at_s, end, f.text()))
    return faults
