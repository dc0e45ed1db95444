"""The bank of drill question kinds: each one asks one thing about a month, by hand.

A kind is a function ``(month, r) -> Question | None`` (``None`` when the month cannot pose
it, for example a run-set question on a jumpy month) plus two sets of topics: what its answer
is (``asks``) and what its prompt or its worked explanation reveal (``gives``). A drill never
holds two kinds where one gives what the other asks, so no question gives another away.

Every number a prompt prints is rounded as printed, and the answer is computed from the
printed numbers (a learner works from what is on the page); a kind whose answer would differ
from the library's month because of that rounding is not posed.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from ..fleet.checks import CHECK_NAMES, REPAIR_KNOBS
from ..fleet.constants import (
    CHURN_FEE_SHARE,
    CONVERGENCE_FLOOR,
    JUMPY_PEAK,
    SECONDS_PER_MONTH,
    UNMET_CAP,
    WRONG_EVICTION_CAP,
)
from ..fleet.eviction import evict_count
from ..fleet.month import Month
from ..fleet.score import score

__all__ = ["Question", "Kind", "KINDS", "INCIDENT_NAMES", "GRADING"]

#: How a typed answer is graded, per ``Question.grading``.
GRADING = ("money", "number", "percent", "count", "yesno", "check", "incident")

#: The incident each signature names (the answer of "reading a signature").
INCIDENT_NAMES = {"111": "clean", "101": "golden idler", "110": "noise evictor",
                  "011": "shortfall"}


@dataclass(frozen=True)
class Question:
    """One question: its prompt, its answer, and how a typed answer is graded.

    ``grading`` is one of :data:`GRADING`: ``money`` and ``number`` and ``percent`` within
    ``tolerance``; ``count`` an exact whole number; ``yesno``; ``check`` (the failing check,
    or ``none``, and a knob from ``accepted``); ``incident`` (the incident's name).
    """

    id: str
    prompt: str
    answer: object
    grading: str
    explanation: str
    hint: str
    tolerance: float = 0.0
    accepted: frozenset[str] = frozenset()

    @property
    def answer_text(self) -> str:
        if self.grading == "money":
            return f"${self.answer:,.0f}"
        if self.grading == "number":
            return f"{self.answer:.3f}"
        if self.grading == "percent":
            return f"{self.answer:.1f}%"
        if self.grading == "yesno":
            return "yes" if self.answer else "no"
        if self.grading == "check":
            if self.answer == "none":
                return "none"
            return f"{self.answer}, with {' or '.join(sorted(self.accepted))}"
        return str(self.answer)


@dataclass(frozen=True)
class Kind:
    """One kind of question: its id, what its answer is, what it reveals, how to pose it."""

    id: str
    title: str
    asks: frozenset[str]
    gives: frozenset[str]
    pose: Callable[[Month, random.Random], Question | None]

    def clashes(self, other: Kind) -> bool:
        """Whether one of the two reveals what the other asks."""
        return bool(self.asks & other.gives or other.asks & self.gives)


def _money(x: float) -> str:
    return f"${x:,.0f}"


def _rates(values) -> str:
    return ", ".join(f"{v:,.0f}" for v in values)


def _rent(m: Month) -> float:
    return float(m.card_class.rent_per_month)


# ---------------------------------------------------------------------------- the kinds

#: Chances of not posing a question whose answer is the common one, to balance answers.
_SKIP_ZERO_WRONG = 0.7
_SKIP_EVERY_SURVIVOR = 0.5


def _score(m: Month, r: random.Random) -> Question:
    rent = _rent(m)
    card = int(r.random() * m.cards)
    true = float(round(m.pool.true_tok_s[card]))  # the rate as the question prints it
    value = score(true, rent)
    return Question(
        "score",
        f"One card of this pool truly serves {true:,.0f} tok/s. What is its score, in million "
        "tokens per dollar, to three decimals?",
        value, "number",
        f"{true:,.0f} x {SECONDS_PER_MONTH:,} s / {_money(rent)} / 1,000,000 = {value:.3f} "
        f"(its sticker says {m.card_class.sticker_score:.3f}).",
        "Score = tok/s x 2,628,000 seconds in a month / rent / 1,000,000.",
        tolerance=0.0006,  # three decimals, rounded either way
    )


def _evictions(m: Month, r: random.Random) -> Question:
    # Another share than the month's own, so no other question's text or working (which
    # show the month's evictions) gives this answer away; half the time one where rounding to
    # the nearest card would give a different count than rounding down.
    n = m.cards
    shares = [k / 100 for k in range(5, 50, 5) if abs(k / 100 - m.plan.evict_share) > 1e-9]
    tricky = [s for s in shares if (s * n) % 1 >= 0.5]
    share = _pick_from(r, tricky if tricky and r.random() < 0.5 else shares)
    count = evict_count(share, n)
    return Question(
        "evictions",
        f"Were the eviction share {share:.0%} instead, how many of the pool's cards would the "
        "score evict?",
        count, "count",
        f"floor({share:.0%} x {n}) = floor({share * n:.2f}) = {count}: the share is rounded "
        "down, so a share always leaves whole cards.",
        "The score evicts floor(share x cards): round down, not to the nearest.",
    )


def _pick_from(r: random.Random, options):
    return options[int(r.random() * len(options))]


def _true_rates_sorted(m: Month) -> list[float]:
    return sorted((float(round(t)) for t in m.pool.true_tok_s), reverse=True)


def _median_test(m: Month, r: random.Random) -> Question | None:
    rates = _true_rates_sorted(m)
    median = statistics.median(rates)
    gone = set(m.pool.evicted)
    kept = [float(round(m.pool.true_tok_s[i])) for i in range(m.cards) if i not in gone]
    want_wrong = r.random() < 0.5
    pool = [x for x in kept if (x >= median) == want_wrong]
    if not pool:
        return None
    # Cards near the median are the interesting ones: take one of the two closest.
    pool.sort(key=lambda x: abs(x - median))
    rate = pool[int(r.random() * min(2, len(pool)))]
    wrong = rate >= median
    middle = (f"the middle rate, {median:,.0f}" if len(rates) % 2 else
              f"the mean of the two middle rates, {median:,.1f}")
    return Question(
        "median_test",
        f"Every card's true rate, best first: {_rates(rates)} tok/s. The score kept the card "
        f"that truly serves {rate:,.0f} tok/s. Had it evicted that card instead, would the "
        "eviction have been wrong? (yes or no)",
        wrong, "yesno",
        f"The median of the {len(rates)} true rates is {middle}; {rate:,.0f} is "
        f"{'at or above' if wrong else 'below'} it, so evicting it is "
        f"{'a wrong eviction' if wrong else 'no wrong eviction'}.",
        "An eviction is wrong when the card's TRUE rate is at or above the median true rate "
        "of the whole pool (all cards, before eviction).",
    )


def _wrong_evictions(m: Month, r: random.Random) -> Question | None:
    if m.evicted == 0:
        return None
    rates = _true_rates_sorted(m)
    median = statistics.median(rates)
    gone = sorted((float(round(m.pool.true_tok_s[i])) for i in m.pool.evicted), reverse=True)
    wrong = sum(x >= median for x in gone)
    if wrong != m.wrong_evictions:  # rounding moved a card across the median
        return None
    if wrong == 0 and r.random() < _SKIP_ZERO_WRONG:
        return None  # most months evict nobody healthy: keep 0 from dominating the answers
    return Question(
        "wrong_evictions",
        f"Every card's true rate, best first: {_rates(rates)} tok/s. The score evicted the "
        f"cards that truly serve {_rates(gone)} tok/s. How many of those evictions were "
        "wrong?",
        wrong, "count",
        f"{wrong} of the {len(gone)} evicted cards are at or above the median of all "
        f"{len(rates)} true rates ({wrong / len(gone):.0%} of evictions, cap "
        f"{WRONG_EVICTION_CAP:.0%}).",
        "Find the median of all the true rates first (an even pool: the mean of the two "
        "middle ones); an evicted card at or above it was a wrong eviction.",
    )


def _greedy_count(rates: list[float], target: float) -> int:
    total = 0.0
    for k, x in enumerate(rates, start=1):
        total += x
        if total >= target:
            return k
    return len(rates)


def _run_set(m: Month, r: random.Random) -> Question | None:
    if m.plan.shape == "jumpy":
        return None
    gone = set(m.pool.evicted)
    order = sorted(range(m.cards), key=lambda i: (-m.pool.measured_tok_s[i], i))
    read = [float(round(m.pool.measured_tok_s[i])) for i in order]
    survivors = [x for i, x in zip(order, read, strict=True) if i not in gone]
    if gone and min(survivors) < max(read[i] for i, c in enumerate(order) if c in gone):
        return None  # rounding made an evicted card read as well as a survivor
    if _greedy_count(survivors, m.target_tok_s) != m.warm:  # rounding changed the count
        return None
    every = m.warm == len(survivors) and sum(survivors) < m.target_tok_s
    if every and r.random() < _SKIP_EVERY_SURVIVOR:
        return None  # shortfalls run every survivor: keep that from dominating the answers
    if m.plan.shape == "steady":
        rule = (f"the steady target, the average plus {m.plan.headroom:.0%} headroom = "
                f"{m.demand_tok_s:,.0f} x {1 + m.plan.headroom:g}")
        target_text = "average demand plus its headroom"
    else:
        rule = "the lazy target, the average"
        target_text = "the average demand"
    if every:
        why = (f"even every survivor together reads {sum(survivors):,.0f} tok/s, short of it, "
               "so all of them run.")
    else:
        why = (f"the survivors' first {m.warm} measured rates are the shortest prefix summing "
               f"to at least that ({sum(survivors[:m.warm]):,.0f} tok/s).")
    return Question(
        "run_set",
        f"The window reads the pool's cards, best first: {_rates(read)} tok/s. The score "
        f"evicts the worst, then the run set covers {target_text} with the best survivors. "
        "How many cards run warm?",
        m.warm, "count",
        f"The target is {rule} = {m.target_tok_s:,.0f} tok/s; {why}",
        "Drop the evicted cards (floor(share x cards), worst measured first), then add the "
        "survivors' measured rates best first until the sum reaches the target; if it never "
        "does, every survivor runs.",
    )


def _idle_bill(m: Month, r: random.Random) -> Question:
    rent = _rent(m)
    warm_true = sorted((float(round(m.pool.true_tok_s[i])) for i in m.pool.run), reverse=True)
    capacity = sum(warm_true)
    delivered = min(m.demand_tok_s, capacity)
    idle = rent * len(warm_true) * (1 - delivered / capacity)
    return Question(
        "idle_bill",
        f"The run set's warm cards truly serve {_rates(warm_true)} tok/s. What part of their "
        "rent moved no tokens this month (the idle bill), in dollars?",
        idle, "money",
        f"They can serve {capacity:,.0f} tok/s and deliver min(demand, that) = "
        f"{delivered:,.0f}; idle = {len(warm_true)} x {_money(rent)} x ({capacity:,.0f} - "
        f"{delivered:,.0f}) / {capacity:,.0f} = {_money(idle)}.",
        "Delivered = min(average demand, the warm cards' true capacity); idle bill = their "
        "rent x (capacity - delivered) / capacity: the share of rent that moved no tokens.",
        tolerance=1.0,
    )


def _bill(m: Month, r: random.Random) -> Question:
    rent = _rent(m)
    fee = CHURN_FEE_SHARE * rent
    return Question(
        "bill",
        f"The run set keeps {m.warm} cards warm and the score evicted {m.evicted}. What is "
        "the month's bill, in dollars?",
        m.bill, "money",
        f"{m.warm} x {_money(rent)} rent + {m.evicted} x {_money(fee)} churn fee (15% of a "
        f"month's rent) = {_money(m.bill)}; skipped cards bill nothing.",
        "Warm cards bill their rent in full; each evicted card bills 15% of a month's rent "
        "once; skipped cards bill nothing.",
        tolerance=1.0,
    )


def _convergence(m: Month, r: random.Random) -> Question:
    rent = _rent(m)
    value = 100 * m.convergence
    if m.convergence > 1:
        above = (f" Above 100%: the ideal operator bills more than you because it sizes to "
                 f"its full target ({m.ideal_cards} cards), while your run set is smaller than "
                 "that. It does not mean your month is better than ideal.")
        if m.plan.shape == "jumpy":
            above += (f" No check looks at the burst (about {JUMPY_PEAK:g} x average) your "
                      "warm cards would have to carry.")
    else:
        above = ""
    return Question(
        "convergence",
        f"This month bills {_money(m.bill)}; the ideal operator runs {m.ideal_cards} cards and "
        "evicts nobody. How converged is the month (the ideal bill over yours, in percent, to "
        "one decimal)?",
        value, "percent",
        f"Ideal {m.ideal_cards} x {_money(rent)} = {_money(m.ideal_bill)}; yours "
        f"{_money(m.bill)}; {_money(m.ideal_bill)} / {_money(m.bill)} = {value:.1f}% "
        f"({'passes' if m.convergence_ok else 'fails'}: the check wants "
        f"{CONVERGENCE_FLOOR:.0%}).{above}",
        "The ideal operator bills rent x its cards, with no churn fees; convergence = its "
        "bill / yours.",
        tolerance=0.06,
    )


def _failing_check(m: Month, r: random.Random) -> Question:
    failing = [c for c in CHECK_NAMES if not m.checks[c]]
    figures = (
        f"delivers {m.delivered_tok_s:,.0f} of {m.demand_tok_s:,.0f} tok/s; the ideal "
        f"operator's bill is {100 * m.convergence:.1f}% of this month's; "
        f"{100 * m.wrong_share:.0f}% of its evictions threw out a card at or above the median"
    )
    reads = (f"unmet {m.unmet_share:.1%} (cap {UNMET_CAP:.0%}), convergence "
             f"{m.convergence:.1%} (floor {CONVERGENCE_FLOOR:.0%}), wrong evictions "
             f"{m.wrong_share:.0%} (cap {WRONG_EVICTION_CAP:.0%})")
    if failing:
        check = failing[0]
        accepted = REPAIR_KNOBS[check]
        explanation = (f"{reads}: the {check} check fails; "
                       f"{' or '.join(sorted(accepted))} repairs it.")
    else:
        check, accepted = "none", frozenset({"none"})
        explanation = f"{reads}: every check passes, no knob needs turning."
    return Question(
        "failing_check",
        f"The month {figures}. Which check fails, and which knob repairs it? (name the check "
        "and a knob, or none)",
        check, "check", explanation,
        f"Capacity: unmet at most {UNMET_CAP:.0%}; convergence: ideal / real bill at least "
        f"{CONVERGENCE_FLOOR:.0%}; evictions: at most {WRONG_EVICTION_CAP:.0%} wrong.",
        accepted=frozenset(accepted),
    )


def _signature_reading(m: Month, r: random.Random) -> Question:
    sig = m.signature
    name = INCIDENT_NAMES[sig]
    failing = [c for c, digit in zip(CHECK_NAMES, sig, strict=True) if digit == "0"]
    what = (f"the {failing[0]} digit is zero" if failing else "every digit is one")
    return Question(
        "signature_reading",
        f"This month's signature (capacity, convergence, evictions) reads {sig}. Which "
        "incident is it: clean, golden idler, noise evictor or shortfall?",
        name, "incident",
        f"{sig}: {what}, so it is {'a clean month' if name == 'clean' else 'a ' + name}.",
        "Each digit is one check, 1 when it passes: capacity, convergence, evictions. A "
        "failing capacity is a shortfall, convergence an idler, evictions a noise evictor.",
    )


def _kind(id: str, title: str, asks: set[str], gives: set[str], pose) -> Kind:
    return Kind(id, title, frozenset(asks), frozenset(gives), pose)


#: The bank, by id. ``asks``/``gives`` topics: evicted, warm, wrong, median, bill, idle,
#: score, convergence, check, incident.
KINDS: dict[str, Kind] = {k.id: k for k in (
    _kind("score", "the score of one card", {"score"}, set(), _score),
    _kind("evictions", "floor(share x N)", {"evicted_at_another_share"}, set(), _evictions),
    _kind("median_test", "the median test", {"median"}, set(), _median_test),
    _kind("wrong_evictions", "wrong evictions", {"wrong"}, {"evicted"}, _wrong_evictions),
    _kind("run_set", "the run set on a steady or lazy target", {"warm"}, set(), _run_set),
    _kind("idle_bill", "the idle bill", {"idle", "delivered"}, {"warm"}, _idle_bill),
    _kind("bill", "the month's bill", {"bill"}, {"warm", "evicted"}, _bill),
    _kind("convergence", "convergence", {"convergence"}, {"bill"}, _convergence),
    _kind("failing_check", "the failing check and its knob", {"check"},
          {"wrong", "convergence", "incident", "delivered"}, _failing_check),
    _kind("signature_reading", "reading a signature", {"incident"}, {"check"},
          _signature_reading),
)}
