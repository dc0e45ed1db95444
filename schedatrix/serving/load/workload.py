"""The load model (the design method's stage 1): one frozen ``Load`` of knobs, and ``generate``.

A load is one of:

- open loop: ``rate_rps`` (with ``burstiness`` and ``bursts``), its requests split among
  ``classes`` by share; plus, optionally, ``tenants``, each a class with its own arrival process
  and lengths, merged by time (a load may also be tenants only);
- closed loop: ``closed_loop`` = ClosedLoop(users, think_s); the simulator issues user u's next
  request ``think_s`` after its previous one ends, so ``generate`` draws lengths and classes
  per request in order and leaves the timing to the simulator (it needs a request count);
- replay: ``trace`` (any format the audit reads), optionally sped up by ``speed``.

Lengths: ``input_len`` and ``output_len`` in the length grammar (``lengths.py``; default 1024
and 128 tokens, as vLLM's random dataset), or ``pairs`` drawn whole from a trace.

Randomness: ``generate(load, seed)`` draws from separate generators, one per (purpose, stream):
arrivals, input lengths, output lengths, classes, pairs, for the shared stream and each tenant
(numpy ``SeedSequence(seed, spawn_key=(purpose, stream))``). So changing the length spec does
not move an arrival, and adding a tenant does not move the other streams. Same seed, same
requests on every machine. A generated load is labelled synthetic; a replay at speed 1 is not.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from numbers import Real
from pathlib import Path

import numpy as np

from ...errors import InputError
from .arrivals import Arrivals, Burst
from .lengths import NO_CAP, Fixed, LengthDist, PairedLengths, check_cap, draw_lengths, parse_length
from .replay import replay
from .requests import DEFAULT_CLASS, ClosedLoop, Requests, SLOClass

__all__ = ["Load", "Tenant", "generate", "DEFAULT_INPUT_LEN", "DEFAULT_OUTPUT_LEN"]

DEFAULT_INPUT_LEN = Fixed(1024)
DEFAULT_OUTPUT_LEN = Fixed(128)
#: Random-stream purposes (the first word of each generator's spawn key). Never renumber.
_ARRIVALS, _INPUT, _OUTPUT, _CLASSES, _PAIRS, _PHASES = 1, 2, 3, 4, 5, 6


def _lengths(owner: str, input_len, output_len, pairs, default: bool):
    """Validated (input, output, pairs) of a load or tenant; ``default``: fill 1024/128."""
    if pairs is not None:
        if input_len is not None or output_len is not None:
            raise InputError(f"{owner}: give --input-len/--output-len or lengths paired from "
                             "a trace, not both")
        if not isinstance(pairs, PairedLengths):
            raise InputError(f"{owner}: pairs {pairs!r} is not a PairedLengths")
        return None, None, pairs
    if (input_len is None) != (output_len is None) and not default:
        raise InputError(f"{owner}: give both --input-len and --output-len, or neither")
    inp = DEFAULT_INPUT_LEN if input_len is None and default else input_len
    out = DEFAULT_OUTPUT_LEN if output_len is None and default else output_len
    if inp is not None and not isinstance(inp, LengthDist):
        inp = parse_length(inp, "--input-len")
    if out is not None and not isinstance(out, LengthDist):
        out = parse_length(out, "--output-len")
    return inp, out, None


def _cap(name: str, value) -> int:
    if value is None:
        return NO_CAP
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= NO_CAP:
        raise InputError(f"{name} {value!r}: must be an integer from 1 to {NO_CAP}")
    return value


@dataclass(frozen=True)
class Tenant:
    """A class with its own open-loop arrival process (and, optionally, its own lengths:
    both ``input_len`` and ``output_len``, or ``pairs``; none = the load's)."""

    slo: SLOClass
    rate_rps: float
    burstiness: float = 1.0
    bursts: tuple[Burst, ...] = ()
    input_len: str | LengthDist | None = None
    output_len: str | LengthDist | None = None
    pairs: PairedLengths | None = None

    def __post_init__(self):
        if not isinstance(self.slo, SLOClass):
            raise InputError(f"tenant: slo {self.slo!r} is not an SLOClass")
        object.__setattr__(self, "bursts", tuple(self.bursts))
        Arrivals(self.rate_rps, self.burstiness, self.bursts)  # validates
        inp, out, pairs = _lengths(f"tenant {self.slo.name!r}", self.input_len,
                                   self.output_len, self.pairs, default=False)
        object.__setattr__(self, "input_len", inp)
        object.__setattr__(self, "output_len", out)

    @property
    def arrivals(self) -> Arrivals:
        return Arrivals(self.rate_rps, self.burstiness, self.bursts)


@dataclass(frozen=True)
class Load:
    """The knobs of a load (see the module docstring). Lists are accepted for tuples;
    ``input_len``/``output_len`` strings are parsed (stored parsed). Raises InputError naming
    the field, the value and what is allowed.

    rate_rps : requests per second of the shared open-loop stream (> 0), or None
    burstiness : gamma shape of its gaps (> 0; 1 = Poisson, < 1 burstier)
    bursts : rate multipliers over stretches of time (``Burst(start_s, end_s, multiplier)``)
    input_len, output_len : length specs (grammar in ``lengths.py``), or ``pairs``
    classes : SLO classes of the shared stream (or closed loop, or replay); shares sum to 1
    tenants : classes with their own arrival process, merged with the shared stream by time
    closed_loop : ClosedLoop(users, think_s, ramp_s, ramp) instead of an arrival process
    trace, speed : replay a trace file (any format the audit reads), ``speed`` x faster
    max_input_tokens, max_output_tokens : caps for drawn lengths (None: no cap)
    """

    rate_rps: float | None = None
    burstiness: float = 1.0
    bursts: tuple[Burst, ...] = ()
    input_len: str | LengthDist | None = None
    output_len: str | LengthDist | None = None
    pairs: PairedLengths | None = None
    classes: tuple[SLOClass, ...] = (DEFAULT_CLASS,)
    tenants: tuple[Tenant, ...] = ()
    closed_loop: ClosedLoop | None = None
    trace: str | Path | None = None
    speed: float = 1.0
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None

    def __post_init__(self):
        for name in ("bursts", "classes", "tenants"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        modes = [m for m, on in (("--rate", self.rate_rps is not None),
                                 ("closed_loop", self.closed_loop is not None),
                                 ("--trace", self.trace is not None)) if on]
        if len(modes) > 1:
            raise InputError(f"load: {' and '.join(modes)} both given; a load is open loop "
                             "(--rate, tenants), closed loop or a trace replay, one of them")
        if not modes and not self.tenants:
            raise InputError("load: no arrivals; give --rate (requests/s), tenants, "
                             "closed_loop or --trace")
        if self.rate_rps is not None:
            self.arrivals  # noqa: B018 - validates rate, burstiness, bursts
        elif self.bursts or self.burstiness != 1:
            raise InputError("load: --burstiness and bursts shape the --rate stream; give "
                             "--rate too (a tenant takes its own)")
        if not modes and self.classes != (DEFAULT_CLASS,):
            raise InputError("load: classes split the --rate stream (or a closed loop or "
                             "replay); with tenants only, each tenant is its own class")
        self._check_classes()
        for t in self.tenants:
            if not isinstance(t, Tenant):
                raise InputError(f"tenants: {t!r} is not a Tenant")
        if self.tenants and (self.closed_loop or self.trace):
            raise InputError("load: tenants are open-loop streams; they don't mix with "
                             "closed_loop or --trace")
        if self.closed_loop is not None:
            c = self.closed_loop
            if not isinstance(c, ClosedLoop) or isinstance(c.users, bool) or not isinstance(
                    c.users, int) or c.users < 1:
                raise InputError(f"closed_loop {c!r}: users must be an integer >= 1")
            if not (isinstance(c.think_s, Real) and math.isfinite(c.think_s)
                    and c.think_s >= 0):
                raise InputError(f"closed_loop think_s {c.think_s!r}: must be a finite "
                                 "number >= 0 (seconds)")
        if self.trace is not None:
            if (self.input_len, self.output_len, self.pairs) != (None, None, None):
                raise InputError("load: a --trace replay takes its lengths from the trace; "
                                 "drop --input-len/--output-len")
            if isinstance(self.speed, bool) or not isinstance(self.speed, Real) or not (
                    math.isfinite(self.speed) and 1e-6 <= self.speed <= 1e6):
                raise InputError(f"speed {self.speed!r}: must be a number from 1e-06 to "
                                 "1e+06 (2 = twice as fast)")
        elif self.speed != 1:
            raise InputError(f"speed {self.speed!r}: speeds up a --trace replay; give --trace")
        inp, out, _ = _lengths("load", self.input_len, self.output_len, self.pairs,
                               default=self.trace is None)
        object.__setattr__(self, "input_len", inp)
        object.__setattr__(self, "output_len", out)
        caps = (_cap("max_input_tokens", self.max_input_tokens),
                _cap("max_output_tokens", self.max_output_tokens))
        for owner in (self, *self.tenants):
            self._check_caps(owner, caps)

    def _check_classes(self) -> None:
        if not self.classes:
            raise InputError("classes: give at least one SLOClass")
        for c in self.classes:
            if not isinstance(c, SLOClass):
                raise InputError(f"classes: {c!r} is not an SLOClass")
            if not (isinstance(c.share, Real) and 0 <= c.share <= 1):
                raise InputError(f"class {c.name!r} share {c.share!r}: must be from 0 to 1")
            for name in ("ttft_s", "tpot_s"):
                v = getattr(c, name)
                if v is not None and not (isinstance(v, Real) and v > 0):
                    raise InputError(f"class {c.name!r} {name} {v!r}: must be > 0 seconds "
                                     "or None")
        total = math.fsum(c.share for c in self.classes)
        if abs(total - 1) > 1e-9:
            shares = ", ".join(f"{c.name}={c.share:g}" for c in self.classes)
            raise InputError(f"classes: shares {shares} sum to {total:g}; they must sum to 1")
        names = [c.name for c in self.classes] + [t.slo.name for t in self.tenants
                                                  if isinstance(t, Tenant)]
        if len(set(names)) != len(names):
            raise InputError(f"classes: names {names} repeat; each class needs its own name")

    @staticmethod
    def _check_caps(owner, caps: tuple[int, int]) -> None:
        if owner.pairs is not None:
            for name, arr, cap in (("input", owner.pairs.input_tokens, caps[0]),
                                   ("output", owner.pairs.output_tokens, caps[1])):
                if arr.max() > cap:
                    raise InputError(f"max_{name}_tokens {cap}: the paired lengths reach "
                                     f"{arr.max()} {name} tokens; raise the cap")
            return
        if owner.input_len is not None:
            check_cap(owner.input_len, caps[0], "--input-len")
            check_cap(owner.output_len, caps[1], "--output-len")

    @property
    def arrivals(self) -> Arrivals:
        """The shared stream's arrival process (``rate_rps`` must be set)."""
        return Arrivals(self.rate_rps, self.burstiness, self.bursts)

    @property
    def all_classes(self) -> tuple[SLOClass, ...]:
        """The classes of generated requests: the shared stream's classes (none when the load
        is tenants only), then one per tenant, in order."""
        shared = () if self.rate_rps is None and self.tenants else self.classes
        return shared + tuple(t.slo for t in self.tenants)

    def describe(self) -> str:
        """One line: what this load is."""
        if self.trace is not None:
            speed = "" if self.speed == 1 else f" at x{self.speed:g} speed"
            return f"replay of {Path(self.trace).name}{speed}"
        parts = []
        if self.closed_loop is not None:
            c = self.closed_loop
            ramp = f", first sends over {c.ramp_s:g} s ({c.ramp})" if c.ramp_s else ""
            parts.append(f"closed loop, {c.users} users, think {c.think_s:g} s{ramp}")
        if self.rate_rps is not None:
            parts.append(_stream_text(self.arrivals))
        lengths = _length_text(self)
        if lengths:
            parts.append(lengths)
        if len(self.classes) > 1:
            parts.append("classes " + ", ".join(f"{c.name} {c.share:.0%}" for c in self.classes))
        for t in self.tenants:
            own = _length_text(t)
            parts.append(f"tenant {t.slo.name}: {_stream_text(t.arrivals)}"
                         + (f", {own}" if own else ""))
        return "; ".join(parts)


def _stream_text(a: Arrivals) -> str:
    law = "Poisson" if a.burstiness == 1 else f"gamma (burstiness {a.burstiness:g})"
    k = len(a.bursts)
    bursts = f", {k} burst{'s' * (k != 1)}" if k else ""
    return f"{law} arrivals at {a.rate_rps:g} req/s{bursts}"


def _length_text(owner) -> str:
    if owner.pairs is not None:
        return f"lengths {owner.pairs}"
    if owner.input_len is None:
        return ""
    return f"input {owner.input_len}, output {owner.output_len} tokens"


def _rng(seed: int, purpose: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(purpose, stream)))


def _draw_classes(classes: tuple[SLOClass, ...], n: int, rng) -> np.ndarray:
    if len(classes) == 1:
        return np.zeros(n, dtype=np.int16)
    edges = np.cumsum([c.share for c in classes])
    return np.minimum(np.searchsorted(edges, rng.random(n), side="right"),
                      len(classes) - 1).astype(np.int16)


def _draw_lengths(owner, load: Load, n: int, seed: int, stream: int):
    src = owner if (owner.pairs is not None or owner.input_len is not None) else load
    if src.pairs is not None:
        return src.pairs.draw(n, _rng(seed, _PAIRS, stream))
    caps = (_cap("", load.max_input_tokens), _cap("", load.max_output_tokens))
    return (draw_lengths(src.input_len, n, _rng(seed, _INPUT, stream), caps[0]),
            draw_lengths(src.output_len, n, _rng(seed, _OUTPUT, stream), caps[1]))


def _times(arrivals: Arrivals, rng, n: int | None, duration_s: float | None) -> np.ndarray:
    if n is None:
        return arrivals.times(rng, duration_s=duration_s)
    t = arrivals.times(rng, n=n)
    return t if duration_s is None else t[t < duration_s]


def generate(load: Load, seed: int = 0, requests: int | None = None,
             duration_s: float | None = None) -> Requests:
    """The requests of ``load``: the first ``requests`` arrivals, or those before
    ``duration_s`` seconds (both: whichever ends first). A replay takes the whole trace when
    neither is given; a closed loop needs ``requests``. ``seed``: an integer >= 0."""
    if not isinstance(load, Load):
        raise InputError(f"generate: {load!r} is not a Load")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError(f"--seed {seed!r}: must be an integer >= 0")
    seed = int(seed)
    if requests is not None and (isinstance(requests, bool) or not isinstance(
            requests, int | np.integer) or requests < 1):
        raise InputError(f"--requests {requests!r}: must be an integer >= 1")
    if duration_s is not None and not (isinstance(duration_s, Real) and not isinstance(
            duration_s, bool) and math.isfinite(duration_s) and duration_s > 0):
        raise InputError(f"--duration {duration_s!r}: must be a finite number of seconds > 0")
    meta = {"seed": seed, "load": load.describe()}
    if load.trace is not None:
        r = replay(load.trace, load.speed, requests, duration_s)
        cid = _draw_classes(load.classes, len(r), _rng(seed, _CLASSES, 0))
        return dataclasses.replace(r, class_id=cid, classes=load.classes,
                                   meta={**r.meta, **meta})
    if requests is None and duration_s is None:
        raise InputError("generate: give --requests (a count) or --duration (seconds)")
    if load.closed_loop is not None:
        if requests is None:
            raise InputError("closed loop: give --requests; how many a closed loop sends in "
                             "a --duration depends on the service times, which the simulator "
                             "decides")
        inp, out = _draw_lengths(load, load, requests, seed, 0)
        loop = load.closed_loop
        if loop.ramp == "random":      # each seed its own phases, a stream of their own
            state = np.random.SeedSequence(seed, spawn_key=(_PHASES, 0)).generate_state(1)
            loop = dataclasses.replace(loop, seed=int(state[0]))
        return Requests(np.zeros(requests), inp, out,
                        _draw_classes(load.classes, requests, _rng(seed, _CLASSES, 0)),
                        classes=load.classes, synthetic=True,
                        source=f"synthetic: {load.describe()}", closed_loop=loop,
                        meta=meta)
    parts = []  # (times, class ids, input, output) per stream
    if load.rate_rps is not None:
        t = _times(load.arrivals, _rng(seed, _ARRIVALS, 0), requests, duration_s)
        parts.append((t, _draw_classes(load.classes, len(t), _rng(seed, _CLASSES, 0)),
                      *_draw_lengths(load, load, len(t), seed, 0)))
    for i, tenant in enumerate(load.tenants, start=1):
        t = _times(tenant.arrivals, _rng(seed, _ARRIVALS, i), requests, duration_s)
        cid = np.full(len(t), len(load.all_classes) - len(load.tenants) + i - 1,
                      dtype=np.int16)
        parts.append((t, cid, *_draw_lengths(tenant, load, len(t), seed, i)))
    t, cid, inp, out = (np.concatenate(col) for col in zip(*parts, strict=True))
    order = np.argsort(t, kind="stable")[:requests]
    return Requests(t[order], inp[order], out[order], cid[order], classes=load.all_classes,
                    synthetic=True, source=f"synthetic: {load.describe()}", meta=meta)
