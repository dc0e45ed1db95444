"""Checks of exercise 13: the mean wait of a one-at-a-time replica by Pollaczek-Khinchine.

The learner's functions see plain data: an arrival rate (requests/s) and a sample of service
times (seconds, a list of floats), or a sample and a target mean wait. The answers are the
library's :func:`~schedatrix.serving.studies.queueing.mg1` on the same sample: its ``wait_s``
for ``pk_wait_s``, and, for ``max_rate_rps``, the wait ``mg1`` gives at the learner's rate,
which must be the target. Cases draw the service-time distribution (every time the same,
exponential, lognormal, uniform, two kinds of request, and the library's own service times of
a replica with ``max_batch=1``), the sample size and the load.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import numpy as np

from ...serving.cluster.deployment import Design
from ...serving.load.workload import Load, generate
from ...serving.studies.queueing import mg1, service_s
from .check_support import DRAWN, RANDOM_SEED, as_number, call, close, drawn, passed

__all__ = ["check_pk_wait", "check_max_rate", "pk_max_rate_rps", "ONE_AT_A_TIME"]

#: The replica whose service times some cases hand over: Llama 3.1 8B on an A100, one
#: request at a time (lesson 07, section 7).
ONE_AT_A_TIME = Design(max_batch=1)
#: How close an answer must be to the library's (relative).
REL = 1e-6
#: The distributions the cases draw service times from.
KINDS = ("fixed", "exponential", "lognormal", "uniform", "two kinds", "replica")


def _sample(rng: np.random.Generator, kind: str, n: int, mean_s: float) -> list[float]:
    """``n`` service times of mean about ``mean_s`` from the distribution ``kind``."""
    if kind == "fixed":
        s = np.full(n, mean_s)
    elif kind == "exponential":
        s = rng.exponential(mean_s, n)
    elif kind == "lognormal":
        sigma = float(rng.uniform(0.3, 1.2))
        s = rng.lognormal(math.log(mean_s) - sigma ** 2 / 2, sigma, n)
    elif kind == "uniform":
        s = rng.uniform(0.2 * mean_s, 1.8 * mean_s, n)
    elif kind == "two kinds":        # short chat turns and long documents
        s = np.where(rng.random(n) < float(rng.uniform(0.6, 0.95)), 0.3 * mean_s, 4 * mean_s)
    else:                             # the library's replica, one request at a time
        req = generate(Load(rate_rps=1.0, input_len=f"lognormal:{int(rng.integers(200, 2000))},"
                            "0.8", output_len=f"lognormal:{int(rng.integers(20, 300))},0.8"),
                       int(rng.integers(0, 2**31)), requests=n)
        s = service_s(ONE_AT_A_TIME, req.input_tokens, req.output_tokens)
    return [float(v) for v in np.maximum(s, 1e-4)]


@cache
def _wait_random(seed: int, what: str = "a random queue", count: int = 30
                 ) -> list[tuple[float, list[float], str]]:
    """(rate, service times, what): every kind of service in turn, loads from light to near
    the wall, and one case in eight past it (rho of 1 or more)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        kind = KINDS[k % len(KINDS)]
        service = _sample(rng, kind, int(rng.integers(20, 400)),
                          float(np.exp(rng.uniform(math.log(0.02), math.log(5.0)))))
        rho = float(rng.uniform(1.0, 1.5)) if k % 8 == 7 else float(rng.uniform(0.05, 0.97))
        out.append((round(rho / float(np.mean(service)), 6), service, f"{what}: {kind}"))
    return out


@cache
def _wait_cases() -> list[tuple[float, list[float], str]]:
    rng = np.random.default_rng(RANDOM_SEED + 13)
    fixed = [
        (5.0, [0.1] * 50, "every service 100 ms, rho 0.5 (M/D/1)"),
        (8.0, [0.05, 0.15] * 20, "two service times, rho 0.8"),
        (0.5, _sample(rng, "exponential", 300, 1.0), "exponential services, rho about 0.5"),
        (0.25, _sample(rng, "replica", 500, 1.0),
         "the library's one-at-a-time replica of Llama 3.1 8B on an A100"),
        (0.5, [2.0, 2.0], "rho exactly 1: no steady state"),
        (1.2, [1.0], "rho 1.2: the queue grows without end"),
        (0.1, [0.5] * 10, "a light load, rho 0.05"),
    ]
    return fixed + _wait_random(RANDOM_SEED + 130)


def _moments(service: list[float]) -> tuple[float, float]:
    s = np.asarray(service, dtype=float)
    return float(s.mean()), float((s * s).mean())


def _wait_hint(rate: float, service: list[float], got: float) -> str:
    """Which likely mistake ``got`` matches."""
    m1, m2 = _moments(service)
    rho = rate * m1
    want = rate * m2 / (2 * (1 - rho))
    n = len(service)
    var1 = float(np.var(service, ddof=1)) if n > 1 else 0.0
    mistakes = (
        (rho * m1 / (2 * (1 - rho)), "E[S^2] is the mean of the squared service times, not the "
                                     "square of the mean: their spread adds to the wait."),
        (want + m1, "That is the time in the system: the wait in the queue ends when the "
                    "service starts."),
        (rate * want, "That is how many wait on average (Little's law): return the wait."),
        (2 * want, "Look at the 2 below the line."),
        (rate * m2 / 2, "Without the 1 - rho below the line there is no wall."),
        (rate * (var1 + m1 * m1) / (2 * (1 - rho)), "E[S^2] here is the sample's own mean of "
                                                    "squares: divide by n, not n - 1."),
        (want * 1e3, "That looks like milliseconds: return seconds."),
    )
    for value, hint in mistakes:
        if close(got, value, rel=REL):
            return hint
    return ("Work out rho = lambda E[S] and E[S^2] for this sample by hand and compare them "
            "with your code's.")


