"""One month of one rented pool: the figures that come out of a plan."""

from __future__ import annotations

from dataclasses import dataclass

from . import checks
from .cards import CardClass, card_class
from .eviction import wrong_evictions
from .figures import month_figures
from .plan import Plan
from .reference import PoolMonth, run_month
from .window import error_bound

__all__ = ["Month", "simulate"]


@dataclass(frozen=True)
class Month:
    """Every figure of the page's readout for one month. Money in dollars, rates in tok/s,
    shares as fractions (0.33 is 33%)."""

    plan: Plan
    pool: PoolMonth
    warm: int
    evicted: int
    wrong_evictions: int
    wrong_share: float
    bill: float
    run_rent: float
    churn_fees: float
    idle_bill: float
    demand_tok_s: float
    delivered_tok_s: float
    run_true_tok_s: float
    unmet_share: float
    mtok_per_dollar: float
    ideal_bill: float
    ideal_cards: int
    ideal_delivered_tok_s: float
    ideal_mtok_per_dollar: float
    convergence: float
    median_true_tok_s: float
    target_tok_s: float
    window_error: float
    capacity_ok: bool
    convergence_ok: bool
    evictions_ok: bool

    @property
    def card_class(self) -> CardClass:
        return card_class(self.plan.card_class)

    @property
    def cards(self) -> int:
        return self.plan.cards

    @property
    def skipped(self) -> int:
        """Survivors the run set left out: they never bill."""
        return self.cards - self.warm - self.evicted

    @property
    def moving_rent(self) -> float:
        """The part of the run set's rent that moved tokens."""
        return self.run_rent - self.idle_bill

    @property
    def checks(self) -> dict[str, bool]:
        return {
            "capacity": self.capacity_ok,
            "convergence": self.convergence_ok,
            "evictions": self.evictions_ok,
        }

    @property
    def signature(self) -> str:
        return checks.signature(self.capacity_ok, self.convergence_ok, self.evictions_ok)

    @property
    def verdict(self) -> str:
        from .explain import verdict

        return verdict(self)

    @property
    def sentences(self) -> tuple[str, ...]:
        from .explain import sentences

        return sentences(self)

    def to_dict(self) -> dict:
        """The readout as plain JSON-ready values (the command line's ``--json``)."""
        keys = (
            "warm evicted wrong_evictions wrong_share bill run_rent churn_fees idle_bill "
            "demand_tok_s delivered_tok_s run_true_tok_s unmet_share mtok_per_dollar "
            "ideal_bill ideal_cards ideal_delivered_tok_s ideal_mtok_per_dollar convergence "
            "median_true_tok_s target_tok_s window_error"
        ).split()
        out = {"plan": self.plan.to_dict(), "cards": self.cards, "skipped": self.skipped}
        out.update({k: getattr(self, k) for k in keys})
        out.update(
            checks=self.checks,
            signature=self.signature,
            verdict=self.verdict,
            sentences=list(self.sentences),
            pool={
                "true_tok_s": list(self.pool.true_tok_s),
                "measured_tok_s": list(self.pool.measured_tok_s),
                "evicted": list(self.pool.evicted),
                "run": list(self.pool.run),
                "ideal_run": list(self.pool.ideal_run),
            },
        )
        return out


def simulate(plan: Plan | None = None) -> Month:
    """One month of ``plan`` (the walkthrough's opening state by default)."""
    plan = Plan() if plan is None else plan
    pool = run_month(plan)
    cls = card_class(plan.card_class)
    rent = float(cls.rent_per_month)
    warm, evicted = len(pool.run), len(pool.evicted)
    run_true = sum(pool.true_tok_s[i] for i in pool.run)
    ideal_true = sum(pool.true_tok_s[i] for i in pool.ideal_run)
    median = pool.median_true_tok_s
    wrong = wrong_evictions(pool.true_tok_s, pool.evicted)

    figures = month_figures(rent, float(plan.demand_tok_s), warm, evicted, wrong, run_true,
                            len(pool.ideal_run), ideal_true)
    plain = {k: v.item() if hasattr(v, "item") else v for k, v in figures.items()}
    return Month(
        plan=plan,
        pool=pool,
        demand_tok_s=float(plan.demand_tok_s),
        median_true_tok_s=median,
        target_tok_s=pool.target_tok_s,
        window_error=error_bound(plan.window_hours),
        **plain,
    )
