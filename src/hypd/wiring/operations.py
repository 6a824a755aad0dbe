"""The operation tasks function's services (see hypd.wiring)."""

from __future__ import annotations

from hypd.clusters.store import ClusterStore
from hypd.config import OperationTaskSettings
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.operations.tasks import OperationServices
from hypd.wiring import table


def services(settings: OperationTaskSettings) -> OperationServices:
    records = table(settings)
    return OperationServices(
        operations=OperationStore(records),
        locks=LockStore(records),
        clusters=ClusterStore(records),
    )
