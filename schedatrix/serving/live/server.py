"""``schedatrix serving emulate``: the simulator as an OpenAI-compatible HTTP endpoint.

Routes: ``POST /v1/completions`` and ``POST /v1/chat/completions`` (``stream`` true or false;
streamed as vLLM streams them: one server-sent event a token, ``data: [DONE]`` last, a usage
chunk before it with ``stream_options.include_usage``), ``GET /v1/models``, ``GET /health``,
``GET /metrics`` (:mod:`.metrics`), ``POST /admin/fault`` (``{"kind": "worker", "replica": 0,
"seconds": 10}``; node and link faults name a ``node``; a link fault may give a ``slowdown``)
and ``GET /admin/state``.

Each request enters the simulated fleet (:mod:`.driver`) at the moment it arrives, the clock
being wall time x ``speed``; its tokens leave when the model says they do. A prompt's length is
the approximate tokenizer's (:mod:`.tokenizer`: ~4 characters a token) or, for a list of token
ids, exact. The model writes exactly ``max_tokens`` tokens (it has no end-of-sequence, as a
benchmark run with ``ignore_eos``); without ``max_tokens`` a request gets ``default_max_tokens``.
A request may name its SLO class with the ``X-SLO-Class`` header (the scenario's classes; a
class's priority orders the queues). A client that goes away does not stop its request: the
fleet serves it to its end, as one that read it would.

Needs the ``live`` extra (Starlette, uvicorn, prometheus_client).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import signal
import socket
import time
import uuid

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ...errors import InputError
from .driver import TOO_LONG, Driver
from .metrics import CONTENT_TYPE, Metrics
from .tokenizer import block_hashes, count_chat, count_text, output_token, text_ids

__all__ = ["Emulator", "make_app", "serve", "bind"]

_DONE = b"data: [DONE]\n\n"


class _Handle:
    """One request in flight: the events the fleet sends it, in order."""

    __slots__ = ("i", "queue", "arrival_s", "last_s", "tokens", "prompt_tokens",
                 "max_tokens", "error", "done_s")

    def __init__(self, prompt_tokens: int, max_tokens: int):
        self.queue: asyncio.Queue = asyncio.Queue()
        self.prompt_tokens, self.max_tokens = prompt_tokens, max_tokens
        self.tokens = 0
        self.error = None
        self.done_s = None
        self.last_s = math.nan


class Emulator:
    """The driver on a clock: the model's seconds are wall seconds since the start x ``speed``.
    Must be made inside the running event loop (it schedules its clock on it)."""

    def __init__(self, driver: Driver, model_name: str, speed: float = 1.0,
                 default_max_tokens: int = 256, prefix_block_tokens: int = 0):
        if not speed > 0 or speed == math.inf:
            raise InputError(f"speed must be a finite number above 0, got {speed!r}")
        self.driver, self.model_name, self.speed = driver, model_name, float(speed)
        self.default_max_tokens = default_max_tokens
        self.prefix_block_tokens = prefix_block_tokens
        self.loop = asyncio.get_running_loop()
        self.t0 = self.loop.time()
        self.handles: dict[int, _Handle] = {}
        self.metrics = Metrics(driver, model_name)
        self.requests_seen = 0
        driver.listener = self
        self._pending: _Handle | None = None
        self._timer = None
        self._schedule()

    # -- the clock -----------------------------------------------------------------------------
    def now(self) -> float:
        return (self.loop.time() - self.t0) * self.speed

    def _tick(self) -> None:
        self._timer = None
        self.driver.advance(max(self.now(), self.driver.now))
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        nxt = self.driver.next_event_s()
        if nxt < math.inf:
            self._timer = self.loop.call_at(self.t0 + nxt / self.speed, self._tick)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for h in list(self.handles.values()):
            h.error = "the emulator is shutting down"
            h.queue.put_nowait(("error", h.error))
        self.handles.clear()

    # -- requests ------------------------------------------------------------------------------
    def submit(self, prompt_tokens: int, max_tokens: int, class_id: int = 0,
               ids=None) -> _Handle:
        h = _Handle(prompt_tokens, max_tokens)
        hashes = None
        if self.prefix_block_tokens and ids is not None:
            hashes = block_hashes(ids, self.prefix_block_tokens)
        t = max(self.now(), self.driver.now)
        self.requests_seen += 1
        # the index is known only once submitted: the listener finds the handle by it, and
        # a rejection at the door comes back during submit, so it is held here meanwhile
        self._pending = h
        try:
            h.i = self.driver.submit(t, prompt_tokens, max_tokens, class_id, hashes)
        finally:
            self._pending = None
        h.arrival_s = t
        if h.error is None:
            self.handles[h.i] = h
        self._schedule()
        return h

    def _handle(self, i: int, pop: bool = False) -> _Handle | None:
        h = self.handles.pop(i, None) if pop else self.handles.get(i)
        if h is None and self._pending is not None and i == self.driver.used - 1:
            return self._pending      # the request being submitted now
        return h

    # the driver's listener
    def token(self, i: int, t: float) -> None:
        h = self._handle(i)
        if h is None:
            return
        h.tokens += 1
        replica = int(self.driver.sim.replica_of[i])
        if h.tokens == 1:
            sched = self.driver.sim.scheduled[i]
            self.metrics.first_token(replica, t - h.arrival_s, sched - h.arrival_s,
                                     h.prompt_tokens)
        else:
            self.metrics.next_token(replica, t - h.last_s)
        h.last_s = t
        h.queue.put_nowait(("token", t))

    def finished(self, i: int, t: float) -> None:
        h = self.handles.pop(i, None)
        if h is None:
            return
        h.done_s = t
        self.metrics.finished(int(self.driver.sim.replica_of[i]), t - h.arrival_s)
        h.queue.put_nowait(("done", t))

    def error(self, i: int, t: float, reason: str) -> None:
        h = self._handle(i, pop=True)
        if h is None:
            return
        h.error = reason
        h.queue.put_nowait(("error", reason))

    # -- faults --------------------------------------------------------------------------------
    def inject(self, kind: str, target: int, seconds, slowdown=None):
        f = self.driver.inject(max(self.now(), self.driver.now), kind, target, seconds,
                               slowdown)
        self._schedule()
        return f


# -- HTTP ------------------------------------------------------------------------------------------

def _error(status: int, message: str, kind: str = "BadRequestError", param=None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": param,
                                   "code": status}}, status_code=status)


def _whole(body: dict, name: str, default, low: int = 1):
    v = body.get(name, default)
    if v is None:
        v = default
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ValueError(f"{name} must be a whole number of at least {low}, got {v!r}")
    return v


def _prompt(body: dict):
    """(prompt tokens, token ids or None) of a completions request."""
    p = body.get("prompt")
    if isinstance(p, list) and len(p) == 1 and isinstance(p[0], str | list):
        p = p[0]
    if isinstance(p, str):
        return count_text(p), text_ids(p)
    if isinstance(p, list) and p and all(isinstance(x, int) and not isinstance(x, bool)
                                         for x in p):
        return len(p), p
    if isinstance(p, list) and len(p) > 1:
        raise ValueError("prompt: one prompt per request here (a batch of prompts is not "
                         "emulated); send them as separate requests")
    raise ValueError("prompt must be a string or a list of token ids, got "
                     f"{type(p).__name__}")


def _chat_prompt(body: dict):
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs or not all(isinstance(m, dict) for m in msgs):
        raise ValueError("messages must be a non-empty list of {role, content} objects")
    text = "".join(str(m.get("role", "")) + ":" + str(m.get("content", "")) + "\n"
                   for m in msgs)
    return count_chat(msgs), text_ids(text)


def make_app(factory, shutdown_s: float = 5.0) -> Starlette:
    """The ASGI app; ``factory()`` makes the :class:`Emulator` once the event loop runs."""
    state: dict = {}

    def emu() -> Emulator:
        return state["emu"]

    async def models(request: Request):
        e = emu()
        return JSONResponse({"object": "list", "data": [{
            "id": e.model_name, "object": "model", "created": int(time.time()),
            "owned_by": "schedatrix", "root": e.model_name, "parent": None,
            "max_model_len": e.driver.max_model_len}]})

    async def health(request: Request):
        return Response(status_code=200)

    async def metrics(request: Request):
        return Response(emu().metrics.text(), media_type=CONTENT_TYPE)

    async def admin_state(request: Request):
        e = emu()
        return JSONResponse({"now_s": e.now(), "speed": e.speed, "model": e.model_name,
                             "design": e.driver.design.name,
                             "requests": e.requests_seen, "in_flight": len(e.handles),
                             "replicas": [e.driver.replica_state(r)
                                          for r in range(e.driver.replicas)],
                             "faults": _jsonable(e.driver.fault_log)})

    async def admin_fault(request: Request):
        e = emu()
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body must be JSON: {\"kind\", \"replica\" or \"node\", "
                               "\"seconds\"}")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object")
        kind = body.get("kind")
        target = body.get("node") if kind in ("node", "link") else body.get("replica")
        if target is None:
            target = body.get("replica", body.get("node"))
        if isinstance(target, bool) or not isinstance(target, int):
            return _error(400, f"a {kind} fault needs "
                               f"{'node' if kind in ('node', 'link') else 'replica'}: a whole "
                               f"number, got {target!r}")
        try:
            f = e.inject(kind, target, body.get("seconds"), body.get("slowdown"))
        except InputError as err:
            return _error(400 if "overlap" not in str(err) else 409, str(err))
        return JSONResponse({"fault": f.text(), "kind": f.kind, "at_s": f.at_s,
                             "seconds": f.down_s})

    async def completions(request: Request):
        return await _generate(request, chat=False)

    async def chat(request: Request):
        return await _generate(request, chat=True)

    async def _generate(request: Request, chat: bool):
        e = emu()
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body must be JSON")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object")
        model = body.get("model", e.model_name)
        if model != e.model_name:
            return _error(404, f"The model `{model}` does not exist.", "NotFoundError",
                          "model")
        try:
            n_prompt, ids = _chat_prompt(body) if chat else _prompt(body)
            default = e.default_max_tokens if chat else 16
            if chat and body.get("max_completion_tokens") is not None:
                max_tokens = _whole(body, "max_completion_tokens", default)
            else:
                max_tokens = _whole(body, "max_tokens", default)
            if _whole(body, "n", 1) != 1:
                raise ValueError("n: one choice per request here")
        except ValueError as err:
            return _error(400, str(err))
        limit = e.driver.max_model_len
        if n_prompt + max_tokens > limit:
            return _error(400, f"This model's maximum context length is {limit} tokens. "
                               f"However, you requested {n_prompt + max_tokens} tokens "
                               f"({n_prompt} in the {'messages' if chat else 'prompt'}, "
                               f"{max_tokens} in the completion). Please reduce the length "
                               f"of the {'messages' if chat else 'prompt'} or completion.")
        class_id = 0
        wanted = request.headers.get("x-slo-class")
        if wanted is not None:
            names = [c.name for c in e.driver.classes]
            if wanted not in names:
                return _error(400, f"X-SLO-Class {wanted!r}: the classes are "
                                   f"{', '.join(names)}")
            class_id = names.index(wanted)
        h = e.submit(n_prompt, max_tokens, class_id, ids)
        if h.error is not None:
            too_long = h.error in TOO_LONG
            return _error(400 if too_long else 503, h.error,
                          "BadRequestError" if too_long else "ServiceUnavailableError")
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        created = int(time.time())
        usage = {"prompt_tokens": n_prompt, "total_tokens": n_prompt + max_tokens,
                 "completion_tokens": max_tokens}
        if body.get("stream"):
            opts = body.get("stream_options") or {}
            include_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
            return StreamingResponse(_stream(h, rid, created, e.model_name, chat, usage,
                                             include_usage),
                                     media_type="text/event-stream")
        while True:
            kind, _ = await h.queue.get()
            if kind == "done":
                break
            if kind == "error":
                return _error(503, h.error or "the request failed", "ServiceUnavailableError")
        text = "".join(output_token(k) for k in range(max_tokens))
        if chat:
            return JSONResponse({
                "id": rid, "object": "chat.completion", "created": created,
                "model": e.model_name, "choices": [{
                    "index": 0, "message": {"role": "assistant", "content": text},
                    "logprobs": None, "finish_reason": "length", "stop_reason": None}],
                "usage": usage})
        return JSONResponse({
            "id": rid, "object": "text_completion", "created": created,
            "model": e.model_name, "choices": [{
                "index": 0, "text": text, "logprobs": None, "finish_reason": "length",
                "stop_reason": None}],
            "usage": usage})

    @contextlib.asynccontextmanager
    async def lifespan(app):
        state["emu"] = app.state.emu = factory()
        await anyio.sleep(0)    # loads anyio's asyncio backend, which a first stream would
        try:
            yield
        finally:
            state["emu"].close()

    routes = [Route("/v1/completions", completions, methods=["POST"]),
              Route("/v1/chat/completions", chat, methods=["POST"]),
              Route("/v1/models", models, methods=["GET"]),
              Route("/health", health, methods=["GET"]),
              Route("/metrics", metrics, methods=["GET"]),
              Route("/admin/fault", admin_fault, methods=["POST"]),
              Route("/admin/state", admin_state, methods=["GET"])]
    return Starlette(routes=routes, lifespan=lifespan)


async def _stream(h: _Handle, rid: str, created: int, model: str, chat: bool, usage: dict,
                  include_usage: bool):
    """One request's server-sent events, each token as the fleet emits it."""
    head = json.dumps({"id": rid, "object": "chat.completion.chunk" if chat
                       else "text_completion", "created": created, "model": model})[:-1]
    k = 0
    while True:
        kind, _ = await h.queue.get()
        if kind == "token":
            last = k + 1 == h.max_tokens
            finish = '"length"' if last else "null"
            text = json.dumps(output_token(k))
            if chat:
                if k == 0:
                    yield (f'data: {head}, "choices": [{{"index": 0, "delta": {{"role": '
                           f'"assistant", "content": ""}}, "logprobs": null, '
                           f'"finish_reason": null}}]}}\n\n').encode()
                choice = (f'{{"index": 0, "delta": {{"content": {text}}}, "logprobs": null, '
                          f'"finish_reason": {finish}}}')
            else:
                choice = (f'{{"index": 0, "text": {text}, "logprobs": null, '
                          f'"finish_reason": {finish}, "stop_reason": null}}')
            yield f'data: {head}, "choices": [{choice}]}}\n\n'.encode()
            k += 1
        elif kind == "done":
            if include_usage:
                yield f'data: {head}, "choices": [], "usage": {json.dumps(usage)}}}\n\n'.encode()
            yield _DONE
            return
        else:
            err = {"error": {"message": h.error or "the request failed",
                             "type": "ServiceUnavailableError", "param": None, "code": 503}}
            yield f"data: {json.dumps(err)}\n\n".encode()
            yield _DONE
            return


