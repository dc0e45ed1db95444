"""Where a deployment's schedulers sit: replicas, their roles, pipeline engines and nodes.

The simulators take a :class:`Layout`: plain data, made by
:mod:`schedatrix.serving.cluster.deployment` from a design (or by hand in tests).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ReplicaPlan", "Layout", "ROLES"]

#: A replica serves whole requests ("mixed"), or only prompts ("prefill") or only the rest of
#: the answer ("decode") in a prefill/decode split.
ROLES = ("mixed", "prefill", "decode")


@dataclass(frozen=True)
class ReplicaPlan:
    """One replica: its role, its pipeline engines (one scheduler per pipeline stage, as
    vLLM's virtual engines), the KV blocks each engine holds, and the nodes its GPUs are on."""

    role: str
    engines: int
    kv_blocks: int
    nodes: tuple[int, ...] = (0,)


@dataclass(frozen=True)
class Layout:
    replicas: tuple[ReplicaPlan, ...]

    def of_role(self, role: str) -> list[int]:
        return [i for i, r in enumerate(self.replicas) if r.role == role]

    @property
    def split(self) -> bool:
        """True for a prefill/decode split."""
        return any(r.role == "prefill" for r in self.replicas)

    def same_node(self, a: int, b: int) -> bool:
        """Whether replicas a and b share a node (their KV moves over NVLink, not the network)."""
        return bool(set(self.replicas[a].nodes) & set(self.replicas[b].nodes)) and \
            len(self.replicas[a].nodes) == 1 and self.replicas[a].nodes == self.replicas[b].nodes
