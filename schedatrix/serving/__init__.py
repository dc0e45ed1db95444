"""The serving simulator: load model, performance model, vLLM-like replicas, designs, figures.

Its rooms, lowest first (each imports only the rooms before it): ``load`` (requests, arrivals,
lengths, replay, fit), ``perf`` (catalog, kernels, the calibrated performance model), ``replica``
(a scheduler's knobs, the paged KV cache), ``cluster`` (designs, routing, admission, faults),
``figures`` (a run's record, its metrics, recovery), ``sim`` (the reference and the fast
simulator, one run), then the harness around it: ``intake`` (TOML tables, memory footprint),
``validation`` (the published measurements replayed, and why rows miss), ``studies`` (verdicts
over runs, comparisons, capacity, acceptance, placement, queueing), ``scenarios`` (scenario
and grid files), ``reports`` (tables, Markdown, the decision record) and ``sweeps`` (a grid's
points, locally or on Ray). ``cli`` is ``schedatrix serving``; ``numbers`` checks the numbers
a knob takes.
"""
