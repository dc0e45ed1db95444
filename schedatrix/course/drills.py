"""Interview drills: drill number n is the same month and the same questions for everyone.

``drill(n)`` draws a plan from a generator seeded by ``n`` (Python's ``random.Random`` seeded
with a string, using only ``random()``, whose sequence Python keeps stable across versions
and machines) and asks five questions about its month: the bill, the score of one card,
the size of the run set, the signature, and the knob that repairs the failing check. About
half the drills are built to be a famous incident (an idler, a noise evictor or a
shortfall); the rest are random months with at most one failing check.

``Drill.check(question_id, answer)`` grades a typed answer with a tolerance and returns
``(ok, feedback)``; ``format_drill_set`` prints a set for an instructor, with or without
its answer key.
"""

from __future__ import annotations

import argparse
import random
import re
from dataclasses import dataclass

from ..errors import InputError
from ..fleet.cards import CARD_CLASSES, card_class
from ..fleet.checks import CHECK_NAMES, REPAIR_KNOBS
from ..fleet.constants import CHURN_FEE_SHARE, CONVERGENCE_FLOOR, UNMET_CAP, WRONG_EVICTION_CAP
from ..fleet.month import Month, simulate
from ..fleet.plan import Plan
from ..fleet.score import score

__all__ = ["Question", "Drill", "QUESTION_IDS", "KNOB_NAMES", "drill", "drill_set",
           "format_drill_set", "add_drills_parser"]

QUESTION_IDS = ("bill", "score", "run_set", "signature", "knob")
#: Answers accepted for each knob, by spelling.
KNOB_NAMES = {
    "cards": "cards", "card count": "cards", "count": "cards", "card_count": "cards",
    "number of cards": "cards",
    "card_class": "card_class", "card class": "card_class", "class": "card_class",
    "shape": "shape", "demand shape": "shape", "demand_shape": "shape",
    "window": "window", "score window": "window", "score_window": "window",
    "evict_share": "evict_share", "eviction share": "evict_share", "share": "evict_share",
    "eviction_share": "evict_share", "evict share": "evict_share",
    "none": "none", "nothing": "none", "no knob": "none", "-": "none",
}
_KINDS = ("random", "random", "random", "idler", "evictor", "shortfall")
_SEARCH = 400  # seeds tried for a month of the wanted kind


@dataclass(frozen=True)
class Question:
    """One question: its prompt, its answer and how a typed answer is graded.

    ``kind`` is ``money`` or ``number`` (within ``tolerance``), ``count`` (exact whole
    number), ``signature`` (three digits) or ``knob`` (any of ``accepted``).
    """

    id: str
    prompt: str
    answer: object
    kind: str
    explanation: str
    hint: str
    tolerance: float = 0.0
    accepted: frozenset[str] = frozenset()

    @property
    def answer_text(self) -> str:
        if self.kind == "money":
            return f"${self.answer:,.0f}"
        if self.kind == "number":
            return f"{self.answer:.3f}"
        if self.kind == "knob":
            return " or ".join(sorted(self.accepted))
        return str(self.answer)


def _parse_number(text) -> float | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text)
    cleaned = re.sub(r"[\s$,_]|tok/s|cards?|dollars?", "", str(text).lower())
    try:
        return float(cleaned)
    except ValueError:
        return None


