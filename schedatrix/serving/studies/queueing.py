"""Queueing theory beside the simulator: one request at a time is an M/G/1 queue.

A replica with a batch cap of 1 serves its requests one after another, each for a time set by
its own lengths alone: its prompt's prefill (in chunks of the token budget), then one decode
step per further output token, each attending over the tokens so far. With Poisson arrivals
that is an M/G/1 queue, and the Pollaczek-Khinchine formula gives its mean wait in the queue
from the arrival rate and the first two moments of the service time:

    W_q = lambda E[S^2] / (2 (1 - rho)),   rho = lambda E[S]

(with every service time the same, M/D/1: W_q = rho E[S] / (2 (1 - rho))). Little's law, L =
lambda W, holds for any queue, batching or not. With continuous batching a request's service
depends on who shares its iterations, so the replica is no M/G/1 queue and the formula does not
apply; tests/test_serving_queueing.py checks the simulator against both laws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design

__all__ = ["service_s", "MG1", "mg1", "in_system"]


def service_s(design: Design, input_tokens, output_tokens) -> np.ndarray:
    """Each request's time in service alone on one replica of ``design`` (seconds): the
    prefill in chunks of ``max_batched_tokens`` (the first token comes with the last chunk),
    then ``output - 1`` decode steps, the k-th attending over ``input + k`` tokens, each
    timed by the design's performance model. This is what a replica with ``max_batch`` 1
    spends on the request."""
    if design.split or design.pp != 1:
        raise InputError("service_s: one replica of one kind is one server; got a "
                         f"{'prefill/decode split' if design.split else f'pp of {design.pp}'}")
    inp = np.asarray(input_tokens, dtype=np.int64)
    out = np.asarray(output_tokens, dtype=np.int64)
    if inp.shape != out.shape or (inp < 1).any() or (out < 1).any():
        raise InputError("service_s: input_tokens and output_tokens must be equally long "
                         "and every length at least 1")
    perf, budget = design.perf(), design.token_budget()
    prefill = {}
    for p in np.unique(inp).tolist():
        s, done = 0.0, 0
        while done < p:
            c = min(budget, p - done)
            s += perf.iteration_s([(c, done)])
            done += c
        prefill[p] = s
    a, b = perf.decode_line(1)
    steps = out - 1              # decode steps k = 1 .. out - 1, context input + k
    context = steps * inp + steps * (steps + 1) / 2
    return np.array([prefill[p] for p in inp.tolist()]) + a * steps + b * context


@dataclass(frozen=True)
class MG1:
    """The M/G/1 queue of a rate and a service-time sample.

    rate_rps : lambda; mean_service_s : E[S]; service_cv : the service times' CV
    rho : lambda E[S], the share of time the server is busy
    wait_s : the mean wait in the queue (Pollaczek-Khinchine; inf when rho >= 1)
    md1_wait_s : the same server with every service time E[S] (M/D/1)"""

    rate_rps: float
    mean_service_s: float
    service_cv: float
    rho: float
    wait_s: float
    md1_wait_s: float

    def in_queue(self) -> float:
        """Little's law on the queue: the mean number waiting, lambda W_q."""
        return self.rate_rps * self.wait_s


def mg1(rate_rps: float, service: np.ndarray) -> MG1:
    """The M/G/1 figures of Poisson arrivals at ``rate_rps`` to a server whose service times
    are drawn from ``service`` (seconds, e.g. :func:`service_s` of a load's lengths)."""
    s = np.asarray(service, dtype=float)
    if not rate_rps > 0 or not len(s) or not (s > 0).all():
        raise InputError("mg1: rate_rps must be above 0 and service a non-empty sample of "
                         f"times above 0, got rate_rps {rate_rps!r}")
    rate_rps = float(rate_rps)
    mean, second = float(s.mean()), float((s * s).mean())
    rho = rate_rps * mean
    if rho >= 1:
        wait = md1 = float("inf")
    else:
        wait = rate_rps * second / (2 * (1 - rho))
        md1 = rho * mean / (2 * (1 - rho))
    return MG1(rate_rps, mean, float(s.std() / mean), rho, wait, md1)


def in_system(rate_rps: float, mean_time_s: float) -> float:
    """Little's law, L = lambda W: the mean number of requests inside a system that takes
    ``rate_rps`` a second (as many leave) and keeps each ``mean_time_s`` on average; it holds
    for any queue, batched or not."""
    if not rate_rps >= 0 or not mean_time_s >= 0:
        raise InputError(f"in_system: rate_rps and mean_time_s must be >= 0, got {rate_rps!r} "
                         f"and {mean_time_s!r}")
    return float(rate_rps) * float(mean_time_s)
