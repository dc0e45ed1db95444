"""Interview drills: drill number n is the same month and the same questions for everyone.

``drill(n)`` draws everything from generators seeded by ``n`` (Python's ``random.Random``
seeded with a string, using only ``random()``, whose sequence Python keeps stable across
versions and machines). The month is one of four kinds, equally often: a clean month (111),
a golden idler (101), a noise evictor (110) or a shortfall (011), so the answers about checks
and incidents are balanced. Five questions are drawn, in a random order, from the bank of
question kinds in :mod:`schedatrix.course.drills.fleet_bank` (the score, floor(share x N), the
median test, wrong evictions at the month's share and at another, the run set and the run set under
another shape, the ideal operator's run set, the idle bill, the bill, convergence, the failing check
and its knob, reading a signature), never two where one gives away the other's answer: no prompt,
fact or worked explanation of a drill prints another question's answer. At most
:data:`MAX_LOOKUPS` of the five are lookups, where the month allows a set of five with so few.

Each drill prints its number and its lottery seed; ``schedatrix month`` with the drill's
knobs (the answer key prints the command) replays its month.

``Drill.check(question_id, answer)`` grades a typed answer and returns ``(ok, feedback)``;
``drill_kit.format_drill_set`` prints a set for an instructor, with or without its answer key
(``schedatrix drills``: :mod:`.drills_cli`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from itertools import combinations

from ...errors import InputError
from ...fleet.cards import CARD_CLASSES, card_class
from ...fleet.month import Month, simulate
from ...fleet.plan import Plan
from ...text import wrap, wrap_command
from .fleet_bank import KINDS, LOOKUPS
from .kit import draw_kinds, find_words, format_drill_set
from .question import Question, by_id

__all__ = ["Question", "Drill", "QUESTION_KINDS", "KNOB_NAMES", "MONTH_KINDS", "PER_DRILL",
           "MAX_LOOKUPS", "drill", "drill_set", "format_drill_set", "number_tokens", "leaks"]

#: The bank's question kinds, by id.
QUESTION_KINDS = tuple(KINDS)
#: Questions per drill.
PER_DRILL = 5
#: At most this many of a drill's questions are lookups (``drill_bank.LOOKUPS``: the score,
#: floor(share x N), the median test, reading a signature), where the month allows a set of
#: five with so few; the rest work a month's step through.
MAX_LOOKUPS = 2
#: The month each drill is built on, by the signature it must show.
MONTH_KINDS = {"clean": "111", "idler": "101", "evictor": "110", "shortfall": "011"}
#: Answers accepted for each knob, by spelling.
KNOB_NAMES = {
    "cards": "cards", "card count": "cards", "count": "cards", "card_count": "cards",
    "number of cards": "cards", "more cards": "cards", "fewer cards": "cards",
    "card_class": "card_class", "card class": "card_class", "class": "card_class",
    "shape": "shape", "demand shape": "shape", "demand_shape": "shape", "steady": "shape",
    "window": "window", "score window": "window", "score_window": "window",
    "evict_share": "evict_share", "eviction share": "evict_share", "share": "evict_share",
    "eviction_share": "evict_share", "evict share": "evict_share", "evict-share": "evict_share",
}
_NONE_WORDS = ("none", "nothing", "no check", "clean", "no knob", "all pass")
_CHECK_WORDS = {"capacity": "capacity", "convergence": "convergence", "converge": "convergence",
                "evictions": "evictions", "eviction": "evictions"}
_INCIDENT_WORDS = {"clean": "clean", "idler": "golden idler", "evictor": "noise evictor",
                   "shortfall": "shortfall", "short": "shortfall"}
_SEARCH = 400  # seeds tried for a month of the wanted kind
#: How strongly each kind is drawn when it can still be: kinds that clash with many others
#: (or that few months can pose) weigh more, so every kind is asked in a fair share of drills
#: (tests/test_drills.py measures the shares).
_DRAW_WEIGHT = {"score": 0.05, "evictions": 0.1, "median_test": 0.035, "wrong_evictions": 10.0,
                "wrong_at_share": 0.9, "run_set": 24.0, "run_set_shape": 0.12, "ideal_run": 3.4,
                "idle_bill": 17.0, "bill": 2.7, "convergence": 4.2, "failing_check": 16.0,
                "signature_reading": 0.27}


@dataclass(frozen=True)
class Drill:
    """Drill number ``number``: a month of one kind, the facts a learner is given, and five
    questions drawn from the bank."""

    number: int
    kind: str
    month: Month
    facts: tuple[str, ...]
    questions: tuple[Question, ...]

    @property
    def plan(self) -> Plan:
        return self.month.plan

    @property
    def seed(self) -> int:
        """The month's lottery seed (with the knobs in the facts, it replays the month)."""
        return self.plan.seed

    @property
    def header(self) -> str:
        return f"Drill {self.number} (lottery seed {self.seed})"

    @property
    def replay(self) -> str:
        """The command line that replays this drill's month."""
        p = self.plan
        return (f"schedatrix month --cards {p.cards} --card-class {p.card_class} --demand "
                f"{p.demand_tok_s:.0f} --headroom {100 * p.headroom:g} --shape {p.shape} "
                f"--window {p.window} --evict-share {100 * p.evict_share:g} --seed {p.seed}")

    def question(self, question_id: str) -> Question:
        return by_id(self.questions, question_id)

    def check(self, question_id: str, answer) -> tuple[bool, str]:
        """Grade a typed answer: ``(ok, feedback)``. A wrong answer's feedback says which way
        to look, never the answer."""
        q = self.question(question_id)
        if answer is None or str(answer).strip() == "":
            return False, "Type an answer first."
        ok, wrong_feedback = _GRADERS[q.grading](q, answer)
        if ok:
            return True, f"Right! {q.explanation}"
        return False, wrong_feedback

    def text(self, answers: bool = False) -> str:
        """The drill as plain text (with its answers, explanations and replay if asked)."""
        lines = [self.header, *[f"  {fact}" for fact in self.facts]]
        for i, q in enumerate(self.questions, start=1):
            lines.append(f"  Q{i} [{q.id}] {q.prompt}")
            if answers:
                lines.append(f"      answer: {q.answer_text}. {q.explanation}")
        text = wrap("\n".join(lines))
        if answers:     # a command to paste: broken with the shell's line continuations
            text += "\n" + wrap_command(f"  replay: {self.replay}")
        return text


