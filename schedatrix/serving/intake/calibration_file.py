"""The calibration file ``serving calibrate --out CAL.toml`` writes and ``--calibration``
reads: the fitted terms in seconds, where they came from and the fit's errors.

    [host]
    step_s = 0.004          # absent: not fitted (the engine's own is kept)
    [client_path]
    front_end_s = 0.0061
    tokenize_s_per_token = 3.1e-06
    detokenize_s_per_token = 0.0
    stream_chunk_s = 0.0
    [fit]                   # written for the reader; not read back
    ...

Every refusal is one line naming the file, the key and what is allowed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ...errors import InputError
from ..perf.client_path import ClientPath
from ..perf.user_calibration import UserCalibration
from .toml_tables import read_toml

__all__ = ["read_calibration", "calibration_toml"]

_PATH_KEYS = ("front_end_s", "tokenize_s_per_token", "detokenize_s_per_token",
              "stream_chunk_s")
_TABLES = ("calibration", "host", "client_path", "fit")


def read_calibration(path: str | Path) -> UserCalibration:
    """The calibration in ``path`` (a file ``serving calibrate`` wrote)."""
    data = read_toml(path, "calibration")
    where = f"calibration {path}"
    unknown = sorted(set(data) - set(_TABLES))
    if unknown:
        raise InputError(f"{where}: unknown table {', '.join(map(repr, unknown))}; allowed: "
                         f"{', '.join(_TABLES)}")
    host = data.get("host", {})
    cp = data.get("client_path")
    if not isinstance(host, dict) or not isinstance(cp, dict):
        raise InputError(f"{where}: needs a [client_path] table (and [host] with step_s when "
                         "it was fitted); write it with serving calibrate --out")
    for name, table, keys in (("host", host, ("step_s",)), ("client_path", cp, _PATH_KEYS)):
        bad = sorted(set(table) - set(keys))
        if bad:
            raise InputError(f"{where}: [{name}] unknown key {', '.join(map(repr, bad))}; "
                             f"allowed: {', '.join(keys)}")
        for k, v in table.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or \
                    not math.isfinite(v) or not 0 <= v <= 1.0:
                raise InputError(f"{where}: [{name}] {k} = {v!r}; must be seconds from 0 to 1")
    meta = data.get("calibration", {})
    return UserCalibration(host.get("step_s"), ClientPath(**{k: float(cp.get(k, 0.0))
                                                            for k in _PATH_KEYS}),
                           source=str(meta.get("fitted_to", path)) if isinstance(meta, dict)
                           else str(path), fit=data.get("fit", {}))


def _value(v) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def calibration_toml(cal: UserCalibration, about: dict) -> str:
    """The file's text: ``about`` (fitted_to, design, notes) in [calibration], the terms, then
    the fit's figures (``cal.fit``: flat keys of numbers, strings or lists)."""
    lines = ["# schedatrix serving calibration (serving calibrate); load it with "
             "--calibration FILE", "[calibration]"]
    lines += [f"{k} = {_value(v)}" for k, v in about.items() if v is not None]
    lines += ["", "[host]"]
    if cal.host_step_s is not None:
        lines.append(f"step_s = {_value(float(cal.host_step_s))}")
    else:
        lines.append("# step_s not fitted: the engine's own is kept")
    lines += ["", "[client_path]"]
    lines += [f"{k} = {_value(float(getattr(cal.client_path, k)))}" for k in _PATH_KEYS]
    lines += ["", "[fit]"]
    lines += [f"{k} = {_value(v)}" for k, v in cal.fit.items() if v is not None]
    return "\n".join(lines) + "\n"
