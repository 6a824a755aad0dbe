"""The capacity tasks function's services (see hypd.wiring)."""

from __future__ import annotations

from hypd.aws.clients import regional_clients
from hypd.capacity.services import CapacityServices
from hypd.capacity.state import AutoscalingStore
from hypd.clusters.store import ClusterStore
from hypd.config import CapacityTaskSettings
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore
from hypd.wiring import table


def services(settings: CapacityTaskSettings) -> CapacityServices:
    records = table(settings)
    return CapacityServices(
        operations=OperationStore(records),
        clusters=ClusterStore(records),
        locks=LockStore(records),
        waiters=WaiterStore(records),
        autoscaling=AutoscalingStore(records),
        client=regional_clients(settings.region),
        settings=settings,
    )
