"""schedatrix: learn, drill and audit GPU serving-fleet efficiency.

One month of one rented GPU pool: a frozen :class:`Plan` of knobs goes in, a frozen
:class:`Month` of figures comes out (:func:`simulate`). The three challenges are public
functions: :func:`score`, :func:`greedy_run_set` and :func:`evict_worst`.
"""

from .errors import InputError
from .fleet.cards import CARD_CLASSES, CardClass, card_class
from .fleet.engine import Months, simulate_many
from .fleet.eviction import evict_count, evict_worst, wrong_evictions
from .fleet.month import Month, simulate
from .fleet.plan import Plan
from .fleet.presets import PRESETS, Preset, preset
from .fleet.run_set import SHAPES, greedy_run_set, shape_target
from .fleet.score import score

__version__ = "0.1.0"

__all__ = [
    "CARD_CLASSES",
    "CardClass",
    "InputError",
    "Month",
    "Months",
    "PRESETS",
    "Plan",
    "Preset",
    "SHAPES",
    "card_class",
    "evict_count",
    "evict_worst",
    "greedy_run_set",
    "preset",
    "score",
    "shape_target",
    "simulate",
    "simulate_many",
    "wrong_evictions",
]
