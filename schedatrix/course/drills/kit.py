"""What the fleet and the serving drills share: answer words found in typed text, one weighted
draw among clash-free sets of question kinds, and a printable set with its answer key."""

from __future__ import annotations

import random
import re

__all__ = ["find_words", "draw_kinds", "format_drill_set"]


def find_words(text: str, table: dict[str, str], digits: bool = False) -> set[str]:
    """The meanings (``table``'s values) of the spellings (its keys) found as whole words in
    a typed answer, longest spelling first, each stretch of text used once; letters, ``_``,
    ``-`` and (with ``digits``) digits count, anything else separates words."""
    kept = r"[^a-z0-9_ -]" if digits else r"[^a-z_ -]"
    text = " " + re.sub(kept, " ", str(text).lower()) + " "
    found = set()
    for spelling in sorted(table, key=len, reverse=True):
        pattern = r"(?<![a-z_])" + re.escape(spelling) + r"(?![a-z_])"
        if re.search(pattern, text):
            found.add(table[spelling])
            text = re.sub(pattern, " ", text)
    return found


def draw_kinds(sets: list[tuple[str, ...]], order: list[str], weight: dict[str, float],
               r: random.Random) -> list[str]:
    """One of ``sets`` (clash-free sets of kinds, all of one size), drawn kind by kind: each
    next kind among those that can still end in a set, by its ``weight``, candidates in
    ``order``; then shuffled (the order asked is not the order drawn)."""
    chosen: list[str] = []
    while len(chosen) < len(sets[0]):
        open_sets = [ids for ids in sets if set(chosen) <= set(ids)]
        nexts = sorted({k for ids in open_sets for k in ids} - set(chosen), key=order.index)
        pick = r.random() * sum(weight[k] for k in nexts)
        for k in nexts:
            pick -= weight[k]
            if pick < 0 or k == nexts[-1]:
                chosen.append(k)
                break
    r.shuffle(chosen)
    return chosen


def format_drill_set(drills: list, answers: bool = False) -> str:
    """A printable set: the drills, then (if ``answers``) the answer key (any drills with
    ``text(answers=...)``: the fleet's or the serving ones)."""
    parts = [d.text() for d in drills]
    if answers:
        parts.append("ANSWER KEY")
        parts += [d.text(answers=True) for d in drills]
    return "\n\n".join(parts) + "\n"
