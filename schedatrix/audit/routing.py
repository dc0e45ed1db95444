"""The routing what-if: send the large pool's short requests to the small pool.

Requests of the `source` pool with fewer than `threshold_tokens` input tokens move to the
`target` pool, bucket by bucket; both pools are then sized again (:func:`~.needs.size_pool`).
The threshold must be one of the tally's routing edges, so the split is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .needs import PoolSizing, size_pool
from .note import PoolConfig

__all__ = ["RoutingWhatIf", "route"]


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


def route(edges: tuple[int, ...], threshold_tokens: int, *, source: PoolConfig,
          source_bins: np.ndarray, source_bin_tokens: np.ndarray, source_before: PoolSizing,
          target: PoolConfig, target_requests: np.ndarray, target_tokens: np.ndarray,
          target_before: PoolSizing, duration_s: np.ndarray, headroom: float,
          delay_buckets: int, replica_rps: dict[str, float]) -> RoutingWhatIf:
    """Move source requests below the threshold to target and size both again.

    `source_bins` / `source_bin_tokens`: requests and tokens per bucket (rows) and input-token
    bin (columns, split at `edges`); `target_requests` / `target_tokens`: per bucket.
    """
    if threshold_tokens not in edges:
        raise InputError(f"routing threshold = {threshold_tokens} input tokens: the tally can "
                         f"split at {', '.join(map(str, edges))} (give it before reading)")
    j = edges.index(threshold_tokens) + 1  # bins 0..j-1 hold input < threshold
    moved = source_bins[:, :j].sum(axis=1).astype(float)
    moved_tok = source_bin_tokens[:, :j].sum(axis=1)
    src_req = source_bins.sum(axis=1).astype(float)
    src_tok = source_bin_tokens.sum(axis=1)

    def size(cfg, req, tok):
        return size_pool(cfg, req, tok, duration_s, headroom, delay_buckets,
                         replica_rps.get(cfg.pool_id))

    total = src_req.sum()
    return RoutingWhatIf(
        threshold_tokens=threshold_tokens, source=source.pool_id, target=target.pool_id,
        moved_requests=int(moved.sum()), moved_share=float(moved.sum() / total) if total else 0.0,
        before={source.pool_id: source_before, target.pool_id: target_before},
        after={source.pool_id: size(source, src_req - moved, src_tok - moved_tok),
               target.pool_id: size(target, target_requests + moved,
                                    target_tokens + moved_tok)},
    )
