"""The exercises the package knows: each one's check cells, in order, and what they may not call.

This registry, not a folder a student can write, is what grading trusts: a notebook named
``01_score.ipynb`` must hold exactly the check cells registered for ``01_score``, unchanged,
with their tags, in their order; a notebook of an unregistered name is "unknown exercise".
``make-exercises`` refuses a solution notebook whose check cells differ from the registry.

To add an exercise: write its check in :mod:`~schedatrix.classroom.checking.checks`, add the check
cell's function to :mod:`~schedatrix.classroom.grading`, register both here, and put the
generated check cell (:attr:`Check.cell_source`, tagged ``nbval-check-output``) in the
solution notebook (docs/grading.md walks through it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHECK_TAG", "KERNEL", "EXERCISE_KEY", "Check", "Exercise", "EXERCISES", "CHECKS",
           "exercise_of", "is_exercise_notebook", "template_problem"]

#: The tag every check cell carries (nbval compares its output under ``--nbval-lax``).
CHECK_TAG = "nbval-check-output"
#: The one kernel the exercises run on.
KERNEL = "python3"
#: Notebook metadata that marks a student copy as an exercise (a lesson may share its name).
EXERCISE_KEY = "schedatrix"


@dataclass(frozen=True)
class Check:
    """One check cell: ``from schedatrix.classroom.grading import <name>`` then a call.

    ``functions`` are the learner's functions the cell hands over, in order (also the names
    the check calls them by); ``answers`` are the library's own answers to the exercise, as
    ``"module:function"``, which refuse to run while the check calls the learner's code.
    """

    name: str
    functions: tuple[str, ...]
    answers: tuple[str, ...] = ()

    @property
    def cell_source(self) -> str:
        """The check cell's exact source."""
        call = f"{self.name}({', '.join(self.functions)})"
        return f"from schedatrix.classroom.grading import {self.name}\n\n{call}"


@dataclass(frozen=True)
class Exercise:
    """An exercise notebook (``<name>.ipynb``) and its check cells, in order."""

    name: str
    title: str
    checks: tuple[Check, ...]


#: The library's answers to the month's arithmetic (exercises 5 and 6 ask for them by hand).
_FLEET_MONTH = (
    "schedatrix.fleet.eviction:evict_worst", "schedatrix.fleet.eviction:evict_count",
    "schedatrix.fleet.run_set:greedy_run_set", "schedatrix.fleet.run_set:shape_target",
    "schedatrix.fleet.bill:run_rent", "schedatrix.fleet.bill:churn_fees",
    "schedatrix.fleet.bill:delivered_tok_s", "schedatrix.fleet.bill:idle_bill",
    "schedatrix.fleet.bill:mtok_per_dollar", "schedatrix.fleet.figures:month_figures",
    "schedatrix.fleet.month:simulate", "schedatrix.fleet.reference:run_month",
    "schedatrix.fleet.reference:_covering_prefix", "schedatrix.fleet.cover:greedy_cover",
    "schedatrix.fleet.cover:cheapest_cover", "schedatrix.fleet.engine:simulate_many",
)
#: The library's other functions that compute a run set from a pool's rates: the answer to
#: exercise 2 under other names (greedy_cover by score with equal rents ranks as by rate).
_RUN_SET = ("schedatrix.fleet.run_set:greedy_run_set", "schedatrix.fleet.cover:greedy_cover",
            "schedatrix.fleet.cover:cheapest_cover", "schedatrix.fleet.reference:_covering_prefix")
#: The library's ways to a model's KV bytes per token (exercise 8 asks for it by hand).
_KV_BYTES = ("schedatrix.serving.perf.catalog:ModelShape.kv_bytes_per_token_in",
             "schedatrix.serving.perf.shard:LayerShard.kv_bytes_per_token",
             "schedatrix.serving.perf.model:PerfModel.kv_bytes_per_token_per_gpu")

#: The library's Pollaczek-Khinchine (exercise 13 asks for it, and for its inverse).
_PK = ("schedatrix.serving.studies.queueing:mg1",)
#: The library's weight reads of a decode step, and the experts a batch touches (exercise 14).
_WEIGHT_READS = ("schedatrix.serving.perf.model:PerfModel.weight_bytes_read",
                 "schedatrix.serving.perf.moe:expected_experts")

