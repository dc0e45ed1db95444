"""The questions the serving method asks of the simulator: verdicts over repeated runs, designs
compared, capacity searches, the acceptance harness, the placement planner (and tenants as
adapters of one base model or models of their own), queueing theory beside the simulator and
the noisy neighbour (the validation against published measurements is :mod:`..validation`)."""
