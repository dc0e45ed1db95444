"""Designs side by side on the same arrivals: every figure, GPUs, cost, the cheapest that meets
the SLOs, and how the answer moves with model size."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import InputError
from ..cluster.deployment import Design
from ..load.requests import Requests
from ..perf.catalog import GPUS_PER_NODE
from .acceptance import Criteria, Outcome, evaluate
from .run_share import MAX_RUNS

__all__ = ["Comparison", "compare", "compare_models", "baseline_for", "with_goodput"]


@dataclass
class Comparison:
    """Outcomes of several designs on one load. ``skipped`` holds designs that could not be
    built (e.g. a model that does not fit), with the reason."""

    outcomes: list[Outcome]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    model: str = ""
    #: DistServe's goodput per design name, when it was searched (:func:`with_goodput`)
    goodput: dict = field(default_factory=dict)

    @property
    def has_slo(self) -> bool:
        return bool(self.outcomes) and self.outcomes[0].has_slo

    @property
    def cheapest(self) -> Outcome | None:
        """The passing design (decided: :attr:`.Outcome.status` "pass") with the lowest mean
        cost per million tokens (fewer GPUs on a tie); None when none passes or there is no
        verdict."""
        passing = [o for o in self.outcomes if o.passed]
        if not passing:
            return None
        return min(passing, key=lambda o: (_mean(o.cost_per_mtok()), o.design.gpus))

    @property
    def cheapest_indicative(self) -> Outcome | None:
        """The cheapest design not refused whose runs so far point to a pass (undecided, but
        met in at least the required share of its runs): what more runs may confirm. None
        when a decided pass is at least as cheap."""
        leaning = [o for o in self.outcomes if o.status == "undecided" and
                   o.decision.indicative]
        if not leaning:
            return None
        best = min(leaning, key=lambda o: (_mean(o.cost_per_mtok()), o.design.gpus))
        sure = self.cheapest
        if sure is not None and _mean(sure.cost_per_mtok()) <= _mean(best.cost_per_mtok()):
            return None
        return best

    @property
    def single_machine_enough(self) -> Outcome | None:
        """The cheapest one-replica, one-machine design that passes with room to spare."""
        fits = [o for o in self.outcomes if o.design.single_machine() and o.room_to_spare]
        return min(fits, key=lambda o: (_mean(o.cost_per_mtok()), o.design.gpus),
                   default=None)

    @property
    def no_distributed_needed(self) -> bool:
        """A one-replica, one-machine design meets the SLOs with room to spare and nothing
        cheaper does: the load needs no distributed design."""
        one, best = self.single_machine_enough, self.cheapest
        return one is not None and best is not None and \
            _mean(one.cost_per_mtok()) <= _mean(best.cost_per_mtok()) * (1 + 1e-9)

    def summary(self) -> str:
        """The comparison's answer in a few sentences."""
        if not self.outcomes:
            return "No design could be built: " + "; ".join(f"{n}: {r}" for n, r in
                                                          self.skipped)
        synthetic = self.outcomes[0].synthetic
        label = (" The load is synthetic: these are model results, not production SLO "
                 "performance." if synthetic else "")
        if not self.has_slo:
            return ("No verdict: the load sets no TTFT or TPOT thresholds, so no design can "
                    "pass or fail; the figures are shown side by side." + label)
        best, lean = self.cheapest, self.cheapest_indicative
        ahead = ""
        if lean is not None:
            d = lean.decision
            ahead = (f"{lean.design.name} ({lean.design.gpus} "
                     f"GPU{'s' if lean.design.gpus != 1 else ''}, "
                     f"${_mean(lean.cost_per_mtok()):,.3f} per million output tokens) met the "
                     f"SLOs in {d.met} of {d.runs} run{'s' if d.runs != 1 else ''}, which is "
                     f"indicative only: {d.runs_to_pass()} more runs, all meeting them, would "
                     f"show that at least {d.required:.0%} of runs do ({d.confidence:.0%} "
                     f"confidence; --runs auto adds them).")
            if best is None:
                return "Undecided: " + ahead + label
            ahead = " A cheaper design is still undecided: " + ahead
        if best is None:
            if any(o.status == "undecided" for o in self.outcomes):
                return ("No design is shown to meet the SLOs: those not refused are still "
                        "undecided, and none met them in enough of its runs to lean to a "
                        "pass." + label)
            return (f"No design meets the SLOs in at least "
                    f"{self.outcomes[0].criteria.run_share:.0%} of runs (each refused at "
                    f"{self.outcomes[0].criteria.confidence:.0%} confidence)." + label)
        cost = _mean(best.cost_per_mtok())
        d = best.decision
        shown = ("" if d.exact else f"; at least {d.low:.0%} of runs meet them, "
                 f"{d.confidence:.0%} confidence")
        text = (f"Cheapest design meeting the SLOs: {best.design.name} ({best.design.gpus} "
                f"GPU{'s' if best.design.gpus != 1 else ''}, ${cost:,.3f} per million output "
                f"tokens{shown}).")
        one = self.single_machine_enough
        if self.no_distributed_needed:
            text += (f" {one.design.name} alone meets them with room to spare on one machine: "
                     f"no distributed design is needed.")
        elif one is not None:
            ratio = _mean(one.cost_per_mtok()) / cost
            text += (f" One replica on one machine ({one.design.name}) meets them too, with "
                     f"room to spare, at {ratio:.1f}x the cost: spreading the load is cheaper "
                     f"here, not necessary.")
        return text + ahead + label


