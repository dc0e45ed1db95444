"""A user's calibration: the host and front-end terms fitted to their own measurements.

``schedatrix serving calibrate`` fits it (:mod:`..studies.calibrate`) and writes it as TOML
(:mod:`..intake.calibration_file`); ``--calibration CAL.toml`` puts it on every design a serving
command runs. It holds what a benchmark client's per-request times can tell apart:

- ``host_step_s``: the host's seconds per scheduler iteration (:mod:`.host`), which every
  decode step waits for without async scheduling; None where the data could not tell it (with
  async scheduling the host hides behind a longer GPU step): the engine's own is kept;
- ``client_path``: the request's path outside the GPU (:mod:`.client_path`). A client sees the
  front end, the hop to the engine and the first token's delivery only as one sum in its TTFT,
  so the sum is written as ``front_end_s`` and the per-token egress terms as 0; the prompt's
  tokenization is ``tokenize_s_per_token``.

No GPU-efficiency factor: the design has no knob that scales the GPU's roofline terms, so none
is fitted (docs/serving.md says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import InputError
from .client_path import ClientPath

__all__ = ["UserCalibration"]


@dataclass(frozen=True)
class UserCalibration:
    """The fitted terms (seconds), where they came from, and the fit's errors."""

    host_step_s: float | None
    client_path: ClientPath
    source: str = ""
    fit: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        h = self.host_step_s
        if h is not None and (isinstance(h, bool) or not isinstance(h, int | float)
                              or not 0 <= h <= 1.0):
            raise InputError(f"host step_s: {h!r}; must be a number of seconds from 0 to 1")
        if not isinstance(self.client_path, ClientPath):
            raise InputError(f"client_path: {self.client_path!r}; must be a ClientPath")

    def design_knobs(self) -> dict:
        """The design knobs that carry it (``host_ms``, ``client_path``)."""
        knobs: dict = {"client_path": self.client_path}
        if self.host_step_s is not None:
            knobs["host_ms"] = self.host_step_s * 1000
        return knobs
