"""An approximate tokenizer: prompt lengths from text without a model's vocabulary.

The emulator has no model weights, so it has no real tokenizer. A prompt's length in tokens is
taken as **one token per 4 characters, rounded up** (``ceil(len(text) / 4)``, at least 1), the
rule of thumb OpenAI gives for English text; a chat request adds **4 tokens per message** for
its chat template (the role markers a template wraps each message in). A real tokenizer counts
English prose within about 20% of this and code or other languages worse, so a client that
needs exact lengths sends token ids instead (``prompt`` as a list of integers on
``/v1/completions``), which are counted exactly.

Generated text is 4-character words (``" tok"``-like fillers), one a token, so the emulator's
output read back through this tokenizer has as many tokens as it generated.

Prefix-cache block hashes (:func:`block_hashes`) are chained over whole blocks of token ids:
two prompts share a block's hash exactly when they share every token up to that block's end,
as vLLM's automatic prefix caching hashes them.
"""

from __future__ import annotations

import hashlib
import math
import struct

import numpy as np

__all__ = ["CHARS_PER_TOKEN", "CHAT_TOKENS_PER_MESSAGE", "count_text", "count_chat",
           "text_ids", "block_hashes", "output_token", "WORDS"]

CHARS_PER_TOKEN = 4
CHAT_TOKENS_PER_MESSAGE = 4
#: The emulator's output tokens: 4 characters each (a space and 3 letters).
WORDS = (" the", " and", " for", " are", " but", " not", " you", " all", " any", " can",
         " her", " was", " one", " our", " out", " day", " get", " has", " him", " his",
         " how", " man", " new", " now", " old", " see", " two", " way", " who", " boy")


def count_text(text: str) -> int:
    """Tokens in ``text``: ceil(characters / 4), at least 1."""
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def count_chat(messages: list) -> int:
    """Tokens of a chat request's messages: each message's content plus 4 for its template."""
    total = 0
    for m in messages:
        total += count_text(_content(m.get("content"))) + CHAT_TOKENS_PER_MESSAGE
    return max(1, total)


def _content(content) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def text_ids(text: str) -> list[int]:
    """Stand-in token ids of ``text``: one per 4-character piece (for prefix hashing only)."""
    step = CHARS_PER_TOKEN
    return [int.from_bytes(hashlib.blake2b(text[k:k + step].encode(), digest_size=4).digest(),
                           "little") for k in range(0, max(len(text), 1), step)]


def block_hashes(ids, block_tokens: int) -> np.ndarray:
    """Chained hashes of the whole ``block_tokens``-token blocks of ``ids`` (int64 each)."""
    out = []
    h = hashlib.blake2b(digest_size=8)
    ids = list(ids)
    for b in range(len(ids) // block_tokens):
        h.update(struct.pack(f"<{block_tokens}q", *ids[b * block_tokens:(b + 1) * block_tokens]))
        out.append(int.from_bytes(h.copy().digest(), "little", signed=True))
    return np.array(out, dtype=np.int64)


def output_token(k: int) -> str:
    """The text of the k-th generated token (0-based)."""
    return WORDS[k % len(WORDS)]