# ---------------------------------------------------------------------------- grading


def _parse_number(text) -> float | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text)
    cleaned = re.sub(r"[\s$,_%]|tok/s|cards?|dollars?", "", str(text).lower())
    try:
        return float(cleaned)
    except ValueError:
        return None


def _way(value: float, answer: float, hint: str) -> str:
    return f"Not quite: {'too high' if value > answer else 'too low'}. {hint}"


def _grade_number(q: Question, answer) -> tuple[bool, str]:
    value = _parse_number(answer)
    if value is None:
        return False, f"{answer!r} is not a number: type digits, like 27170."
    if q.grading == "percent" and "%" not in str(answer) and value <= 3:
        value *= 100  # typed as a fraction: 0.957 is 95.7%
    ok = q.within(value)
    return ok, "" if ok else _way(value, q.answer, q.hint)


def _grade_yesno(q: Question, answer) -> tuple[bool, str]:
    word = str(answer).strip().lower()
    if word in ("yes", "y", "wrong", "true"):
        value = True
    elif word in ("no", "n", "right", "false", "not wrong"):
        value = False
    else:
        return False, "Answer yes or no."
    return q.within(value), f"Not quite. {q.hint}"


def _grade_check(q: Question, answer) -> tuple[bool, str]:
    checks = find_words(answer, _CHECK_WORDS)
    knobs = find_words(answer, KNOB_NAMES)
    says_none = bool(find_words(answer, {w: "none" for w in _NONE_WORDS}))
    if q.answer == "none":
        if says_none and q.names_right(checks, knobs):
            return True, ""
        return False, f"Not quite: look at each figure against its cap again. {q.hint}"
    if not checks:
        if says_none:
            return False, f"Not quite: one figure is past its cap. {q.hint}"
        return False, ("Name the failing check (capacity, convergence or evictions) and a knob "
                       "(cards, card_class, shape, window, evict_share), or none.")
    if q.answer not in checks or len(checks) > 1:
        return False, f"Not quite: look again at which figure is past its cap. {q.hint}"
    if not knobs:
        return False, ("The check is right; now name a knob that repairs it (cards, "
                       "card_class, shape, window, evict_share).")
    if q.names_right(checks, knobs):
        return True, ""
    return False, "The check is right, but that knob does not move it: which knob does?"


