"""A scenario's load written as a benchmark client's input: a Mooncake-style trace.

One JSON object a line, as Mooncake's traces and AIPerf's ``mooncake_trace`` dataset type
have them (AIPerf's ``MooncakeTrace`` model, ``aiperf/dataset/loader/models.py``):
``timestamp`` (whole milliseconds from the load's start, when the request is sent under a
fixed schedule), ``input_length``, ``output_length`` and ``hash_ids`` (the prompt's prefix
blocks, ``hash_block_tokens`` tokens each, 512 by Mooncake's convention). AIPerf replays it
with ``--custom-dataset-type mooncake_trace --fixed-schedule``; ``serving run --trace`` and
``serving bench --trace`` read it back.

A load without shared prefixes gets blocks of its own for every request (AIPerf needs
``hash_ids`` beside ``input_length``), numbered so that no two requests share one: the
prompts are as unshared as the scenario's. What a trace cannot hold is refused or said: a
closed loop has no send times (refused), and SLO classes are not in the format (one line
says how many were merged). Pure Python.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ...errors import InputError
from ..load.requests import Requests

__all__ = ["mooncake_rows", "write_mooncake", "MOONCAKE_BLOCK_TOKENS"]

#: Tokens per hash block in Mooncake's traces (AIPerf's default block size).
MOONCAKE_BLOCK_TOKENS = 512


def mooncake_rows(requests: Requests) -> list[dict]:
    """The load's requests as Mooncake trace rows, in arrival order."""
    if requests.closed_loop is not None:
        raise InputError("--load-out: a closed loop of users has no send times, and a "
                         "Mooncake trace is a fixed schedule; give the scenario an open-loop "
                         "load (rate or trace)")
    block = int(requests.meta.get("hash_block_tokens", MOONCAKE_BLOCK_TOKENS))
    values = requests.hash_values
    own = int(values.max()) + 1 if values is not None and len(values) else 0
    rows = []
    for i in range(len(requests)):
        n = int(requests.input_tokens[i])
        hashes = requests.hashes(i)
        if hashes is None:
            k = math.ceil(n / block)
            ids, own = list(range(own, own + k)), own + k
        else:
            ids = [int(h) for h in hashes]
        rows.append({"timestamp": int(round(float(requests.arrival_s[i]) * 1000)),
                     "input_length": n, "output_length": int(requests.output_tokens[i]),
                     "hash_ids": ids})
    return rows


def write_mooncake(requests: Requests, path: str | Path) -> int:
    """Write the load to ``path`` (JSON lines); the number of requests written."""
    rows = mooncake_rows(requests)
    p = Path(path)
    if p.is_dir():
        raise InputError(f"--load-out {str(path)!r}: a folder; give a file name (load.jsonl)")
    try:
        with p.open("w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    except OSError as err:
        raise InputError(f"--load-out {str(path)!r}: cannot write ({err.strerror})") from None
    return len(rows)
