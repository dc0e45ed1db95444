"""The month in words: the verdict and one plain sentence per figure."""

from __future__ import annotations

from .constants import CONVERGENCE_FLOOR, JUMPY_PEAK, UNMET_CAP, WRONG_EVICTION_CAP
from .window import NAMED_WINDOWS

__all__ = ["INCIDENTS", "verdict", "sentences", "money", "rate", "pct"]

#: Which check each digit of the signature is, the incident its failure names, the knob that
#: repairs it.
INCIDENTS = {
    "capacity": ("a shortfall", "the card class or the card count"),
    "convergence": ("an idler", "the demand shape (steady) or the card count"),
    "evictions": ("a noise evictor", "the score window (longer) or the eviction share (smaller)"),
}


def money(x: float) -> str:
    return f"${x:,.0f}"


def rate(x: float) -> str:
    return f"{x:,.0f}"


def pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}%"


def _window_name(month) -> str:
    w = month.plan.window
    if isinstance(w, str) and w.strip().lower() in NAMED_WINDOWS:
        return f"{w.strip().lower()} window"
    return f"{month.plan.window_hours:g}-hour window"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _above_ideal(m) -> str:
    """What a convergence above 100% means for this month, in a sentence or two."""
    if m.ideal_delivered_tok_s < m.target_tok_s and m.ideal_cards == m.cards:
        reach = (f"even all {m.cards} cards fall short of its {rate(m.target_tok_s)} tok/s "
                 "target, so it runs every one")
    else:
        reach = f"it needs {m.ideal_cards} cards to cover its {rate(m.target_tok_s)} tok/s target"
    text = (f"Convergence above 100% is no praise: the ideal operator bills more because "
            f"{reach}, while your {m.warm} warm cards truly carry "
            f"{rate(m.run_true_tok_s)} tok/s.")
    if m.plan.shape == "jumpy":
        text += (f" The burst (near {JUMPY_PEAK:g} x average, {rate(m.target_tok_s)} tok/s) "
                 "would find them short.")
    return text


def verdict(month) -> str:
    """The month's verdict in words, naming the incident and the knob that repairs it."""
    m = month
    summary = (
        f"{m.warm} of {_plural(m.cards, m.plan.shape + ' card', m.plan.shape + ' cards')} "
        f"{'delivers' if m.warm == 1 else 'deliver'} {rate(m.delivered_tok_s)} of "
        f"{rate(m.demand_tok_s)} tok/s for {money(m.bill)}, at {m.mtok_per_dollar:.3f} million "
        f"tokens per dollar where the ideal gets {m.ideal_mtok_per_dollar:.3f}. "
        f"{pct(m.unmet_share)} unmet, {pct(m.churn_fees / m.bill)} of the bill in churn fees, "
        f"{pct(m.convergence)} converged."
    )
    sig = m.signature
    if sig == "111" and m.convergence > 1:
        return (
            f"The month passes its three checks: {summary} {_above_ideal(m)} No check looks "
            "at that."
        )
    if sig == "111":
        return (
            f"The month reads clean: {summary} "
            "The score, the window and the run set agree."
        )
    if sig == "101":
        return (
            f"Golden idler (signature 101): {summary} Covered and no healthy card thrown out, "
            f"but {money(m.idle_bill)} of rent moved no tokens and the ideal operator bills "
            f"{money(m.ideal_bill)}. Repair it on the demand shape (steady sizes to average "
            "plus headroom) or size the burst on the card count."
        )
    if sig == "110":
        return (
            f"Noise evictor (signature 110): {summary} {m.wrong_evictions} of {m.evicted} "
            f"evictions threw out healthy cards ({pct(m.wrong_share, 0)}, cap "
            f"{pct(WRONG_EVICTION_CAP, 0)}): the {_window_name(m)} misreads a card by up to "
            f"{pct(m.window_error)}. Repair it on the score window (longer) and the eviction "
            "share (smaller)."
        )
    if sig == "011":
        return (
            f"Shortfall (signature 011): {summary} The pool is {pct(m.unmet_share)} short of "
            f"demand (cap {pct(UNMET_CAP, 0)}), and no bill or eviction policy buys back "
            "tokens the cards never had. Repair it on the card class or the card count."
        )
    failing = [name for name, ok in m.checks.items() if not ok]
    repairs = "; ".join(f"{name}: {INCIDENTS[name][1]}" for name in failing)
    return (
        f"Several incidents at once (signature {sig}): {summary} Failing checks, each with the "
        f"knob that repairs it: {repairs}."
    )


