"""The figures of a run, as the spec defines them: what a run leaves behind (``record``), TTFT,
TPOT, ITL, goodput and queue time (``metrics``), recovery time after a fault (``recovery``), and
prefix hits by tier of the KV cache (``kv_tiers``).
"""
