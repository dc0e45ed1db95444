"""The three checks that judge a month, and its signature."""

from __future__ import annotations

import numpy as np

from .constants import CONVERGENCE_FLOOR, UNMET_CAP, WRONG_EVICTION_CAP

__all__ = ["CHECK_NAMES", "REPAIR_KNOBS", "unmet_share", "wrong_share", "check_capacity",
           "check_convergence", "check_evictions", "signature"]


#: The signature's digits, in order.
CHECK_NAMES = ("capacity", "convergence", "evictions")

#: For each check, the knobs (Plan field names) that repair it when it fails.
REPAIR_KNOBS: dict[str, frozenset[str]] = {
    "capacity": frozenset({"card_class", "cards"}),
    "convergence": frozenset({"shape", "cards"}),
    "evictions": frozenset({"window", "evict_share"}),
}


def unmet_share(delivered, demand_tok_s):
    """Share of average demand the pool did not serve."""
    return 1 - delivered / demand_tok_s


def wrong_share(wrong, evicted):
    """Wrong evictions as a share of evictions (0 when nobody was evicted)."""
    wrong = np.asarray(wrong, dtype=float)
    evicted = np.asarray(evicted, dtype=float)
    share = np.divide(wrong, evicted, out=np.zeros_like(wrong), where=evicted > 0)
    return float(share) if share.ndim == 0 else share


def check_capacity(unmet):
    """Capacity passes when unmet demand is at most 5%."""
    return unmet <= UNMET_CAP


def check_convergence(convergence):
    """Convergence passes when the ideal bill is at least 80% of the real one."""
    return convergence >= CONVERGENCE_FLOOR


def check_evictions(share_wrong):
    """The eviction check passes when at most 20% of evictions were wrong."""
    return share_wrong <= WRONG_EVICTION_CAP


def signature(capacity: bool, convergence: bool, evictions: bool) -> str:
    """Three digits, capacity / convergence / evictions, 1 = passes: '111' is a clean month."""
    return "".join("1" if ok else "0" for ok in (capacity, convergence, evictions))