def _grade_incident(q: Question, answer) -> tuple[bool, str]:
    names = find_words(answer, _INCIDENT_WORDS)
    if not names:
        return False, "Name one: clean, golden idler, noise evictor or shortfall."
    if len(names) == 1 and q.within(next(iter(names))):
        return True, ""
    return False, f"Not quite. {q.hint}"


_GRADERS = {"money": _grade_number, "number": _grade_number, "percent": _grade_number,
            "count": _grade_number, "yesno": _grade_yesno, "check": _grade_check,
            "incident": _grade_incident}


# ---------------------------------------------------------------------------- leaks

_NUMBER = re.compile(r"(\$?)(\d[\d,]*(?:\.\d+)?)(%?)")


def number_tokens(text: str) -> set[tuple[str, float]]:
    """Every number a text prints, with its unit: ``("$", 1170.0)``, ``("%", 20.0)`` or
    ``("", 16.0)``."""
    out = set()
    for dollar, digits, percent in _NUMBER.findall(text):
        value = float(digits.replace(",", "").rstrip("."))
        out.add(("$" if dollar else "%" if percent else "", value))
    return out


def leaks(q: Question, text: str) -> bool:
    """Whether ``text`` prints question ``q``'s answer (a number as the answer would be
    written; a check, signature or incident by name). Yes/no answers cannot be printed."""
    tokens = number_tokens(text)
    lower = text.lower()
    if q.grading == "count":
        return ("", float(q.answer)) in tokens
    if q.grading == "money":
        dollars = float(round(q.answer))
        return ("$", dollars) in tokens or ("", dollars) in tokens
    if q.grading == "number":
        return any(unit == "" and round(v, 3) == round(q.answer, 3) for unit, v in tokens)
    if q.grading == "percent":
        return ("%", round(q.answer, 1)) in tokens
    if q.grading == "check":
        if q.answer == "none":
            return "every check passes" in lower or "111" in text
        return f"{q.answer} check" in lower or f"{q.answer} fails" in lower
    if q.grading == "incident":
        return q.answer != "clean" and q.answer in lower or q.answer == "clean" and (
            "clean month" in lower)
    return False


# ---------------------------------------------------------------------------- the month


def _pick(r: random.Random, options):
    return options[int(r.random() * len(options))]


def _plan_for(kind: str, r: random.Random, seed: int) -> Plan:
    if kind == "idler":
        cls = _pick(r, ("flagship", "b-stock"))
        cards = 20 + int(r.random() * 13)
        # The golden idler asks 60,000 of 32 x 10,000 rated: about a fifth of the rating.
        demand = round(cards * card_class(cls).rated_tok_s * _pick(r, (0.12, 0.15, 0.19)), -3)
        return Plan(cards=cards, card_class=cls, demand_tok_s=demand, shape="jumpy",
                    window=_pick(r, ("hour", "day", "week")),
                    evict_share=_pick(r, (0.1, 0.2, 0.25)), seed=seed)
    if kind == "evictor":
        cls = _pick(r, ("bargain", "flagship", "b-stock"))
        cards = 20 + int(r.random() * 13)
        demand = round(cards * card_class(cls).rated_tok_s * 0.4, -3)
        return Plan(cards=cards, card_class=cls, demand_tok_s=demand, window="hour",
                    shape=_pick(r, ("steady", "lazy")), evict_share=_pick(r, (0.3, 0.4)),
                    seed=seed)
    if kind == "shortfall":
        cards = 12 + int(r.random() * 13)
        demand = round(cards * 4_500 * _pick(r, (0.75, 0.8, 0.9)), -3)
        return Plan(cards=cards, card_class="bargain", demand_tok_s=demand,
                    shape=_pick(r, ("steady", "lazy")), window=_pick(r, ("day", "week")),
                    evict_share=_pick(r, (0.1, 0.2)), seed=seed)
    cls = _pick(r, list(CARD_CLASSES))
    cards = 8 + int(r.random() * 17)
    demand = round(cards * card_class(cls).rated_tok_s * _pick(r, (0.35, 0.45, 0.5, 0.6)), -3)
    return Plan(cards=cards, card_class=cls, demand_tok_s=demand,
                headroom=_pick(r, (0.0, 0.05, 0.1, 0.15, 0.2)),
                shape=_pick(r, ("steady", "steady", "lazy", "jumpy")),
                window=_pick(r, ("hour", "day", "week")),
                evict_share=_pick(r, (0.0, 0.1, 0.2, 0.25, 0.3)), seed=seed)


