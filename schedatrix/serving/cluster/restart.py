"""What a restarted replica goes through before it serves again: named phases, each sourced.

A vLLM replica that restarts (after a crash, or a drain for an upgrade) is not back when its
process is: it starts the engine, reads its weights, compiles, captures CUDA graphs and warms
up before it takes a request. :class:`RestartCosts` names those phases; their defaults are one
published vLLM V1 restart that reused its compile cache (vLLM issue #20264), and the rate of
the weights' read is chosen by where they come from. Sources and errors:
docs/serving-calibration.md, "What a restart costs".
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError
from ..numbers import check_real

__all__ = ["RestartCosts", "WEIGHT_SOURCES", "PHASES", "RESTART_KEYS"]

#: GB/s a GPU reads its weights at, by where they come from (docs/serving-calibration.md).
WEIGHT_SOURCES = {"page-cache": 5.0, "disk": 2.0, "network": 0.5}
#: The phases of a restart, in order.
PHASES = ("engine start", "weights", "compile", "graph capture", "warm-up")
#: The keys of a scenario's ``[restart]`` table: the fields of :class:`RestartCosts`.
RESTART_KEYS = ("weights_from", "weight_load_gb_s", "engine_start_s", "compile_s",
                "graph_capture_s", "warmup_s")


@dataclass(frozen=True)
class RestartCosts:
    """The seconds of each phase of a restart; the weights' read at ``weight_load_gb_s`` a GPU
    (None: the rate of ``weights_from``, one of :data:`WEIGHT_SOURCES`)."""

    weights_from: str = "disk"
    weight_load_gb_s: float | None = None
    engine_start_s: float = 24.0
    compile_s: float = 7.5
    graph_capture_s: float = 17.0
    warmup_s: float = 9.6

    def __post_init__(self):
        if not isinstance(self.weights_from, str) or self.weights_from not in WEIGHT_SOURCES:
            raise InputError(f"weights_from must be one of {', '.join(WEIGHT_SOURCES)}, "
                             f"got {self.weights_from!r}")
        if self.weight_load_gb_s is not None:
            check_real("weight_load_gb_s", self.weight_load_gb_s, 0.0, 1e6, low_open=True)
        for name in ("engine_start_s", "compile_s", "graph_capture_s", "warmup_s"):
            check_real(name, getattr(self, name), 0.0, 1e6)

    @classmethod
    def weights_only(cls, weight_load_gb_s: float) -> RestartCosts:
        """A restart that only reads its weights back (every other phase 0 s)."""
        return cls(weight_load_gb_s=weight_load_gb_s, engine_start_s=0.0, compile_s=0.0,
                   graph_capture_s=0.0, warmup_s=0.0)

    @property
    def load_gb_s(self) -> float:
        """GB/s a GPU reads its weights at."""
        if self.weight_load_gb_s is not None:
            return self.weight_load_gb_s
        return WEIGHT_SOURCES[self.weights_from]

    def phases_s(self, weights_bytes_per_gpu: float) -> dict[str, float]:
        """Seconds of each phase (:data:`PHASES`, in order) for a replica whose GPUs each hold
        ``weights_bytes_per_gpu`` bytes of weights (all GPUs read at once)."""
        return {"engine start": self.engine_start_s,
                "weights": weights_bytes_per_gpu / (self.load_gb_s * 1e9),
                "compile": self.compile_s, "graph capture": self.graph_capture_s,
                "warm-up": self.warmup_s}

    def total_s(self, weights_bytes_per_gpu: float) -> float:
        """Seconds from the restart's start until the replica serves again."""
        return sum(self.phases_s(weights_bytes_per_gpu).values())