def sentences(month) -> tuple[str, ...]:
    """One plain sentence for each figure of the readout."""
    m = month
    cls = m.card_class
    shape = m.plan.shape
    skipped = ("the run set skips none" if m.skipped == 0 else
               f"the {_plural(m.skipped, 'card', 'cards')} the run set skips never bill")
    out = [
        f"{_plural(m.cards, 'card', 'cards')} of one class "
        f"{'rents' if m.cards == 1 else 'rent'} as a pool: "
        f"{_plural(m.warm, 'runs', 'run')} this month (rent {money(m.run_rent)}), "
        f"{'none is' if m.evicted == 0 else _plural(m.evicted, 'is', 'are')} churned "
        f"({money(m.churn_fees)} on the way out), and {skipped}.",
        f"{cls.label}: {rate(cls.rated_tok_s)} tok/s rated for {money(cls.rent_per_month)} a "
        f"month; this pool's median true rate is {rate(m.median_true_tok_s)} tok/s, and each "
        "card draws its own dip and measured error on top.",
    ]
    if m.capacity_ok and m.unmet_share == 0:
        out.append(
            f"Demand averages {rate(m.demand_tok_s)} tok/s and the pool delivers "
            f"{rate(m.delivered_tok_s)}: covered."
        )
    else:
        out.append(
            f"Demand averages {rate(m.demand_tok_s)} tok/s and the pool delivers "
            f"{rate(m.delivered_tok_s)}: {pct(m.unmet_share)} short, against a "
            f"{pct(UNMET_CAP, 0)} cap."
        )
    if shape == "steady":
        out.append(
            f"Steady mode covers average demand plus {pct(m.plan.headroom, 0)} headroom: "
            f"{rate(m.target_tok_s)} tok/s of measured run-set target, carried by "
            f"{_plural(m.warm, 'card', 'cards')}."
        )
    elif shape == "lazy":
        out.append(
            f"Lazy mode trims the run set to the average: {rate(m.target_tok_s)} tok/s of "
            f"measured target, carried by {_plural(m.warm, 'card', 'cards')}, with no buffer "
            "for a spike."
        )
    else:
        out.append(
            f"Jumpy mode keeps every survivor warm against a burst near {JUMPY_PEAK:g} x "
            f"average ({rate(m.target_tok_s)} tok/s): {_plural(m.warm, 'card', 'cards')} warm, and "
            f"{money(m.idle_bill)} of their rent moved no tokens."
        )
    out.append(
        f"Idle rent: {money(m.idle_bill)} of the run set's {money(m.run_rent)} paid for "
        f"capacity beyond the {rate(m.delivered_tok_s)} tok/s delivered."
    )
    out.append(
        f"The score reads through the {_window_name(m)}, so a card can look up to "
        f"{pct(m.window_error)} better or worse than it is; evictions ride this error, "
        "not the truth."
    )
    evicted = _plural(m.evicted, "card bills", "cards bill")
    out.append(
        f"{pct(m.plan.evict_share, 0)} of the pool is evicted by measured score: {evicted} "
        f"{money(m.churn_fees)} in churn fees, {m.wrong_evictions} of them wrong "
        f"(true rate at or above the median; cap {pct(WRONG_EVICTION_CAP, 0)} of evictions)."
    )
    out.append(
        f"The ideal operator picks by true rate, evicts nobody and runs "
        f"{_plural(m.ideal_cards, 'card', 'cards')} for {money(m.ideal_bill)}: this month is "
        f"{pct(m.convergence)} converged (the check wants {pct(CONVERGENCE_FLOOR, 0)})."
        + (f" {_above_ideal(m)}" if m.convergence > 1 else "")
    )
    return tuple(out)
