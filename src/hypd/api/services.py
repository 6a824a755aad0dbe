"""What the API routes depend on, built once per function instance."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypd.capacity.state import AutoscalingStore
from hypd.clusters.store import ClusterStore
from hypd.config import STATE_MACHINE_SETTINGS
from hypd.errors import PermanentError
from hypd.events.store import EventStore
from hypd.features.state import FeatureClients
from hypd.health.policy import PolicyStore
from hypd.health.records import HealthStore
from hypd.idempotency.store import IdempotencyStore
from hypd.operations.locks import LockStore
from hypd.operations.models import OperationKind
from hypd.operations.starter import Starter
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
    events: EventStore | None = None
    idempotency: IdempotencyStore | None = None
    """The `Idempotency-Key` records (hypd.api.idempotency)."""
    client: Callable[[str], Any] | None = None
    """A boto3 client per service (the features' reads), made on first use."""
    kubernetes: Callable[[str], Any] | None = None
    """The Kubernetes API client of an EKS cluster, by name (the features' reads)."""
    dependency_chart: str | None = None
    """The dependencies chart setting upgrades apply (its release is what ``bundled`` is)."""

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

    @property
    def starter(self) -> Starter:
        """Starts, retries and cancels this API's operations."""
        return Starter(
            operations=self.operations,
            locks=self.locks,
            clusters=self.clusters,
            sfn_client=self.sfn_client,
            state_machine_arn=self.state_machine_arn,
        )

    def feature_clients(self) -> FeatureClients:
        return FeatureClients(
            _configured(self.client, "the AWS clients"),
            _configured(self.kubernetes, "the Kubernetes access"),
        )

    def autoscaling_store(self) -> AutoscalingStore:
        return _configured(self.autoscaling, "the autoscaling store")

    def health_store(self) -> HealthStore:
        return _configured(self.health, "the health store")

    def policy_store(self) -> PolicyStore:
        return _configured(self.policies, "the health policy store")

    def event_store(self) -> EventStore:
        return _configured(self.events, "the event store")

    def idempotency_store(self) -> IdempotencyStore:
        return _configured(self.idempotency, "the idempotency store")


S = TypeVar("S")


def _configured(store: S | None, what: str) -> S:
    if store is None:
        raise PermanentError(f"{what} is not configured for this function")
    return store
