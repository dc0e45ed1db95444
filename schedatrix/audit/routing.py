"""The routing what-if: send the large pool's short requests to the small pool.

Requests of the `source` pool with fewer than `threshold_tokens` input tokens move to the
`target` pool, bucket by bucket; both pools are then sized again (:func:`~.needs.size_pool`).
The tally counts requests in input-length bins whose edges include the threshold, so the
split is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .needs import PoolSizing, size_pool
from .note import PoolConfig

__all__ = ["RoutingWhatIf", "route", "DEFAULT_ROUTE_BELOW"]

#: The routing what-if's default threshold, in input tokens.
DEFAULT_ROUTE_BELOW = 1000


@dataclass(frozen=True)
class RoutingWhatIf:
    """Both pools' sizing before and after moving short requests from source to target."""

    threshold_tokens: int
    source: str
    target: str
    moved_requests: int
    moved_share: float
    before: dict[str, PoolSizing]
    after: dict[str, PoolSizing]


def route(threshold_tokens: int, *, source: PoolConfig, source_requests: np.ndarray,
          source_tokens: np.ndarray, moved_requests: np.ndarray, moved_tokens: np.ndarray,
          source_before: PoolSizing, target: PoolConfig, target_requests: np.ndarray,
          target_tokens: np.ndarray, target_before: PoolSizing, duration_s: np.ndarray,
          headroom: float, delay_buckets: int, replica_rps: dict[str, float],
          delayed: np.ndarray | None = None) -> RoutingWhatIf:
    """Move source requests below the threshold to target and size both again.

    Arrays are per bucket (or piece, see :mod:`.window`): the source's requests and tokens,
    and those of its requests below the threshold (`moved_*`); the target's requests and
    tokens. `delayed` is the window's autoscaler lookup (:func:`~.needs.size_pool`).
    """

    def size(cfg, req, tok):
        return size_pool(cfg, req, tok, duration_s, headroom, delay_buckets,
                         replica_rps.get(cfg.pool_id), delayed)

    total = source_requests.sum()
    moved = moved_requests.sum()
    return RoutingWhatIf(
        threshold_tokens=threshold_tokens, source=source.pool_id, target=target.pool_id,
        moved_requests=int(moved), moved_share=float(moved / total) if total else 0.0,
        before={source.pool_id: source_before, target.pool_id: target_before},
        after={source.pool_id: size(source, source_requests - moved_requests,
                                    source_tokens - moved_tokens),
               target.pool_id: size(target, target_requests + moved_requests,
                                    target_tokens + moved_tokens)},
    )
