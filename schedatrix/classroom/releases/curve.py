"""The serving exercises' difficulty curve: what each asks, the lesson it follows, about how long.

One table, in the order of difficulty (not of the numbers), printed in the release's README
for students and in the repository's README (a test keeps the two the same). The times are
the authors' estimates for a learner who has done the lesson, not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Step", "SERVING_CURVE", "curve_table"]


@dataclass(frozen=True)
class Step:
    """One exercise on the curve."""

    exercise: str   # the notebook's name, e.g. "08_kv_capacity"
    lesson: str     # the lesson (and sections) it follows
    asks: str       # what the learner writes and decides
    minutes: int    # about how long, an estimate


#: The serving exercises, easiest first: arithmetic from the catalog, then definitions to apply
#: exactly, then a formula to turn round and hold beside the simulator, then sizing where the
#: bytes depend on the batch, then rules and policies to design, judged by the run they make.
SERVING_CURVE: tuple[Step, ...] = (
    Step("08_kv_capacity", "08 (section 4)",
         "KV bytes per token, a replica's KV capacity, the largest batch in whole blocks; then "
         "the smallest TP that holds a service's batch", 30),
    Step("09_decode_step", "08 (sections 1 to 3); 09 (section 2)",
         "a decode step by the roofline, held beside the calibrated model; then the TP a TPOT "
         "SLO needs by it", 30),
    Step("10_request_log", "07 (its opening, section 6)",
         "TTFT, ITL, TPOT and goodput from an event log, exactly as a serving benchmark "
         "defines them", 45),
    Step("13_queueing", "07 (section 7)",
         "the mean wait by Pollaczek-Khinchine, then the formula turned round (the rate a wait "
         "target allows); then the simulator beside it, and why batching breaks it", 45),
    Step("14_sizing", "13 (sections 2, 3); exercise 9",
         "the weights a decode step reads in FP8 and with a mixture of experts; then the "
         "largest batch a TPOT SLO and the KV cache allow, beside the calibrated model", 60),
    Step("11_recovery", "11 (sections 1 to 4)",
         "a rule of your own design, from seven stated requirements, that says when a fleet "
         "has recovered from a fault, graded on drawn and simulated faults", 60),
    Step("12_router", "10 (sections 1 to 3)",
         "a routing policy of your own design, graded by the run it routes on a prefix-heavy "
         "load against three targets", 60),
)


def curve_table() -> str:
    """The curve as a Markdown table, easiest first."""
    rows = ["| step | exercise | follows lesson | you write | about |",
            "|---|---|---|---|---|"]
    rows += [f"| {k} | `{s.exercise}` | {s.lesson} | {s.asks} | {s.minutes} min |"
             for k, s in enumerate(SERVING_CURVE, start=1)]
    return "\n".join(rows)
