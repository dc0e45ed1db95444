"""Acceptance: a design's figures over repeated runs, their 95% intervals, and a decision.

A run *meets the SLOs* when every class that has thresholds had at least ``attainment`` of its
arrived requests within all of them (rejected, failed and late requests count against it). The
runs are independent seeds of the load, and what is decided is the **share of runs that meet**
against ``run_share`` (:mod:`.run_share`): PASS when its one-sided lower Clopper-Pearson bound at
``confidence`` is above ``run_share``, FAIL when its upper bound is below, UNDECIDED otherwise
(one run never passes: it is indicative only). More runs make the decision more certain, never
harsher. With no thresholds in any class there is no verdict (the source's boundary: without
agreed SLOs nothing can pass or fail). A design has *room to spare* when it passes and the
means over runs of each run's worst p95 TTFT or TPOT as a share of its threshold, and of its KV
cache's peak use, are shown (one-sided t bounds) at most ``spare`` and ``kv_spare``.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from ..cluster.deployment import Design
from ..figures.kv_tiers import KVTiers, kv_tiers
from ..figures.metrics import Figures, TimeSeries, figures, missed_slos, time_series
from ..figures.record import Run
from ..load.requests import Requests, SLOClass
from ..numbers import check_int, check_real
from ..sim import memo
from ..sim.simulate import simulate
from .run_share import (
    AUTO_START,
    CONFIDENCE,
    MAX_RUNS,
    RUN_SHARE,
    Decision,
    auto_schedule,
    check_confidence,
    check_run_share,
    check_runs,
    decide_mean,
    decide_share,
    exact,
)

__all__ = ["Criteria", "Outcome", "evaluate", "more_runs", "interval", "stopped_text",
           "simulate_all", "workers", "WORKERS_ENV", "MIN_CPUS", "MAX_WORKERS"]


@dataclass(frozen=True)
class Criteria:
    """attainment : share of each class's requests within its SLOs a run needs (0 to 1)
    spare : 'room to spare' when p95 TTFT and TPOT are at most this share of the thresholds
    kv_spare : ... and the KV cache's peak use at most this share
    run_share : the share of runs (independent seeds) that must meet the SLOs (0 to 1, open)
    confidence : of each one-sided bound on that share (0.5 to below 1)"""

    attainment: float = 0.95
    spare: float = 0.5
    kv_spare: float = 0.8
    run_share: float = RUN_SHARE
    confidence: float = CONFIDENCE

    def __post_init__(self):
        check_real("attainment", self.attainment, 0.0, 1.0, low_open=True)
        check_run_share(self.run_share)
        check_confidence(self.confidence)
        check_real("spare", self.spare, 0.0, 1.0, low_open=True)
        check_real("kv_spare", self.kv_spare, 0.0, 1.0, low_open=True)


def interval(values) -> tuple[float, float, float]:
    """(mean, low, high): the mean of repeated runs and its 95% Student-t interval (low = high
    = mean for a single run). NaN runs are left out."""
    x = np.asarray([v for v in values if v is not None and v == v], dtype=float)
    if not len(x):
        return (math.nan, math.nan, math.nan)
    m = float(x.mean())
    if len(x) < 2:
        return (m, m, m)
    from scipy import stats  # here, past one run: importing scipy costs a second a process

    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return (m, m - half, m + half)


@dataclass
class Outcome:
    """One design's runs: figures overall and per class, per run; the first run's series."""

    design: Design
    classes: tuple[SLOClass, ...]
    criteria: Criteria
    synthetic: bool
    runs: list[Figures] = field(default_factory=list)
    per_class: list[list[Figures]] = field(default_factory=list)
    kv_peak_share: list[float] = field(default_factory=list)
    link_busy_s: list[float] = field(default_factory=list)
    prefix_hit_share: list[float] = field(default_factory=list)
    kv_tiers: list[KVTiers] = field(default_factory=list)   # per run: hits by tier, copies
    lora: list[dict] = field(default_factory=list)   # per run: adapter loads, waits, seconds
    reasons: list[dict] = field(default_factory=list)   # per run: {(reason, class): count}
    #: per run, per class: the shares of its requests over the TTFT and over the TPOT threshold
    missed: list[list[tuple[float, float]]] = field(default_factory=list)
    series: TimeSeries | None = None
    events: int = 0
    iterations: int = 0
    deterministic: bool = False
    seed: int = 0
    #: with ``runs = "auto"``: why the runs stopped where they did ("" for a fixed count)
    stopped: str = ""

    # -- figures -----------------------------------------------------------------------------
    def values(self, key: str, class_id: int | None = None) -> list[float]:
        rows = self.runs if class_id is None else [r[class_id] for r in self.per_class]
        return [getattr(r, key) for r in rows]

    def mean(self, key: str, class_id: int | None = None) -> float:
        return interval(self.values(key, class_id))[0]

    def over(self, slo: str, class_id: int = 0) -> float:
        """The mean over runs of the share of class ``class_id``'s requests over its ``slo``
        threshold (``"ttft"`` or ``"tpot"``): which SLO the misses are."""
        if slo not in ("ttft", "tpot"):
            raise InputError(f"slo: {slo!r}; allowed: ttft, tpot")
        if not self.missed:
            raise InputError("over: this outcome kept no misses (it was not made by evaluate)")
        return interval([run[class_id][slo == "tpot"] for run in self.missed])[0]

    def cost_per_mtok(self) -> list[float]:
        """Dollars per million output tokens at the design's GPU-hour price, per run."""
        d = self.design
        dollars_per_s = d.gpus * d.price / 3600
        return [dollars_per_s / f.throughput_tok_s * 1e6 if f.throughput_tok_s > 0
                else math.inf for f in self.runs]

    def by_reason(self) -> dict[str, float]:
        """Requests rejected at the door or failed, per reason, summed over the classes: the
        mean over the runs (one run: its counts)."""
        out: dict[str, float] = {}
        for per_run in self.reasons:
            for (reason, _c), count in per_run.items():
                out[reason] = out.get(reason, 0) + count / len(self.reasons)
        return out

    def rejections(self) -> str:
        """One sentence: how many requests were rejected or failed and why ('' when none)."""
        reasons = self.by_reason()
        if not reasons:
            return ""
        each = "" if len(self.runs) == 1 else " (mean per run)"
        gone = self.mean("rejected") + self.mean("failed")
        why = ", ".join(f"{_count(n)} {r}" for r, n in sorted(reasons.items(),
                                                              key=lambda x: -x[1]))
        return (f"{_count(gone)} of {_count(self.mean('arrived'))} requests rejected or "
                f"failed{each}: {why}")

    # -- judgement ---------------------------------------------------------------------------
    @property
    def has_slo(self) -> bool:
        return any(c.has_slo for c in self.classes)

    def run_meets(self, k: int) -> bool:
        return all(self.per_class[k][c].slo_attainment >= self.criteria.attainment
                   for c, cls in enumerate(self.classes) if cls.has_slo and
                   self.per_class[k][c].arrived)

    def meets(self) -> list[bool]:
        """Per run: did it meet the SLOs."""
        return [self.run_meets(k) for k in range(len(self.runs))]

    @property
    def decision(self) -> Decision | None:
        """The share of runs that meet the SLOs, decided (None without SLOs). A replayed trace
        is one deterministic run: met or not, exactly."""
        if not self.has_slo:
            return None
        met = self.meets()
        if self.deterministic:
            return exact(met[0])
        c = self.criteria
        return decide_share(sum(met), len(met), c.run_share, c.confidence)

    @property
    def status(self) -> str | None:
        """"pass", "fail" or "undecided" (None: no SLOs, no verdict)."""
        d = self.decision
        return None if d is None else d.state

    @property
    def passed(self) -> bool | None:
        """True when decided pass, False when decided fail; None while undecided or without
        SLOs (:attr:`status` tells the two apart)."""
        d = self.decision
        return None if d is None else d.passed

    @property
    def decided(self) -> bool:
        """Nothing left for more runs to decide: passed, failed, or no SLOs to judge."""
        return self.status != "undecided"

    def spare_decisions(self) -> list[Decision]:
        """The mean over runs of each run's worst p95 (TTFT or TPOT) as a share of its class's
        threshold, against ``spare``; the mean KV peak share against ``kv_spare``."""
        worst = []
        for k in range(len(self.runs)):
            ratios = []
            for c, cls in enumerate(self.classes):
                f = self.per_class[k][c]
                if not f.arrived:
                    continue
                if cls.ttft_s is not None:
                    ratios.append(f.ttft_p95 / cls.ttft_s)
                if cls.tpot_s is not None and f.tpot_p95 == f.tpot_p95:
                    ratios.append(f.tpot_p95 / cls.tpot_s)
            worst.append(max(ratios, default=0.0))
        c = self.criteria
        return [decide_mean(worst, c.spare, c.confidence),
                decide_mean(self.kv_peak_share, c.kv_spare, c.confidence)]

    @property
    def room_to_spare(self) -> bool:
        if not self.passed:
            return False
        if self.deterministic:
            return all(d.met == d.runs for d in self.spare_decisions())
        return all(d.state == "pass" for d in self.spare_decisions())

    def label(self) -> str:
        """A short mark: PASS+ (with room to spare), PASS, FAIL; pass? or fail? while undecided
        (what the runs so far point to); - without SLOs."""
        d = self.decision
        if d is None:
            return "-"
        if d.state == "undecided":
            return "pass?" if d.indicative else "fail?"
        return "PASS+" if self.room_to_spare else d.state.upper()

    def verdict(self) -> str:
        """One honest sentence (or two) about this design against the SLOs."""
        label = " Synthetic load: not a production SLO result." if self.synthetic else ""
        n = len(self.runs)
        if not self.has_slo:
            return ("No verdict: no class sets a TTFT or TPOT threshold, and without agreed "
                    "SLOs a design can neither pass nor fail." + label)
        worst = min((self.per_class[k][c].slo_attainment, c) for k in range(n)
                    for c, cls in enumerate(self.classes)
                    if cls.has_slo and self.per_class[k][c].arrived)
        share, c = worst
        name = self.classes[c].name
        runs = f"{n} run{'s' if n != 1 else ''}"
        d = self.decision
        met = d.met
        need = f"{self.criteria.attainment:.0%} needed"
        lowest = f"{share:.1%} of '{name}' within its thresholds, {need}"
        conf, q = f"{d.confidence:.0%}", f"{d.required:.0%}"
        stop = f" {self.stopped}." if self.stopped else ""
        if d.exact:
            what = "met" if met else "missed"
            return (f"{d.state.upper()}: the SLOs were {what} in the trace's one deterministic "
                    f"run ({'lowest' if met else 'worst'}: {lowest})." + label)
        if d.state == "pass":
            spare = " with room to spare" if self.room_to_spare else ""
            return (f"PASS{spare}: the SLOs were met in {met} of {runs}, so at least "
                    f"{d.low:.0%} of runs meet them ({conf} confidence, {q} needed; lowest: "
                    f"{lowest})." + stop + label)
        if d.state == "fail":
            return (f"FAIL: the SLOs were missed in {n - met} of {runs}, so at most "
                    f"{d.high:.0%} of runs meet them ({conf} confidence, {q} needed; worst: "
                    f"{lowest})." + stop + label)
        lean = "pass" if d.indicative else "fail"
        one = " from one run" if n == 1 else ""
        more = d.runs_to_pass()
        then = (f"; {more} more runs, all meeting them, would pass it" if d.indicative
                else "; more runs would decide it")
        return (f"UNDECIDED (indicative {lean}{one}): the SLOs were met in {met} of {runs}; "
                f"the share of runs that meet them is {d.low:.0%} to {d.high:.0%} (one-sided "
                f"{conf} bounds), {q} needed{then} ({'lowest' if met == n else 'worst'}: "
                f"{lowest})." + stop + label)


