"""The harness's input files: a scenario (the load, its SLO classes, the candidate designs and how
to judge them) and a sweep's grid of scenarios (designs x loads x seeds)."""
