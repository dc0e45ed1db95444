"""The plan: the month's knobs, validated where the plan is made."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from ..errors import InputError
from .cards import CARD_CLASSES
from .constants import MAX_CARDS
from .run_set import SHAPES
from .window import window_hours

__all__ = ["Plan", "MAX_SEED", "DEFAULT_SEED"]

MAX_SEED = 2**63 - 1
#: The walkthrough's draw (see presets.py): the plan you get with no knobs turned.
DEFAULT_SEED = 119_649


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@dataclass(frozen=True)
class Plan:
    """The knobs of one fleet month. Defaults are the walkthrough's opening state.

    Attributes
    ----------
    cards : int
        Cards in the pool, 1 to ``MAX_CARDS`` (4,096).
    card_class : str
        ``flagship``, ``b-stock`` or ``bargain`` (see ``schedatrix.CARD_CLASSES``).
    demand_tok_s : float
        Average demand in tokens per second, > 0.
    headroom : float
        Steady mode's buffer above average demand, a fraction >= 0 (0.10 is 10%).
    shape : str
        The demand shape, which is the run-set policy: ``steady``, ``lazy`` or ``jumpy``.
    window : str or float
        The score window: ``hour``, ``day``, ``week`` or 0.1 to 730 hours.
    evict_share : float
        Fraction of the pool evicted by the measured score each month, in [0, 1).
    seed : int
        The lottery draw, 0 to 2**63 - 1. Same seed, same cards, on every machine.
    """

    cards: int = 16
    card_class: str = "flagship"
    demand_tok_s: float = 60_000.0
    headroom: float = 0.10
    shape: str = "steady"
    window: str | float = "day"
    evict_share: float = 0.20
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        if not (isinstance(self.cards, int) and not isinstance(self.cards, bool)
                and 1 <= self.cards <= MAX_CARDS):
            raise InputError(
                f"cards must be a whole number from 1 to {MAX_CARDS}, got {self.cards!r}"
            )
        if self.card_class not in CARD_CLASSES:
            allowed = ", ".join(CARD_CLASSES)
            raise InputError(f"card_class must be one of {allowed}, got {self.card_class!r}")
        if not (_is_number(self.demand_tok_s) and math.isfinite(self.demand_tok_s)
                and self.demand_tok_s > 0):
            raise InputError(
                f"demand_tok_s must be a finite number > 0 tok/s, got {self.demand_tok_s!r}"
            )
        if not (_is_number(self.headroom) and math.isfinite(self.headroom) and self.headroom >= 0):
            raise InputError(
                f"headroom must be a finite fraction >= 0 (0.10 is 10%), got {self.headroom!r}"
            )
        if self.shape not in SHAPES:
            raise InputError(f"shape must be one of {', '.join(SHAPES)}, got {self.shape!r}")
        window_hours(self.window)
        if not (_is_number(self.evict_share) and math.isfinite(self.evict_share)
                and 0 <= self.evict_share < 1):
            raise InputError(
                f"evict_share must be a fraction in [0, 1) (0.20 is 20%), got {self.evict_share!r}"
            )
        if not (isinstance(self.seed, int) and not isinstance(self.seed, bool)
                and 0 <= self.seed <= MAX_SEED):
            raise InputError(f"seed must be a whole number from 0 to 2**63 - 1, got {self.seed!r}")

    @property
    def window_hours(self) -> float:
        """The score window's length in hours."""
        return window_hours(self.window)

    def with_knobs(self, **knobs) -> Plan:
        """A copy with some knobs changed (validated like a new plan)."""
        return replace(self, **knobs)

    def to_dict(self) -> dict:
        """The knobs as plain JSON-ready values."""
        return asdict(self)
