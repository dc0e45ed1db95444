"""One replica's scheduler as vLLM runs it: its knobs, the paged KV cache with prefix caching, and
what every scheduler keeps the same way whichever simulator steps it.

Modules: ``knobs``, ``kv_cache``, ``scheduler``. The two simulators that step it are in
:mod:`schedatrix.serving.sim`.
"""
