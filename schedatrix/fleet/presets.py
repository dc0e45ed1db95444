"""The presets: the walkthrough's opening month, the three famous months and their fixes.

Each preset is a fixed draw: a plan with a seed. The seeds were chosen by
``tools/calibrate_presets.py``, which scans seeds 0, 1, 2, ... with the engine and keeps those
whose month (and every fix of it, on the same seed) shows the page's figures: bills, card
counts, wrong evictions and signatures exactly, and draw-dependent figures (idle bills, the
short pool's delivered tok/s, the pool median) within 1%; among matches it takes the one
closest to the page. A fix is its month with knobs changed and the same seed, so
``--preset golden-idler --shape steady`` is ``golden-idler-steady``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .plan import DEFAULT_SEED, Plan

__all__ = ["Preset", "PRESETS", "preset"]


@dataclass(frozen=True)
class Preset:
    """A named plan, the month it fixes (if it is a fix) and its one-line story."""

    name: str
    plan: Plan
    story: str
    fixes: str | None = None


_WALKTHROUGH = Plan(seed=DEFAULT_SEED)
_IDLER = Plan(cards=32, shape="jumpy", seed=176_383)
_EVICTOR = Plan(cards=32, card_class="bargain", window="hour", evict_share=0.40, seed=21)
_SHORTFALL = Plan(cards=24, card_class="bargain", demand_tok_s=90_000, seed=85_141)

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("walkthrough", _WALKTHROUGH,
               "the opening state: 16 flagships, 60,000 tok/s steady, day window, 20% evicted"),
        Preset("golden-idler", _IDLER,
               "32 flagships on jumpy keep every survivor warm: covered, clean evictions, "
               "and $44k of idle rent"),
        Preset("golden-idler-steady", _IDLER.with_knobs(shape="steady"),
               "fix: the same pool on steady sizes to average plus 10% headroom",
               fixes="golden-idler"),
        Preset("golden-idler-12-cards", _IDLER.with_knobs(cards=12),
               "fix: size the burst on the count knob, the same pool cut to its first 12 cards",
               fixes="golden-idler"),
        Preset("noise-evictor", _EVICTOR,
               "32 bargains scored through the hour window, 40% evicted: a third of the "
               "evictions are healthy cards"),
        Preset("noise-evictor-day", _EVICTOR.with_knobs(window="day", evict_share=0.10),
               "fix: read the score through a day and evict 10%",
               fixes="noise-evictor"),
        Preset("bargain-shortfall", _SHORTFALL,
               "24 bargains for 90,000 tok/s: a cheap bill and a 32% shortage"),
        Preset("bargain-shortfall-flagship", _SHORTFALL.with_knobs(card_class="flagship"),
               "fix: the same knobs on flagship cards cover the demand",
               fixes="bargain-shortfall"),
    )
}


def preset(name: str) -> Preset:
    """Look a preset up by name."""
    try:
        return PRESETS[name]
    except KeyError:
        allowed = ", ".join(PRESETS)
        raise InputError(f"preset must be one of {allowed}, got {name!r}") from None
