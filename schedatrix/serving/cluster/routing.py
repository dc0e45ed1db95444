"""Routers: which replica a request goes to, by name (a registry, so a lesson swaps one).

A router sees each candidate replica through a small view that both simulators provide:
``outstanding_tokens(t)`` (prompt tokens still to prefill plus output tokens still to generate,
over its queued and running requests, as of the last iteration boundary at or before t) and
``prefix_hit_tokens(hashes, prompt_tokens, t)`` (prompt tokens its prefix cache holds for
the request). Ties go to the lowest replica index; randomness (power of two choices) comes from
the run's own seeded generator, so the same run routes the same way in either simulator.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from ...errors import InputError

__all__ = ["ROUTERS", "make_router", "RoundRobin", "LeastWork", "PowerOfTwo",
           "SessionAffinity", "PrefixAware", "FunctionRouter", "plain_request", "plain_replicas"]


class ReplicaView(Protocol):
    index: int

    def outstanding_tokens(self, t: float) -> int: ...

    def prefix_hit_tokens(self, hashes, prompt_tokens: int, t: float) -> int: ...


class RequestView(Protocol):
    prompt_tokens: int
    hashes: object          # a request's prefix-block hashes (or None)
    session: int            # its session / user (or -1)


class RoundRobin:
    """Each replica in turn (replicas that are down are skipped)."""

    name = "round-robin"

    def __init__(self, seed: int = 0):
        self.turn = 0

    def choose(self, request, replicas: Sequence[ReplicaView], t: float) -> int:
        k = self.turn
        self.turn += 1
        return replicas[k % len(replicas)].index


class LeastWork:
    """The replica with the least outstanding work (queued plus running tokens)."""

    name = "least-work"

    def __init__(self, seed: int = 0):
        pass

    def choose(self, request, replicas, t):
        return min(replicas, key=lambda r: (r.outstanding_tokens(t), r.index)).index


class PowerOfTwo:
    """Two replicas drawn at random; the one with less outstanding work."""

    name = "power-of-two"

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng([seed, 2])

    def choose(self, request, replicas, t):
        if len(replicas) == 1:
            return replicas[0].index
        a, b = self.rng.choice(len(replicas), 2, replace=False)
        ra, rb = replicas[int(a)], replicas[int(b)]
        return min((ra, rb), key=lambda r: (r.outstanding_tokens(t), r.index)).index


def _weight(key: int, replica: int) -> int:
    digest = hashlib.blake2b(f"{key}:{replica}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class SessionAffinity:
    """Every request of a session to the same replica (rendezvous hashing over the replicas
    up, so a replica going down moves only its own sessions). The session is the request's
    ``session`` (a closed loop's user), else its first prefix hash block; a request with
    neither goes to the least loaded replica."""

    name = "session"

    def __init__(self, seed: int = 0):
        pass

    def choose(self, request, replicas, t):
        key = request.session
        if key < 0 and request.hashes is not None and len(request.hashes):
            key = int(request.hashes[0])
        if key < 0:
            return LeastWork.choose(self, request, replicas, t)
        return max(replicas, key=lambda r: (_weight(key, r.index), -r.index)).index


class PrefixAware:
    """The replica where the request costs least: its outstanding work plus the prompt tokens
    it would have to prefill there (its prompt minus what that replica's prefix cache holds),
    as llm-d's and vLLM's production routers trade cache hits against load."""

    name = "prefix"

    def __init__(self, seed: int = 0):
        pass

    def choose(self, request, replicas, t):
        def cost(r):
            hit = r.prefix_hit_tokens(request.hashes, request.prompt_tokens, t) \
                if request.hashes is not None else 0
            return (r.outstanding_tokens(t) + request.prompt_tokens - hit, r.index)
        return min(replicas, key=cost).index


ROUTERS = {cls.name: cls for cls in (RoundRobin, LeastWork, PowerOfTwo, SessionAffinity,
                                     PrefixAware)}


def make_router(name: str, seed: int = 0):
    if name not in ROUTERS:
        raise InputError(f"router must be one of {', '.join(ROUTERS)}, got {name!r}")
    return ROUTERS[name](seed)


def plain_request(request, t: float) -> dict:
    """A request as plain data: ``prompt_tokens``, ``session`` (-1 for none), ``hashes`` (its
    prefix-block hashes, a list of ints, empty for none) and ``time_s`` (now)."""
    hashes = [] if request.hashes is None else [int(h) for h in request.hashes]
    return {"prompt_tokens": int(request.prompt_tokens), "session": int(request.session),
            "hashes": hashes, "time_s": float(t)}


def plain_replicas(request, replicas: Sequence[ReplicaView], t: float) -> list[dict]:
    """The candidate replicas as plain data: per replica its ``index``, its
    ``outstanding_tokens`` and the ``prefix_hit_tokens`` its cache holds for ``request``."""
    out = []
    for r in replicas:
        hit = (r.prefix_hit_tokens(request.hashes, request.prompt_tokens, t)
               if request.hashes is not None else 0)
        out.append({"index": int(r.index), "outstanding_tokens": int(r.outstanding_tokens(t)),
                    "prefix_hit_tokens": int(hit)})
    return out


class FunctionRouter:
    """A router from a plain function ``choose(request, replicas) -> replica index``, which
    sees :func:`plain_request` and :func:`plain_replicas` (dicts and lists, nothing of the
    simulator's): a learner's router, or one run on the far side of a process boundary.

    ``decisions`` counts the calls. Raises InputError when ``choose`` returns an index that
    is not one of the candidates (a replica that is down is never a candidate)."""

    name = "function"

    def __init__(self, choose):
        self.function = choose
        self.decisions = 0

    def choose(self, request, replicas, t):
        self.decisions += 1
        shown = plain_replicas(request, replicas, t)
        picked = self.function(plain_request(request, t), shown)
        allowed = [r["index"] for r in shown]
        if isinstance(picked, bool) or not isinstance(picked, (int, np.integer)) \
                or int(picked) not in allowed:
            raise InputError(f"choose returned {picked!r}: return the index of one of the "
                             f"replicas it was given ({', '.join(map(str, allowed))})")
        return int(picked)
