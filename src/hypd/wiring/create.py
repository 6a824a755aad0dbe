"""The create tasks function's services (see hypd.wiring)."""

from __future__ import annotations

from hypd.aws.clients import regional_clients
from hypd.clusters.store import ClusterStore
from hypd.config import CreateTaskSettings
from hypd.create.tasks import CreateServices
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore
from hypd.wiring import table


def services(settings: CreateTaskSettings) -> CreateServices:
    records = table(settings)
    return CreateServices(
        operations=OperationStore(records),
        clusters=ClusterStore(records),
        locks=LockStore(records),
        waiters=WaiterStore(records),
        client=regional_clients(settings.region),
        settings=settings,
    )
