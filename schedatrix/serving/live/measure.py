"""What a benchmark measured, per request, and the same as a run of the simulator.

A request's figures are vLLM's ``bench serve``'s: the clock starts when the request is sent;
**TTFT** is the time to the first streamed chunk that carries output text; **ITL** the gaps
between successive such chunks; **end-to-end latency** the time to the last of them; **TPOT**
(latency - TTFT) / (output tokens - 1), output tokens being the server's own count (its usage
chunk) or, where it sends none, the chunks counted. A chunk with no text (the role chunk a chat
stream opens with) is no token. A request that got an HTTP error, an error event or no chunk
at all is an error; one still running when the bench stopped (its timeout, Ctrl-C) is
unfinished.

:func:`as_run` turns the measurements into the record a simulated run leaves
(:class:`~schedatrix.serving.figures.record.Run`), so the figures, the SLO verdict and the
report are computed by the very code that computes them for ``serving run``. Times there are
the model's seconds: wall seconds x ``time_scale`` (1 for a real endpoint; X for an emulator
run ``--speed X``). Pure Python: no extra needed.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..figures.record import COMPLETED, FAILED, UNFINISHED, GapRecord, Run
from ..load.requests import Requests

__all__ = ["Measured", "as_run", "rows", "OK", "ERROR", "UNFINISHED_STATE", "NOT_SENT"]

OK, ERROR, UNFINISHED_STATE, NOT_SENT = "ok", "error", "unfinished", "not sent"


@dataclass
class Measured:
    """One request as the bench saw it (wall seconds from the bench's start)."""

    index: int
    class_id: int
    prompt_tokens: int
    max_tokens: int
    sent_s: float = math.nan
    chunk_s: list[float] = field(default_factory=list)   # when each text chunk came
    usage_tokens: int | None = None
    state: str = NOT_SENT
    error: str = ""

    @property
    def output_tokens(self) -> int:
        return self.usage_tokens if self.usage_tokens is not None else len(self.chunk_s)

    @property
    def ttft_s(self) -> float:
        return self.chunk_s[0] - self.sent_s if self.chunk_s else math.nan

    @property
    def e2e_s(self) -> float:
        return self.chunk_s[-1] - self.sent_s if self.chunk_s else math.nan

    @property
    def itl_s(self) -> list[float]:
        c = self.chunk_s
        return [b - a for a, b in zip(c, c[1:], strict=False)]

    @property
    def tpot_s(self) -> float:
        n = self.output_tokens
        if n < 2 or not self.chunk_s:
            return math.nan
        return (self.e2e_s - self.ttft_s) / (n - 1)


def as_run(requests: Requests, measured: list[Measured], time_scale: float = 1.0,
           kv_peak_share: float = 0.0) -> Run:
    """The bench's run as a simulated run's record: a request completed when it streamed to
    its end, failed on an error, unfinished when cut off, not arrived when never sent. Its
    output tokens are those the endpoint produced (a completed request's TPOT divides by
    them), its queue time unknown (NaN)."""
    n = len(requests)
    s = float(time_scale)
    status = np.full(n, UNFINISHED, dtype=np.int8)
    arrival = np.full(n, np.nan)
    first = np.full(n, np.nan)
    done = np.full(n, np.nan)
    out = np.asarray(requests.output_tokens, dtype=np.int64).copy()
    gaps = GapRecord(len(requests.classes))
    reasons: dict = {}
    for m in measured:
        i = m.index
        if m.state == NOT_SENT:
            continue
        arrival[i] = m.sent_s * s
        if m.chunk_s:
            first[i] = m.chunk_s[0] * s
        if m.state == OK:
            status[i] = COMPLETED
            done[i] = m.chunk_s[-1] * s
            out[i] = max(1, m.output_tokens)
            for g in m.itl_s:
                gaps.add_one(g * s, m.class_id)
        elif m.state == ERROR:
            status[i] = FAILED
            key = (_reason(m.error), m.class_id)
            reasons[key] = reasons.get(key, 0) + 1
    req = dataclasses.replace(requests, output_tokens=out)
    run = Run(requests=req, status=status, arrival_s=arrival, scheduled_s=np.full(n, np.nan),
              first_token_s=first, done_s=done, preemptions=np.zeros(n, dtype=np.int64),
              replica=np.full(n, -1, dtype=np.int64), gaps=gaps, reasons=reasons,
              kv_peak_share=float(kv_peak_share), implementation="measured")
    run.retries = np.zeros(n, dtype=np.int64)
    run.retried = 0
    run.fault_log = []
    return run


def _reason(error: str) -> str:
    """An error's kind for the rejection counts: its first clause, short."""
    text = (error or "error").split(":")[0].strip()
    return text[:60] or "error"


def rows(measured: list[Measured], time_scale: float = 1.0) -> list[dict]:
    """Per request, as JSON: vLLM's figures (seconds, the model's with ``time_scale``)."""
    s = float(time_scale)

    def num(x):
        return None if x != x else x * s

    return [{"index": m.index, "class_id": m.class_id, "state": m.state,
             "prompt_tokens": m.prompt_tokens, "max_tokens": m.max_tokens,
             "output_tokens": m.output_tokens if m.state != NOT_SENT else 0,
             "sent_s": num(m.sent_s), "ttft_s": num(m.ttft_s), "tpot_s": num(m.tpot_s),
             "e2e_s": num(m.e2e_s), "itl_s": [g * s for g in m.itl_s], "error": m.error}
            for m in measured]
