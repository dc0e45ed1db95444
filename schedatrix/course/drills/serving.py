"""Serving drills: drill number n is the same replica and the same questions for everyone.

Each drill describes one replica (a model's shape, a GPU, its tensor parallelism, a batch) and
asks three questions drawn from a bank of seventeen kinds. Six are about the replica: the KV
bytes a token holds, the KV capacity of the replica, the largest batch that fits, a decode
step's time by the roofline, the bytes one GPU sends in a step's all-reduces, and which SLO
fails and which knob repairs it. Six are about the system around it
(:mod:`.system`): a one-at-a-time replica's queue by Pollaczek-Khinchine, Little's law,
DistServe's goodput per GPU, the prefix cache, the KV move of a prefill/decode split, and the
time a crashed replica takes to serve again. Two are lesson 13's (:mod:`.expert`): the
expert weights a mixture-of-experts decode step reads, and the weights an FP8 replica holds.
Three are lesson 15's (:mod:`.features`), on the drill's replica: speculative decoding's gain
at its batch, the KV cache its LoRA slots take, and the copy back of a prefix from a CPU tier of
the KV cache.
No kind makes up more than a fifth of the questions (tests/test_serving_drills.py counts
drills 0 to 999).
As in the fleet drills (:mod:`schedatrix.course.drills.fleet`), everything is drawn from Python's
``random.Random`` seeded by the drill's number (only ``random()``, whose sequence Python keeps
stable), answers are balanced (the SLO question fails TTFT, TPOT or neither equally often),
and no prompt, fact or worked explanation of a drill prints another question's answer: kinds
that reveal what another asks are never drawn together, and every text is scanned for every
other answer.

Every number a prompt prints is the one its answer is computed from (a learner works from the
page); the answers agree with the library's :class:`~schedatrix.serving.perf.model.PerfModel`
(tests/test_serving_drills.py). Every setup a drill describes is one the simulator takes
(tests/test_serving_drills.py runs those of drills 0 to 999 through it): a request's prompt and
output within the model's context (Llama 2's 4,096 tokens), a batch within the KV cache and
the scheduler's caps, a prompt the SLO question says is prefilled in one step within that
step's token budget.

The SLO question's figures come from that performance model, and its terms are the lessons'
(docs/glossary.md): TTFT from the request's arrival to its first token, the wait in the queue
included (here the decode step under way when it arrives, then the step its prefill joins),
TPOT the time per output token after the first (a decode step with it in the batch). The
knobs it accepts are the ones whose turn, timed by the same model, meets both SLOs: tensor
parallelism doubled, or an H200. A smaller batch cap is not offered: it shortens the steps by
keeping requests out of the batch, and those wait in the queue instead (lesson 08: a cap of 8
raises p95 TTFT far past any SLO), which this question's one request does not see.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from itertools import combinations

from ...errors import InputError
from ...serving.perf.catalog import GPU, GPUS, MODELS, ModelShape
from ...serving.perf.model import PerfModel, allowed_tp
from ...text import wrap
from . import expert as expert_drills
from . import features as feature_drills
from . import system as system_drills
from .kit import draw_kinds, find_words, format_drill_set
from .question import Question, by_id

__all__ = ["Question", "ServingDrill", "SERVING_KINDS", "SLO_KNOBS", "PER_DRILL",
           "USABLE_SHARE", "RESERVE_GB", "HBM_SHARE", "BLOCK_TOKENS", "MAX_BATCH",
           "SLO_PROMPTS", "SLO_OUTPUT", "SLO_BUDGETS", "PROMPT_ROOM", "serving_drill",
           "serving_drill_set", "format_serving_drills", "leaks"]

#: Questions per drill.
PER_DRILL = 3
#: The share of each GPU's memory the engine may use, and the activation reserve per GPU.
USABLE_SHARE = 0.9
RESERVE_GB = 2.0
#: The share of the HBM bandwidth a decode step reaches, for the roofline question.
HBM_SHARE = 0.85
#: The KV cache's block and the scheduler's batch cap, for the largest-batch question.
BLOCK_TOKENS = 16
MAX_BATCH = 256
#: The SLO question: the prompts it draws from, the output its request asks for and the token
#: budgets a step may have (vLLM's max_num_batched_tokens); it draws only a prompt the
#: simulator admits and prefills in one step beside the batch (``_slo_prompts``).
SLO_PROMPTS = (500, 1000, 1500, 2000, 3000, 4000, 6000)
SLO_OUTPUT = 128
SLO_BUDGETS = (2048, 4096, 8192)
#: Output tokens every prompt the system kinds draw leaves room for within the model's
#: context (prompt + output <= max_context, as the simulator admits a request).
PROMPT_ROOM = system_drills.PROMPT_ROOM
#: The knob turns the SLO question offers (tp, gpu), as the learner may name them, and the one
#: it does not (max_batch), recognised so that its feedback can say why.
SLO_KNOBS = {"tp": "tp", "tensor": "tp", "tensor parallelism": "tp",
             "max_batch": "max_batch", "batch": "max_batch", "max batch": "max_batch",
             "gpu": "gpu", "h200": "gpu"}
_SLO_WORDS = {"ttft": "ttft", "first token": "ttft", "tpot": "tpot", "per output token": "tpot",
              "itl": "tpot"}
_NONE_WORDS = ("none", "neither", "nothing", "both met", "all met", "no slo")

_MODELS = ("llama-3.2-3b", "llama-3.1-8b", "llama-2-7b", "llama-3.1-70b")
_GPUS = ("a100-80gb", "h100-80gb")
#: How strongly each kind is drawn when it can still be (kinds few sets hold weigh more).
_DRAW_WEIGHT = {"kv_per_token": 1.0, "kv_capacity": 1.6, "largest_batch": 1.6,
                "step_time": 1.6, "allreduce_bytes": 0.5, "slo": 1.0, "mg1_wait": 1.0,
                "littles_law": 1.0, "goodput_per_gpu": 1.0, "prefix_cache": 1.0, "kv_move": 1.0,
                "recovery": 1.0, "expert_reads": 1.0, "fp8_weights": 1.0,
                "spec_gain": 1.0, "lora_slots": 1.0, "tier_copy": 1.0}


@dataclass(frozen=True)
class _Replica:
    model: ModelShape
    gpu: GPU
    tp: int
    batch: int
    context: int


def _pick(r: random.Random, options):
    return options[int(r.random() * len(options))]


def _billions(x: float) -> str:
    return f"{x / 1e9:g} billion"


def _kv_bytes(m: ModelShape) -> int:
    return 2 * m.layers * m.kv_heads * m.head_dim * 2


def _capacity(rep: _Replica) -> int:
    """KV tokens the replica holds, from the printed facts (tp never exceeds the KV heads
    here, so each GPU holds an even share of the weights and of every token's KV)."""
    free = rep.gpu.memory_gb * 1e9 * USABLE_SHARE - rep.model.params * 2 / rep.tp \
        - RESERVE_GB * 1e9
    return int(free // (_kv_bytes(rep.model) / rep.tp))


# ---------------------------------------------------------------------------- the kinds


def _kv_per_token(rep: _Replica, r: random.Random) -> Question:
    m = rep.model
    kv = _kv_bytes(m)
    return Question(
        "kv_per_token",
        f"How many bytes of KV cache does one token of {m.name} hold, over the whole model?",
        kv, "count",
        f"2 (K and V) x {m.layers} layers x {m.kv_heads} KV heads x {m.head_dim} dims x 2 "
        f"bytes = {kv:,} bytes ({kv / 1024:g} KiB).",
        "Every layer keeps a K and a V vector per KV head (not per attention head), BF16.",
        unit="bytes",
    )


def _kv_capacity(rep: _Replica, r: random.Random) -> Question:
    m, g, tp = rep.model, rep.gpu, rep.tp
    cap = _capacity(rep)
    per_gpu_weights = m.params * 2 / tp / 1e9
    return Question(
        "kv_capacity",
        f"The engine may use {USABLE_SHARE:.0%} of each GPU's memory and keeps {RESERVE_GB:g} GB "
        "per GPU for activations. How many tokens of KV cache does the replica hold?",
        cap, "figure",
        f"Per GPU: {g.memory_gb:g} GB x {USABLE_SHARE:g} - {per_gpu_weights:,.2f} GB of weights "
        f"(its 1/{tp} share) - {RESERVE_GB:g} GB, over its 1/{tp} share of a token's "
        f"{_kv_bytes(m):,} bytes of KV: {cap:,} tokens.",
        "Work per GPU: usable memory, less its share of the weights (2 bytes a parameter) and "
        "the reserve, over its share of one token's KV bytes. GB are 10^9 bytes.",
        unit="tokens", rel_tolerance=0.005,
    )


def _largest_batch(rep: _Replica, r: random.Random) -> Question | None:
    cap = _capacity(rep)
    # a round capacity as the prompt prints it, and lengths where the cache (not the cap of
    # MAX_BATCH) usually decides
    shown = int(round(cap, -3))
    # lengths the model takes: prompt + output within its context
    longest = rep.model.max_context - 1016
    prompt = _pick(r, [p for p in (1000, 1500, 2000, 3000, 4000, 6000) if p <= longest])
    output = _pick(r, (100, 150, 250, 500, 1000)) + int(r.random() * 16)
    per = -(-(prompt + output) // BLOCK_TOKENS)
    batch = min(MAX_BATCH, (shown // BLOCK_TOKENS) // per)
    if batch == MAX_BATCH and r.random() < 0.85:
        return None
    if batch == 0:
        return None
    return Question(
        "largest_batch",
        f"A cache of {shown:,} tokens in blocks of {BLOCK_TOKENS}; requests of {prompt:,} "
        f"prompt and {output:,} output tokens; the scheduler runs at most {MAX_BATCH}. How many "
        "such requests fit at their full length at once?",
        batch, "count",
        f"{shown:,} // {BLOCK_TOKENS} = {shown // BLOCK_TOKENS:,} blocks; each request fills "
        f"ceil({prompt + output:,} / {BLOCK_TOKENS}) = {per} blocks; "
        f"min({MAX_BATCH}, {shown // BLOCK_TOKENS:,} // {per}) = {batch}.",
        "The cache hands out whole blocks, and a request's last block is whole too; the "
        "scheduler's cap still applies.",
        unit="requests",
    )


def _roofline_ms(rep: _Replica) -> float:
    m, g = rep.model, rep.gpu
    nbytes = (m.params * 2 + rep.batch * rep.context * _kv_bytes(m)) / rep.tp
    return 1e3 * nbytes / (HBM_SHARE * g.hbm_gb_s * 1e9)


def _step_time(rep: _Replica, r: random.Random) -> Question:
    m, g, tp = rep.model, rep.gpu, rep.tp
    ms = _roofline_ms(rep)
    kv_gb = rep.batch * rep.context * _kv_bytes(m) / 1e9
    return Question(
        "step_time",
        f"A decode step runs {rep.batch} requests of {rep.context:,} tokens of context each. "
        f"By the roofline (memory bound, {HBM_SHARE:.0%} of the HBM bandwidth reached), how "
        "many milliseconds does one step take?",
        ms, "figure",
        f"Each GPU reads 1/{tp} of the weights ({m.params * 2 / 1e9:,.2f} GB in all) and of "
        f"the batch's KV ({kv_gb:,.2f} GB in all) at {HBM_SHARE:g} x {g.hbm_gb_s:,.0f} GB/s: "
        f"{ms:.2f} ms.",
        "A memory-bound step reads every weight once and every request's whole KV cache once; "
        "time = bytes per GPU / bandwidth reached.",
        unit="ms", rel_tolerance=0.01,
    )


def _allreduce_mb(rep: _Replica) -> float:
    t = rep.tp
    act = rep.batch * rep.model.hidden * 2
    return rep.model.layers * 2 * 2 * (t - 1) / t * act / 1e6


def _allreduce_bytes(rep: _Replica, r: random.Random) -> Question | None:
    if rep.tp == 1:
        return None
    m, t = rep.model, rep.tp
    mb = _allreduce_mb(rep)
    return Question(
        "allreduce_bytes",
        f"With tensor parallelism over {t} GPUs, every layer all-reduces its activations twice "
        f"(ring all-reduce, BF16). In one decode step of {rep.batch} requests, how many MB "
        "(10^6 bytes) does each GPU send for the layers' all-reduces?",
        mb, "figure",
        f"One activation: {rep.batch} tokens x {m.hidden:,} x 2 bytes = "
        f"{rep.batch * m.hidden * 2 / 1e6:.3f} MB; a ring sends 2 x ({t} - 1) / {t} of it per "
        f"GPU; x 2 all-reduces x {m.layers} layers = {mb:.2f} MB.",
        "A ring all-reduce of N bytes over p GPUs sends 2 (p - 1) / p x N from each GPU; a "
        "decode step has one token per request.",
        unit="MB", rel_tolerance=0.01,
    )


def _slo_figures(model: ModelShape, gpu: str, tp: int, batch: int, context: int,
                 prompt: int) -> tuple[float, float, float] | None:
    """(the decode step a request arrives into, the step its prefill joins, a decode step
    with it in the batch), seconds by the library's performance model, for a ``prompt``-token
    request joining ``batch`` requests of ``context`` tokens each; None when the model does not
    fit."""
    try:
        perf = PerfModel(model, gpu, tp=tp)
    except InputError:
        return None
    ctx = batch * context
    return (perf.iteration_s((), batch, ctx), perf.iteration_s([(prompt, 0)], batch, ctx),
            perf.iteration_s((), batch + 1, ctx + prompt))


def _ttft_tpot(figures: tuple[float, float, float]) -> dict[str, float]:
    """TTFT and TPOT in ms from the three steps: TTFT from the arrival (the wait for the step
    under way, then the step that prefills the prompt), TPOT one decode step with it in."""
    wait, joined, decode = (1e3 * v for v in figures)
    return {"ttft": wait + joined, "tpot": decode}


def _slo(rep: _Replica, r: random.Random) -> Question | None:
    """The SLO question: the answer (ttft, tpot or none) is drawn first, evenly; a few tries
    of the prompt and the SLOs' margins find a case where a knob repairs it."""
    want = _pick(r, ("ttft", "tpot", "none"))
    for _ in range(6):
        q = _slo_case(rep, r, want)
        if q is not None:
            return q
    return None


def _slo_prompts(rep: _Replica, budget: int) -> list[int]:
    """The prompts the SLO question may draw: prefilled whole in one step beside the batch's
    decode tokens (``budget``), within the model's context with its output, and with room in
    the KV cache beside the batch (the simulator admits it and runs it that way)."""
    room = _capacity(rep) - rep.batch * rep.context
    return [p for p in SLO_PROMPTS if p + rep.batch <= budget
            and p + SLO_OUTPUT <= rep.model.max_context and p + SLO_OUTPUT <= room]


def _slo_case(rep: _Replica, r: random.Random, want: str) -> Question | None:
    m, g, tp = rep.model, rep.gpu, rep.tp
    budget = _pick(r, SLO_BUDGETS)
    prompts = _slo_prompts(rep, budget)
    if not prompts:
        return None
    prompt = _pick(r, prompts)
    base = _slo_figures(m, g.name, tp, rep.batch, rep.context, prompt)
    if base is None:
        return None
    shown = _ttft_tpot(base)
    slos = {}
    for name in ("ttft", "tpot"):
        factor = (1 / (1.04 + 0.2 * r.random())) if name == want else (1.1 + 0.5 * r.random())
        slos[name] = max(1, int(round(shown[name] * factor)))
    fails = [n for n in ("ttft", "tpot") if round(shown[n], 1) > slos[n]]
    if fails != ([] if want == "none" else [want]):
        return None
    turns = {"tp": (g.name, tp * 2, rep.batch), "gpu": ("h200", tp, rep.batch)}
    accepted = set()
    if want != "none":
        for knob, (gname, t, b) in turns.items():
            if (knob == "tp" and t not in allowed_tp(m)) or (knob == "gpu" and g.name == "h200"):
                continue
            turned = _slo_figures(m, gname, t, b, rep.context, prompt)
            if turned and all(v <= slos[n] for n, v in _ttft_tpot(turned).items()):
                accepted.add(knob)
        if not accepted:
            return None
    wait, joined, decode = (1e3 * v for v in base)
    figures = (f"the decode step it arrives into takes {wait:.1f} ms, the step its prefill "
               f"joins {joined:.1f} ms, and a decode step with it in the batch {decode:.1f} ms")
    sums = (f"TTFT = {wait:.1f} ms waiting for the step under way + {joined:.1f} ms for the "
            f"step that prefills it = {shown['ttft']:.1f} ms; TPOT = {decode:.1f} ms")
    if want == "none":
        explanation = (f"{sums}. {shown['ttft']:.1f} <= {slos['ttft']} and {decode:.1f} <= "
                       f"{slos['tpot']}: both SLOs are met; no knob needs turning.")
        accepted = {"none"}
    else:
        knob_text = " or ".join(sorted(accepted))
        explanation = (f"{sums}. {shown[want]:.1f} ms is over the {want.upper()} SLO of "
                       f"{slos[want]} ms (the other is met); by the same model, {knob_text} "
                       "brings both within their SLOs.")
    return Question(
        "slo",
        f"The replica decodes a batch of {rep.batch} requests of {rep.context:,} tokens of "
        f"context each, with a token budget of {budget:,} a step (max_num_batched_tokens). "
        f"A request of {prompt:,} prompt and {SLO_OUTPUT} output tokens arrives as a decode "
        "step starts, with no other request waiting: it waits in the queue for that step, its "
        "whole prefill then joins the next step, which yields its first token, and each later "
        "token takes a decode step. The library's performance model times these steps: "
        f"{figures}. TTFT runs from the request's arrival to its first token (the wait "
        "included), TPOT is the time per output token after the first. The SLOs are TTFT <= "
        f"{slos['ttft']} ms and TPOT <= {slos['tpot']} ms. Which SLO fails (ttft, tpot or "
        "none), and which knob repairs it: tp (doubled) or gpu (an H200)?",
        want, "slo", explanation,
        "Add up what the request waits through before its first token, then compare each "
        "figure with its SLO. Then think about what each knob changes: the bytes each GPU "
        "reads per step and the FLOPs it does, the bandwidth and FLOPs a GPU brings.",
        accepted=frozenset(accepted),
    )


@dataclass(frozen=True)
class _Kind:
    id: str
    title: str
    asks: frozenset[str]
    gives: frozenset[str]
    pose: object

    def clashes(self, other: _Kind) -> bool:
        return bool(self.asks & other.gives or other.asks & self.gives)


def _kind(id, title, asks, gives, pose) -> _Kind:
    return _Kind(id, title, frozenset(asks), frozenset(gives), pose)


def _alone(make):
    """A kind drawn from the seed alone (its own model and figures), posed beside a replica."""
    return lambda rep, r: make(r)


#: The bank, by id; ``asks``/``gives`` topics: kv_token, capacity, batch, step, allreduce, slo,
#: and one each for the kinds of the system and of lessons 13 and 15.
SERVING_KINDS: dict[str, _Kind] = {k.id: k for k in (
    _kind("kv_per_token", "KV bytes per token", {"kv_token"}, set(), _kv_per_token),
    _kind("kv_capacity", "KV capacity", {"capacity"}, {"kv_token"}, _kv_capacity),
    _kind("largest_batch", "the largest batch that fits", {"batch"}, {"capacity"},
          _largest_batch),
    _kind("step_time", "a decode step by the roofline", {"step"}, {"kv_token"}, _step_time),
    _kind("allreduce_bytes", "all-reduce bytes", {"allreduce"}, set(), _allreduce_bytes),
    _kind("slo", "which SLO fails and which knob repairs it", {"slo"}, {"step"}, _slo),
    _kind("mg1_wait", "a one-at-a-time queue's wait (M/G/1)", {"wait"}, set(),
          system_drills.mg1_wait),
    _kind("littles_law", "requests held, by Little's law", {"little"}, set(),
          system_drills.littles_law),
    _kind("goodput_per_gpu", "DistServe's goodput per GPU", {"goodput"}, set(),
          system_drills.goodput_per_gpu),
    _kind("prefix_cache", "the prefix cache's saving", {"prefix"}, set(),
          system_drills.prefix_cache),
    _kind("kv_move", "the split's KV move", {"kv_move"}, set(), system_drills.kv_move),
    _kind("recovery", "a crashed replica back", {"reload"}, set(), system_drills.recovery),
    _kind("expert_reads", "expert weights a decode step reads", {"experts"}, set(),
          _alone(expert_drills.expert_reads)),
    _kind("fp8_weights", "an FP8 replica's weights per GPU", {"fp8"}, set(),
          _alone(expert_drills.fp8_weights)),
    _kind("spec_gain", "speculative decoding's gain", {"spec"}, {"step"},
          feature_drills.spec_gain),
    _kind("lora_slots", "the KV cache LoRA slots take", {"lora"}, {"kv_token"},
          feature_drills.lora_slots),
    _kind("tier_copy", "a prefix copied back from the CPU tier", {"tier"}, {"kv_token"},
          feature_drills.tier_copy),
)}


# ---------------------------------------------------------------------------- leaks

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> list[float]:
    return [float(t.replace(",", "")) for t in _NUMBER.findall(text)]


def leaks(q: Question, text: str, numbers: list[float] | None = None) -> bool:
    """Whether ``text`` prints question ``q``'s answer: a number equal to it (a count) or
    within its tolerance (a figure), or the failing SLO named as failing. ``numbers``: the
    text's numbers, when the caller has read them already."""
    if q.grading == "slo":
        lower = text.lower()
        if q.answer == "none":
            return "both slos are met" in lower
        return f"{q.answer.upper()} SLO of" in text or f"{q.answer} fails" in lower
    answer = float(q.answer)
    tol = max(q.rel_tolerance * abs(answer), 0.0)
    return any(abs(v - answer) <= tol for v in (_numbers(text) if numbers is None else numbers))


# ---------------------------------------------------------------------------- grading


def _parse_number(text) -> float | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text)
    cleaned = re.sub(r"[\s,_]|tokens?|bytes?|requests?|per gpu|/s|ms|mb|gb|s$|x$", "",
                     str(text).lower())
    try:
        return float(cleaned)
    except ValueError:
        return None


def _words(text: str, table: dict[str, str]) -> set[str]:
    return find_words(text, table, digits=True)


def grade(q: Question, answer) -> tuple[bool, str]:
    """``(ok, feedback)`` for a typed answer; a wrong answer's feedback says which way to look,
    never the answer."""
    if answer is None or str(answer).strip() == "":
        return False, "Type an answer first."
    if q.grading == "slo":
        slos = _words(answer, _SLO_WORDS)
        says_none = bool(_words(answer, {w: "none" for w in _NONE_WORDS}))
        knobs = _words(answer, SLO_KNOBS)
        if q.answer == "none":
            ok = says_none and q.names_right(slos, knobs)
            return ok, "" if ok else f"Not quite: look at each figure against its SLO. {q.hint}"
        if not slos:
            return False, "Name the failing SLO (ttft or tpot) and a knob (tp, gpu), or none."
        if slos != {q.answer}:
            return False, f"Not quite: which figure is over its SLO? {q.hint}"
        if not knobs:
            return False, "The SLO is right; now name a knob that repairs it (tp, gpu)."
        if "max_batch" in knobs:
            return False, ("The SLO is right, but a smaller batch cap is no repair: the requests "
                           "it keeps out of the batch wait in the queue instead (lesson 08). "
                           "Name tp or gpu.")
        if q.names_right(slos, knobs):
            return True, ""
        return False, ("The SLO is right, but by the model that knob does not bring both "
                       "figures within their SLOs: which does?")
    value = _parse_number(answer)
    if value is None:
        return False, f"{answer!r} is not a number: type digits, like 131072."
    if q.within(value):
        return True, ""
    return False, f"Not quite: {'too high' if value > q.answer else 'too low'}. {q.hint}"


# ---------------------------------------------------------------------------- the drill


@dataclass(frozen=True)
class ServingDrill:
    """Serving drill number ``number``: a replica, its facts and three questions."""

    number: int
    facts: tuple[str, ...]
    questions: tuple[Question, ...]

    @property
    def header(self) -> str:
        return f"Serving drill {self.number} (seed 'schedatrix-serving-drill-{self.number}')"

    def question(self, question_id: str) -> Question:
        return by_id(self.questions, question_id)

    def check(self, question_id: str, answer) -> tuple[bool, str]:
        """Grade a typed answer: ``(ok, feedback)``."""
        q = self.question(question_id)
        ok, feedback = grade(q, answer)
        return (True, f"Right! {q.explanation}") if ok else (False, feedback)

    def text(self, answers: bool = False) -> str:
        lines = [self.header, *[f"  {fact}" for fact in self.facts]]
        for i, q in enumerate(self.questions, start=1):
            lines.append(f"  Q{i} [{q.id}] {q.prompt}")
            if answers:
                lines.append(f"      answer: {q.answer_text}. {q.explanation}")
        return wrap("\n".join(lines))


def _replica(r: random.Random) -> _Replica:
    """A model on a GPU at a tensor parallelism where it fits with room for a batch (the model
    drawn once, evenly, so that a big model's misfits do not make the small ones commoner)."""
    m = MODELS[_pick(r, _MODELS)]
    while True:
        g = GPUS[_pick(r, _GPUS)]
        tp = _pick(r, [t for t in (1, 2, 4, 8) if t in allowed_tp(m)])
        batch = _pick(r, (8, 16, 32, 64, 128))
        # a request decoding at this context still has a token to go: under max_context
        context = _pick(r, [c for c in (512, 1024, 2048, 4096) if c < m.max_context])
        rep = _Replica(m, g, tp, batch, context)
        if _capacity(rep) >= 2 * batch * context:
            return rep


def _facts(rep: _Replica) -> tuple[str, ...]:
    m, g = rep.model, rep.gpu
    return (
        f"Model: {m.name}, {_billions(m.params)} parameters in BF16 (2 bytes each), "
        f"{m.layers} layers, hidden size {m.hidden:,}, {m.heads} attention heads and "
        f"{m.kv_heads} KV heads of {m.head_dim} dims.",
        f"Replica: tensor parallelism over {rep.tp} x {g.name} ({g.memory_gb:g} GB, "
        f"{g.hbm_gb_s:,.0f} GB/s HBM each).",
    )


def _questions(rep: _Replica, facts: tuple[str, ...], r: random.Random):
    posed = {k: kind.pose(rep, r) for k, kind in SERVING_KINDS.items()}
    text = {k: "\n".join([*facts, q.prompt, q.explanation]) for k, q in posed.items() if q}
    usable = [k for k in SERVING_KINDS if posed[k] is not None]
    if any(leaks(posed[k], "\n".join(facts)) for k in usable):
        usable = [k for k in usable if not leaks(posed[k], "\n".join(facts))]
    numbers = {k: _numbers(text[k]) for k in usable}
    # whether two questions may share a drill, once per pair (a pair is in many sets)
    fits = {(a, b): not (SERVING_KINDS[a].clashes(SERVING_KINDS[b])
                         or leaks(posed[a], text[b], numbers[b])
                         or leaks(posed[b], text[a], numbers[a]))
            for a, b in combinations(usable, 2)}
    sets = [ids for ids in combinations(usable, PER_DRILL)
            if all(fits[a, b] for a, b in combinations(ids, 2))]
    if not sets:
        return None
    return tuple(posed[k] for k in draw_kinds(sets, list(SERVING_KINDS), _DRAW_WEIGHT, r))


def serving_drill(n: int) -> ServingDrill:
    """Serving drill number ``n`` (a whole number from 0 to 999,999,999): the same everywhere."""
    if not (isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 10**9):
        raise InputError(f"n must be a whole number from 0 to 999,999,999, got {n!r}")
    r = random.Random(f"schedatrix-serving-drill-{n}")
    while True:
        rep = _replica(r)
        facts = _facts(rep)
        questions = _questions(rep, facts, r)
        if questions is not None:
            return ServingDrill(n, facts, questions)


def serving_drill_set(first: int = 1, count: int = 5) -> list[ServingDrill]:
    """Serving drills ``first`` .. ``first + count - 1`` (``count`` from 1 to 1,000)."""
    if not (isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= 1000):
        raise InputError(f"count must be a whole number from 1 to 1000, got {count!r}")
    if not (isinstance(first, int) and not isinstance(first, bool) and first >= 0):
        raise InputError(f"first must be a whole number >= 0, got {first!r}")
    return [serving_drill(first + i) for i in range(count)]


def format_serving_drills(drills: list[ServingDrill], answers: bool = False) -> str:
    """A printable set: the drills, then (if ``answers``) the answer key."""
    return format_drill_set(drills, answers)

