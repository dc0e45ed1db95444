"""The boundary between the learner's code and the checker: plain data, one line at a time.

The checking code never runs beside the learner's code. The checker sends
``{"call": name, "args": [...]}``; the other side calls the learner's function and answers
``{"returned": value}``, ``{"raised": {"type": ..., "message": ...}}``, ``{"refused": answer}``
or ``{"oversized": true}``. Every message is one line of JSON of at most
:data:`MAX_MESSAGE_BYTES`, and every value is plain data (numbers, text, lists, dicts with text
keys, numeric arrays; a plan travels as its knobs and is rebuilt on the other side), so nothing
the learner's code does can reach the checking code or hand it an object with methods of its
own. A month travels to the learner as its plan's knobs (rebuilt there with ``simulate``), never
back: the checker rebuilds no month from an answer, so an answer costs it no more than reading
its bytes.

Two sides use it. Under ``schedatrix grade`` the grader's own evaluation
(:mod:`~schedatrix.classroom.grader.evaluation`) drives a fresh sandboxed process that runs the
notebook's code with a copy of the package that lacks the exercise's answers; that verdict is
the grade. In JupyterLab (and plain ``pytest --nbval-lax``) a check cell serves a checker from
the learner's own kernel (:func:`serve_check`), and while a check runs the library's own answers
to it refuse to run there (:func:`refused_answers`): feedback for the learner, never evidence,
since the learner's kernel can undo anything it does.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields

__all__ = [
    "PROTOCOL",
    "CHECKER_ENV",
    "MAX_MESSAGE_BYTES",
    "BoundaryError",
    "LearnerRaised",
    "AnswerRefused",
    "AnswerTooBig",
    "Opaque",
    "encode",
    "decode",
    "Channel",
    "RemoteFunction",
    "refused_answers",
    "library_origin",
    "library_functions",
    "serve_check",
    "connect",
]

PROTOCOL = 1
#: The environment variable that names the grader's checker socket (set by the grader).
CHECKER_ENV = "SCHEDATRIX_CHECKER"
#: The longest message either side accepts (a pool of 4,096 cards is about 100 kB).
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
_MAX_DEPTH = 32
_MAX_REPR = 200
_REFUSALS = "__schedatrix_refused__"


class BoundaryError(Exception):
    """The other side broke the protocol, timed out or went away."""


class LearnerRaised(Exception):
    """The learner's function raised: its exception's type name and message, as text."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


class AnswerRefused(Exception):
    """The learner's function called one of the library's answers to this exercise."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.answer = answer


class AnswerTooBig(Exception):
    """The learner's answer, as plain data, was over :data:`MAX_MESSAGE_BYTES`."""


