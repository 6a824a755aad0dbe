"""The create-cluster state machine's tasks (statemachines/create_cluster.asl.json).

Each task is thin: it reads the operation (the resolved request is its input; what earlier
stages made is in their recorded outputs, so a resumed execution needs nothing from the
failed one), calls one stage module, and records the stage through `Steps.step`. Polling
tasks answer ``{"ready": bool, "waitSeconds": int}``; the Wait state after them uses the
seconds, which each stage derives from its resource's expected duration.

The tasks are plain functions `(task, services)` on one `router` (`common`), given the
function's `CreateServices` (`router.bind(services)`), one module per group of stages:
`network` (network, eks), `dependencies`, `compute` (hyperpod, storage) and `verification`
(verify, and the end of the operation). Importing this package registers them all.
"""

from __future__ import annotations

from hypd.create.tasks import compute, dependencies, network, verification
from hypd.create.tasks.common import CreateServices, router

__all__ = ["CreateServices", "compute", "dependencies", "network", "router", "verification"]
