"""The plan: the month's knobs, validated where the plan is made."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from ..errors import InputError
from .cards import CARD_CLASSES
from .constants import MAX_CARDS
from .inputs import is_whole, real_number, whole_number
from .run_set import SHAPES, shape_target
from .window import window_hours

__all__ = ["Plan", "MAX_SEED", "DEFAULT_SEED"]

MAX_SEED = 2**63 - 1
#: The walkthrough's draw (see presets.py): the plan you get with no knobs turned.
DEFAULT_SEED = 119_649


@dataclass(frozen=True)
class Plan:
    """The knobs of one fleet month. Defaults are the walkthrough's opening state.

    Numbers may come as any real type Python or numpy has (``int``, ``float``, ``Fraction``,
    ``Decimal``, ``np.int64``, ``np.float32``, ...); the plan keeps them as Python ints and
    floats (see :mod:`schedatrix.fleet.inputs`), so ``Plan(cards=np.int64(16)) == Plan()``.
    Counts and seeds must be whole-number types (an int or a numpy integer: ``16.0`` is
    refused); a bool is not a number here. Anything else is refused with an
    :class:`~schedatrix.errors.InputError` naming the knob, the value and what is allowed.

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

    Every shape's target (demand x (1 + headroom), demand x 1.8) must be a finite number of
    tok/s: a plan whose target overflows to infinity is refused, since no figure of it could
    be printed as a number.
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
        keep = {
            "cards": whole_number("cards", self.cards, low=1, high=MAX_CARDS),
            "demand_tok_s": real_number("demand_tok_s", self.demand_tok_s,
                                        "a finite number > 0 tok/s",
                                        lambda x: math.isfinite(x) and x > 0),
            "headroom": real_number("headroom", self.headroom,
                                    "a finite fraction >= 0 (0.10 is 10%)",
                                    lambda x: math.isfinite(x) and x >= 0),
            "evict_share": real_number("evict_share", self.evict_share,
                                       "a fraction in [0, 1) (0.20 is 20%)",
                                       lambda x: math.isfinite(x) and 0 <= x < 1),
            "seed": whole_number("seed", self.seed, low=0, high=MAX_SEED,
                                 allowed="a whole number from 0 to 2**63 - 1"),
        }
        if self.card_class not in CARD_CLASSES:
            allowed = ", ".join(CARD_CLASSES)
            raise InputError(f"card_class must be one of {allowed}, got {self.card_class!r}")
        if self.shape not in SHAPES:
            raise InputError(f"shape must be one of {', '.join(SHAPES)}, got {self.shape!r}")
        window_hours(self.window)
        if not isinstance(self.window, str):
            keep["window"] = int(self.window) if is_whole(self.window) else float(self.window)
        for key, value in keep.items():
            object.__setattr__(self, key, value)
        for shape, knob, rule in (("jumpy", "demand_tok_s", "demand_tok_s x 1.8"),
                                  ("steady", "headroom", "demand_tok_s x (1 + headroom)")):
            if not math.isfinite(shape_target(shape, self.demand_tok_s, self.headroom)):
                raise InputError(
                    f"{knob} must keep the {shape} target ({rule}) a finite number of tok/s, "
                    f"got {getattr(self, knob)!r} (with demand_tok_s {self.demand_tok_s!r})"
                )

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