def _jsonable(x):
    if isinstance(x, float):
        return None if x != x or x in (math.inf, -math.inf) else x
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    return x


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one the system picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # no Nagle: each token's event leaves at once (accepted sockets inherit it), not held
    # for the client's delayed ACK of the one before (40 ms on Linux)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise InputError(f"--port {port}: cannot listen on {host}:{port} ({err.strerror})") \
            from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server, whose shutdown gives the requests in flight ``shutdown_s`` seconds
    and then ends them itself (a stream gets an error event and ``data: [DONE]``, a waiting
    request a 503), so none is cut off mid-response."""

    shutdown_s = 5.0

    async def shutdown(self, sockets=None) -> None:
        emu = getattr(self.config.app.state, "emu", None)
        if emu is not None:
            asyncio.get_running_loop().call_later(self.shutdown_s, emu.close)
        await super().shutdown(sockets=sockets)


def serve(factory, sock: socket.socket, shutdown_s: float = 5.0, on_ready=None) -> None:
    """Serve until SIGINT or SIGTERM (uvicorn's handlers): requests in flight get
    ``shutdown_s`` seconds to end, then are ended with an error, and the server closes."""
    config = uvicorn.Config(make_app(factory, shutdown_s), log_level="warning",
                            access_log=False, timeout_graceful_shutdown=shutdown_s + 5,
                            lifespan="on")
    server = _Server(config)
    server.shutdown_s = shutdown_s
    if on_ready is not None:
        startup = server.startup

        async def started(sockets=None):
            await startup(sockets=sockets)
            on_ready()
        server.startup = started
    # uvicorn shuts down on the first SIGINT/SIGTERM, then raises the signal again for the
    # handler it found: a quiet one here, so a stop asked for is a clean exit (status 0)
    quiet = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in quiet.items():
            signal.signal(sig, handler)


def _ignore(sig, frame) -> None:
    pass
