"""The noisy neighbour: one tenant bursts to several times its rate; does the other keep its
SLOs? Each tenant's p95 TTFT and goodput, without and with the isolation features, side by
side on the same arrivals.

- **without**: both tenants in one class of service (the same priority), no admission control;
- **with**: the quiet tenant first (priority 0, preempting the noisy one when it must), the
  noisy tenant held to ``bucket_share`` of its usual rate by a token bucket (a burst of
  ``bucket_burst`` requests), and shedding by estimated TTFT, lowest class first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..cluster.deployment import Design
from ..load.arrivals import Burst
from ..load.requests import SLOClass
from ..load.workload import Load, Tenant, generate
from ..numbers import check_real
from .acceptance import Outcome, evaluate, interval

__all__ = ["NoisyNeighbour", "noisy_neighbour", "QUIET", "NOISY"]

QUIET = SLOClass("quiet", 0.0, 0, 1.0, 0.06)
NOISY = SLOClass("noisy", 0.0, 1, 5.0, 0.2)


@dataclass
class NoisyNeighbour:
    """Both outcomes, and the rows of the side-by-side table."""

    without: Outcome
    with_isolation: Outcome
    burst: float

    def rows(self) -> list[dict]:
        out = []
        for c, name in enumerate(("quiet", "noisy")):
            row = {"tenant": name}
            for label, o in (("without", self.without), ("with", self.with_isolation)):
                row[f"{label}_ttft_p95"] = interval(o.values("ttft_p95", c))[0]
                row[f"{label}_goodput_rps"] = interval(o.values("goodput_rps", c))[0]
                row[f"{label}_slo_attainment"] = interval(o.values("slo_attainment", c))[0]
                row[f"{label}_rejected"] = interval(o.values("rejected", c))[0]
            out.append(row)
        return out


def noisy_neighbour(design: Design, rate_rps: float = 3.0, burst: float = 5.0,
                    start_s: float = 120.0, burst_s: float = 120.0, duration_s: float = 360.0,
                    input_len: str = "lognormal:800,0.7", output_len: str = "lognormal:150,0.7",
                    bucket_share: float = 1.2, bucket_burst: float = 10.0, runs: int = 1,
                    seed: int = 0, implementation: str = "fast", on_run=None) -> NoisyNeighbour:
    """Two tenants at ``rate_rps`` each; the noisy one at ``burst`` times its rate over
    [start_s, start_s + burst_s). Returns both outcomes (see the module docstring)."""
    check_real("burst", burst, 1.0, 1e6)
    check_real("bucket_share", bucket_share, 0.0, 1e6, low_open=True)

    def load(isolated: bool) -> Load:
        quiet = QUIET if isolated else replace(QUIET, priority=0)
        noisy = NOISY if isolated else replace(NOISY, priority=0)
        return Load(tenants=[Tenant(quiet, rate_rps),
                             Tenant(noisy, rate_rps,
                                    bursts=[Burst(start_s, start_s + burst_s, burst)])],
                    input_len=input_len, output_len=output_len)

    shared = design.with_(name=f"{design.label()} shared", buckets=(), max_queue=None,
                          shed_ttft=False, priority_preemption=False)
    guarded = design.with_(name=f"{design.label()} isolated",
                           buckets={"noisy": (rate_rps * bucket_share, bucket_burst)},
                           shed_ttft=True, priority_preemption=True)
    plain, iso = load(False), load(True)
    without = evaluate(shared, lambda s: generate(plain, s, duration_s=duration_s), runs, seed,
                       implementation=implementation, on_run=on_run)
    with_iso = evaluate(guarded, lambda s: generate(iso, s, duration_s=duration_s), runs, seed,
                        implementation=implementation, on_run=on_run)
    return NoisyNeighbour(without, with_iso, burst)
