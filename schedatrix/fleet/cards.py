"""The card classes and their quality lottery.

Every card in a pool is one class, but not the same card: at boot each card draws a lottery
ticket, its true serving rate as a share of the rated rate. The shape of the lottery:

* a **bad ticket** with chance ``bad_chance``: the card serves ``bad_share`` of its rated
  rate all month (a flagship having a bad month: 24%, 2,400 tok/s);
* otherwise a **good ticket**, spread evenly between ``good_low`` and ``good_high`` of the
  rated rate.

The ticket is the class's quantile function applied to the card's uniform draw, so the same
draw ranks the same way in every class: swapping a pool's class keeps "the same cards",
each with the luck it had. Cards also ride silent **dips** (blips that cost part of a
measurement window while they last): ``dip_depth`` is the share of the rate a dip takes.

The page fixes the Flagship (10,000 tok/s, $2,600) and the Bargain (4,500 tok/s, $1,400,
a bad ticket still carries 45%). B-stock's rated rate and rent, and every lottery shape, are
ours, calibrated so that the presets reproduce the page's figures (spec: "The card classes").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .score import score

__all__ = ["CardClass", "CARD_CLASSES", "card_class"]


@dataclass(frozen=True)
class CardClass:
    """One class of rented card and its lottery."""

    key: str
    label: str
    rated_tok_s: float
    rent_per_month: float
    bad_chance: float
    bad_share: float
    good_low: float
    good_high: float
    dip_depth: float
    blurb: str

    def true_share(self, u: float) -> float:
        """The lottery's quantile function: a uniform draw in [0, 1) to a share of rated."""
        if u < self.bad_chance:
            return self.bad_share
        spread = (u - self.bad_chance) / (1 - self.bad_chance)
        return self.good_low + (self.good_high - self.good_low) * spread

    def true_tok_s(self, u: float) -> float:
        """A card's true serving rate for its ticket draw ``u``."""
        return self.rated_tok_s * self.true_share(u)

    @property
    def sticker_score(self) -> float:
        """Million tokens per dollar at the rated rate (what the price list promises)."""
        return score(self.rated_tok_s, self.rent_per_month)

    @property
    def expected_share(self) -> float:
        """The lottery's mean share of the rated rate."""
        good = (self.good_low + self.good_high) / 2
        return self.bad_chance * self.bad_share + (1 - self.bad_chance) * good

    @property
    def expected_score(self) -> float:
        """Million tokens per dollar at the lottery's mean true rate."""
        return score(self.rated_tok_s * self.expected_share, self.rent_per_month)

    @property
    def lottery(self) -> str:
        """The lottery's shape in words."""
        return (
            f"{self.bad_chance:.0%} bad tickets at {self.bad_share:.0%} of rated; "
            f"otherwise even between {self.good_low:.0%} and {self.good_high:.0%}; "
            f"dips take {self.dip_depth:.0%}"
        )


CARD_CLASSES: dict[str, CardClass] = {
    c.key: c
    for c in (
        CardClass(
            key="flagship",
            label="Flagship (H100-class)",
            rated_tok_s=10_000,
            rent_per_month=2_600,
            bad_chance=0.10,
            bad_share=0.24,
            good_low=0.55,
            good_high=0.85,
            dip_depth=0.20,
            blurb="the dependable sticker: most tickets land between 55% and 85% of rated",
        ),
        CardClass(
            key="b-stock",
            label="B-stock (refurbished H100-class)",
            rated_tok_s=9_000,
            rent_per_month=1_700,
            bad_chance=0.30,
            bad_share=0.25,
            good_low=0.55,
            good_high=0.85,
            dip_depth=0.40,
            blurb="rates high and is cheap, but a bad ticket keeps a quarter of rated "
            "and its dips run twice as deep",
        ),
        CardClass(
            key="bargain",
            label="Bargain (previous generation)",
            rated_tok_s=4_500,
            rent_per_month=1_400,
            bad_chance=0.15,
            bad_share=0.45,
            good_low=0.55,
            good_high=0.85,
            dip_depth=0.20,
            blurb="cheap per card and close on the sticker; a bad ticket still keeps 45%",
        ),
    )
}


def card_class(key: str) -> CardClass:
    """Look a class up by key (``flagship``, ``b-stock``, ``bargain``)."""
    try:
        return CARD_CLASSES[key]
    except KeyError:
        allowed = ", ".join(CARD_CLASSES)
        raise InputError(f"card_class must be one of {allowed}, got {key!r}") from None
