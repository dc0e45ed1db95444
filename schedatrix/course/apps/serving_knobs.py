"""What the serving lessons' knobs describe: a load and a design, made from plain values.

A :class:`Setting` is the state of every knob (rate, burstiness, lengths, model, GPU, TP, PP,
replicas, the prefill/decode split, scheduler knobs, SLOs, seed). :func:`load_of` and
:func:`design_of` turn it into the simulator's :class:`~schedatrix.serving.load.workload.Load` and
:class:`~schedatrix.serving.cluster.deployment.Design`; bad values raise the simulator's own
:class:`~schedatrix.errors.InputError`, which the apps show instead of figures.

The lengths come from a short menu (:data:`LENGTHS`): the packaged conversation hour's
(input, output) pairs, vLLM's random dataset (1,024 in, 128 out), or long prompts.
:data:`DESIGN_MENU` is the candidate designs the lessons and the design page compare.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ...audit.synth import packaged_hour
from ...errors import InputError
from ...serving.cluster.deployment import Design
from ...serving.figures.metrics import Figures, figures, missed_slos
from ...serving.figures.record import Run
from ...serving.load.lengths import PairedLengths
from ...serving.load.replay import replay
from ...serving.load.requests import Requests, SLOClass
from ...serving.load.workload import Load
from ...serving.studies.acceptance import Criteria, Outcome

__all__ = ["Setting", "LENGTHS", "SPLITS", "TTFT_SLOS", "TPOT_SLOS", "DESIGN_MENU", "load_of",
           "design_of", "slo_class", "conversation_hour", "hour_pairs", "designs_for", "menu_label",
           "outcome_of"]

#: Length choices: key -> (label, (input spec, output spec) or None for the hour's pairs).
LENGTHS = {
    "hour": ("the conversation hour's (input, output) pairs", None),
    "random": ("1,024 in, 128 out (vLLM's random dataset)", ("1024", "128")),
    "long": ("long prompts: about 4,000 in, 150 out", ("lognormal:4000,0.4",
                                                      "lognormal:150,0.6")),
}
#: Prefill/decode splits a knob offers: (prefill replicas, decode replicas); (0, 0) = none.
SPLITS = ((0, 0), (1, 1), (1, 2), (2, 1), (2, 2), (3, 1))
#: The SLO thresholds a knob offers: (label, seconds).
TTFT_SLOS = (("0.25 s", 0.25), ("0.5 s", 0.5), ("1 s", 1.0), ("2 s", 2.0), ("5 s", 5.0))
TPOT_SLOS = (("25 ms", 0.025), ("50 ms", 0.05), ("100 ms", 0.1), ("200 ms", 0.2))

#: The candidate designs compared by model shape: knobs on top of the model and GPU. Those a
#: model does not fit on are skipped with the simulator's reason.
DESIGN_MENU = (
    {"replicas": 1},
    {"replicas": 2},
    {"tp": 2},
    {"tp": 4},
    {"tp": 4, "replicas": 2},
    {"tp": 4, "replicas": 3},
    {"tp": 4, "replicas": 4},
    {"tp": 8},
    {"tp": 8, "replicas": 2},
    {"tp": 4, "pp": 2},
    {"tp": 4, "prefill_replicas": 3, "decode_replicas": 1},
)


@cache
def conversation_hour() -> Requests:
    """The packaged hour of the conversation service (a generated stand-in with the shape of
    the Azure LLM inference trace 2023), replayed as requests; read once per process."""
    return replay(packaged_hour()["small"])


@cache
def hour_pairs() -> PairedLengths:
    """The packaged conversation hour's (input, output) pairs."""
    return PairedLengths.from_requests(conversation_hour())


