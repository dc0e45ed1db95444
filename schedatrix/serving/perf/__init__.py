"""The performance model (execution-time prediction): the GPU and model catalog, one GPU's shard
of a layer, kernel and collective times, the replica's iteration time, and their calibration
against profiled GPUs.

Modules: ``catalog``, ``shard``, ``kernels``, ``coefficients`` (generated), ``model``
(:class:`PerfModel`, the interface the simulators use), ``profiles``, ``calibration``,
``profile_errors``, ``spec_decode`` (a replica that speculates), ``published`` and
``published_spec`` (the measurements the model is held to).
"""

from .model import FixedCostModel, PerfModel, PerformanceModel

__all__ = ["FixedCostModel", "PerfModel", "PerformanceModel"]
