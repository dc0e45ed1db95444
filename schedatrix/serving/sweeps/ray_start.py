"""Starting or joining Ray, one way for the three commands that use it: ``serving sweep --ray``,
``audit --cluster`` and ``grade --engine ray``.

- Ray's tips about its future defaults (a FutureWarning at each start) are not shown.
- A local start that times out is tried once more: Ray's raylet gives its agents a fixed 15 s
  to start, which a loaded machine can miss (ray-project/ray#65983).
- A cluster's ``HOST:PORT`` (or ``ray://HOST:PORT``) is first reached with a plain connection,
  for at most :data:`PROBE_S` seconds: given an address where nothing answers, Ray itself
  retries for minutes, printing a warning every few seconds.
- Whatever fails is said in one line naming the option and the address (:class:`InputError`).
"""

from __future__ import annotations

import socket
import warnings
from pathlib import Path

from ...errors import InputError

__all__ = ["LOCAL", "PROBE_S", "import_ray", "reach", "settings", "start"]

#: The address that starts Ray on this machine.
LOCAL = "local"
#: How long a cluster's address may take to accept a connection.
PROBE_S = 10.0
_INSTALL = "pip install 'schedatrix[cluster]'"


def import_ray(option: str, otherwise: str = ""):
    """The ``ray`` module, or an InputError saying that ``option`` needs the optional extra."""
    try:
        import ray  # noqa: PLC0415 - an optional extra
    except ImportError:
        raise InputError(f"{option} needs Ray, an optional extra: {_INSTALL}{otherwise}") \
            from None
    return ray


def settings(address: str, cpus: int | None) -> dict:
    """``ray.init``'s settings for a sweep or an audit: no dashboard, the workers' logs kept
    from the driver; a local start with ``cpus`` workers and a small object store (what comes
    back is small); on a cluster, this copy of schedatrix sent to every worker (Ray's
    ``py_modules``), so every node runs the driver's code."""
    kw: dict = {"include_dashboard": False, "log_to_driver": False, "logging_level": "warning"}
    if address == LOCAL:
        kw |= {"num_cpus": cpus, "object_store_memory": 256 * 2**20}
    else:
        kw["runtime_env"] = {"py_modules": [str(Path(__file__).resolve().parents[2])]}
    return kw


def endpoint(address: str) -> tuple[str, int] | None:
    """(host, port) of ``HOST:PORT`` or ``ray://HOST:PORT``; None for anything else (``auto``,
    ``local``), which Ray resolves itself."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def reach(address: str, said: str, timeout_s: float = PROBE_S) -> None:
    """Raise InputError unless something accepts a connection at the address's host and port
    within ``timeout_s`` (``said``: how the user gave the address, for the message)."""
    where = endpoint(address)
    if where is None:
        return
    if not 1 <= where[1] <= 65535:
        raise InputError(f"{said}: port {where[1]} is not a port (allowed: 1 to 65535)")
    try:
        socket.create_connection(where, timeout=timeout_s).close()
    except (OSError, ValueError) as exc:     # ValueError: a host name IDNA can't encode
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise InputError(f"{said}: no Ray cluster answers at {where[0]}:{where[1]} ({why}); "
                         f"'{LOCAL}' starts one on this machine") from None


def start(ray, address: str | None, said: str, **kw) -> None:
    """``ray.init(address=address, **kw)``: ``"local"`` starts Ray here, None lets Ray choose
    (``RAY_ADDRESS``, else a start here), anything else joins that cluster. ``said`` names the
    option and address as the user gave them ("--ray HOST:6379"). Raises InputError."""
    if address not in (None, LOCAL):
        reach(address, said)
    attempts = 2 if address in (None, LOCAL) else 1
    for attempt in range(attempts):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                ray.init(address=address, **kw)
            return
        except Exception as exc:  # noqa: BLE001 - Ray raises bare Exceptions for most failures
            ray.shutdown()
            if attempt + 1 < attempts and "timed out during startup" in str(exc):
                continue
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
            raise InputError(f"{said}: can't start or join Ray ({first})") from None
