"""``schedatrix serving bench``: drive any OpenAI-compatible endpoint with the load model.

Open loop: each request is sent at its arrival time (seconds from the start, divided by
``time_scale``); closed loop: ``users`` users, each sending its next request ``think_s`` after
its previous one ended, as the simulator's closed loop does. Every request streams
(``stream: true``, with ``stream_options.include_usage`` for the server's token count and
``ignore_eos`` so a vLLM server writes all ``max_tokens``, as vLLM's own benchmark does on
random data) and is measured as :mod:`.measure` says.

Prompts: on ``/v1/completions`` a prompt is a list of token ids (the OpenAI API allows one), so
its length is exact on any server; ids are drawn from a generator seeded by the load's seed
and the request's index, and a request that carries prefix-block hashes (a shared-prefix load)
starts with ids drawn from each block's hash, so requests that share blocks share those tokens.
On ``/v1/chat/completions`` a prompt is text of 4-character words, its length the approximate
tokenizer's (:mod:`.tokenizer`), exact on the emulator and approximate elsewhere. A request of
an SLO class names it in the ``X-SLO-Class`` header (the emulator's classes; other servers
ignore it).

The results are kept as they come, so a bench stopped early (its overall timeout, Ctrl-C) still
reports what it measured. Needs ``httpx`` (the ``live`` extra).
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import numpy as np

from ..load.requests import Requests
from .measure import ERROR, NOT_SENT, OK, UNFINISHED_STATE, Measured
from .tokenizer import CHAT_TOKENS_PER_MESSAGE

__all__ = ["Bench", "prompt_ids", "prompt_text", "ENDPOINTS"]

ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
_ID_LOW, _ID_HIGH = 1000, 30000      # token ids every common vocabulary holds
_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))


def prompt_ids(requests: Requests, i: int, seed: int) -> list[int]:
    """Request i's prompt as token ids (its shared prefix blocks first)."""
    n = int(requests.input_tokens[i])
    ids: list[int] = []
    hashes = requests.hashes(i)
    if hashes is not None and len(hashes):
        block = int(requests.meta.get("hash_block_tokens", 512))
        for h in hashes:
            if len(ids) + block > n:
                break
            rng = np.random.default_rng([abs(int(h)), 7])
            ids += rng.integers(_ID_LOW, _ID_HIGH, block).tolist()
    rng = np.random.default_rng([int(seed), int(i), 11])
    ids += rng.integers(_ID_LOW, _ID_HIGH, n - len(ids)).tolist()
    return ids


def prompt_text(requests: Requests, i: int, seed: int) -> str:
    """Request i's prompt as text: 4-character words, as many as its tokens less the chat
    template's (at least one)."""
    words = max(1, int(requests.input_tokens[i]) - CHAT_TOKENS_PER_MESSAGE)
    rng = np.random.default_rng([int(seed), int(i), 13])
    letters = _LETTERS[rng.integers(0, 26, (words, 3))]
    return "".join(" " + "".join(w) for w in letters)