@dataclass(frozen=True)
class Drill:
    """Drill number ``number``: a month, the facts a learner is given, five questions."""

    number: int
    kind: str
    month: Month
    facts: tuple[str, ...]
    questions: tuple[Question, ...]

    @property
    def plan(self) -> Plan:
        return self.month.plan

    def question(self, question_id: str) -> Question:
        for q in self.questions:
            if q.id == question_id:
                return q
        raise InputError(
            f"question_id must be one of {', '.join(QUESTION_IDS)}, got {question_id!r}"
        )

    def check(self, question_id: str, answer) -> tuple[bool, str]:
        """Grade a typed answer: ``(ok, feedback)``. The feedback never gives a wrong
        answer's solution away, only which way to look."""
        q = self.question(question_id)
        if answer is None or str(answer).strip() == "":
            return False, "Type an answer first."
        if q.kind in ("money", "number", "count"):
            value = _parse_number(answer)
            if value is None:
                return False, f"{answer!r} is not a number: type digits, like 27170."
            if q.kind == "count":
                ok = value == q.answer
            else:
                ok = abs(value - q.answer) <= q.tolerance
            if ok:
                return True, f"Right! {q.explanation}"
            way = "too high" if value > q.answer else "too low"
            return False, f"Not quite: {way}. {q.hint}"
        if q.kind == "signature":
            digits = re.sub(r"[\s,\-/]", "", str(answer))
            if not re.fullmatch(r"[01]{3}", digits):
                return False, "A signature is three digits of 0 and 1, like 101."
            if digits == q.answer:
                return True, f"Right! {q.explanation}"
            wrong = [CHECK_NAMES[i] for i in range(3) if digits[i] != q.answer[i]]
            return False, f"Not quite: look again at the {' and '.join(wrong)} check. {q.hint}"
        key = KNOB_NAMES.get(str(answer).strip().lower())
        if key is None:
            return False, ("Name a knob: cards, card_class, shape, window, evict_share, "
                           "or none.")
        if key in q.accepted:
            return True, f"Right! {q.explanation}"
        return False, f"Not quite. {q.hint}"

    def text(self, answers: bool = False) -> str:
        """The drill as plain text (with its answers and explanations if asked)."""
        lines = [f"Drill {self.number}", *[f"  {fact}" for fact in self.facts]]
        for i, q in enumerate(self.questions, start=1):
            lines.append(f"  Q{i} [{q.id}] {q.prompt}")
            if answers:
                lines.append(f"      answer: {q.answer_text}. {q.explanation}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------- the plan


def _pick(r: random.Random, options):
    return options[int(r.random() * len(options))]


def _plan_for(kind: str, r: random.Random, seed: int) -> Plan:
    if kind == "idler":
        cls = _pick(r, ("flagship", "b-stock"))
        cards = 20 + int(r.random() * 13)
        return Plan(cards=cards, card_class=cls, demand_tok_s=_pick(r, (40_000.0, 50_000.0,
                    60_000.0)), shape="jumpy", window=_pick(r, ("day", "week")),
                    evict_share=_pick(r, (0.1, 0.2)), seed=seed)
    if kind == "evictor":
        cls = _pick(r, ("bargain", "flagship", "b-stock"))
        cards = 20 + int(r.random() * 13)
        demand = round(cards * card_class(cls).rated_tok_s * 0.4, -3)
        return Plan(cards=cards, card_class=cls, demand_tok_s=demand, window="hour",
                    evict_share=_pick(r, (0.3, 0.4)), seed=seed)
    if kind == "shortfall":
        cards = 12 + int(r.random() * 13)
        demand = round(cards * 4_500 * _pick(r, (0.75, 0.8, 0.9)), -3)
        return Plan(cards=cards, card_class="bargain", demand_tok_s=demand,
                    window=_pick(r, ("day", "week")), evict_share=_pick(r, (0.1, 0.2)),
                    seed=seed)
    cls = _pick(r, list(CARD_CLASSES))
    cards = 8 + int(r.random() * 17)
    demand = round(cards * card_class(cls).rated_tok_s * _pick(r, (0.35, 0.45, 0.5, 0.6)), -3)
    return Plan(cards=cards, card_class=cls, demand_tok_s=demand,
                headroom=_pick(r, (0.0, 0.05, 0.1, 0.15, 0.2)),
                shape=_pick(r, ("steady", "steady", "lazy", "jumpy")),
                window=_pick(r, ("hour", "day", "week")),
                evict_share=_pick(r, (0.0, 0.1, 0.2, 0.25, 0.3)), seed=seed)


_WANTED = {"idler": ("101",), "evictor": ("110",), "shortfall": ("011",),
           "random": ("111", "011", "101", "110")}


def _month_for(n: int) -> tuple[str, Month]:
    r = random.Random(f"schedatrix-drill-{n}")
    kind = _pick(r, _KINDS)
    base = _plan_for(kind, r, int(r.random() * 1_000_000))
    for step in range(_SEARCH):
        month = simulate(base.with_knobs(seed=(base.seed + step) % 2**63))
        if month.signature in _WANTED[kind]:
            return kind, month
    return kind, month  # pragma: no cover - every kind is found well within the search


# ---------------------------------------------------------------------------- the questions


def _window_text(plan: Plan) -> str:
    return plan.window if isinstance(plan.window, str) else f"{plan.window_hours:g}-hour"


def _facts(m: Month) -> tuple[str, ...]:
    p, cls = m.plan, m.card_class
    shape = {"steady": f"steady with {p.headroom:.0%} headroom", "lazy": "lazy",
             "jumpy": "jumpy"}[p.shape]
    return (
        f"Pool: {p.cards} {cls.label} cards, {cls.rated_tok_s:,.0f} tok/s rated, "
        f"${cls.rent_per_month:,.0f} a month each.",
        f"Demand: {p.demand_tok_s:,.0f} tok/s on average, {shape}.",
        f"Score: {_window_text(p)} window, {p.evict_share:.0%} of the pool evicted.",
    )


def _questions(m: Month, r: random.Random) -> tuple[Question, ...]:
    cls = m.card_class
    rent = cls.rent_per_month
    fee = CHURN_FEE_SHARE * rent
    bill = Question(
        "bill",
        f"The run set keeps {m.warm} cards warm and the score evicted {m.evicted}. What is "
        "the month's bill, in dollars?",
        m.bill, "money",
        f"{m.warm} x ${rent:,.0f} rent + {m.evicted} x ${fee:,.0f} churn fee (15% of a "
        f"month's rent) = ${m.bill:,.0f}; skipped cards bill nothing.",
        "Warm cards bill their rent in full; each evicted card bills 15% of a month's rent "
        "once; skipped cards bill nothing.",
        tolerance=1.0,
    )
    card = int(r.random() * m.cards)
    true = float(round(m.pool.true_tok_s[card]))  # the rate as the question prints it
    card_score = score(true, rent)
    score_q = Question(
        "score",
        f"Card {card} truly serves {true:,.0f} tok/s. What is its score, in million tokens "
        "per dollar (3 decimals)?",
        card_score, "number",
        f"{true:,.0f} x 2,628,000 s / ${rent:,.0f} / 1,000,000 = {card_score:.3f} "
        f"(the sticker says {cls.sticker_score:.3f}).",
        "Score = tok/s x 2,628,000 seconds in a month / rent / 1,000,000.",
        tolerance=0.0006,  # 3 decimals, rounded either way
    )
    gone = set(m.pool.evicted)
    survivors = sorted((i for i in range(m.cards) if i not in gone),
                       key=lambda i: (-m.pool.measured_tok_s[i], i))
    rates = ", ".join(f"{m.pool.measured_tok_s[i]:,.0f}" for i in survivors)
    rule = {"steady": "average x (1 + headroom)", "lazy": "the average",
            "jumpy": "every survivor, for the burst"}[m.plan.shape]
    if m.plan.shape == "jumpy":
        why = f"jumpy keeps every survivor warm: {len(survivors)} cards."
    elif sum(m.pool.measured_tok_s[i] for i in survivors) < m.target_tok_s:
        why = (f"even all {len(survivors)} survivors read short of {m.target_tok_s:,.0f} "
               "tok/s, so every one runs.")
    else:
        why = (f"the first {m.warm} measured rates are the shortest prefix summing to at "
               f"least {m.target_tok_s:,.0f} tok/s.")
    run = Question(
        "run_set",
        f"After eviction the survivors read, best first: {rates} tok/s. The run set covers "
        f"{rule}. How many cards run warm?",
        m.warm, "count",
        f"The target is {m.target_tok_s:,.0f} tok/s; {why}",
        "Steady covers average x (1 + headroom), lazy the average, jumpy keeps every "
        "survivor; add measured rates best first until the sum reaches the target.",
    )
    sig = m.signature
    facts = (
        f"delivers {m.delivered_tok_s:,.0f} of {m.demand_tok_s:,.0f} tok/s, the ideal "
        f"operator would bill ${m.ideal_bill:,.0f} (set it against your bill from Q1), and "
        f"{m.wrong_evictions} of {m.evicted} evictions threw out a card at or above the "
        "median"
    )
    reads = (f"unmet {m.unmet_share:.1%} (cap {UNMET_CAP:.0%}), convergence "
             f"{m.convergence:.1%} (floor {CONVERGENCE_FLOOR:.0%}), wrong evictions "
             f"{m.wrong_share:.0%} (cap {WRONG_EVICTION_CAP:.0%})")
    signature = Question(
        "signature",
        f"The month {facts}. What is its signature (capacity, convergence, evictions; "
        "1 = passes)?",
        sig, "signature",
        f"{reads}: {sig}.",
        f"Capacity: unmet at most {UNMET_CAP:.0%}; convergence: ideal / real bill at least "
        f"{CONVERGENCE_FLOOR:.0%}; evictions: at most {WRONG_EVICTION_CAP:.0%} wrong.",
    )
    failing = [c for c, ok in m.checks.items() if not ok]
    if failing:
        accepted = REPAIR_KNOBS[failing[0]]
        explanation = (f"the {failing[0]} check fails; "
                       f"{' or '.join(sorted(accepted))} repairs it.")
        hint = "Find the 0 in the signature: which knob moves that check?"
    else:
        accepted = frozenset({"none"})
        explanation = "a clean month (111): no knob needs turning."
        hint = "Every check passes: does any knob need turning?"
    knob = Question(
        "knob",
        "Which knob repairs the failing check? (cards, card_class, shape, window, "
        "evict_share, or none)",
        sorted(accepted)[0], "knob", explanation[0].upper() + explanation[1:], hint,
        accepted=frozenset(accepted),
    )
    return bill, score_q, run, signature, knob


def drill(n: int) -> Drill:
    """Drill number ``n`` (a whole number >= 0): the same month and questions everywhere."""
    if not (isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 10**9):
        raise InputError(f"n must be a whole number from 0 to 999,999,999, got {n!r}")
    kind, month = _month_for(n)
    r = random.Random(f"schedatrix-drill-{n}-questions")
    return Drill(n, kind, month, _facts(month), _questions(month, r))


def drill_set(first: int = 1, count: int = 5) -> list[Drill]:
    """Drills ``first``, ``first + 1``, ... (``count`` of them, 1 to 1,000)."""
    if not (isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= 1000):
        raise InputError(f"count must be a whole number from 1 to 1000, got {count!r}")
    return [drill(first + i) for i in range(count)]


def format_drill_set(drills: list[Drill], answers: bool = False) -> str:
    """A printable set: the drills, then (if ``answers``) the answer key."""
    parts = [d.text() for d in drills]
    if answers:
        parts.append("ANSWER KEY")
        parts += [d.text(answers=True) for d in drills]
    return "\n\n".join(parts) + "\n"


def _run(args) -> int:
    if args.first < 0:
        raise InputError(f"--first must be a whole number >= 0, got {args.first}")
    print(format_drill_set(drill_set(args.first, args.count), answers=args.answers), end="")
    return 0


def add_drills_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``drills``: print a set of interview drills (and with ``--answers``, the key)."""
    p = subparsers.add_parser(
        "drills",
        help="print a set of interview drills (same numbers, same drills, everywhere)",
        description="Print drills FIRST .. FIRST+COUNT-1: a month each and five questions "
        "(bill, card score, run-set size, signature, repairing knob). --answers appends the "
        "answer key.",
    )
    p.add_argument("--first", type=int, default=1, help="first drill number (default 1)")
    p.add_argument("--count", type=int, default=5, help="how many drills (default 5)")
    p.add_argument("--answers", action="store_true", help="append the answer key")
    p.set_defaults(func=_run)
    return p
