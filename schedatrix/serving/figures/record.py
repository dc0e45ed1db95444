"""What one simulated run leaves behind: per-request times, inter-token gaps, engine samples.

Both simulators (the plain reference and the fast engine) fill the same record, so the
figures (:mod:`schedatrix.serving.figures.metrics`) are computed the same way from either.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np

from ..load.requests import Requests

__all__ = ["Run", "GapRecord", "COMPLETED", "REJECTED", "FAILED", "UNFINISHED"]

#: A request's end state.
COMPLETED, REJECTED, FAILED, UNFINISHED = 0, 1, 2, 3


class GapRecord:
    """Inter-token gaps as runs of an arithmetic progression, each run shared by many requests.

    A run ``(first_s, step_s, count)`` stands for the gaps ``first_s + step_s * j`` for
    ``j = 0 .. count - 1``; ``weights[c]`` requests of class ``c`` saw every one of them (the
    decoding requests of a batch share each iteration's gap). The fast simulator records a
    whole stretch of decode iterations as one run; the reference records every gap alone.
    """

    def __init__(self, classes: int):
        self.classes = classes
        self.first = array("d")
        self.step = array("d")
        self.count = array("q")
        self.weights = array("q")      # ``classes`` numbers per run, one after another

    def __len__(self) -> int:
        return len(self.first)

    def add(self, first_s: float, step_s: float, count: int, weights) -> None:
        if count > 0 and any(weights):
            self.first.append(first_s)
            self.step.append(step_s)
            self.count.append(count)
            self.weights.extend(weights)

    def add_run(self, first_s: float, step_s: float, count: int, weights) -> None:
        """:meth:`add` without its checks (the caller knows count >= 1 and some weight)."""
        self.first.append(first_s)
        self.step.append(step_s)
        self.count.append(count)
        self.weights.extend(weights)

    def add_one(self, gap_s: float, class_id: int) -> None:
        w = [0] * self.classes
        w[class_id] = 1
        self.add(gap_s, 0.0, 1, w)

    def arrays(self):
        """(first, step, count, weights[runs, classes]) as numpy arrays."""
        w = np.frombuffer(self.weights, dtype=np.int64).reshape(len(self.first), self.classes)
        return (np.frombuffer(self.first, dtype=float), np.frombuffer(self.step, dtype=float),
                np.frombuffer(self.count, dtype=np.int64), w)


@dataclass
class Run:
    """One simulated run of a load on a deployment.

    Per request (arrays aligned with ``requests``): ``status`` (COMPLETED, REJECTED, FAILED,
    UNFINISHED), ``arrival_s`` (the arrival actually used: closed-loop arrivals are made
    during the run), ``scheduled_s`` (start of the first prefill), ``first_token_s``,
    ``done_s`` (NaN where it never happened), ``preemptions``, ``replica`` (where it was
    first routed, -1 if rejected before routing). ``reasons`` counts rejections and
    failures by (reason, class id). ``kv_peak_share`` is the highest share of any engine's
    KV blocks held at once; ``kv_samples`` is (times, change in blocks in use, all blocks):
    the fleet's KV use over time, noted at scheduler events (the reference notes every
    iteration, the fast simulator the ends of its stretches). ``prefix_hit_tokens`` are
    prompt tokens found in HBM's prefix cache, ``prefix_cpu_hit_tokens`` those copied back from
    the CPU tier (of ``prefix_lookup_tokens`` looked up); ``kv_load_s`` the seconds the copies
    added to iterations, ``kv_load_saved_s`` the seconds their prefill would have taken.
    With LoRA adapters, ``lora_loads`` counts admissions whose adapter was (resident, copied
    from host memory, read from disk), ``lora_load_s`` the seconds the loads added to
    iterations, ``lora_kernel_s`` those of the batched LoRA kernels, ``lora_skips`` the times
    admission passed over a request waiting for a slot. Under a closed loop, ``user`` is the
    user who sent each request (None otherwise).
    """

    requests: Requests
    status: np.ndarray
    arrival_s: np.ndarray
    scheduled_s: np.ndarray
    first_token_s: np.ndarray
    done_s: np.ndarray
    preemptions: np.ndarray
    replica: np.ndarray
    gaps: GapRecord
    reasons: dict = field(default_factory=dict)
    kv_peak_share: float = 0.0
    kv_samples: tuple = ()
    iterations: int = 0
    events: int = 0
    prefix_hit_tokens: int = 0
    prefix_lookup_tokens: int = 0
    prefix_cpu_hit_tokens: int = 0
    kv_load_s: float = 0.0
    kv_load_saved_s: float = 0.0
    lora_loads: tuple = (0, 0, 0)
    lora_load_s: float = 0.0
    lora_kernel_s: float = 0.0
    lora_skips: int = 0
    link_busy_s: float = 0.0
    implementation: str = ""
    user: np.ndarray | None = None
