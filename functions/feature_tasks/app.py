"""Feature tasks function: the tasks of the set-features, team and workload state machines (see
hypd.features.tasks and hypd.workloads.tasks), run by the function with a cluster-admin access
entry on each cluster hypd made."""

from __future__ import annotations

from hypd.config import FeatureTaskSettings
from hypd.observability import task_handler
from hypd.wiring import features as wiring

SETTINGS = FeatureTaskSettings.from_env()

handler = task_handler(wiring.router.bind(wiring.services(SETTINGS)))
