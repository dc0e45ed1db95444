"""From who ran and who left to the readout's figures: one formula sheet for one month or many.

Both the reference month (:func:`schedatrix.simulate`, plain numbers) and the engine
(:func:`schedatrix.simulate_many`, arrays of months) call :func:`month_figures`, so the bill,
the checks and the ideal are computed by the same lines in both.
"""

from __future__ import annotations

from . import bill, checks

__all__ = ["month_figures"]


def month_figures(rent_per_month, demand_tok_s, warm, evicted, wrong, run_true_tok_s,
                  ideal_cards, ideal_true_tok_s) -> dict:
    """The month's figures from its counts and capacities (numbers or arrays of months).

    ``run_true_tok_s`` and ``ideal_true_tok_s`` are the true capacities of the run set and
    of the ideal operator's cards.
    """
    run_rent = bill.run_rent(rent_per_month, warm)
    fees = bill.churn_fees(rent_per_month, evicted)
    total = run_rent + fees
    delivered = bill.delivered_tok_s(demand_tok_s, run_true_tok_s)
    ideal_bill = bill.run_rent(rent_per_month, ideal_cards)
    ideal_delivered = bill.delivered_tok_s(demand_tok_s, ideal_true_tok_s)
    unmet = checks.unmet_share(delivered, demand_tok_s)
    convergence = ideal_bill / total
    share_wrong = checks.wrong_share(wrong, evicted)
    return dict(
        warm=warm,
        evicted=evicted,
        wrong_evictions=wrong,
        wrong_share=share_wrong,
        bill=total,
        run_rent=run_rent,
        churn_fees=fees,
        idle_bill=bill.idle_bill(rent_per_month, warm, delivered, run_true_tok_s),
        delivered_tok_s=delivered,
        run_true_tok_s=run_true_tok_s,
        unmet_share=unmet,
        mtok_per_dollar=bill.mtok_per_dollar(delivered, total),
        ideal_bill=ideal_bill,
        ideal_cards=ideal_cards,
        ideal_delivered_tok_s=ideal_delivered,
        ideal_mtok_per_dollar=bill.mtok_per_dollar(ideal_delivered, ideal_bill),
        convergence=convergence,
        capacity_ok=checks.check_capacity(unmet),
        convergence_ok=checks.check_convergence(convergence),
        evictions_ok=checks.check_evictions(share_wrong),
    )
