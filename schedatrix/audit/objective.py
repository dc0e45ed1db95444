"""Service objectives as the fleet note states them: "TTFT p99 < 1 s", "error rate < 1%"."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Objective", "parse_objective", "OBJECTIVE_FORMS"]

#: What an objective may look like, for error messages.
OBJECTIVE_FORMS = "'TTFT p99 < 1 s', 'E2E p95 <= 800 ms' or 'error rate < 1%'"

_METRICS = {"ttft": "ttft", "time to first token": "ttft", "e2e": "e2e", "latency": "e2e",
            "e2e latency": "e2e", "end-to-end latency": "e2e"}
_LATENCY = re.compile(
    r"^\s*(?P<metric>[a-z][a-z0-9 -]*?)\s+p(?P<pct>\d{1,2}(?:\.\d+)?)\s*(?P<op><=|<)\s*"
    r"(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>ms|s)\s*$",
    re.IGNORECASE,
)
_ERRORS = re.compile(
    r"^\s*error rate\s*(?P<op><=|<)\s*(?P<value>\d+(?:\.\d+)?)\s*%\s*$", re.IGNORECASE
)


@dataclass(frozen=True)
class Objective:
    """One objective: metric 'ttft' or 'e2e' (a latency percentile, seconds) or 'error_rate'.

    `percentile` is 0-100 for latencies and None for the error rate; `limit` is in seconds for
    latencies and a share (0 to 1) for the error rate; `text` is the note's own words.
    """

    metric: str
    percentile: float | None
    limit: float
    inclusive: bool
    text: str

    def met(self, value: float) -> bool:
        """Whether a measured value (seconds, or a share) meets the objective."""
        return value <= self.limit if self.inclusive else value < self.limit


def parse_objective(text: str) -> Objective:
    """Parse one objective; raise ValueError naming the accepted forms if it can't be read."""
    shown = repr(text) if len(repr(text)) <= 60 else repr(text)[:57] + "..."
    m = _ERRORS.match(text)
    if m:
        share = float(m["value"]) / 100
        if not share < 1:   # every request may fail: "< 200%" is no objective
            raise ValueError(f"objective {shown}: an error rate limit must be below 100%")
        return Objective("error_rate", None, share, m["op"] == "<=", text.strip())
    m = _LATENCY.match(text)
    if m and m["metric"].lower().strip() in _METRICS and 0 < float(m["pct"]) < 100:
        scale = 0.001 if m["unit"].lower() == "ms" else 1.0
        return Objective(_METRICS[m["metric"].lower().strip()], float(m["pct"]),
                         float(m["value"]) * scale, m["op"] == "<=", text.strip())
    raise ValueError(f"objective {shown} can't be parsed (write it as {OBJECTIVE_FORMS})")
