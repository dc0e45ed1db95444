"""The acceptance harness: designs over seeds, with and without the fault schedule, judged by
stated criteria (what it writes, the decision record and the runbook, is
:mod:`..reports.decision_record`).

A design is judged over its runs (independent seeds), each run meeting the criteria or not, and
what is decided is the **share of runs that meet** (:mod:`.run_share`: PASS when its one-sided
lower Clopper-Pearson bound is above ``Criteria.run_share``, FAIL when the upper bound is below,
UNDECIDED otherwise). A design is **accepted** when both shares pass, **refused** when either
fails, and otherwise undecided (more runs decide it: ``runs = "auto"``). A run meets when:

- without faults, every class with SLOs has at least ``attainment`` of its requests within them;
- with the faults, no request is lost (every request ends: completed, rejected or failed), at
  least ``fault_attainment`` of requests meet their SLOs (if stated), and every fault's
  recovery time is at most ``max_recovery_s`` (if stated; "never" fails it). Even when no
  limit is stated, a fault the fleet never recovers from within the run fails the design
  (``recovery_required``, on by default): a design that stays down is not accepted.

Recovery is read against the paired baseline: the run without faults on the same seed (the same
arrivals), which :func:`evaluate` already made, so no run is simulated twice. A fault with no
measurable damage (its paired recovery within the noise floor, no request's SLO lost to it: see
:mod:`..figures.recovery`) meets any limit.

The **chosen design** is the cheapest accepted one (cost per million output tokens at the stated
price, fewer GPUs on a tie).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import InputError
from ..cluster.deployment import Design
from ..cluster.faults import Fault, Resilience
from ..figures.metrics import Figures, figures
from ..figures.recovery import FaultFigures, fault_figures, windowed
from ..load.requests import Requests
from ..numbers import check_real
from ..sim.simulate import simulate
from .acceptance import (
    Criteria,
    Outcome,
    evaluate,
    interval,
    more_runs,
    simulate_all,
    stopped_text,
)
from .run_share import (
    AUTO_START,
    MAX_RUNS,
    Decision,
    auto_schedule,
    check_runs,
    combine,
    decide_share,
    exact,
)

__all__ = ["FaultCriteria", "Accepted", "accept", "chosen"]


@dataclass(frozen=True)
class FaultCriteria:
    """max_recovery_s : every fault's recovery time at most this (None: no limit)
    fault_attainment : share of requests within their SLOs under the faults (None: reported)
    window_s, tolerance, hold : how recovery time is measured (see :mod:`..figures.recovery`):
    windows of ``window_s`` seconds from the fault, aligned on the paired baseline's; the margin
    is ``tolerance`` (p95 TTFT at most ``1 + tolerance`` times the baseline's window, goodput at
    least ``1 - tolerance`` times it; default 25%); recovered at the first of ``hold`` windows
    in a row within the margin (default 3 windows of 10 s)
    recovery_required : a fault never recovered from within the run fails the design, with
    or without ``max_recovery_s`` (default True; False: without a limit, reported only)"""

    max_recovery_s: float | None = None
    fault_attainment: float | None = None
    window_s: float = 10.0
    tolerance: float = 0.25
    hold: int = 3
    recovery_required: bool = True

    def __post_init__(self):
        if not isinstance(self.recovery_required, bool):
            raise InputError(f"recovery_required must be true or false, got "
                             f"{self.recovery_required!r}")
        if self.max_recovery_s is not None:
            check_real("max_recovery_s", self.max_recovery_s, 0.0, 1e9)
        if self.fault_attainment is not None:
            check_real("fault_attainment", self.fault_attainment, 0.0, 1.0)
        check_real("window_s", self.window_s, 0.0, 1e6, low_open=True)
        check_real("tolerance", self.tolerance, 0.0, 10.0)
        if isinstance(self.hold, bool) or not isinstance(self.hold, int) or \
                not 1 <= self.hold <= 1000:
            raise InputError(f"hold must be a whole number of windows from 1 to 1000, got "
                             f"{self.hold!r}")


@dataclass
class Accepted:
    """One design under acceptance: its plain runs, and its runs with the faults."""

    outcome: Outcome
    faults: tuple[Fault, ...]
    criteria: FaultCriteria
    with_faults: list[Figures] = field(default_factory=list)
    fault_figures: list[list[FaultFigures]] = field(default_factory=list)
    series: tuple | None = None         # (starts, p95 TTFT, goodput) of the first faulted run
    baseline_series: tuple | None = None    # the same windows of its paired baseline
    alone: list[FaultFigures] = field(default_factory=list)   # each fault alone, first seed

    @property
    def design(self) -> Design:
        return self.outcome.design

    def reasons(self) -> list[str]:
        """Why the design is refused (empty: accepted or undecided): a share of runs decided
        below ``run_share``, and then each faulted run's misses."""
        why = []
        o = self.outcome
        if o.passed is False:
            why.append("misses its SLOs without faults: " + o.verdict().split(": ", 1)[1]
                       .split(" Synthetic")[0])
        fd = self.fault_decision
        if fd is not None and fd.state == "fail":
            why.append("with the faults: " + fd.text())
            why += self.fault_misses()
        return why

    def fault_misses(self, only: int | None = None) -> list[str]:
        """Every faulted run's misses of the fault criteria, each 'run k: ...' (``only``: of
        run index ``only`` alone)."""
        why = []
        o = self.outcome
        for k, figs in enumerate(self.fault_figures):
            if only is not None and k != only:
                continue
            if figs and figs[0].lost:
                why.append(f"run {k + 1}: {figs[0].lost} requests lost")
            c = self.criteria
            if c.fault_attainment is not None and o.has_slo and \
                    self.with_faults[k].slo_attainment < c.fault_attainment:
                why.append(f"run {k + 1}: {self.with_faults[k].slo_attainment:.1%} within SLOs "
                           f"under the faults ({c.fault_attainment:.0%} needed)")
            if c.max_recovery_s is not None:
                for f in figs:     # no measurable damage meets any limit
                    if f.recovery_s is None or f.effective_recovery_s > c.max_recovery_s:
                        took = "never" if f.recovery_s is None else f"{f.recovery_s:g} s"
                        why.append(f"run {k + 1}: {f.fault} recovered {took} (at most "
                                   f"{c.max_recovery_s:g} s)")
            elif c.recovery_required:
                for f in figs:
                    if f.recovery_s is None:
                        why.append(f"run {k + 1}: {f.fault} never recovered within the run "
                                   "(recovery is required)")
        return why

    @property
    def fault_decision(self) -> Decision | None:
        """The share of faulted runs that meet the fault criteria, decided (None: no faults)."""
        if not self.faults:
            return None
        return faulted_decision(self)

    @property
    def status(self) -> str | None:
        """"pass" (accepted), "fail" (refused) or "undecided"; None: nothing to judge."""
        return combine([self.outcome.decision, self.fault_decision])

    @property
    def accepted(self) -> bool | None:
        """True when accepted, False when refused; None while undecided or with nothing to
        judge (:attr:`status` tells the two apart)."""
        return {"pass": True, "fail": False}.get(self.status)

    def undecided(self) -> list[str]:
        """What is still undecided (empty when decided)."""
        out = []
        if self.outcome.status == "undecided":
            out.append("without faults: " + self.outcome.decision.text())
        fd = self.fault_decision
        if fd is not None and fd.state == "undecided":
            out.append("with the faults: " + fd.text())
        return out

    def recovery(self, k: int) -> list[float | None]:
        return [f.recovery_s for f in self.fault_figures[k]]