def _month_for(n: int) -> tuple[str, Month]:
    r = random.Random(f"schedatrix-drill-{n}")
    kind = _pick(r, list(MONTH_KINDS))
    base = _plan_for(kind, r, int(r.random() * 1_000_000))
    for step in range(_SEARCH):
        month = simulate(base.with_knobs(seed=(base.seed + step) % 2**63))
        if month.signature == MONTH_KINDS[kind]:
            return kind, month
    return kind, month  # pragma: no cover - every kind is found well within the search


def _window_text(plan: Plan) -> str:
    return plan.window if isinstance(plan.window, str) else f"{plan.window_hours:g}-hour"


def _facts(m: Month) -> tuple[str, ...]:
    p, cls = m.plan, m.card_class
    shape = {"steady": f"steady with {p.headroom:.0%} headroom", "lazy": "lazy",
             "jumpy": "jumpy (every survivor stays warm for a burst)"}[p.shape]
    return (
        f"Pool: {p.cards} {cls.label} cards, {cls.rated_tok_s:,.0f} tok/s rated, "
        f"${cls.rent_per_month:,.0f} a month each.",
        f"Demand: {p.demand_tok_s:,.0f} tok/s on average, {shape}.",
        f"Score: {_window_text(p)} window, {p.evict_share:.0%} of the pool evicted.",
    )


# ---------------------------------------------------------------------------- the questions


def _questions(m: Month, facts: tuple[str, ...], r: random.Random) -> tuple[Question, ...]:
    """Five questions from the bank, in a random order: kinds are drawn one at a time, by
    their draw weights, among the kinds that can still end in a clash-free set of five this
    month can pose and whose texts print none of the others' answers (the largest such set
    there is, should no set of five fit)."""
    posed = {k: kind.pose(m, r) for k, kind in KINDS.items()}
    text = {k: "\n".join([*facts, q.prompt, q.explanation]) for k, q in posed.items() if q}

    usable = [k for k in KINDS if posed[k] is not None]
    pairs = {(a, b) for a, b in combinations(usable, 2)
             if not (KINDS[a].clashes(KINDS[b]) or leaks(posed[a], text[b])
                     or leaks(posed[b], text[a]))}

    def fits(a: str, b: str) -> bool:
        return (a, b) in pairs

    size = PER_DRILL
    while True:
        sets = [ids for ids in combinations(usable, size)
                if all(fits(a, b) for a, b in combinations(ids, 2))]
        if sets or size == 1:
            break
        size -= 1  # pragma: no cover - the bank always has a set of five for a month
    worked = [ids for ids in sets if len(LOOKUPS.intersection(ids)) <= MAX_LOOKUPS]
    return tuple(posed[k] for k in draw_kinds(worked or sets, list(KINDS), _DRAW_WEIGHT, r))


def drill(n: int) -> Drill:
    """Drill number ``n`` (a whole number from 0 to 999,999,999): the same everywhere."""
    if not (isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 10**9):
        raise InputError(f"n must be a whole number from 0 to 999,999,999, got {n!r}")
    kind, month = _month_for(n)
    facts = _facts(month)
    r = random.Random(f"schedatrix-drill-{n}-questions")
    return Drill(n, kind, month, facts, _questions(month, facts, r))


def drill_set(first: int = 1, count: int = 5) -> list[Drill]:
    """Drills ``first``, ``first + 1``, ... (``count`` of them, 1 to 1,000)."""
    if not (isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= 1000):
        raise InputError(f"count must be a whole number from 1 to 1000, got {count!r}")
    return [drill(first + i) for i in range(count)]
