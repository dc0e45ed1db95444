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

from ...fleet.checks import CHECK_NAMES, REPAIR_KNOBS
from ...fleet.constants import (
    CHURN_FEE_SHARE,
    CONVERGENCE_FLOOR,
    JUMPY_PEAK,
    SECONDS_PER_MONTH,
    UNMET_CAP,
    WRONG_EVICTION_CAP,
)
from ...fleet.eviction import evict_count
from ...fleet.month import Month, simulate
from ...fleet.score import score
from .question import Question

__all__ = ["Question", "Kind", "KINDS", "LOOKUPS", "INCIDENT_NAMES"]

#: The incident each signature names (the answer of "reading a signature").
INCIDENT_NAMES = {"111": "clean", "101": "golden idler", "110": "noise evictor",
                  "011": "shortfall"}


@dataclass(frozen=True)
class Kind:
    """One kind of question: its id, what its answer is, what it reveals, how to pose it, and
    whether it is a ``lookup`` (one formula or one table entry applied to given figures, as
    against working a month's step through: a run set, a median test on each eviction)."""

    id: str
    title: str
    asks: frozenset[str]
    gives: frozenset[str]
    pose: Callable[[Month, random.Random], Question | None]
    lookup: bool = False

    def clashes(self, other: Kind) -> bool:
        """Whether one of the two reveals what the other asks."""
        return bool(self.asks & other.gives or other.asks & self.gives)


def _money(x: float) -> str:
    return f"${x:,.0f}"


def _rates(values) -> str:
    return ", ".join(f"{v:,.0f}" for v in values)


def _how_many(k: int) -> str:
    """A count as the working writes it: "none" for 0 (a printed 0 would read as the $0 idle
    bill or a zero count another question asks for)."""
    return "none" if k == 0 else f"{k}"


def _rent(m: Month) -> float:
    return float(m.card_class.rent_per_month)


# ---------------------------------------------------------------------------- the kinds

#: Chances of not posing a question whose answer is the common one, to balance answers.
_SKIP_ZERO_WRONG = 0.7
_SKIP_EVERY_SURVIVOR = 0.5
#: Chance of asking about a share with some wrong evictions, where one exists.
_PREFER_SOME_WRONG = 0.9
_SKIP_ZERO_AT_SHARE = 0.65


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


