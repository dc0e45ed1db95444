"""The serving simulator: load model, performance model, vLLM-like replicas, designs, figures.

Its rooms, lowest first (each imports only the rooms before it): ``load`` (requests, arrivals,
lengths, replay, fit), ``perf`` (catalog, kernels, the calibrated performance model), ``replica``
(a scheduler's knobs, the paged KV cache), ``cluster`` (designs, routing, admission, faults),
``figures`` (a run's record, its metrics, recovery), ``sim`` (the reference and the fast
simulator, one run), ``harness`` (acceptance over seeds, comparisons, scenarios, sweeps,
reports, capacity). ``cli`` is ``schedatrix serving``; ``numbers`` checks the numbers a knob
takes.
"""
