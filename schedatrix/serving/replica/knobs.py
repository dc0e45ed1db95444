"""The knobs of a replica's scheduler (as vLLM names them), validated where they are made."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError
from ..numbers import check_int
from .cpu_tier import KVOffload
from .lora import LoRA

__all__ = ["SchedulerConfig", "DEFAULT_MAX_BATCH", "DEFAULT_MAX_BATCHED_TOKENS",
           "DEFAULT_BLOCK_TOKENS"]

#: vLLM's ``max_num_seqs``: running requests per scheduler.
DEFAULT_MAX_BATCH = 256
#: vLLM's ``max_num_batched_tokens``: tokens one iteration may process.
DEFAULT_MAX_BATCHED_TOKENS = 8192
#: vLLM's ``block_size``: tokens per KV-cache block.
DEFAULT_BLOCK_TOKENS = 16


@dataclass(frozen=True)
class SchedulerConfig:
    """How one scheduler batches.

    max_batch : running requests at most (``--max-batch``)
    max_batched_tokens : tokens per iteration at most: every decoding request's one token,
        then prefill chunks (``--max-batched-tokens``)
    chunked_prefill : split long prompts over iterations (on), or prefill each prompt whole
        in one iteration (off)
    block_tokens : tokens per KV block
    hash_block_tokens : tokens per prefix-cache hash block (0: no prefix caching), a multiple
        of ``block_tokens``
    max_model_len : the longest request (prompt + output) the model takes; longer ones are
        rejected at the door, as vLLM does
    async_scheduling : the scheduler works one iteration ahead of the GPU (vLLM's async
        scheduling): a request that reaches it while iteration n runs first joins n + 2
    capacity : ``max-utilization`` (admit what fits now, preempt when short) or
        ``guaranteed-no-evict`` (admit only when the whole request's KV fits beside what the
        running requests reserve to their ends; never preempt), :mod:`..perf.engines`
    kv_offload : the CPU tier of the prefix cache (None: none), :mod:`.cpu_tier`
    lora : the replica's LoRA adapters (None: none), :mod:`.lora`
    """

    max_batch: int = DEFAULT_MAX_BATCH
    max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS
    chunked_prefill: bool = True
    block_tokens: int = DEFAULT_BLOCK_TOKENS
    hash_block_tokens: int = 0
    max_model_len: int = 1 << 40
    async_scheduling: bool = False
    capacity: str = "max-utilization"
    kv_offload: KVOffload | None = None
    lora: LoRA | None = None

    def __post_init__(self):
        check_int("max_batch", self.max_batch, 1, 1_000_000)
        check_int("max_batched_tokens", self.max_batched_tokens, 1, 10_000_000)
        check_int("block_tokens", self.block_tokens, 1, 4096)
        check_int("hash_block_tokens", self.hash_block_tokens, 0, 1_000_000)
        if not isinstance(self.chunked_prefill, bool):
            raise InputError(f"chunked_prefill must be true or false, got {self.chunked_prefill!r}")
        if not isinstance(self.async_scheduling, bool):
            raise InputError(f"async_scheduling must be true or false, got "
                             f"{self.async_scheduling!r}")
        if self.capacity not in ("max-utilization", "guaranteed-no-evict"):
            raise InputError(f"capacity: {self.capacity!r}; allowed: max-utilization, "
                             "guaranteed-no-evict")
        if self.kv_offload is not None and not isinstance(self.kv_offload, KVOffload):
            raise InputError(f"kv_offload must be a KVOffload or None, got {self.kv_offload!r}")
        if self.lora is not None and not isinstance(self.lora, LoRA):
            raise InputError(f"lora must be a LoRA or None, got {self.lora!r}")
        if self.max_batched_tokens < self.max_batch:
            raise InputError(
                f"max_batched_tokens ({self.max_batched_tokens}) must be at least max_batch "
                f"({self.max_batch}): every running request decodes one token per iteration")
        if self.hash_block_tokens % self.block_tokens:
            raise InputError(
                f"hash_block_tokens ({self.hash_block_tokens}) must be a multiple of "
                f"block_tokens ({self.block_tokens})")
