"""What the API routes depend on, built once per function instance."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypd.capacity.state import AutoscalingStore
from hypd.clusters.store import ClusterStore, CreatedClusterRecord
from hypd.config import STATE_MACHINE_SETTINGS
from hypd.errors import PermanentError
from hypd.health.policy import PolicyStore
from hypd.health.records import HealthStore
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation, OperationKind
from hypd.operations.starter import RestartRecord
from hypd.operations.store import OperationStore


@dataclass(frozen=True)
class ApiServices:
    operations: OperationStore
    clusters: ClusterStore
    locks: LockStore
    sfn_client: Callable[[], Any]
    # The catalogue and capacity routes' clients: created on first use (a cold start pays only
    # for its own).
    ec2_client: Callable[[], Any]
    sagemaker_client: Callable[[], Any]
    state_machines: Mapping[OperationKind, str] = field(default_factory=dict)
    """The state machine of each operation kind (`Settings.state_machines`)."""
    autoscaling: AutoscalingStore | None = None
    health: HealthStore | None = None
    policies: PolicyStore | None = None

    def state_machine_arn(self, kind: OperationKind) -> str:
        """The state machine that runs operations of `kind` (the one place kinds map to ARNs).

        Raises:
            PermanentError: this function's environment does not name it.
        """
        arn = self.state_machines.get(kind)
        if not arn:
            setting = STATE_MACHINE_SETTINGS.get(kind, f"the {kind.value} state machine")
            raise PermanentError(f"{setting} is not configured for this function")
        return arn

    def autoscaling_store(self) -> AutoscalingStore:
        return _configured(self.autoscaling, "the autoscaling store")

    def health_store(self) -> HealthStore:
        return _configured(self.health, "the health store")

    def policy_store(self) -> PolicyStore:
        return _configured(self.policies, "the health policy store")

    def restart_record(self, operation: Operation) -> RestartRecord | None:
        """The record that follows an operation of this kind through a retry, if any."""
        if operation.kind is OperationKind.CREATE_CLUSTER and operation.cluster_tag:
            return CreatedClusterRecord(self.clusters, operation.cluster_tag, operation.id)
        return None


S = TypeVar("S")


def _configured(store: S | None, what: str) -> S:
    if store is None:
        raise PermanentError(f"{what} is not configured for this function")
    return store