class Opaque:
    """A value that is not plain data, seen from the checker: only its type name and repr."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name = type_name
        self.text = text

    def __repr__(self) -> str:
        return self.text


# ----------------------------------------------------------------------------- plain data


def _short_repr(value) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a learner's __repr__ may raise
        text = f"<{type(value).__name__}: repr raised {type(exc).__name__}>"
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."


@functools.cache
def _kinds():
    """numpy, Month and Plan, imported once (not once for every element of an answer)."""
    import numpy as np

    from ...fleet.month import Month
    from ...fleet.plan import Plan

    return np, Month, Plan


class _Budget:
    """What is left of :data:`MAX_MESSAGE_BYTES` while an answer is encoded: every value
    takes at least a byte and its separator, so an answer too big to send is refused as soon
    as its size shows it, before it is walked element by element."""

    def __init__(self, left: int = MAX_MESSAGE_BYTES) -> None:
        self.left = left

    def take(self, nbytes: int) -> None:
        self.left -= nbytes
        if self.left < 0:
            raise AnswerTooBig()


def encode(value, depth: int = 0, budget: _Budget | None = None):
    """``value`` as JSON-ready plain data.

    Numbers, text, ``None``, lists, tuples, dicts whose keys are all text (read with
    ``dict``'s own methods, whatever the class), numpy arrays and scalars, a :class:`Month`
    (as its plan's knobs) and a :class:`Plan` (its knobs, read attribute by attribute, which
    is what :func:`simulate` reads) become plain data; anything else becomes its type name
    and repr, which the checker reports as a wrong type. Raises :class:`AnswerTooBig` as
    soon as the value cannot fit one message (a list of 3 million numbers at once).
    """
    np, Month, Plan = _kinds()
    if budget is None:
        budget = _Budget()
    budget.take(2)
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        budget.take(len(value))
        return str(value)
    if depth < _MAX_DEPTH:
        if isinstance(value, (list, tuple, dict)):
            budget.take(2 * len(value))  # each item at least a digit and a comma
        if isinstance(value, list):
            return [encode(v, depth + 1, budget) for v in value]
        if isinstance(value, tuple):
            return {"tuple": [encode(v, depth + 1, budget) for v in value]}
        if isinstance(value, dict) and all(type(k) is str for k in dict.keys(value)):
            return {"dict": [[k, encode(v, depth + 1, budget)] for k, v in dict.items(value)]}
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            budget.take(2 * value.size)
            return {"ndarray": encode(value.tolist(), depth + 1, budget),
                    "dtype": value.dtype.name}
        if isinstance(value, (Month, Plan)):
            plan = value.plan if isinstance(value, Month) else value
            knobs = {f.name: encode(getattr(plan, f.name), depth + 1, budget)
                     for f in fields(Plan)}
            if isinstance(value, Month):
                return {"month": knobs}
            return {"plan": knobs, "type": type(value).__name__}
    return {"object": type(value).__name__, "repr": _short_repr(value)}


def decode(data, depth: int = 0, months: bool = True):
    """Plain data back into values: lists, tuples, dicts, arrays, plans (and, with ``months``,
    months, each rebuilt with ``simulate``) made fresh.

    A plan whose knobs are not a valid :class:`Plan` becomes an :class:`Opaque` saying so; so
    does a month when ``months`` is false (the checker reads answers that way: rebuilding a
    month is a simulation, which it never runs for the learner).
    """
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if depth >= _MAX_DEPTH:
        return Opaque("object", "<too deeply nested>")
    if isinstance(data, list):
        return [decode(v, depth + 1, months) for v in data]
    if isinstance(data, dict):
        if "tuple" in data and isinstance(data["tuple"], list):
            return tuple(decode(v, depth + 1, months) for v in data["tuple"])
        if "dict" in data and isinstance(data["dict"], list):
            items = data["dict"]
            if all(isinstance(i, list) and len(i) == 2 and isinstance(i[0], str) for i in items):
                return {k: decode(v, depth + 1, months) for k, v in items}
            return Opaque("dict", "<a dict that could not be rebuilt>")
        if "ndarray" in data:
            import numpy as np

            dtype = data.get("dtype")
            if dtype in {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                         "uint32", "uint64", "float16", "float32", "float64"}:
                try:
                    return np.asarray(decode(data["ndarray"], depth + 1), dtype=dtype)
                except (TypeError, ValueError, OverflowError):
                    pass
            return Opaque("ndarray", "<an array that could not be rebuilt>")
        if "month" in data and not months:
            return Opaque("Month", "<a Month>")
        if "plan" in data or "month" in data:
            from ...fleet.month import simulate
            from ...fleet.plan import Plan

            knobs = data.get("plan", data.get("month"))
            try:
                plan = Plan(**{k: decode(v, depth + 1, False) for k, v in dict(knobs).items()})
            except Exception as exc:  # a forged or invalid plan: say what is wrong with it
                return Opaque("Plan", f"<an invalid Plan: {exc}>")
            return simulate(plan) if "month" in data else plan
        if "object" in data:
            return Opaque(str(data.get("object")), str(data.get("repr", ""))[:_MAX_REPR])
    return Opaque(type(data).__name__, "<unreadable value>")


# ----------------------------------------------------------------------------- the channel


class Channel:
    """One JSON object per line over a pair of binary streams (a socket or two pipes).

    ``sock``, when given, is the socket under the streams: :meth:`receive` then waits at most
    ``timeout_s`` seconds for a line.
    """

    def __init__(self, reader, writer, sock: socket.socket | None = None,
                 closers: Sequence[Callable[[], object]] = ()) -> None:
        self._reader = reader
        self._writer = writer
        self._sock = sock
        self._closers = list(closers)

    @classmethod
    def over_socket(cls, sock: socket.socket) -> Channel:
        reader = sock.makefile("rb")
        writer = sock.makefile("wb")
        return cls(reader, writer, sock, [reader.close, writer.close, sock.close])

    def send(self, message: dict) -> None:
        line = json.dumps(message, allow_nan=True, separators=(",", ":")).encode() + b"\n"
        if len(line) > MAX_MESSAGE_BYTES:
            raise BoundaryError(f"a message of {len(line):,} bytes is over the limit")
        try:
            self._writer.write(line)
            self._writer.flush()
        except (OSError, ValueError) as exc:
            raise BoundaryError(f"the other side went away ({exc})") from None

    def receive(self, timeout_s: float | None = None, limit: int = MAX_MESSAGE_BYTES) -> dict:
        """The next message, waiting at most ``timeout_s`` (over a socket), of at most
        ``limit`` bytes."""
        if self._sock is not None:
            self._sock.settimeout(None if timeout_s is None else max(timeout_s, 0.001))
        try:
            line = self._reader.readline(limit + 1)
        except TimeoutError:
            raise BoundaryError("no answer in time") from None
        except (OSError, ValueError) as exc:
            raise BoundaryError(f"the other side went away ({exc})") from None
        if not line:
            raise BoundaryError("the other side closed the channel")
        if len(line) > limit:
            raise BoundaryError("a message over the size limit")
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            raise BoundaryError("a message that is not JSON") from None
        if not isinstance(message, dict):
            raise BoundaryError("a message that is not a JSON object")
        return message

    def close(self) -> None:
        for close in self._closers:
            with contextlib.suppress(Exception):
                close()

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class RemoteFunction:
    """The learner's function as the checker sees it: a call sends plain data across.

    Returns the decoded answer (never a rebuilt month); raises :class:`LearnerRaised` when the
    learner's function raised, :class:`AnswerRefused` when it called the library's answer,
    :class:`AnswerTooBig` when its answer was over the size limit, and :class:`BoundaryError`
    when the other side broke the protocol or took longer than the deadline (``deadline`` is a
    ``time.monotonic()`` value, or ``None`` for no limit).
    """

    channel: Channel
    name: str
    deadline: float | None = None

    def __call__(self, *args):
        import time

        self.channel.send({"call": self.name, "args": [encode(a) for a in args]})
        left = None if self.deadline is None else self.deadline - time.monotonic()
        reply = self.channel.receive(left)
        if "returned" in reply:
            return decode(reply["returned"], months=False)
        raised = reply.get("raised")
        if isinstance(raised, dict):
            raise LearnerRaised(str(raised.get("type", "Exception"))[:_MAX_REPR],
                                str(raised.get("message", ""))[:2_000])
        if "refused" in reply:
            raise AnswerRefused(str(reply["refused"])[:_MAX_REPR])
        if "oversized" in reply:
            raise AnswerTooBig()
        raise BoundaryError("an answer the checker cannot read")


# ----------------------------------------------------------------------------- whose function


def _package_folder() -> str:
    """The folder of the ``schedatrix`` this process imported (the grader's copy, in an
    evaluation), ending in a separator."""
    return os.path.join(os.path.dirname(os.path.abspath(importlib.import_module(
        "schedatrix").__file__)), "")


def library_origin(func, folder: str | None = None, depth: int = 8) -> str:
    """The library function ``func`` is, or wraps (``""`` when it is neither): followed
    through ``functools.wraps``' ``__wrapped__``, a ``functools.partial``, a bound method, a
    callable object's ``__call__`` and the functions its closure holds; a function counts as
    the library's when its code was compiled from a file of the package (``folder``), or it
    has no code of its own and names a ``schedatrix`` module."""
    import functools
    import types

    folder = folder or _package_folder()
    seen: set[int] = set()
    todo = [(func, 0)]
    while todo:
        obj, level = todo.pop()
        if id(obj) in seen or level > depth:
            continue
        seen.add(id(obj))
        try:
            code = getattr(obj, "__code__", None)
            if code is not None and isinstance(code.co_filename, str) \
                    and os.path.abspath(code.co_filename).startswith(folder):
                return f"{obj.__module__}.{obj.__qualname__}"
            if code is None and not isinstance(obj, functools.partial) and callable(obj):
                module = getattr(obj, "__module__", None) or type(obj).__module__
                if isinstance(module, str) and (module == "schedatrix"
                                                or module.startswith("schedatrix.")):
                    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
                    return f"{module}.{name}"
            nexts = []
            if isinstance(obj, functools.partial):
                nexts.append(obj.func)
            wrapped = inspect_attr(obj, "__wrapped__")
            if wrapped is not None:
                nexts.append(wrapped)
            if isinstance(obj, types.MethodType):
                nexts.append(obj.__func__)
            for cell in getattr(obj, "__closure__", None) or ():
                try:
                    nexts.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    pass
            if code is None and not isinstance(obj, type) and callable(obj):
                nexts.append(type(obj).__call__)
        except Exception:  # whatever a learner's object does when it is looked at
            continue
        todo += [(n, level + 1) for n in nexts if callable(n)]
    return ""


def inspect_attr(obj, name: str):
    """``obj.name`` as stored, without running a learner's ``__getattr__`` (``None`` when
    absent)."""
    import inspect

    try:
        return inspect.getattr_static(obj, name)
    except AttributeError:
        return None


def library_functions(functions: dict[str, Callable]) -> dict[str, str]:
    """Which of the learner's functions are (or wrap) the library's own, by name."""
    folder = _package_folder()
    found = {name: library_origin(f, folder) for name, f in functions.items()}
    return {name: origin for name, origin in found.items() if origin}


# ----------------------------------------------------------------------------- kernel side


def _refuser_code(answer: str, message: str):
    source = (f"def refused(*args, **kwargs):\n"
              f"    {_REFUSALS}.append({answer!r})\n"
              f"    raise RuntimeError({message!r})\n")
    namespace: dict = {}
    exec(compile(source, f"<refused: {answer}>", "exec"), namespace)
    return namespace["refused"].__code__


def _resolve(answer: str):
    module_name, _, qualname = answer.partition(":")
    target = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target.fget if isinstance(target, property) else target  # a property: its getter


@contextlib.contextmanager
def refused_answers(answers: Sequence[str]) -> Iterator[list[str]]:
    """While inside, each ``"module:function"`` in ``answers`` refuses to run.

    The function object itself is changed (its code swapped, then restored), so a reference
    the learner took earlier (``from schedatrix import score``) refuses too. Yields the list
    of answers that were called.
    """
    hits: list[str] = []
    saved = []
    try:
        for answer in answers:
            func = _resolve(answer)
            public = f"schedatrix.{answer.rpartition(':')[2]}"
            message = (f"{public}() is the library's own answer to this exercise: "
                       "write it yourself")
            saved.append((func, func.__code__, func.__globals__))
            func.__globals__[_REFUSALS] = hits
            func.__code__ = _refuser_code(public, message)
        yield hits
    finally:
        for func, code, namespace in saved:
            func.__code__ = code
            namespace.pop(_REFUSALS, None)


def serve_check(channel: Channel, check: str, functions: dict[str, Callable],
                answers: Sequence[str] = ()) -> tuple[dict, BaseException | None]:
    """Serve one check from the kernel side: call the learner's functions as asked.

    Returns the checker's verdict (a dict with ``verdict``, ``message`` and, on failure,
    ``error``) and the exception the learner's function raised last, if any (so the kernel
    can show the learner their own traceback).
    """
    channel.send({"protocol": PROTOCOL, "check": check, "functions": list(functions),
                  "library": library_functions(functions)})
    last_raised: BaseException | None = None
    with refused_answers(answers) as hits:
        while True:
            message = channel.receive()
            if "verdict" in message:
                return message, last_raised
            name = message.get("call")
            if name not in functions or not isinstance(message.get("args"), list):
                raise BoundaryError(f"the checker asked for {name!r}, which this check lacks")
            args = [decode(a) for a in message["args"]]
            hits.clear()
            try:
                result = functions[name](*args)
            except Exception as exc:
                last_raised = exc
                reply = {"raised": {"type": type(exc).__name__, "message": str(exc)[:2_000]}}
            else:
                try:
                    reply = {"returned": encode(result)}
                except AnswerTooBig:
                    reply = {"oversized": True}
            if hits:
                reply = {"refused": hits[0]}
            try:
                channel.send(reply)
            except BoundaryError:  # an answer over the size limit
                channel.send({"oversized": True})


def connect() -> Channel:
    """A channel to a checker: the grader's (its socket named by ``SCHEDATRIX_CHECKER``), or
    else a fresh local checker process (``python -m schedatrix.classroom.checking.checker``)."""
    path = os.environ.get(CHECKER_ENV)
    if path:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except OSError as exc:
            sock.close()
            raise RuntimeError(f"could not reach the grader's checker at {path}: {exc}") from None
        return Channel.over_socket(sock)
    process = subprocess.Popen([sys.executable, "-m", "schedatrix.classroom.checking.checker"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def stop() -> None:
        with contextlib.suppress(Exception):
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    return Channel(process.stdout, process.stdin, None, [stop, process.stdout.close])