def check_pk_wait(pk_wait_s: Callable) -> str:
    """Exercise 13: ``pk_wait_s(rate_rps, service_s)``: the mean wait in the queue by
    Pollaczek-Khinchine (seconds), or None where rho = lambda E[S] is 1 or more."""
    cases = _wait_cases()
    for rate, service, what in cases + drawn(lambda s: _wait_random(s, DRAWN), 13):
        shown = f"{rate:g}, <{len(service)} service times>"
        got = call("pk_wait_s", pk_wait_s, rate, list(service))
        law = mg1(rate, np.array(service))
        if law.rho >= 1:
            if got is not None:
                raise AssertionError(
                    f"pk_wait_s({shown}) returned {got!r}, expected None ({what}): rho = "
                    f"lambda E[S] = {law.rho:.4g}, so the queue has no steady state and no "
                    "mean wait.")
            continue
        if got is None:
            raise AssertionError(f"pk_wait_s({shown}) returned None, expected {law.wait_s:.6g} s "
                                 f"({what}): rho = {law.rho:.4g} is below 1, so the queue settles.")
        value = as_number("pk_wait_s", shown, got, "a number of seconds, or None")
        if not close(value, law.wait_s, rel=REL):
            raise AssertionError(
                f"pk_wait_s({shown}) returned {value:.6g} s, expected {law.wait_s:.6g} s "
                f"({what}; rho {law.rho:.4g}, E[S] {law.mean_service_s:.4g} s, CV "
                f"{law.service_cv:.3f}). " + _wait_hint(rate, service, value))
    return passed("check_pk_wait", {"fixed queues": 7, "random": len(cases) - 7})


def pk_max_rate_rps(service: list[float], mean_wait_s: float) -> float:
    """The arrival rate at which Pollaczek-Khinchine's mean wait on ``service`` is exactly
    ``mean_wait_s``: solving ``w = lambda E[S^2] / (2 (1 - lambda E[S]))`` for lambda."""
    m1, m2 = _moments(service)
    return 2 * mean_wait_s / (m2 + 2 * mean_wait_s * m1)


@cache
def _rate_random(seed: int, what: str = "a random target", count: int = 24
                 ) -> list[tuple[list[float], float, str]]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        kind = KINDS[k % len(KINDS)]
        mean_s = float(np.exp(rng.uniform(math.log(0.02), math.log(5.0))))
        service = _sample(rng, kind, int(rng.integers(20, 400)), mean_s)
        wait = round(float(np.mean(service)) * float(np.exp(rng.uniform(math.log(0.05),
                                                                        math.log(20.0)))), 6)
        out.append((service, wait, f"{what}: {kind}"))
    return out


@cache
def _rate_cases() -> list[tuple[list[float], float, str]]:
    rng = np.random.default_rng(RANDOM_SEED + 131)
    fixed = [
        ([0.1] * 50, 0.05, "every service 100 ms, a wait of half a service"),
        ([0.05, 0.15] * 20, 0.2, "two service times"),
        (_sample(rng, "replica", 500, 1.0), 2.0,
         "the library's one-at-a-time replica, a 2 s mean wait"),
        (_sample(rng, "two kinds", 200, 0.5), 0.01, "a very short wait: a light load"),
        (_sample(rng, "exponential", 300, 1.0), 30.0, "a long wait: near the wall"),
    ]
    return fixed + _rate_random(RANDOM_SEED + 132)


def check_max_rate(max_rate_rps: Callable) -> str:
    """Exercise 13: ``max_rate_rps(service_s, mean_wait_s)``: the highest Poisson arrival rate
    at which the Pollaczek-Khinchine mean wait on that sample is at most ``mean_wait_s``; the
    library's ``mg1`` at the answer's rate must wait the target (to a millionth)."""
    cases = _rate_cases()
    for service, wait, what in cases + drawn(lambda s: _rate_random(s, DRAWN), 131):
        shown = f"<{len(service)} service times>, {wait:g}"
        got = as_number("max_rate_rps", shown,
                        call("max_rate_rps", max_rate_rps, list(service), wait),
                        "a rate in requests per second")
        want = pk_max_rate_rps(service, wait)
        m1, m2 = _moments(service)
        if got <= 0 or got * m1 >= 1:
            hint = ("1 / E[S] is the rate at which the wait is infinite: the answer is below it."
                    if close(got, 1 / m1, rel=1e-3) else
                    f"A rate must be above 0 and below 1 / E[S] = {1 / m1:.6g} requests/s.")
            raise AssertionError(f"max_rate_rps({shown}) returned {got:.6g} requests/s, expected "
                                 f"{want:.6g} ({what}). {hint}")
        at = mg1(got, np.array(service)).wait_s
        if not close(at, wait, rel=REL):
            if close(got, 2 * wait / (m1 * m1 + 2 * wait * m1), rel=REL):
                hint = ("That rate is right for service times all equal to E[S]: the spread of "
                        "the sample (its E[S^2]) adds to the wait.")
            elif at < wait:
                hint = "A higher rate still waits within the target: find where the wait equals it."
            else:
                hint = ("Solve w = lambda E[S^2] / (2 (1 - lambda E[S])) for lambda, or search: "
                        "the wait grows with the rate.")
            raise AssertionError(
                f"max_rate_rps({shown}) returned {got:.6g} requests/s, expected {want:.6g} "
                f"({what}): at your rate Pollaczek-Khinchine waits {at:.6g} s, not {wait:g} s. "
                + hint)
    return passed("check_max_rate", {"fixed targets": 5, "random": len(cases) - 5})
