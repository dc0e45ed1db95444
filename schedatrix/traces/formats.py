"""Trace formats: which columns a header (or a JSON record's keys) has, and the role of each.

Formats, recognised from the header (CSV) or the first record's keys (JSON lines):

- generic (CSV or JSON lines): ``timestamp``, ``pool``, ``input_tokens``, ``output_tokens``;
  optional ``ttft_s`` or ``ttft_ms``, ``e2e_s`` or ``e2e_ms``, ``status``, ``replica``.
- Azure LLM inference 2023: ``TIMESTAMP, ContextTokens, GeneratedTokens``.
- Mooncake (JSON lines): ``timestamp`` (ms), ``input_length``, ``output_length``, ``hash_ids``
  (a JSON lines file's ``hash_ids``, lists of integers, are carried per request: role
  ``hashes``; a CSV's are ignored).
- BurstGPT: ``Timestamp`` (s), ``Model``, ``Request tokens``, ``Response tokens``,
  ``Total tokens`` (in any format, a ``total_tokens`` column must be input + output),
  ``Log Type`` (not read, but refused when it carries a sentence).

A header is refused when it is not one: a cell that reads as a number or a timestamp (the file
has no header line), two columns with one name, or two columns for one role (``timestamp_s``
and ``timestamp_ms``). A column whose name says it carries request or response text is refused.
Messages name a column the audit doesn't know by its position, never by its name (see
:mod:`.privacy`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError
from .privacy import column, quotable

__all__ = ["TraceFormat", "detect_format", "check_header", "ROLES", "norm"]

#: Column names (normalised: lower case, runs of other characters as "_") of each role.
ROLES = {
    "time": ("timestamp", "timestamp_s", "timestamp_ms", "arrival", "arrival_time",
             "arrival_s", "arrival_ms", "time", "ts"),
    "pool": ("pool", "pool_id"),
    "model": ("model",),
    "input": ("input_tokens", "prompt_tokens", "contexttokens", "context_tokens",
              "request_tokens", "input_length"),
    "output": ("output_tokens", "completion_tokens", "generatedtokens", "generated_tokens",
               "response_tokens", "output_length"),
    "ttft": ("ttft_s", "ttft", "ttft_ms", "time_to_first_token_s", "time_to_first_token_ms"),
    "e2e": ("e2e_s", "e2e", "e2e_ms", "latency_s", "latency_ms", "e2e_latency_s",
            "e2e_latency_ms"),
    "status": ("status", "status_code"),
    "replica": ("replica", "replica_id", "instance", "instance_id"),
    "total": ("total_tokens",),
}
#: Columns known to carry no text and nothing the audit needs.
IGNORED = {"hash_ids", "request_id", "id"}
#: Columns the audit knows by name but doesn't read: checked for free text like any other
#: (BurstGPT's Log Type holds "Conversation log" or "API log", never a sentence).
_NAMED = {"log_type"}
#: Words that, in a column's name, mean it may carry request or response text.
_TEXT_WORDS = {"prompt", "completion", "text", "content", "contents", "message", "messages",
               "body", "query", "question", "answer", "instruction", "request", "response",
               "input", "output", "conversation", "chat", "reply"}
#: Last words of a name that mark a number, not text ("prompt_tokens", "response_length").
_NUMERIC_ENDINGS = {"tokens", "token", "length", "len", "count", "ms", "s", "id", "ids", "size"}
_KNOWN = {a for aliases in ROLES.values() for a in aliases} | IGNORED | _NAMED


def norm(name: str) -> str:
    """A column name normalised for matching: lower case, other characters as single "_"."""
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


@dataclass(frozen=True)
class TraceFormat:
    """How one file is read: its format's name, the column of each role, and the time unit
    (seconds per unit of a numeric time; None when the column doesn't say: decided from the
    values, see :mod:`.convert`)."""

    name: str
    columns: dict[str, str]
    time_unit_s: float | None

    def known(self, name: str) -> bool:
        """Whether the audit knows this column name (so a message may quote it)."""
        return norm(name) in _KNOWN


def check_header(names: list[str], source: str, jsonl: bool) -> None:
    """Refuse a header that is not one: data in its place, a repeated name (CSV)."""
    if jsonl:
        return
    for i, name in enumerate(names, start=1):
        if quotable(name.strip()):
            raise InputError(
                f"trace {source} line 1: column {i} of the header reads as a number or a "
                "timestamp, so the file has no header line; a trace starts with one naming "
                "its columns, e.g. timestamp,pool,input_tokens,output_tokens")
    seen: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        key = norm(name)
        if key in seen:
            known = key in _KNOWN
            raise InputError(
                f"trace {source} line 1: columns {seen[key]} and {i} have the same name"
                + (f" {name.strip()!r}" if known else "")
                + ": the audit can't tell which to read; keep one")
        seen[key] = i


def detect_format(names: list[str], jsonl: bool, source: str = "trace") -> TraceFormat:
    """Which format a header (or first record's keys) is, and the column of each role.

    Raises InputError when two columns give one role, or a column's name says it carries
    request or response text.
    """
    check_header(names, source, jsonl)
    position = {n: i for i, n in enumerate(names, start=1)}
    cols: dict[str, str] = {}
    for role, aliases in ROLES.items():
        found = [n for n in names if norm(n) in aliases]
        if len(found) > 1:
            raise InputError(
                f"trace {source}: columns {found[0]!r} and {found[1]!r} both give the "
                f"{role} of a request; keep one")
        if found:
            cols[role] = found[0]
    if jsonl:  # Mooncake's prefix-block hashes, carried per request (the serving replay)
        hashes = [n for n in names if norm(n) == "hash_ids"]
        if hashes:
            cols["hashes"] = hashes[0]
    keys = {norm(n) for n in names}
    if {"timestamp", "contexttokens", "generatedtokens"} <= keys:
        name, unit = "Azure LLM inference trace", None
    elif {"request_tokens", "response_tokens", "model"} <= keys:
        name, unit = "BurstGPT", 1.0
    elif jsonl and {"input_length", "output_length"} <= keys:
        name, unit = "Mooncake", 0.001
    else:
        name = "generic JSON lines" if jsonl else "generic CSV"
        tcol = norm(cols.get("time", ""))
        unit = 0.001 if tcol.endswith("_ms") else 1.0 if tcol.endswith("_s") else None
    fmt = TraceFormat(name, cols, unit)
    used = set(cols.values())
    for n in names:
        if n in used or norm(n) in IGNORED:
            continue
        word = text_word(n)
        if word is not None:
            where = "a field" if jsonl else column(n, position[n], fmt.known(n))
            raise InputError(
                f"trace {source}: {where} is named like request or response text (its name "
                f"holds {word!r}); the audit takes a sanitized trace (the fleet note: do not "
                "include prompt or completion text). Drop it and send token counts only")
    return fmt


def text_word(name: str) -> str | None:
    """The text word a column's name holds ('prompt', 'response', ...), unless its last word
    marks a count ('prompt_tokens'); None when the name doesn't say it carries text."""
    words = norm(name).split("_")
    if words[-1] in _NUMERIC_ENDINGS:
        return None
    found = sorted(set(words) & _TEXT_WORDS)
    return found[0] if found else None
