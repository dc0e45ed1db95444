"""Inside a grading sandbox: the grader's evaluation of a notebook's functions, not its kernel.

Run as a script by path, from a copy of the package that lacks the exercise's answers
(:mod:`~schedatrix.classroom.grader.answer_free`): it sets the limits, leaves root for the run's own
uid, imports that copy and no other ``schedatrix``, and then only does what the grader asks
over the one socket it inherits (``--channel-fd``), one JSON line at a time:

* ``{"run": k, "source": ...}``: run code cell ``k`` in an IPython shell; answer ``{"ran": k}``,
  with ``"raised"`` when the cell raised (the grader goes on, as nbval does);
* ``{"check": name, "functions": [...]}``: take those functions from the notebook's namespace
  as they are now and answer ``{"missing": [...], "library": {...}}`` (the ones the notebook
  lacks, and the ones that are or wrap a function of the package); then answer each
  ``{"call": function, "args": [...]}`` with ``{"returned": ...}``, ``{"raised": ...}``,
  ``{"refused": answer}`` (it called one of the refusals that stand in for the library's
  answers) or ``{"oversized": true}`` (an answer over the size limit), until ``{"end": true}``;
* ``{"done": true}``: answer ``{"cpu_s": seconds}`` (the CPU this process and its children
  used, for the benchmark's figures) and stop.

It decides nothing and holds nothing to compare with: the grader picks every input and compares
every answer with the library, in its own process. Whatever the notebook's code does to this
process can only change the answers it gives.
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import socket
import sys

try:  # run by path (the grader's way): its own folder is first on the path, for a moment
    from nbval_run import add_limit_args, apply_limits, drop_to
except ImportError:  # imported as part of the package (tests, linters)
    from .nbval_run import add_limit_args, apply_limits, drop_to

_MESSAGE_LIMIT = 2_000


def only_this_copy(root: str) -> None:
    """Import ``schedatrix`` from ``root`` and from nowhere else (no editable-install finder,
    not this script's folder)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not str(getattr(f, "__module__", "")).startswith("__editable__")]
    for name in [m for m in sys.modules if m == "schedatrix" or m.startswith("schedatrix.")]:
        del sys.modules[name]
    sys.path.insert(0, root)
    importlib.invalidate_caches()
    import schedatrix

    where = os.path.dirname(os.path.abspath(schedatrix.__file__))
    if where != os.path.join(os.path.abspath(root), "schedatrix"):
        raise SystemExit(f"imported schedatrix from {where}, not from the copy in {root}")


def _shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    return InteractiveShell.instance(config=config)


def _raised(exc: BaseException) -> dict:
    try:
        message = str(exc)
    except Exception:  # a learner's exception whose __str__ raises
        message = f"<{type(exc).__name__} whose message could not be read>"
    return {"type": type(exc).__name__, "message": message[:_MESSAGE_LIMIT]}


def serve(channel, shell) -> None:
    """Do what the grader asks until it says ``done`` or goes away."""
    from schedatrix import _refused
    from schedatrix.classroom.checking.boundary import (
        AnswerTooBig,
        BoundaryError,
        decode,
        encode,
        library_functions,
    )

    channel.send({"ready": True})
    while True:
        message = channel.receive()
        if message.get("done"):
            used = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
            channel.send({"cpu_s": round(sum(u.ru_utime + u.ru_stime for u in used), 3)})
            return
        if "run" in message:
            result = shell.run_cell(str(message.get("source", "")), store_history=False)
            reply = {"ran": message["run"]}
            error = result.error_before_exec or result.error_in_exec
            if error is not None:
                reply["raised"] = _raised(error)
            channel.send(reply)
            continue
        names = message.get("functions")
        if "check" not in message or not isinstance(names, list):
            raise BoundaryError("a message this evaluation does not know")
        namespace = shell.user_ns
        functions = {n: namespace[n] for n in names if isinstance(n, str) and n in namespace}
        channel.send({"missing": [n for n in names if n not in functions],
                      "library": library_functions(functions)})
        while True:
            call = channel.receive()
            if call.get("end"):
                break
            func = functions.get(call.get("call"))
            if func is None or not isinstance(call.get("args"), list):
                raise BoundaryError("a call this check does not have")
            args = [decode(a) for a in call["args"]]
            _refused.HITS.clear()
            try:
                result = func(*args)
            except BaseException as exc:  # SystemExit and KeyboardInterrupt are answers too
                reply = {"raised": _raised(exc)}
            else:
                try:
                    reply = {"returned": encode(result)}
                except AnswerTooBig:  # refused before it is walked: said as a size
                    reply = {"oversized": True}
            if _refused.HITS:
                reply = {"refused": _refused.HITS[0]}
            try:
                channel.send(reply)
            except BoundaryError:  # over the size limit
                channel.send({"oversized": True})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_limit_args(parser)
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--package-root", required=True)
    args = parser.parse_args(argv)

    apply_limits(args)
    if args.uid is not None:
        drop_to(args.uid)
    only_this_copy(args.package_root)
    from schedatrix import _refused
    from schedatrix.classroom.checking.boundary import BoundaryError, Channel

    _refused.swap()  # the answers the package needed while it was imported refuse from now on

    channel = Channel.over_socket(socket.socket(fileno=args.channel_fd))
    try:
        serve(channel, _shell())
    except BoundaryError:
        return 1
    finally:
        channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
