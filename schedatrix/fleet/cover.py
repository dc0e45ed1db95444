"""Covering a target with a pool of mixed card classes: greedy against the exact minimum rent.

With one class every card costs the same, so the fewest cards is the cheapest run set and
the whole-card greedy (highest rate first) is optimal. Mix classes and that breaks: a card
can be fast but dear, or slow but cheap. Then neither greedy by rate nor greedy by score
(rate per dollar) is sure to find the cheapest set of cards whose rates cover the target;
the exact answer is a 0/1 knapsack-style integer program,

    minimise sum(rent_i x_i)  subject to  sum(rate_i x_i) >= target,  x_i in {0, 1},

solved here with ``scipy.optimize.milp`` (HiGHS branch and bound). When even every card
together falls short, every method runs every card (as the run set does) and says so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .cards import card_class
from .draws import uniform
from .inputs import whole_number
from .run_set import greedy_run_set
from .score import score

__all__ = ["MixedPool", "Cover", "mixed_pool", "greedy_cover", "cheapest_cover", "covers"]

#: Slack allowed on the cover constraint for the solver's floating-point tolerance (tok/s).
COVER_SLACK_TOK_S = 1e-6


@dataclass(frozen=True)
class MixedPool:
    """A pool whose cards may be of different classes: one entry per card."""

    classes: tuple[str, ...]
    true_tok_s: np.ndarray  # shape (n,)
    rent_per_month: np.ndarray  # shape (n,)

    @property
    def n(self) -> int:
        return len(self.classes)

    @property
    def score(self) -> np.ndarray:
        """Each card's million tokens per dollar at its true rate."""
        return score(self.true_tok_s, self.rent_per_month)


@dataclass(frozen=True)
class Cover:
    """A chosen set of cards: ``indices`` (ascending), their total rate and rent."""

    method: str
    indices: tuple[int, ...]
    tok_s: float
    rent_per_month: float
    covered: bool

    @property
    def cards(self) -> int:
        return len(self.indices)


def mixed_pool(counts: Mapping[str, int], seed: int = 0) -> MixedPool:
    """A pool of ``counts`` cards per class (in the mapping's order), each with its ticket.

    Card ``i`` draws ``uniform(seed, "ticket", i)`` and the class's lottery turns it into a
    true rate, as in a one-class pool.
    """
    classes: list[str] = []
    for key, count in counts.items():
        card_class(key)
        count = whole_number(f"counts[{key!r}]", count, low=0, high=4096)
        classes += [key] * count
    if not classes:
        raise InputError(f"counts must hold at least one card, got {dict(counts)!r}")
    rates = np.array([card_class(c).true_tok_s(uniform(seed, "ticket", i))
                      for i, c in enumerate(classes)])
    rents = np.array([card_class(c).rent_per_month for c in classes], dtype=float)
    return MixedPool(tuple(classes), rates, rents)


def _arrays(rates_tok_s, rents, target_tok_s):
    rates = np.asarray(rates_tok_s, dtype=float)
    rent = np.asarray(rents, dtype=float)
    if rates.ndim != 1 or rent.shape != rates.shape:
        raise InputError(f"rates_tok_s and rents must be 1-D of one length, got shapes "
                         f"{rates.shape} and {rent.shape}")
    if not (np.all(np.isfinite(rates)) and np.all(rates >= 0)):
        raise InputError("rates_tok_s must be finite and >= 0")
    if not (np.all(np.isfinite(rent)) and np.all(rent > 0)):
        raise InputError("rents must be finite and > 0")
    if not (np.isfinite(target_tok_s) and target_tok_s > 0):
        raise InputError(f"target_tok_s must be a finite number > 0, got {target_tok_s!r}")
    return rates, rent


def _cover(method: str, chosen, rates, rent, target) -> Cover:
    idx = tuple(sorted(int(i) for i in chosen))
    tok_s = float(rates[list(idx)].sum()) if idx else 0.0
    return Cover(method, idx, tok_s, float(rent[list(idx)].sum()) if idx else 0.0,
                 tok_s >= target - COVER_SLACK_TOK_S)


def greedy_cover(rates_tok_s, rents, target_tok_s: float, by: str = "rate") -> Cover:
    """The whole-card greedy: best first ``by`` rate or by score (rate per dollar).

    O(n log n). ``by="rate"`` is exactly :func:`schedatrix.greedy_run_set`.
    """
    rates, rent = _arrays(rates_tok_s, rents, target_tok_s)
    if by == "rate":
        chosen = greedy_run_set(rates, target_tok_s)
    elif by == "score":
        order = np.argsort(-(rates / rent), kind="stable")
        covered = np.cumsum(rates[order]) >= target_tok_s
        count = int(np.argmax(covered)) + 1 if covered.any() else rates.size
        chosen = order[:count]
    else:
        raise InputError(f"by must be rate or score, got {by!r}")
    return _cover(f"greedy by {by}", chosen, rates, rent, target_tok_s)


@contextmanager
def _quiet_solver():
    """Keep HiGHS's own prints off standard output: on some problems it writes a debug line
    ("HighsMipSolverData::transformNewIntegerFeasibleSolution ...") straight to file
    descriptor 1, past Python, into a notebook's output."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def cheapest_cover(rates_tok_s, rents, target_tok_s: float) -> Cover:
    """The exact minimum-rent set of cards whose rates sum to >= the target (``milp``).

    NP-hard in general (it is a knapsack); branch and bound solves pools of a few hundred
    cards in milliseconds. If no set covers the target, every card runs.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp  # here: scipy costs a second

    rates, rent = _arrays(rates_tok_s, rents, target_tok_s)
    if rates.sum() < target_tok_s:
        return _cover("cheapest (milp)", range(rates.size), rates, rent, target_tok_s)
    with _quiet_solver():
        result = milp(
            c=rent,
            constraints=LinearConstraint(rates.reshape(1, -1), lb=target_tok_s, ub=np.inf),
            integrality=np.ones(rates.size),
            bounds=Bounds(0, 1),
            options={"mip_rel_gap": 0},
        )
    if result.x is None:  # pragma: no cover - HiGHS failing on a feasible 0/1 problem
        raise RuntimeError(f"milp found no cover: {result.message}")
    chosen = np.flatnonzero(np.round(result.x) > 0.5)
    return _cover("cheapest (milp)", chosen, rates, rent, target_tok_s)


def covers(rates_tok_s, rents, target_tok_s: float) -> dict[str, Cover]:
    """Greedy by rate, greedy by score and the cheapest cover, keyed by method."""
    found = [greedy_cover(rates_tok_s, rents, target_tok_s, "rate"),
             greedy_cover(rates_tok_s, rents, target_tok_s, "score"),
             cheapest_cover(rates_tok_s, rents, target_tok_s)]
    return {c.method: c for c in found}