EXERCISES: dict[str, Exercise] = {e.name: e for e in (
    Exercise("01_score", "the score of one card", (
        Check("check_score", ("score_card",), ("schedatrix.fleet.score:score",
                                               "schedatrix.fleet.bill:mtok_per_dollar")),
    )),
    Exercise("02_run_set", "the whole-card greedy", (
        Check("check_run_set", ("greedy_run_set",), _RUN_SET),
    )),
    Exercise("03_eviction", "eviction, and judging it", (
        Check("check_eviction", ("evict_worst", "wrong_evictions"),
              ("schedatrix.fleet.eviction:evict_worst", "schedatrix.fleet.eviction:evict_count",
               "schedatrix.fleet.eviction:wrong_evictions",
               "schedatrix.fleet.engine:_sort_by_measured")),
    )),
    Exercise("04_famous_months", "the famous months as incident drills", (
        Check("check_famous_months", ("diagnose", "fix"),
              ("schedatrix.classroom.checking.checks:expected_diagnosis",)),
    )),
    Exercise("05_month", "the whole month by hand", (
        Check("check_month", ("month_figures",), _FLEET_MONTH),
    )),
    Exercise("06_ideal", "the ideal operator and the three checks", (
        Check("check_ideal", ("ideal_operator",), _FLEET_MONTH),
        Check("check_signature", ("signature",), tuple(
            f"schedatrix.fleet.checks:{f}" for f in (
                "signature", "check_capacity", "check_convergence", "check_evictions",
                "unmet_share", "wrong_share")) + ("schedatrix.fleet.figures:month_figures",)),
    )),
    Exercise("07_eviction_odds", "the window, the Wilson interval and a Monte Carlo", (
        Check("check_window", ("measured_rate",),
              ("schedatrix.fleet.window:measured_tok_s", "schedatrix.fleet.window:error_bound",
               "schedatrix.fleet.window:dip_chance", "schedatrix.fleet.window:dip_cost")),
        Check("check_wilson", ("wilson_interval",)),
        Check("check_eviction_odds", ("eviction_fail_chance",), (
            "schedatrix.fleet.odds:check_odds", "schedatrix.fleet.engine:simulate_many",
            "schedatrix.fleet.engine:draw_pools",
            "schedatrix.fleet.eviction_odds:closed_form",
            "schedatrix.fleet.eviction_odds:odds_table", "schedatrix.fleet.month:simulate",
            "schedatrix.fleet.reference:run_month", "schedatrix.fleet.window:measured_tok_s")),
    )),
    Exercise("08_kv_capacity", "KV cache capacity and the largest batch", (
        Check("check_kv_capacity", ("kv_bytes_per_token", "kv_capacity_tokens"),
              ("schedatrix.serving.perf.model:PerfModel.kv_capacity_tokens", *_KV_BYTES)),
        Check("check_largest_batch", ("largest_batch",),
              ("schedatrix.serving.replica.kv_cache:largest_batch",)),
        Check("check_smallest_tp", ("smallest_tp",),
              ("schedatrix.serving.perf.model:PerfModel.kv_capacity_tokens",
               "schedatrix.serving.replica.kv_cache:largest_batch", *_KV_BYTES)),
    )),
    Exercise("09_decode_step", "a decode step by the roofline", (
        Check("check_decode_step", ("decode_step_s",),
              ("schedatrix.serving.perf.model:PerfModel.iteration_s",
               "schedatrix.serving.perf.model:PerfModel.decode_line",
               "schedatrix.classroom.checking.checks_serving:roofline_decode_s")),
        Check("check_tp_for_tpot", ("tp_for_tpot",),
              ("schedatrix.classroom.checking.checks_serving:roofline_decode_s",
               "schedatrix.classroom.checking.checks_serving:tp_for_tpot_roofline")),
    )),
    Exercise("10_request_log", "TTFT, ITL, TPOT and goodput from an event log", (
        Check("check_log_figures", ("log_figures",),
              ("schedatrix.serving.figures.metrics:figures",
               "schedatrix.serving.figures.metrics:gap_quantiles")),
    )),
    Exercise("11_recovery", "a recovery rule designed against the paired baseline", (
        Check("check_recovery", ("recovery_s",),
              ("schedatrix.serving.figures.recovery:paired_recovery_from_series",
               "schedatrix.serving.figures.recovery:within_margin",
               "schedatrix.serving.figures.recovery:_first_held",
               "schedatrix.serving.figures.recovery:paired_recovery",
               "schedatrix.serving.figures.recovery:recovery_from_series",
               "schedatrix.serving.figures.recovery:recovery_time")),
    )),
    Exercise("12_router", "a router graded on a prefix-heavy load", (
        Check("check_router", ("choose",),
              ("schedatrix.serving.cluster.routing:PrefixAware.choose",
               "schedatrix.serving.cluster.routing:SessionAffinity.choose")),
    )),
    Exercise("13_queueing", "the mean wait by Pollaczek-Khinchine, then the simulator", (
        Check("check_pk_wait", ("pk_wait_s",), _PK),
        Check("check_max_rate", ("max_rate_rps",), _PK),
    )),
    Exercise("14_sizing", "FP8 and mixture-of-experts weight reads, and the batch a TPOT allows", (
        Check("check_weight_reads", ("decode_weight_bytes",), _WEIGHT_READS),
        Check("check_batch_for_tpot", ("largest_batch_for_tpot",), _WEIGHT_READS + (
            "schedatrix.classroom.checking.checks_sizing:roofline_batch_for_tpot",
            "schedatrix.classroom.checking.checks_sizing:roofline_step_s")),
    )),
)}

