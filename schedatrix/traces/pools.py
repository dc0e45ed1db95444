"""What a trace reader needs to know of the fleet to give each request its pool: a protocol.

The audit's fleet note (:class:`schedatrix.audit.note.FleetNote`) is one; the serving wing
passes none and reads every request into pool 0. Keeping this a protocol lets the readers sit
below both wings without importing either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["Pool", "Pools"]


class Pool(Protocol):
    """One pool: its id is what messages name."""

    pool_id: str


class Pools(Protocol):
    """The pools a trace's rows may name, in order (a row's pool is its index here)."""

    pools: Sequence[Pool]

    def pool(self, name: str) -> Pool:
        """The pool whose id, model or alias is ``name``; KeyError if none."""
        ...
