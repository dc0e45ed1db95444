"""The request's path outside the GPU, as a benchmark client measures it.

A client's time to first token is not the engine's: before the scheduler sees a request, the
HTTP server and the API server take it in and tokenize its prompt; after the GPU samples a
token, it is detokenized and streamed back as a chunk. :class:`ClientPath` names each term with
its source and error; the simulators add them where they fall:

- **in** (``ingress_s``): ``front_end_s`` once a request (HTTP parsing, the OpenAI-compatible
  server's request handling, the hop to the engine core's queue) plus ``tokenize_s_per_token``
  for each prompt token. The request reaches the scheduler that much after the client sent it,
  so it queues from then on;
- **out** (``egress_s``): ``detokenize_s_per_token`` plus ``stream_chunk_s`` for each token
  streamed (one chunk a token, as vLLM streams by default). Every token reaches the client that
  much after it left the GPU: the first token's time and the request's end move by it, the
  gaps between tokens do not.

So TTFT as a client measures it = front end + tokenization + queue + the wait for the next
iteration's start (+ one iteration more with async scheduling: :mod:`..replica.scheduler`) +
the prefill iterations + the first token's detokenization and delivery. TPOT and ITL are
computed as vLLM's ``bench serve`` computes them (:mod:`..figures.metrics`): TPOT =
(end-to-end - TTFT) / (output tokens - 1), the first token excluded; ITL = every gap between
streamed chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError

__all__ = ["ClientPath", "Term", "VLLM_CLIENT_PATH", "NO_CLIENT_PATH", "TERMS"]


@dataclass(frozen=True)
class Term:
    """One named term: its value (seconds, per request or per token), source and error."""

    name: str
    seconds: float
    per: str
    source: str
    error: str


#: The terms of vLLM's OpenAI-compatible server, each with where it comes from.
TERMS = (
    Term("front_end_s", 1.0e-3, "request",
         "an assumption: no published profile gives the HTTP and API server's time per "
         "request alone. vLLM's v0.6.0 performance post (2024-09-05) measured the API server "
         "at 33% of the execution time of Llama 3 8B on one H100 under load, which is why V1 "
         "moved it to a process of its own; at about 1 ms a request it would be 2-5% of a "
         "short request's TTFT",
         "factor 3 either way (0.3-3 ms)"),
    Term("tokenize_s_per_token", 1.1e-6, "prompt token",
         "HuggingFace tokenizers (the Rust backend vLLM uses), one thread: about 1.1 s for a "
         "4 MB document of about 1M tokens (Charles Xu, '3.3x Faster HuggingFace Tokenizers "
         "for Single Sequence', 2025); the IREE tokenizer comparison (2026-02) measures HF "
         "tokenizers' Python binding at 2.7 MiB/s on English, about 1.4 us a token at 4 bytes "
         "a token",
         "about 1.1-1.4 us a token; chat templates and a busy API process add more"),
    Term("detokenize_s_per_token", 12.5e-6, "output token",
         "an assumption: vLLM detokenizes incrementally in its front-end process, a "
         "Python-level step per token and request (DecodeStream); no published figure per "
         "token",
         "factor 2 either way"),
    Term("stream_chunk_s", 1.0e-4, "output token",
         "an assumption: one server-sent event a token over a local connection (the "
         "benchmark clients run beside the server)",
         "factor 3 either way"),
)


@dataclass(frozen=True)
class ClientPath:
    """The request's path outside the GPU (seconds; see the module docstring)."""

    front_end_s: float = 0.0
    tokenize_s_per_token: float = 0.0
    detokenize_s_per_token: float = 0.0
    stream_chunk_s: float = 0.0

    def __post_init__(self):
        for name in ("front_end_s", "tokenize_s_per_token", "detokenize_s_per_token",
                     "stream_chunk_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1.0:
                raise InputError(f"client path {name}: {v!r}; must be a number of seconds "
                                 "from 0 to 1")

    @property
    def off(self) -> bool:
        return not (self.front_end_s or self.tokenize_s_per_token or
                    self.detokenize_s_per_token or self.stream_chunk_s)

    def ingress_s(self, prompt_tokens):
        """Seconds from the client's send to the scheduler's queue (a number or an array)."""
        return self.front_end_s + self.tokenize_s_per_token * prompt_tokens

    @property
    def egress_s(self) -> float:
        """Seconds from a token leaving the GPU to the client receiving it."""
        return self.detokenize_s_per_token + self.stream_chunk_s

    def ttft_extra_s(self, prompt_tokens) -> float:
        """What the path adds to a request's TTFT beside the engine's (queueing excluded)."""
        return self.ingress_s(prompt_tokens) + self.egress_s


#: vLLM's OpenAI-compatible server with the terms above.
VLLM_CLIENT_PATH = ClientPath(**{t.name: t.seconds for t in TERMS})
#: No path outside the GPU (the engine's own times).
NO_CLIENT_PATH = ClientPath()
