"""The teardown tasks function's services and tasks (see hypd.wiring)."""

from __future__ import annotations

from hypd.aws.clients import regional_clients
from hypd.clusters.store import ClusterStore
from hypd.config import TeardownTaskSettings
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.teardown.tasks import TeardownServices
from hypd.teardown.tasks import router as teardown_tasks
from hypd.wiring import table

router = teardown_tasks
"""Every task TeardownTasksFunction runs: the delete-cluster machine's AWS deletions."""


def services(settings: TeardownTaskSettings) -> TeardownServices:
    records = table(settings)
    return TeardownServices(
        operations=OperationStore(records),
        locks=LockStore(records),
        client=regional_clients(settings.region),
        settings=settings,
        clusters=ClusterStore(records),
    )
