"""The requests a simulation serves: one record of arrays, and the SLO classes they belong to."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError

__all__ = ["SLOClass", "ClosedLoop", "Requests", "DEFAULT_CLASS", "RAMPS"]


@dataclass(frozen=True)
class SLOClass:
    """A priority / SLO class (or a tenant): its share of the traffic and its thresholds.

    ``priority`` 0 is the most important; ``ttft_s`` and ``tpot_s`` are the class's SLO
    thresholds in seconds (None: no threshold of that kind). ``share`` is the fraction of an
    open-loop load's requests drawn into this class (0 to 1).
    """

    name: str = "default"
    share: float = 1.0
    priority: int = 0
    ttft_s: float | None = None
    tpot_s: float | None = None

    @property
    def has_slo(self) -> bool:
        return self.ttft_s is not None or self.tpot_s is not None


DEFAULT_CLASS = SLOClass()


@dataclass(frozen=True)
class ClosedLoop:
    """Closed-loop concurrency: ``users`` users, each sending its next request ``think_s``
    seconds after its previous one ends (user u's first request is request u; each later one
    goes to the user whose request just ended, so request i is the i-th sent). ``ramp_s``
    spreads the users' first requests over that many seconds: ``ramp`` "even" sends user u's
    at ``u * ramp_s / users`` (0 s: all at once, AIPerf's and genai-perf's concurrency mode;
    AIPerf's ``--concurrency-ramp-duration`` and vLLM ``bench serve``'s ``--ramp-up-strategy``
    ramp instead), "random" at ``ramp_s`` times a uniform draw of its own (NumPy's generator
    seeded by ``seed``): users whose phases no client set, as a long-running service's are."""

    users: int
    think_s: float = 0.0
    ramp_s: float = 0.0
    ramp: str = "even"
    seed: int = 0

    def __post_init__(self):
        r = self.ramp_s
        if isinstance(r, bool) or not isinstance(r, int | float) or not 0 <= r < float("inf"):
            raise InputError(f"closed_loop ramp_s {r!r}: must be a finite number of seconds "
                             ">= 0")
        if self.ramp not in RAMPS:
            raise InputError(f"closed_loop ramp {self.ramp!r}; allowed: {', '.join(RAMPS)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer) \
                or self.seed < 0:
            raise InputError(f"closed_loop seed {self.seed!r}: must be a whole number >= 0")

    def first_sends_s(self, first: int) -> list[float]:
        """When each of the first ``first`` users sends its first request (seconds)."""
        if self.ramp == "random":
            draws = np.random.default_rng(int(self.seed)).random(first)
            return [float(self.ramp_s * u) for u in draws]
        return [self.ramp_s * i / first for i in range(first)]


#: How a closed loop's first sends are spread over its ``ramp_s`` (:class:`ClosedLoop`).
RAMPS = ("even", "random")


@dataclass(frozen=True, eq=False)
class Requests:
    """Requests as arrays, one entry per request, sorted by arrival.

    arrival_s : float64, seconds from the start of the run (ignored under ``closed_loop``)
    input_tokens, output_tokens : int64, at least 1
    class_id : int16, index into ``classes``
    hash_offsets, hash_values : optional prefix-block hashes in CSR form (request i's blocks
        are ``hash_values[hash_offsets[i]:hash_offsets[i + 1]]``), e.g. Mooncake's hash_ids
    synthetic : True for a generated load (its results are labelled synthetic), False for a
        replayed trace
    """

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    class_id: np.ndarray
    classes: tuple[SLOClass, ...] = (DEFAULT_CLASS,)
    synthetic: bool = True
    source: str = ""
    hash_offsets: np.ndarray | None = None
    hash_values: np.ndarray | None = None
    closed_loop: ClosedLoop | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.arrival_s)
        for name in ("input_tokens", "output_tokens", "class_id"):
            if len(getattr(self, name)) != n:
                raise InputError(f"requests: {name} has {len(getattr(self, name))} entries, "
                                 f"arrival_s has {n}; every array needs one per request")
        if n and (np.min(self.input_tokens) < 1 or np.min(self.output_tokens) < 1):
            raise InputError("requests: input_tokens and output_tokens must be at least 1")
        if n and self.closed_loop is None and np.any(np.diff(self.arrival_s) < 0):
            raise InputError("requests: arrival_s must be sorted ascending")
        if n and (np.min(self.class_id) < 0 or np.max(self.class_id) >= len(self.classes)):
            raise InputError(f"requests: class_id must index the {len(self.classes)} classes")

    def __len__(self) -> int:
        return len(self.arrival_s)

    def hashes(self, i: int) -> np.ndarray | None:
        """Request i's prefix-block hashes, or None when the load carries none."""
        if self.hash_offsets is None:
            return None
        return self.hash_values[self.hash_offsets[i]:self.hash_offsets[i + 1]]