#: Every check by name.
CHECKS: dict[str, Check] = {c.name: c for e in EXERCISES.values() for c in e.checks}


def exercise_of(name: str) -> Exercise | None:
    """The registered exercise for a notebook name (``01_score`` or ``01_score.ipynb``)."""
    return EXERCISES.get(name[:-6] if name.endswith(".ipynb") else name)


def is_exercise_notebook(nb, exercise: Exercise) -> bool:
    """Whether a notebook of an exercise's name is that exercise (its student copy carries the
    mark, a solution holds a check cell), not a lesson that shares the name."""
    mark = (nb.get("metadata") or {}).get(EXERCISE_KEY)
    if isinstance(mark, dict) and mark.get("exercise") == exercise.name:
        return True
    sources = {c.cell_source for c in exercise.checks}
    return any(cell.get("cell_type") == "code" and _source(cell).strip() in sources
               for cell in nb.cells)


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _tags(cell) -> list:
    tags = (cell.get("metadata") or {}).get("tags", [])
    return tags if isinstance(tags, list) else [tags]


def template_problem(nb, exercise: Exercise) -> str:
    """What breaks the exercise's template in a notebook (``""`` when nothing does).

    The notebook must hold each registered check cell once, as a code cell with the exact
    source and exactly the tag ``nbval-check-output``, in the registered order; and run on
    the ``python3`` kernel. The learner may add any cells of their own around them.
    """
    kernel = ((nb.get("metadata") or {}).get("kernelspec") or {}).get("name", KERNEL)
    if kernel != KERNEL:
        return f"unknown kernel {kernel!r}: the exercises run on the {KERNEL} kernel"
    wanted = {c.cell_source: c for c in exercise.checks}
    found = []
    for cell in nb.cells:
        source = _source(cell)
        if cell.get("cell_type") == "code" and source.strip() in wanted:
            found.append((wanted[source.strip()], _tags(cell)))
    for check in exercise.checks:
        call = check.cell_source.splitlines()[-1]
        copies = [tags for c, tags in found if c == check]
        if not copies:
            return f"check cell changed or removed: keep `{call}` as it was"
        if len(copies) > 1:
            return f"check cell `{call}` appears {len(copies)} times: keep the one cell"
        if copies[0] != [CHECK_TAG]:
            return (f"check cell `{call}` has the tags {copies[0]}: keep only "
                    f"[{CHECK_TAG!r}]")
    if [c for c, _ in found] != list(exercise.checks):
        return "check cells out of order: keep them in the order of the exercise"
    return ""