def faulted_decision(a: Accepted) -> Decision:
    """The 'every faulted run' rule as a decision: a faulted run meets when it has no misses
    (:meth:`Accepted.fault_misses`), and the share of faulted runs that meet is decided like
    the plain runs' share (a replayed trace: exactly)."""
    n = len(a.fault_figures)
    met = sum(not a.fault_misses(k) for k in range(n))
    c = a.outcome.criteria
    if a.outcome.deterministic:
        return exact(met == n)
    return decide_share(met, n, c.run_share, c.confidence)


def accept(designs: list[Design], make_requests: Callable[[int], Requests],
           faults: tuple[Fault, ...] = (), runs: int | str = 1, seed: int = 0,
           criteria: Criteria | None = None, fault_criteria: FaultCriteria | None = None,
           resilience: Resilience | None = None, implementation: str = "fast",
           on_run: Callable[[], None] | None = None,
           max_runs: int = MAX_RUNS) -> list[Accepted]:
    """Every design over ``runs`` seeds, without and with ``faults``. ``runs = "auto"``: a
    few runs, doubled (seeds continuing) until the design is accepted or refused or
    ``max_runs`` is reached (each outcome's ``stopped`` says which)."""
    runs = check_runs(runs)
    fc = fault_criteria or FaultCriteria()
    out = []
    for d in designs:
        bases: list = []     # the runs without faults: each is its fault run's baseline
        o = evaluate(d, make_requests, AUTO_START if runs == "auto" else runs, seed, criteria,
                     implementation, on_run, bases, max_runs)
        a = Accepted(o, tuple(faults), fc)
        _fault_runs(a, bases, faults, fc, resilience, implementation, on_run)
        if runs == "auto" and not o.deterministic:
            for n in auto_schedule(AUTO_START, max_runs)[1:]:
                if a.status != "undecided":
                    break
                done = len(bases)
                more_runs(o, make_requests, n, implementation, on_run, bases)
                _fault_runs(a, bases[done:], faults, fc, resilience, implementation, on_run)
            o.stopped = stopped_text(len(o.runs), a.status != "undecided", max_runs)
        out.append(a)
    return out


def _fault_runs(a: Accepted, bases: list, faults, fc: FaultCriteria, resilience,
                implementation: str, on_run) -> None:
    """Each base run again with the faults (the first one also each fault alone)."""
    d = a.design
    if not faults:
        return
    jobs = ((base.requests, d, implementation, faults, resilience) for base in bases)
    for base, run in zip(bases, simulate_all(jobs), strict=True):    # on workers, if any help
        k = len(a.with_faults)
        req = base.requests
        a.with_faults.append(figures(run))
        a.fault_figures.append(fault_figures(run, base, fc.window_s, fc.tolerance,
                                             fc.hold))
        if k == 0:
            start = float(min(req.arrival_s)) if len(req) else 0.0
            end = float(max(run.done_s[run.done_s == run.done_s], default=start))
            a.series = windowed(run, start, end, fc.window_s)
            a.baseline_series = windowed(base, start, end, fc.window_s)
            if len(faults) > 1:     # each fault alone, for the runbook
                for f in faults:
                    solo = simulate(req, d, implementation, (f,), resilience)
                    a.alone += fault_figures(solo, base, fc.window_s, fc.tolerance,
                                             fc.hold)
            else:
                a.alone = list(a.fault_figures[0])
        if on_run is not None:
            on_run()


def chosen(results: list[Accepted]) -> Accepted | None:
    ok = [a for a in results if a.accepted]
    return min(ok, key=lambda a: (interval(a.outcome.cost_per_mtok())[0], a.design.gpus),
               default=None)
