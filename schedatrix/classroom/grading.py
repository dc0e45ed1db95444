"""Check cells: what a learner's notebook calls to check its functions.

These run in the learner's kernel, so they hold no checking code: each one hands the
learner's functions to :func:`run_check`, which opens a channel to a checker in another
process and prints its one line on a pass, or raises its ``AssertionError`` (naming the input,
what came back and what was expected) or the stub's ``NotImplementedError``. In JupyterLab
(and plain ``pytest --nbval-lax``) that checker calls the learner's functions across the
boundary (:mod:`~schedatrix.classroom.checking.boundary`): feedback, as the kernel can undo anything
in itself. Under ``schedatrix grade`` the check cell only names its check and prints the verdict the
grader's own evaluation already reached (:mod:`~schedatrix.classroom.grader.evaluation`): what a
check cell prints there is never evidence. The checks themselves are in
:mod:`~schedatrix.classroom.checking.checks`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..text import wrap
from .checking.boundary import connect, serve_check
from .checking.exercises import CHECKS

__all__ = ["run_check", "check_score", "check_run_set", "check_eviction", "check_famous_months",
           "check_month", "check_ideal", "check_signature", "check_window", "check_wilson",
           "check_eviction_odds", "check_kv_capacity", "check_largest_batch",
           "check_smallest_tp", "check_decode_step", "check_tp_for_tpot", "check_log_figures",
           "check_recovery", "check_router", "check_pk_wait", "check_max_rate",
           "check_weight_reads", "check_batch_for_tpot"]

_ERRORS = {"AssertionError": AssertionError, "NotImplementedError": NotImplementedError}


def run_check(name: str, **functions: Callable) -> None:
    """Run the registered check ``name`` on the learner's ``functions`` in a checker process.

    Prints the checker's line on a pass (wrapped at spaces to fit the output area); raises its
    ``AssertionError`` or ``NotImplementedError`` on a fail (``RuntimeError`` when the checker
    itself broke down).
    """
    __tracebackhide__ = True  # IPython shows the learner the check cell, not this plumbing
    check = CHECKS[name]
    with connect() as channel:
        verdict, raised = serve_check(channel, name, functions, check.answers)
    message = str(verdict.get("message", ""))
    if verdict.get("verdict") == "pass":
        print(wrap(message))
        return
    error = _ERRORS.get(str(verdict.get("error")), RuntimeError)
    if error is NotImplementedError and isinstance(raised, NotImplementedError):
        raise raised  # the learner's own stub, with its line in the traceback
    raise error(message) from (raised if error is AssertionError else None)


def check_score(score_card: Callable) -> None:
    """Challenge 1: ``score_card(true_tok_s, rent_per_month)`` in million tokens per dollar."""
    __tracebackhide__ = True
    run_check("check_score", score_card=score_card)


def check_run_set(greedy_run_set: Callable) -> None:
    """Challenge 2: ``greedy_run_set(rates_tok_s, target_tok_s)``, the whole-card greedy."""
    __tracebackhide__ = True
    run_check("check_run_set", greedy_run_set=greedy_run_set)


def check_eviction(evict_worst: Callable, wrong_evictions: Callable) -> None:
    """Challenge 3: ``evict_worst(scores, share)`` and ``wrong_evictions(true_tok_s, evicted)``."""
    __tracebackhide__ = True
    run_check("check_eviction", evict_worst=evict_worst, wrong_evictions=wrong_evictions)


def check_famous_months(diagnose: Callable, fix: Callable) -> None:
    """The famous months: ``diagnose(month)`` and ``fix(plan)``."""
    __tracebackhide__ = True
    run_check("check_famous_months", diagnose=diagnose, fix=fix)


def check_month(month_figures: Callable) -> None:
    """Exercise 5: ``month_figures(true_tok_s, measured_tok_s, knobs)``, the whole month."""
    __tracebackhide__ = True
    run_check("check_month", month_figures=month_figures)


def check_ideal(ideal_operator: Callable) -> None:
    """Exercise 6: ``ideal_operator(true_tok_s, knobs)``."""
    __tracebackhide__ = True
    run_check("check_ideal", ideal_operator=ideal_operator)


def check_signature(signature: Callable) -> None:
    """Exercise 6: ``signature(figures)``, the three checks' digits."""
    __tracebackhide__ = True
    run_check("check_signature", signature=signature)