class Bench:
    """One pass of ``requests`` against ``url`` (the server's root, e.g.
    ``http://127.0.0.1:8000``). ``measured`` holds every request's state as it goes."""

    def __init__(self, url: str, requests: Requests, model: str, endpoint: str = "completions",
                 time_scale: float = 1.0, timeout_s: float = 600.0, seed: int = 0,
                 api_key: str | None = None, on_done=None, scrape_s: float | None = 1.0,
                 warmup: bool = True):
        self.url = url.rstrip("/")
        self.requests, self.model, self.endpoint = requests, model, endpoint
        self.time_scale, self.timeout_s, self.seed = float(time_scale), float(timeout_s), seed
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.on_done = on_done
        self.scrape_s = scrape_s
        cls = requests.class_id
        self.measured = [Measured(i, int(cls[i]), int(requests.input_tokens[i]),
                                  int(requests.output_tokens[i]))
                         for i in range(len(requests))]
        self.kv_peak: float | None = None
        self.t0 = 0.0
        self.warmup = warmup
        self.stopping = False
        #: preemptions the endpoint's vllm:num_preemptions counter grew by during the load
        #: (None: it shows none); a client cannot see them per request
        self.preemptions: int | None = None
        self._preempted_at_start: float | None = None
        self._tasks: list = []
        self.warmup_error: str | None = None

    # -- one request ---------------------------------------------------------------------------
    def body(self, i: int) -> dict:
        r = self.requests
        out = int(r.output_tokens[i])
        b = {"model": self.model, "stream": True, "stream_options": {"include_usage": True},
             "ignore_eos": True, "temperature": 0.0}
        if self.endpoint == "chat":
            b["messages"] = [{"role": "user", "content": prompt_text(r, i, self.seed)}]
            b["max_completion_tokens"] = out
        else:
            b["prompt"] = prompt_ids(r, i, self.seed)
            b["max_tokens"] = out
        return b

    async def one(self, client: httpx.AsyncClient, i: int) -> None:
        m = self.measured[i]
        headers = dict(self.headers)
        classes = self.requests.classes
        if len(classes) > 1:
            headers["X-SLO-Class"] = classes[m.class_id].name
        body = self.body(i)
        m.state = UNFINISHED_STATE
        m.sent_s = time.perf_counter() - self.t0
        try:
            await asyncio.wait_for(self._stream(client, m, body, headers), self.timeout_s)
        except asyncio.CancelledError:
            m.error = "cut off before its end"      # the bench was stopped: unfinished
            raise
        except TimeoutError:
            m.state, m.error = ERROR, f"timeout: no end within {self.timeout_s:g} s"
        except httpx.HTTPError as err:
            if self.stopping:
                m.state, m.error = UNFINISHED_STATE, "cut off before its end"
            else:
                m.state, m.error = ERROR, f"{type(err).__name__}: {err}"
        if self.on_done is not None:
            self.on_done(m)

    async def _stream(self, client, m: Measured, body: dict, headers: dict) -> None:
        chat = self.endpoint == "chat"
        async with client.stream("POST", self.url + ENDPOINTS[self.endpoint], json=body,
                                 headers=headers) as resp:
            if resp.status_code != 200:
                text = (await resp.aread()).decode(errors="replace")
                m.state, m.error = ERROR, f"HTTP {resp.status_code}: {_message(text)}"
                return
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                now = time.perf_counter() - self.t0
                try:
                    chunk = json.loads(data)
                except ValueError:
                    continue
                if "error" in chunk:
                    m.state, m.error = ERROR, _message(json.dumps(chunk))
                    return
                choices = chunk.get("choices")
                if choices:
                    c = choices[0]
                    text = (c.get("delta") or {}).get("content") if chat else c.get("text")
                    if text:
                        m.chunk_s.append(now)
                usage = chunk.get("usage")
                if usage and usage.get("completion_tokens") is not None:
                    m.usage_tokens = int(usage["completion_tokens"])
        if m.chunk_s:
            m.state = OK
        else:
            m.state, m.error = ERROR, "no output: never received a chunk with text"

    # -- the load ------------------------------------------------------------------------------
    async def run(self) -> None:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        timeout = httpx.Timeout(self.timeout_s, connect=min(30.0, self.timeout_s))
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
            if self.warmup:
                await self._warm(client)
                if self.warmup_error is not None:
                    return
            if self.scrape_s:
                await self._scrape_once(client)     # the counters at the start
            self.t0 = time.perf_counter()
            scraper = asyncio.create_task(self._scrape(client)) if self.scrape_s else None
            try:
                if self.requests.closed_loop is None:
                    await self._open(client)
                else:
                    await self._closed(client)
            finally:
                # stopped early (Ctrl-C, the overall timeout) or done: the requests still
                # streaming end here, before the client closes under them
                self.stopping = True
                if scraper is not None:
                    scraper.cancel()
                left = [t for t in self._tasks if not t.done()]
                for t in left:
                    t.cancel()
                if left:
                    await asyncio.gather(*left, return_exceptions=True)
            if scraper is not None:
                await self._scrape_once(client)     # the counters at the end

    async def _warm(self, client) -> None:
        """One short request before the load (as vLLM's bench serve sends its test prompt
        first), not measured: connections, the client's and the server's first-use costs are
        paid before the clock starts. Its error, if any, is ``warmup_error`` (the load is then
        not sent)."""
        m = Measured(-1, 0, 16, 2)
        body = {"model": self.model, "stream": True, "ignore_eos": True, "temperature": 0.0}
        if self.endpoint == "chat":
            body.update(messages=[{"role": "user", "content": " abc" * 12}],
                        max_completion_tokens=2)
        else:
            body.update(prompt=list(range(_ID_LOW, _ID_LOW + 16)), max_tokens=2)
        self.t0 = time.perf_counter()
        try:
            await asyncio.wait_for(self._stream(client, m, body, dict(self.headers)),
                                   self.timeout_s)
        except TimeoutError:
            m.state, m.error = ERROR, f"timeout: no end within {self.timeout_s:g} s"
        except httpx.HTTPError as err:
            m.state, m.error = ERROR, f"{type(err).__name__}: {err}"
        if m.state != OK:
            self.warmup_error = m.error or "failed"

    async def _open(self, client) -> None:
        tasks = []
        arrivals = np.asarray(self.requests.arrival_s, dtype=float) / self.time_scale
        for i, at in enumerate(arrivals):
            wait = at - (time.perf_counter() - self.t0)
            if wait > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.create_task(self.one(client, i)))
            self._tasks = tasks
        if tasks:
            await asyncio.gather(*tasks)

    async def _closed(self, client) -> None:
        loop = self.requests.closed_loop
        n = len(self.requests)
        first = min(loop.users, n)
        nxt = iter(range(first, n))       # later requests: to whichever user is free first
        think = loop.think_s / self.time_scale

        async def user(k: int, start_s: float):
            if start_s > 0:               # the loop's ramp: user k's first send, request k
                await asyncio.sleep(start_s / self.time_scale)
            await self.one(client, k)
            for i in nxt:
                if think > 0:
                    await asyncio.sleep(think)
                await self.one(client, i)

        self._tasks = [asyncio.create_task(user(k, s))
                       for k, s in enumerate(loop.first_sends_s(first))]
        await asyncio.gather(*self._tasks)

    async def _scrape(self, client) -> None:
        """Read the endpoint's /metrics every ``scrape_s`` seconds (see :meth:`_scrape_once`)."""
        while True:
            await asyncio.sleep(self.scrape_s)
            await self._scrape_once(client)

    async def _scrape_once(self, client) -> None:
        """The highest KV-cache use the endpoint's /metrics shows (vLLM's gauge, per engine)
        and its preemption counter, if it has them (a server without /metrics: neither)."""
        from prometheus_client.parser import text_string_to_metric_families
        kv_names = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
        try:
            resp = await client.get(self.url + "/metrics", timeout=5.0)
            if resp.status_code != 200:
                return
            preempted = None
            for fam in text_string_to_metric_families(resp.text):
                if fam.name in kv_names:
                    for x in fam.samples:
                        self.kv_peak = max(self.kv_peak or 0.0, float(x.value))
                elif fam.name == "vllm:num_preemptions":
                    preempted = sum(float(x.value) for x in fam.samples
                                    if x.name.endswith("_total"))
            if preempted is not None:
                if self._preempted_at_start is None:
                    self._preempted_at_start = preempted
                self.preemptions = int(preempted - self._preempted_at_start)
        except (httpx.HTTPError, ValueError):
            pass

    def stop(self) -> None:
        """Cut off: requests still streaming stay unfinished, the rest never sent."""
        for m in self.measured:
            if m.state == UNFINISHED_STATE:
                m.error = m.error or "cut off before its end"

    @property
    def counts(self) -> dict:
        out = {OK: 0, ERROR: 0, UNFINISHED_STATE: 0, NOT_SENT: 0}
        for m in self.measured:
            out[m.state] += 1
        return out


def _message(text: str) -> str:
    """An error body's message (OpenAI's or vLLM's shape), else the text, short."""
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            err = data.get("error", data)
            if isinstance(err, dict) and err.get("message"):
                return str(err["message"])[:300]
            if data.get("message"):
                return str(data["message"])[:300]
    except ValueError:
        pass
    return text.strip()[:300]