def _mean(values) -> float:
    values = [v for v in values if v == v]
    return sum(values) / len(values) if values else math.nan


def baseline_for(design: Design) -> Design | None:
    """One replica of the model on the fewest GPUs of one machine that hold it (TP 1, 2, 4,
    8), with the design's other knobs; None when even a full machine can't hold it."""
    for tp in (1, 2, 4, 8):
        if tp > GPUS_PER_NODE:
            break
        try:
            return design.with_(tp=tp, pp=1, replicas=1, prefill_replicas=0,
                                decode_replicas=0)
        except InputError:
            continue
    return None


def compare(designs: list[Design], make_requests: Callable[[int], Requests],
            runs: int | str = 1, seed: int = 0, criteria: Criteria | None = None,
            implementation: str = "fast", baseline: bool = True,
            on_run: Callable[[], None] | None = None, max_runs: int = MAX_RUNS) -> Comparison:
    """Run every design on the same arrivals (seed by seed). With ``baseline``, a one-replica
    one-machine design is added when none of the designs is one, so the report can say
    whether anything distributed is needed at all."""
    designs = list(designs)
    if not designs:
        raise InputError("compare: give at least one design")
    if baseline and not any(d.single_machine() for d in designs):
        base = baseline_for(designs[0])
        if base is not None:
            designs.append(base.with_(name=f"{base.label()} (baseline)"))
    outcomes = [evaluate(d, make_requests, runs, seed, criteria, implementation, on_run,
                         max_runs=max_runs) for d in designs]
    return Comparison(outcomes, model=designs[0].model)


def compare_models(designs: list[Design], models: list[str],
                   make_requests: Callable[[int], Requests], runs: int | str = 1,
                   seed: int = 0, criteria: Criteria | None = None,
                   implementation: str = "fast", on_run: Callable[[], None] | None = None,
                   max_runs: int = MAX_RUNS) -> dict[str, Comparison]:
    """The same designs for each model (those that can't hold a model are skipped, with the
    reason): how the cheapest design moves with model size."""
    out = {}
    for name in models:
        built, skipped = [], []
        for d in designs:
            try:
                built.append(d.with_(model=name, name=d.name if d.name != d.label() else ""))
            except InputError as e:
                skipped.append((d.name, str(e)))
        if built:
            c = compare(built, make_requests, runs, seed, criteria, implementation,
                        baseline=False, on_run=on_run, max_runs=max_runs)
        else:
            c = Comparison([])
        c.skipped, c.model = skipped, name
        out[name] = c
    return out


def with_goodput(c: Comparison, load, attainment: float, requests: int = 1000, seed: int = 0,
                 on_design: Callable[[], None] | None = None) -> Comparison:
    """``c`` with DistServe's goodput of each of its designs on ``load`` (the highest rate at
    which ``attainment`` of the requests meet every SLO, and per GPU): see
    :func:`.capacity.goodput_capacity`."""
    from .capacity import goodput_capacity

    for o in c.outcomes:
        c.goodput[o.design.name] = goodput_capacity(o.design, load, attainment, requests, seed)
        if on_design:
            on_design()
    return c