def _wrong_at_share(m: Month, r: random.Random) -> Question | None:
    # Another share than the month's, deeper or shallower: the learner takes floor(share x N)
    # of the window's worst readings and runs the median test on each one's true rate.
    n = m.cards
    shares = [k / 100 for k in range(5, 50, 5) if abs(k / 100 - m.plan.evict_share) > 1e-9
              and evict_count(k / 100, n) > 0]
    if not shares:
        return None
    rates = _true_rates_sorted(m)
    median = statistics.median(rates)
    worst = sorted(range(n), key=lambda i: (m.pool.measured_tok_s[i], i))[: (n + 1) // 2]
    read = [float(round(m.pool.measured_tok_s[i])) for i in worst]
    truly = [float(round(m.pool.true_tok_s[i])) for i in worst]
    wrong_at = {s: sum(x >= median for x in truly[: evict_count(s, n)]) for s in shares}
    library = {s: sum(m.pool.true_tok_s[i] >= m.median_true_tok_s
                      for i in worst[: evict_count(s, n)]) for s in shares}
    # Not posed where rounding moved a card across the median, or where the last card out
    # and the first card kept print the same reading (which goes would be a guess).
    shares = [s for s in shares if wrong_at[s] == library[s]
              and read[evict_count(s, n) - 1] < read[evict_count(s, n)]]
    some = [s for s in shares if wrong_at[s] > 0]
    if not shares:
        return None
    share = _pick_from(r, some if some and r.random() < _PREFER_SOME_WRONG else shares)
    k, wrong = evict_count(share, n), wrong_at[share]
    if wrong == 0 and r.random() < _SKIP_ZERO_AT_SHARE:
        return None  # a day or a week window evicts nobody healthy at any share: keep 0 rare
    pairs = ", ".join(f"{a:,.0f} (truly {b:,.0f})" for a, b in zip(read, truly, strict=True))
    return Question(
        "wrong_at_share",
        f"Every card's true rate, best first: {_rates(rates)} tok/s. The window reads the "
        f"worst half of the pool, worst first: {pairs} tok/s. Were the eviction share "
        f"{share:.0%}, how many of its evictions would be wrong?",
        wrong, "count",
        f"floor({share:.0%} x {n}) = {k} cards go, the {k} worst readings; {_how_many(wrong)} "
        f"of them truly {'serves' if wrong == 1 else 'serve'} at or above the median of all {n} "
        "true rates.",
        "Evict floor(share x cards) of the worst readings; an evicted card whose TRUE rate is "
        "at or above the median true rate of the whole pool is a wrong eviction.",
    )


def _greedy_count(rates: list[float], target: float) -> int:
    total = 0.0
    for k, x in enumerate(rates, start=1):
        total += x
        if total >= target:
            return k
    return len(rates)


def _readings(m: Month) -> tuple[list[float], list[float]] | None:
    """The pool's readings best first as a prompt prints them, and the survivors' among them
    (None where rounding makes an evicted card read as well as a survivor)."""
    gone = set(m.pool.evicted)
    order = sorted(range(m.cards), key=lambda i: (-m.pool.measured_tok_s[i], i))
    read = [float(round(m.pool.measured_tok_s[i])) for i in order]
    survivors = [x for i, x in zip(order, read, strict=True) if i not in gone]
    if gone and min(survivors) < max(read[i] for i, c in enumerate(order) if c in gone):
        return None
    return read, survivors


def _steady_text(headroom: float) -> str:
    return f"steady with {headroom:.0%} headroom"


def _covers(shape: str, headroom: float) -> tuple[str, str]:
    """What a (steady or lazy) run set covers, as a prompt names it and as its working does."""
    if shape == "steady":
        return ("the average demand plus its headroom",
                f"the steady target, the average plus {headroom:.0%} headroom")
    return "the average demand", "the lazy target, the average"


def _run_set_why(survivors: list[float], target: float, warm: int) -> str:
    if warm == len(survivors) and sum(survivors) < target:
        return (f"even every survivor together reads {sum(survivors):,.0f} tok/s, short of it, "
                "so all of them run.")
    return (f"the survivors' first {warm} measured rates are the shortest prefix summing to at "
            f"least that ({sum(survivors[:warm]):,.0f} tok/s).")


def _every_survivor(survivors: list[float], target: float, warm: int) -> bool:
    return warm == len(survivors) and sum(survivors) < target


_RUN_SET_HINT = ("Drop the evicted cards (floor(share x cards), worst measured first), then add "
                 "the survivors' measured rates best first until the sum reaches the target; "
                 "if it never does, every survivor runs.")


def _run_set(m: Month, r: random.Random) -> Question | None:
    if m.plan.shape == "jumpy":
        return None
    readings = _readings(m)
    if readings is None:
        return None  # rounding made an evicted card read as well as a survivor
    read, survivors = readings
    if _greedy_count(survivors, m.target_tok_s) != m.warm:  # rounding changed the count
        return None
    if _every_survivor(survivors, m.target_tok_s, m.warm) and r.random() < _SKIP_EVERY_SURVIVOR:
        return None  # shortfalls run every survivor: keep that from dominating the answers
    covers, rule = _covers(m.plan.shape, m.plan.headroom)
    if m.plan.shape == "steady":
        rule += f" = {m.demand_tok_s:,.0f} x {1 + m.plan.headroom:g}"
    return Question(
        "run_set",
        f"The window reads the pool's cards, best first: {_rates(read)} tok/s. The score "
        f"evicts the worst, then the run set covers {covers} with the best survivors. "
        "How many cards run warm?",
        m.warm, "count",
        f"The target is {rule} = {m.target_tok_s:,.0f} tok/s; "
        f"{_run_set_why(survivors, m.target_tok_s, m.warm)}",
        _RUN_SET_HINT,
    )


#: The other shapes a run set is asked about: lazy, or steady with one of these headrooms.
_OTHER_HEADROOMS = (0.1, 0.2, 0.3)


def _run_set_shape(m: Month, r: random.Random) -> Question | None:
    # The knob that repairs a golden idler: the same pool and evictions under another shape.
    p = m.plan
    readings = _readings(m)
    if readings is None:
        return None
    read, survivors = readings
    options = [("lazy", p.headroom)] + [("steady", h) for h in _OTHER_HEADROOMS]
    options = [(shape, h) for shape, h in options
               if p.shape != shape or (shape == "steady" and abs(p.headroom - h) > 1e-9)]
    found = []
    for shape, h in options:
        other = simulate(p.with_knobs(shape=shape, headroom=h))
        if _greedy_count(survivors, other.target_tok_s) != other.warm:
            continue  # rounding changed the count
        every = _every_survivor(survivors, other.target_tok_s, other.warm)
        found.append((every or other.warm == m.warm, shape, h, other))
    fresh = [f for f in found if not f[0]]
    if not fresh and (not found or r.random() < _SKIP_EVERY_SURVIVOR):
        return None  # every survivor (a shortfall), or the month's own count: keep them rare
    _, shape, h, other = _pick_from(r, fresh or found)
    covers, rule = _covers(shape, h)
    if shape == "steady":
        rule += f" = {m.demand_tok_s:,.0f} x {1 + h:g}"
    now = _steady_text(p.headroom) if p.shape == "steady" else p.shape
    would = _steady_text(h) if shape == "steady" else shape
    return Question(
        "run_set_shape",
        f"The window reads the pool's cards, best first: {_rates(read)} tok/s. Were the demand "
        f"{would} instead of {now}, the score would evict the same worst cards and the run set "
        f"would cover {covers} with the best survivors. How many cards would run warm?",
        other.warm, "count",
        f"The target would be {rule} = {other.target_tok_s:,.0f} tok/s; "
        f"{_run_set_why(survivors, other.target_tok_s, other.warm)}",
        _RUN_SET_HINT,
    )


def _target_rule(m: Month) -> tuple[str, str]:
    """The month's target as a prompt names it, and as the working computes it."""
    p = m.plan
    if p.shape == "steady":
        return ("the average demand plus its headroom",
                f"the average plus {p.headroom:.0%} headroom = {m.demand_tok_s:,.0f} x "
                f"{1 + p.headroom:g}")
    if p.shape == "lazy":
        return "the average demand", "the average"
    return (f"the burst, {JUMPY_PEAK:g} x the average demand",
            f"the burst = {m.demand_tok_s:,.0f} x {JUMPY_PEAK:g}")


def _ideal_run(m: Month, r: random.Random) -> Question | None:
    rates = _true_rates_sorted(m)
    if _greedy_count(rates, m.target_tok_s) != m.ideal_cards:  # rounding changed the count
        return None
    target_text, rule = _target_rule(m)
    k = m.ideal_cards
    if sum(rates[:k]) >= m.target_tok_s:
        why = (f"the first {k} true rates are the shortest prefix summing to at least that "
               f"({sum(rates[:k]):,.0f} tok/s).")
    else:
        why = (f"even every card together serves {sum(rates):,.0f} tok/s, short of it, so it "
               "runs all of them.")
    return Question(
        "ideal_run",
        f"Every card's true rate, best first: {_rates(rates)} tok/s. The ideal operator sees "
        f"these, evicts nobody and keeps the best cards warm until they cover {target_text}. "
        "How many cards does it run?",
        k, "count",
        f"The target is {rule} = {m.target_tok_s:,.0f} tok/s; {why}",
        "The ideal operator sizes to the same target as the run set (steady: the average plus "
        f"its headroom; lazy: the average; jumpy: the burst, {JUMPY_PEAK:g} x the average) and "
        "adds true rates best first until the sum reaches it.",
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


def _evicted_text(m: Month) -> tuple[str, int] | None:
    """The evicted cards as the failing-check prompt prints them and the wrong count a
    learner finds from that (None when the rounding moves a card across the median)."""
    if m.evicted == 0:
        return "The score evicted no card.", 0
    rates = _true_rates_sorted(m)
    median = statistics.median(rates)
    gone = sorted((float(round(m.pool.true_tok_s[i])) for i in m.pool.evicted), reverse=True)
    wrong = sum(x >= median for x in gone)
    if wrong != m.wrong_evictions:
        return None
    return (f"Every card's true rate, best first: {_rates(rates)} tok/s; the score evicted "
            f"the cards that truly serve {_rates(gone)} tok/s."), wrong


def _failing_check(m: Month, r: random.Random) -> Question | None:
    # Two figures are given; the third, the eviction check's, the learner works out from the
    # pool's true rates (the median test on each evicted card).
    evicted = _evicted_text(m)
    if evicted is None:
        return None
    evicted_text, wrong = evicted
    delivered = float(round(m.delivered_tok_s))
    convergence = round(100 * m.convergence, 1)
    unmet = 1 - delivered / m.demand_tok_s
    share = wrong / m.evicted if m.evicted else 0.0
    seen = (unmet <= UNMET_CAP, convergence / 100 >= CONVERGENCE_FLOOR,
            share <= WRONG_EVICTION_CAP)
    if seen != tuple(m.checks[c] for c in CHECK_NAMES):
        return None  # the printed figures, rounded, would judge a check the other way
    failing = [c for c in CHECK_NAMES if not m.checks[c]]
    figures = (f"The month delivers {delivered:,.0f} of {m.demand_tok_s:,.0f} tok/s; the "
               f"ideal operator's bill is {convergence:.1f}% of this month's. {evicted_text}")
    if m.evicted:
        cards = "card is" if m.evicted == 1 else "cards are"
        wrong_text = (f"{share:.0%} ({_how_many(wrong)} of the {m.evicted} evicted {cards} at or "
                      "above the median true rate)")
    else:
        wrong_text = "0% (no evictions)"
    reads = (f"unmet {unmet:.1%} (cap {UNMET_CAP:.0%}), convergence {convergence:.1f}% "
             f"(floor {CONVERGENCE_FLOOR:.0%}), wrong evictions {wrong_text}, cap "
             f"{WRONG_EVICTION_CAP:.0%}")
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
        f"{figures} Which check fails, and which knob repairs it? (name the check and a "
        "knob, or none)",
        check, "check", explanation,
        f"Capacity: unmet at most {UNMET_CAP:.0%}; convergence: ideal / real bill at least "
        f"{CONVERGENCE_FLOOR:.0%}; evictions: at most {WRONG_EVICTION_CAP:.0%} of the evicted "
        "cards at or above the median true rate.",
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


def _kind(id: str, title: str, asks: set[str], gives: set[str], pose,
          lookup: bool = False) -> Kind:
    return Kind(id, title, frozenset(asks), frozenset(gives), pose, lookup)


#: The bank, by id. ``asks``/``gives`` topics: evicted, warm, wrong, median, bill, idle,
#: ideal, score, convergence, check, incident.
KINDS: dict[str, Kind] = {k.id: k for k in (
    _kind("score", "the score of one card", {"score"}, set(), _score, lookup=True),
    _kind("evictions", "floor(share x N)", {"evicted_at_another_share"}, set(), _evictions,
          lookup=True),
    _kind("median_test", "the median test", {"median"}, set(), _median_test, lookup=True),
    _kind("wrong_evictions", "wrong evictions", {"wrong"}, {"evicted"}, _wrong_evictions),
    _kind("wrong_at_share", "wrong evictions at another share", {"wrong_at_share"},
          {"wrong", "evicted_at_another_share"}, _wrong_at_share),
    _kind("run_set", "the run set on a steady or lazy target", {"warm"}, set(), _run_set),
    _kind("run_set_shape", "the run set under another shape", {"warm_at_another_shape"}, set(),
          _run_set_shape),
    _kind("ideal_run", "the ideal operator's run set", {"ideal"}, set(), _ideal_run),
    _kind("idle_bill", "the idle bill", {"idle", "delivered"}, {"warm"}, _idle_bill),
    _kind("bill", "the month's bill", {"bill"}, {"warm", "evicted"}, _bill),
    _kind("convergence", "convergence", {"convergence"}, {"bill", "ideal"}, _convergence),
    _kind("failing_check", "the failing check and its knob", {"check"},
          {"wrong", "convergence", "incident", "delivered"}, _failing_check),
    _kind("signature_reading", "reading a signature", {"incident"}, {"check"},
          _signature_reading, lookup=True),
)}
#: The kinds that are lookups (a formula or a table entry applied to given figures).
LOOKUPS = frozenset(k for k, kind in KINDS.items() if kind.lookup)
