"""A speculating scheduler's two rules, the same in both simulators: the drafted tokens each
sequence's verification accepts, and the KV blocks a step takes for the drafted tokens.

**Acceptance** (:mod:`..perf.spec_decode`): at its j-th verification a request accepts
``min(K, G)`` drafted tokens, ``G`` geometric with ``P(G >= g) = a^g``: each drafted token is
accepted with probability ``a`` when those before it were. The draws come from one stream per
request, seeded by the run's seed and the request's index, so they do not depend on the order
in which a simulator reaches its requests: the reference and the fast simulator draw the same
tokens for the same request's same step. A step emits ``1 + accepted`` tokens, no more than the
request still has to give; they leave together, so the request's inter-token gap is one per
step (as ``vllm bench serve`` times ITL between streamed chunks) while its TPOT, (end - first
token) / (tokens - 1), counts every token.

**KV**: a verification writes K + 1 tokens per sequence, so a sequence with ``c`` tokens cached
takes the blocks of ``c + K + 1`` at the step's start and gives back those past its accepted
tokens at its end (:func:`lookahead_blocks`, :func:`kept_blocks`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["AcceptanceDraws", "lookahead_blocks", "kept_blocks", "SPEC_STREAM"]

#: Mixed into each request's seed, so speculation's draws are a stream of their own.
SPEC_STREAM = 0x5BEC
#: Draws taken from a request's stream at a time.
_CHUNK = 64


def lookahead_blocks(computed: int, tokens: int, block_tokens: int) -> int:
    """New KV blocks a verification of ``tokens`` drafted tokens takes for a sequence with
    ``computed`` tokens cached (holding the blocks of those)."""
    return -(-(computed + tokens + 1) // block_tokens) - -(-computed // block_tokens)


def kept_blocks(computed: int, tokens: int, gained: int, block_tokens: int) -> int:
    """Blocks of a step's lookahead given back at its end: those past ``computed + gained``."""
    return -(-(computed + tokens + 1) // block_tokens) - -(-(computed + gained) // block_tokens)


class AcceptanceDraws:
    """Per request, the drafted tokens its successive verifications accept.

    seed : the run's seed; accept : the per-position acceptance rate, 0 to 1; tokens : K."""

    def __init__(self, seed: int, accept: float, tokens: int):
        self.seed, self.accept, self.tokens = int(seed) % 2**63, float(accept), int(tokens)
        self._drawn: dict[int, list[int]] = {}
        self._rngs: dict[int, np.random.Generator] = {}

    def next(self, i: int) -> int:
        """Drafted tokens request i's next verification accepts (0 to K)."""
        drawn = self._drawn.get(i)
        if not drawn:
            drawn = self._drawn[i] = self._more(i)
        return drawn.pop()

    def _more(self, i: int) -> list[int]:
        a, k = self.accept, self.tokens
        if a >= 1.0:
            return [k] * _CHUNK
        rng = self._rngs.get(i)
        if rng is None:
            rng = self._rngs[i] = np.random.default_rng([self.seed, i, SPEC_STREAM])
        g = np.minimum(rng.geometric(1.0 - a, _CHUNK) - 1, k)
        return g[::-1].tolist()     # popped from the end: the first draw first