def check_window(measured_rate: Callable) -> None:
    """Exercise 7: ``measured_rate(true_tok_s, misread, dip_draw, hours, dip_depth)``."""
    __tracebackhide__ = True
    run_check("check_window", measured_rate=measured_rate)


def check_wilson(wilson_interval: Callable) -> None:
    """Exercise 7: ``wilson_interval(successes, trials, z)``."""
    __tracebackhide__ = True
    run_check("check_wilson", wilson_interval=wilson_interval)


def check_eviction_odds(eviction_fail_chance: Callable) -> None:
    """Exercise 7: ``eviction_fail_chance(card, cards, hours, evict_share, months, seed)``."""
    __tracebackhide__ = True
    run_check("check_eviction_odds", eviction_fail_chance=eviction_fail_chance)


def check_kv_capacity(kv_bytes_per_token: Callable, kv_capacity_tokens: Callable) -> None:
    """Exercise 8: ``kv_bytes_per_token(model)`` and ``kv_capacity_tokens(model, gpu, tp,
    usable_share, reserve_gb)``."""
    __tracebackhide__ = True
    run_check("check_kv_capacity", kv_bytes_per_token=kv_bytes_per_token,
              kv_capacity_tokens=kv_capacity_tokens)


def check_largest_batch(largest_batch: Callable) -> None:
    """Exercise 8: ``largest_batch(capacity_tokens, prompt_tokens, output_tokens,
    block_tokens, max_batch)``."""
    __tracebackhide__ = True
    run_check("check_largest_batch", largest_batch=largest_batch)


def check_smallest_tp(smallest_tp: Callable) -> None:
    """Exercise 8: ``smallest_tp(model, gpu, prompt_tokens, output_tokens, batch,
    block_tokens)``."""
    __tracebackhide__ = True
    run_check("check_smallest_tp", smallest_tp=smallest_tp)


def check_tp_for_tpot(tp_for_tpot: Callable) -> None:
    """Exercise 9: ``tp_for_tpot(model, gpu, batch, context_tokens, tpot_slo_s, hbm_share)``."""
    __tracebackhide__ = True
    run_check("check_tp_for_tpot", tp_for_tpot=tp_for_tpot)


def check_decode_step(decode_step_s: Callable) -> None:
    """Exercise 9: ``decode_step_s(model, gpu, batch, context_tokens, hbm_share)``."""
    __tracebackhide__ = True
    run_check("check_decode_step", decode_step_s=decode_step_s)


def check_log_figures(log_figures: Callable) -> None:
    """Exercise 10: ``log_figures(events, ttft_slo_s, tpot_slo_s)``."""
    __tracebackhide__ = True
    run_check("check_log_figures", log_figures=log_figures)


def check_recovery(recovery_s: Callable) -> None:
    """Exercise 11: ``recovery_s(windows)``, a recovery rule of your design against the paired
    baseline, held to the exercise's requirements."""
    __tracebackhide__ = True
    run_check("check_recovery", recovery_s=recovery_s)


def check_router(choose: Callable) -> None:
    """Exercise 12: ``choose(request, replicas)``, graded by the run it routes."""
    __tracebackhide__ = True
    run_check("check_router", choose=choose)


def check_pk_wait(pk_wait_s: Callable) -> None:
    """Exercise 13: ``pk_wait_s(rate_rps, service_s)``, by Pollaczek-Khinchine."""
    __tracebackhide__ = True
    run_check("check_pk_wait", pk_wait_s=pk_wait_s)


def check_max_rate(max_rate_rps: Callable) -> None:
    """Exercise 13: ``max_rate_rps(service_s, mean_wait_s)``."""
    __tracebackhide__ = True
    run_check("check_max_rate", max_rate_rps=max_rate_rps)


def check_weight_reads(decode_weight_bytes: Callable) -> None:
    """Exercise 14: ``decode_weight_bytes(model, dtype, batch)``."""
    __tracebackhide__ = True
    run_check("check_weight_reads", decode_weight_bytes=decode_weight_bytes)


def check_batch_for_tpot(largest_batch_for_tpot: Callable) -> None:
    """Exercise 14: ``largest_batch_for_tpot(model, gpu, dtype, tp, context_tokens, tpot_slo_s,
    hbm_share, kv_capacity_tokens)``."""
    __tracebackhide__ = True
    run_check("check_batch_for_tpot", largest_batch_for_tpot=largest_batch_for_tpot)
