"""The month's bill: rent of the cards kept warm, a churn fee per evicted card, nothing else.

Each function works on plain numbers and on numpy arrays alike (one month or many).
"""

from __future__ import annotations

import numpy as np

from .constants import CHURN_FEE_SHARE, SECONDS_PER_MONTH

__all__ = ["run_rent", "churn_fees", "delivered_tok_s", "idle_bill", "mtok_per_dollar"]


def run_rent(rent_per_month, warm):
    """Every card in the run set bills its rent in full."""
    return rent_per_month * warm


def churn_fees(rent_per_month, evicted):
    """Every evicted card bills 15% of a month's rent on the way out."""
    return CHURN_FEE_SHARE * rent_per_month * evicted


def delivered_tok_s(demand_tok_s, run_true_tok_s):
    """Tokens per second served: the demand, or the run set's true capacity if that is less."""
    return np.minimum(demand_tok_s, run_true_tok_s)


def idle_bill(rent_per_month, warm, delivered, run_true_tok_s):
    """The part of the run set's rent that moved no tokens (warm cards beyond the demand)."""
    return rent_per_month * warm * (1 - delivered / run_true_tok_s)


def mtok_per_dollar(delivered, bill):
    """Million tokens delivered per dollar of the bill."""
    return delivered * SECONDS_PER_MONTH / bill / 1_000_000
