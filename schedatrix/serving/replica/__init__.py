"""One replica's scheduler as vLLM runs it: its knobs, the paged KV cache with prefix caching and
its CPU tier, its LoRA adapters' slots, and what every scheduler keeps the same way whichever
simulator steps it.

Modules: ``knobs``, ``kv_cache``, ``cpu_tier``, ``offload_use``, ``lora`` (the adapters' knobs,
bytes, kernels and draws), ``lora_slots``, ``lora_use``,
``scheduler``, ``speculation`` (a speculating scheduler's acceptance draws and lookahead KV).
The two simulators that step it are in :mod:`schedatrix.serving.sim`.
"""