@dataclass(frozen=True)
class Setting:
    """Every knob of a serving app, as plain values.

    rate_rps : mean requests per second (> 0); burstiness : gamma shape of the gaps (1 =
        Poisson, below 1 burstier)
    lengths : a key of :data:`LENGTHS`
    model, gpu : catalog names; tp, pp : parallel degrees; replicas : data-parallel copies
    split : (prefill replicas, decode replicas), (0, 0) for none (then ``replicas`` counts)
    max_batch, max_batched_tokens, chunked_prefill : the replica scheduler's knobs
    ttft_slo_s, tpot_slo_s : the SLO thresholds, seconds (None: no threshold)
    requests : how many arrivals one run serves; seed : the load's random draw
    """

    rate_rps: float = 4.0
    burstiness: float = 1.0
    lengths: str = "hour"
    model: str = "llama-3.1-8b"
    gpu: str = "a100-80gb"
    tp: int = 1
    pp: int = 1
    replicas: int = 1
    split: tuple[int, int] = (0, 0)
    max_batch: int = 256
    max_batched_tokens: int = 8192
    chunked_prefill: bool = True
    ttft_slo_s: float | None = 1.0
    tpot_slo_s: float | None = 0.1
    requests: int = 300
    seed: int = 0

    def with_(self, **knobs) -> Setting:
        return replace(self, **knobs)


def slo_class(s: Setting) -> SLOClass:
    """The one SLO class every request of the setting's load belongs to."""
    return SLOClass("chat", 1.0, priority=0, ttft_s=s.ttft_slo_s, tpot_s=s.tpot_slo_s)


def load_of(s: Setting) -> Load:
    """The setting's load: open-loop arrivals at ``rate_rps`` with ``burstiness``, its lengths,
    one SLO class."""
    if s.lengths not in LENGTHS:
        raise InputError(f"lengths {s.lengths!r}: allowed: {', '.join(LENGTHS)}")
    specs = LENGTHS[s.lengths][1]
    lengths = {"pairs": hour_pairs()} if specs is None else {
        "input_len": specs[0], "output_len": specs[1]}
    return Load(rate_rps=s.rate_rps, burstiness=s.burstiness, classes=(slo_class(s),),
                **lengths)


def design_of(s: Setting) -> Design:
    """The setting's design (validated by the simulator: a model that does not fit, a TP the
    heads don't divide, PP stages the layers don't divide each raise InputError)."""
    prefill, decode = s.split
    return Design(model=s.model, gpu=s.gpu, tp=s.tp, pp=s.pp,
                  replicas=0 if prefill else s.replicas, prefill_replicas=prefill,
                  decode_replicas=decode, max_batch=s.max_batch,
                  max_batched_tokens=s.max_batched_tokens, chunked_prefill=s.chunked_prefill)


def menu_label(knobs: dict) -> str:
    """The name a menu entry's design gets (the simulator's label), without building it."""
    tp, pp = knobs.get("tp", 1), knobs.get("pp", 1)
    par = f"TP{tp}" + (f" PP{pp}" if pp > 1 else "")
    if knobs.get("prefill_replicas"):
        return f"split P{knobs['prefill_replicas']}:D{knobs['decode_replicas']} {par}"
    return f"{knobs.get('replicas', 1)} x {par}"


def designs_for(model: str, gpu: str, menu=DESIGN_MENU,
                **common) -> tuple[list[Design], list[tuple[str, str]]]:
    """The menu's designs for ``model`` on ``gpu`` (plus ``common`` knobs), and the
    (name, reason) of those that can't be built, e.g. a model too big for their GPUs."""
    built, skipped = [], []
    for knobs in menu:
        try:
            built.append(Design(model=model, gpu=gpu, **common, **knobs))
        except InputError as e:
            skipped.append((menu_label(knobs), str(e)))
    return built, skipped


def outcome_of(run: Run, design: Design, criteria: Criteria | None = None,
               overall: Figures | None = None) -> Outcome:
    """The acceptance outcome of one run already made (figures overall and per class, KV
    peak), so a live app can judge the run it also plots. ``overall``: its figures, if
    computed already."""
    req = run.requests
    f = figures(run) if overall is None else overall
    per_class = [f] if len(req.classes) == 1 else [figures(run, c)
                                                    for c in range(len(req.classes))]
    return Outcome(design, req.classes, criteria or Criteria(), req.synthetic, runs=[f],
                   per_class=[per_class], kv_peak_share=[run.kv_peak_share],
                   link_busy_s=[run.link_busy_s],
                   prefix_hit_share=[run.prefix_hit_tokens / run.prefix_lookup_tokens
                                     if run.prefix_lookup_tokens else 0.0],
                   reasons=[dict(run.reasons)],
                   missed=[[missed_slos(run, c) for c in range(len(req.classes))]],
                   events=run.events, iterations=run.iterations)
