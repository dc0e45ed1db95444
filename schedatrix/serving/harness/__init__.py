"""The harness around the simulator: runs over seeds and their verdicts, designs compared, the
acceptance harness with its decision record and runbook, scenarios and grids from TOML, sweeps,
reports, capacity searches and the noisy-neighbour study.
"""
