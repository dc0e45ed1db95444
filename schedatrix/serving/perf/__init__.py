"""The performance model (execution-time prediction): the GPU and model catalog, one GPU's shard
of a layer, kernel and collective times, the replica's iteration time, and their calibration
against profiled GPUs.

Modules: ``catalog``, ``pcie`` (host-to-device links), ``shard``, ``kernels``, ``coefficients``
(generated), ``model`` (:class:`PerfModel`, the interface the simulators use), ``profiles``,
``calibration``, ``profile_errors``, ``spec_decode`` (a replica that speculates). The published
measurements the model is held to live in :mod:`schedatrix.serving.published`.
"""

from .model import FixedCostModel, PerfModel, PerformanceModel

__all__ = ["FixedCostModel", "PerfModel", "PerformanceModel"]
