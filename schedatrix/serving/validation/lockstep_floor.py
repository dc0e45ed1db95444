"""The least mean TTFT a wave of prompts sent together allows, from their FLOPs alone.

When ``users`` prompts of ``input_tokens`` each reach an engine at once, the k-th of them to
get its first token waits at least for k prompts' prefill: every prompt needs
``2 x matmul params x input_tokens`` FLOPs, and the GPUs deliver at most their dense peak (the
FP8 peak for an FP8 row, the BF16 one else). So the wave's mean TTFT is at least
``P (users + 1) / 2``, ``P`` one prompt's FLOPs at the peak, whatever the scheduler, batch or
chunking. The bound leaves out attention, the decode tokens riding in the same steps and every
cost outside the GPU, so it lies below any real figure.

``wave_floor_ms`` is that bound; ``counted_floor_ms`` the bound on the mean over
``requests_per_user x users`` requests when the first wave is one of them (AIPerf's
concurrency mode sends it at once, NIM's sweep averages over all requests) and every later
request needs at least ``P``. A published mean below ``counted_floor_ms`` shows that the
measured run did not hold a simultaneous first wave; below ``wave_floor_ms``, that its
requests did not arrive in waves of all the users (the lockstep a deterministic replay keeps).
"""

from __future__ import annotations

from ...errors import InputError
from ..perf.catalog import gpu as gpu_of
from ..perf.catalog import model as model_of
from ..published.rows import Published

__all__ = ["prefill_floor_ms", "wave_floor_ms", "counted_floor_ms", "below_floors"]


def prefill_floor_ms(row: Published) -> float:
    """Milliseconds one of ``row``'s prompts needs at the dense peak of its ``tp`` GPUs: its
    matmuls' FLOPs (every weight but the embedding and the LM head, whose one token a
    prompt is left out) over the peak."""
    if row.users < 1 or row.input_tokens < 1:
        raise InputError(f"validation row {row.id}: users {row.users}, input_tokens "
                         f"{row.input_tokens}; the floor needs an online row (both >= 1)")
    m, g = model_of(row.model), gpu_of(row.gpu)
    peak = g.tflops_fp8 if row.dtype == "fp8" and g.tflops_fp8 else g.tflops_bf16
    matmul_params = m.active_params - 2 * m.embedding_params
    return 2.0 * matmul_params * row.input_tokens / (row.tp * peak * 1e12) * 1e3


def wave_floor_ms(row: Published) -> float:
    """The least mean TTFT (ms) of ``row.users`` of its prompts arriving together."""
    return prefill_floor_ms(row) * (row.users + 1) / 2


def counted_floor_ms(row: Published, requests_per_user: int) -> float:
    """The least mean TTFT (ms) over ``requests_per_user x users`` requests of which the first
    ``users`` arrive together and every other needs at least one prompt's prefill."""
    if isinstance(requests_per_user, bool) or not isinstance(requests_per_user, int) \
            or requests_per_user < 1:
        raise InputError(f"requests_per_user: {requests_per_user!r}; must be an integer >= 1")
    p = prefill_floor_ms(row)
    return (wave_floor_ms(row) + (requests_per_user - 1) * p) / requests_per_user


def below_floors(rows, requests_per_user: int) -> tuple[list[Published], list[Published]]:
    """(the rows whose published mean lies below ``counted_floor_ms``, those below
    ``wave_floor_ms``) among the online TTFT ``rows``."""
    ttft = [r for r in rows if r.kind == "online_ttft"]
    return ([r for r in ttft if r.value < counted_floor_ms(r, requests_per_user)],
            [r for r in ttft if r.value < wave_floor_ms(r)])
