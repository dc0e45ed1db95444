"""Why S-LoRA's rows miss: their ratios replayed with the server saturated.

S-LoRA's rows (:mod:`..published.lora_rows`) divide a load's throughput with N adapters by the
same load's throughput on the base model, both at 10 requests a second. On S-LoRA's own engine
the base model kept up at that rate (its mean first token 0.92 s) and every run with adapters
fell behind it (mean first token 26-37 s): the ratio is the capacity the adapters leave, over
the offered rate. The validation replays the rows literally, on vLLM 0.10's profile, which has
room at 10 requests a second with or without adapters, so its ratios stay near 1 and say little
of the adapters' cost.

:func:`lora_regime_study` replays each row again with the offered rate ``scale`` times higher
(the same 3,000 requests, ``scale`` times closer together), where the model's server falls
behind with and without adapters and the ratio is the adapters' cost alone: the ratio it
reports no longer moves as ``scale`` grows (a test holds it). ``rank`` replays the adapters at
another rank than the row's (S-LoRA ran ranks 64, 32, 16 and 8 in turn, unpadded; the
validation pads every adapter to 64, as vLLM does; 32 is the allowed rank nearest their mean,
30). Nothing here is fitted: it changes the load and the rank, and shows which of the model's
LoRA costs the rows disagree with (docs/serving-validation.md, "Many LoRA adapters").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...errors import InputError
from ..numbers import check_real
from ..perf.host import VLLM_HOST
from ..published.lora_rows import LORA_PUBLISHED, LoraPublished
from ..replica.lora import LORA_RANKS
from .replay import lora_ratio

__all__ = ["RegimeRow", "lora_regime_study", "SATURATING_SCALE", "MIX_MEAN_RANK"]

#: The offered rate's factor the study uses by default: the model's base run and every run
#: with adapters fall behind (3 x 10 requests a second on vLLM 0.10's A100 profile).
SATURATING_SCALE = 3.0
#: The allowed rank nearest the mean of S-LoRA's ranks (64, 32, 16, 8: 30).
MIX_MEAN_RANK = 32


@dataclass(frozen=True)
class RegimeRow:
    """One row: the published ratio, the literal replay's and the saturated replay's."""

    row: LoraPublished
    literal: float
    saturated: float

    @property
    def published(self) -> float:
        return self.row.value

    @property
    def cost(self) -> float:
        """The model's throughput lost to the adapters with the server saturated."""
        return 1.0 - self.saturated


def lora_regime_study(rows: tuple[LoraPublished, ...] = LORA_PUBLISHED,
                      scale: float = SATURATING_SCALE, rank: int | None = None,
                      ) -> list[RegimeRow]:
    """Each of ``rows`` replayed as the validation does (``literal``) and at ``scale`` times
    its offered rate (``saturated``), its adapters at ``rank`` (None: the row's)."""
    scale = check_real("scale", scale, 1.0, 100.0)
    if rank is not None and (isinstance(rank, bool) or rank not in LORA_RANKS):
        raise InputError(f"rank: {rank!r}; allowed: {', '.join(map(str, LORA_RANKS))}")
    out = []
    for row in rows:
        at_rank = row if rank is None else dataclasses.replace(row, rank=rank)
        requests = row.rate_rps * row.duration_s          # the trace's count, kept
        fast = dataclasses.replace(at_rank, rate_rps=row.rate_rps * scale,
                                   duration_s=(requests + 0.5) / (row.rate_rps * scale))
        out.append(RegimeRow(row, lora_ratio(at_rank, VLLM_HOST), lora_ratio(fast, VLLM_HOST)))
    return out
