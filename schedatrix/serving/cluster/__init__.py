"""The cluster around the replicas: designs and where their schedulers sit, routers, admission
control, injected faults, and what a design does at the door.

Modules: ``layout``, ``routing``, ``admission``, ``faults``, ``policy``, ``deployment`` (a
design and the replicas it builds).
"""