def _count(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def evaluate(design: Design, make_requests: Callable[[int], Requests], runs: int | str = 1,
             seed: int = 0, criteria: Criteria | None = None, implementation: str = "fast",
             on_run: Callable[[], None] | None = None,
             keep: list[Run] | None = None, max_runs: int = MAX_RUNS) -> Outcome:
    """Run ``design`` on ``make_requests(seed + k)`` for k in range(runs). ``runs = "auto"``
    starts with a few runs and doubles them, seeds continuing, until the decision is made or
    ``max_runs`` is reached (:func:`.run_share.auto_schedule`; the outcome's ``stopped`` says
    which). A replayed trace is the same every run, so it is run once (the outcome says it is
    deterministic). Each run is appended to ``keep`` when one is given (a caller that needs
    the runs themselves, not only their figures, so it need not simulate them again)."""
    runs = check_runs(runs)
    max_runs = check_int("max_runs", max_runs, 1, 10_000)
    criteria = criteria or Criteria()
    first = make_requests(seed)
    out = Outcome(design, first.classes, criteria, first.synthetic, seed=seed)
    # a replayed trace (at any speed, real or the package's generated hour) or any load that
    # is real traffic is the same every seed: one run, its verdict exact
    replayed = bool(first.meta) and first.meta.get("trace") is not None
    if replayed or not first.synthetic:
        out.deterministic = True
        more_runs(out, make_requests, 1, implementation, on_run, keep, first)
        return out
    if runs != "auto":
        more_runs(out, make_requests, runs, implementation, on_run, keep, first)
        return out
    for n in auto_schedule(AUTO_START, max_runs):
        more_runs(out, make_requests, n, implementation, on_run, keep, first)
        if out.decided:
            break
    out.stopped = stopped_text(len(out.runs), out.decided, max_runs)
    return out


def stopped_text(n: int, decided: bool, cap: int) -> str:
    """Why ``runs = "auto"`` stopped after ``n`` runs."""
    return (f"Runs auto: decided after {n} runs" if decided else
            f"Runs auto: still undecided at the cap of {cap} runs (raise --max-runs)")


def more_runs(out: Outcome, make_requests: Callable[[int], Requests], upto: int,
              implementation: str = "fast", on_run: Callable[[], None] | None = None,
              keep: list[Run] | None = None, first: Requests | None = None) -> None:
    """Add runs to ``out`` until it has ``upto``, on the seeds that follow its last one."""
    start = len(out.runs)
    jobs = ((first if k == 0 and first is not None else make_requests(out.seed + k),
             out.design, implementation, (), None) for k in range(start, upto))
    for k, run in enumerate(simulate_all(jobs), start):     # on workers where they help
        _add(out, run)
        if keep is not None:
            keep.append(run)
        if k == 0:
            out.series = time_series(run)
        if on_run is not None:
            on_run()


def _add(out: Outcome, run: Run) -> None:
    out.runs.append(figures(run))
    out.per_class.append([figures(run, c) for c in range(len(run.requests.classes))])
    out.kv_peak_share.append(run.kv_peak_share)
    out.link_busy_s.append(run.link_busy_s)
    out.prefix_hit_share.append(run.prefix_hit_tokens / run.prefix_lookup_tokens
                                if run.prefix_lookup_tokens else 0.0)
    out.kv_tiers.append(kv_tiers(run))
    out.lora.append({"loads_resident": run.lora_loads[0], "loads_cpu": run.lora_loads[1],
                     "loads_disk": run.lora_loads[2], "slot_skips": run.lora_skips,
                     "load_s": run.lora_load_s, "kernel_s": run.lora_kernel_s})
    out.reasons.append(dict(run.reasons))
    out.missed.append([missed_slos(run, c) for c in range(len(run.requests.classes))])
    out.events += run.events
    out.iterations += run.iterations

# -- runs on worker processes ----------------------------------------------------------------
# Independent runs (an outcome's seeds, the faulted copies of them) on several processes at
# once, when the machine has cores to spare: :func:`simulate_all` gives the runs back in order,
# each exactly what :func:`~..sim.simulate.simulate` gives (a run is a pure function of its
# inputs, so a worker makes the same run as this process). Runs this process has kept
# (:mod:`..sim.memo`) are taken from it, and the runs the workers make are kept here. The
# workers are forked (no re-import) and used only where they can help: at least
# :data:`MIN_CPUS` cores this process may use, not inside a pytest-xdist worker (the suite
# already keeps every core busy), and two runs or more to make. ``SCHEDATRIX_WORKERS``
# overrides: ``0`` or ``1`` makes every run here, in turn; ``N`` uses up to N processes, even
# on a small machine (for measuring).

WORKERS_ENV = "SCHEDATRIX_WORKERS"
#: Cores the process must be allowed before runs go to workers by default (on 2, the
#: learner's kernel and the browser, or the suite's two pytest workers, already use them).
MIN_CPUS = 3
#: The most worker processes used by default.
MAX_WORKERS = 8


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                      # macOS: no affinity
        return os.cpu_count() or 1


def workers() -> int:
    """How many processes :func:`simulate_all` may use (1: none besides this one)."""
    given = os.environ.get(WORKERS_ENV)
    if given is not None and given.strip():
        try:
            n = int(given)
        except ValueError:
            n = -1
        if n < 0:
            raise InputError(f"{WORKERS_ENV}: got {given!r}; allowed: a whole number of "
                             "processes, 0 or 1 for none besides this one")
        return max(n, 1)
    # by default on Linux only: macOS offers fork, but a forked child of a process that has
    # started system frameworks' threads can crash there
    if os.environ.get("PYTEST_XDIST_WORKER") or not sys.platform.startswith("linux") or \
            "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cpus = _cpus()
    return 1 if cpus < MIN_CPUS else min(cpus - 1, MAX_WORKERS)


def _make(job):
    """In a worker: one run (kept nowhere: the caller keeps it) and its CPU seconds."""
    requests, design, implementation, faults, resilience = job
    started = time.process_time()
    with memo.off():
        run = simulate(requests, design, implementation, faults, resilience)
    return run, time.process_time() - started


def simulate_all(jobs):
    """The runs of ``jobs`` (an iterable of ``(requests, design, implementation, faults,
    resilience)``), yielded in order. With one process, each job is taken, run and yielded
    in turn, as a loop over :func:`simulate` would; with workers, every job is taken first
    and the runs the memo does not hold are made at once."""
    if workers() < 2:
        for job in jobs:
            yield simulate(*job)
        return
    jobs = list(jobs)
    keys = [memo.key(*job) for job in jobs]
    runs = [memo.get(k, job[0]) for k, job in zip(keys, jobs, strict=True)]
    todo = [k for k, run in enumerate(runs) if run is None]
    if len(todo) < 2:
        for k, run in enumerate(runs):
            yield run if run is not None else simulate(*jobs[k])
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(min(workers(), len(todo)), mp_context=context) as pool:
        made = {k: pool.submit(_make, jobs[k]) for k in todo}
        for k, run in enumerate(runs):
            if k in made:
                try:
                    run, cost_s = made[k].result()
                except Exception:      # a job that can't be pickled, a worker lost: here, in
                    yield simulate(*jobs[k])     # turn (a run that fails fails here too)
                    continue
                run.requests = jobs[k][0]              # the caller's own, as simulate gives
                memo.put(keys[k], run, cost_s)
            yield run
