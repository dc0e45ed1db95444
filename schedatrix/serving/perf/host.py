"""The host's time in each scheduler iteration: what the CPU does between two GPU steps.

vLLM's engine runs on the CPU between forward passes: it schedules the next batch, prepares
its inputs (token ids, positions, block tables), samples from the logits and turns tokens into
text. Without asynchronous scheduling the GPU waits for all of it, every iteration; this is why
small models on fast GPUs fall short of their roofline (vLLM's v0.6.0 performance post measured
Llama 3 8B on one H100 spending 29% of its time scheduling and 33% in the API server, the GPU
working 38%). None of the profiled data in ``../shared/serving-data/`` times the host, so the
two figures below are calibrated on one published measurement, named in
docs/serving-validation.md (the row marked "calibrates"), and every other row there tests them.

``HostCosts(step_s, per_seq_s, dispatch_s)``: seconds per iteration, per scheduled sequence
(the per-request bookkeeping; vLLM's V1 engine detokenises in its front-end process, off the
GPU's path), and per kernel launched eagerly: without CUDA graphs the host dispatches every
kernel itself, one by one, so a kernel shorter than that dispatch waits for the host.
``PerfModel(host_s=...)`` (``--host-ms``) replaces the per-iteration part by a time of your
own.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError
from .host_fit import DISPATCH_ROW, DISPATCH_S, STEP_ROW, STEP_S

__all__ = ["HostCosts", "VLLM_HOST", "host_costs"]


@dataclass(frozen=True)
class HostCosts:
    """Host seconds per scheduler iteration: ``step_s`` each iteration plus ``per_seq_s`` for
    each sequence it schedules (both exposed: the GPU waits for them)."""

    step_s: float
    per_seq_s: float
    dispatch_s: float
    source: str = ""

    def __post_init__(self):
        for name in ("step_s", "per_seq_s", "dispatch_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1.0:
                raise InputError(f"host {name}: {v!r}; must be a number of seconds from 0 to 1")

    def seconds(self, seqs):
        """Host seconds of an iteration scheduling ``seqs`` sequences (a number or an array)."""
        return self.step_s + self.per_seq_s * seqs


#: vLLM's engine, synchronous scheduling (the default before vLLM 0.14 made asynchronous
#: scheduling the default), calibrated as the module docstring says (tools/calibrate_host.py).
VLLM_HOST = HostCosts(step_s=STEP_S, per_seq_s=0.0, dispatch_s=DISPATCH_S,
                      source=f"fitted to the published rows {STEP_ROW} and {DISPATCH_ROW} "
                             "(docs/serving-validation.md)")


def host_costs(host_s: float | None = None) -> HostCosts:
    """The host's costs: vLLM's, or ``host_s`` seconds per iteration (``--host-ms``) alone."""
    if host_s is None:
        return VLLM_HOST
    return HostCosts(step_s=host_s, per_seq_s=0.0, dispatch_s=VLLM_HOST.dispatch_s,
                     source="given (--host-ms); the dispatch per eager kernel vLLM's")
