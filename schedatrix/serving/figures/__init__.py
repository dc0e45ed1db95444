"""The figures of a run, as the spec defines them: what a run leaves behind (``record``), TTFT,
TPOT, ITL, goodput and queue time (``metrics``), and recovery time after a fault (``recovery``).
"""
