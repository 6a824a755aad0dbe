"""The feature tasks function's services and tasks (see hypd.wiring)."""

from __future__ import annotations

from hypd.aws.clients import regional_clients
from hypd.config import FeatureTaskSettings
from hypd.features.tasks import FeatureServices
from hypd.features.tasks import router as feature_tasks
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.tasks import TaskRouter
from hypd.teardown.cluster_tasks import router as teardown_tasks
from hypd.upgrades.tasks import router as upgrade_tasks
from hypd.wiring import table
from hypd.workloads.tasks import router as workload_tasks

router = TaskRouter.union(feature_tasks, workload_tasks, teardown_tasks, upgrade_tasks)
"""Every task FeatureTasksFunction runs: the set-features, team and workload machines', and the
delete-cluster machine's Kubernetes-side stages."""


def services(settings: FeatureTaskSettings) -> FeatureServices:
    records = table(settings)
    return FeatureServices(
        operations=OperationStore(records),
        locks=LockStore(records),
        client=regional_clients(settings.region),
        settings=settings,
    )
