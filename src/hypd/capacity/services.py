"""What the capacity tasks run with: the function's stores and clients (see hypd.wiring)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypd.capacity.live import LiveCluster, read_live_cluster
from hypd.capacity.state import AutoscalingStore
from hypd.clusters.create_request import eks_cluster_name
from hypd.clusters.store import ClusterStore
from hypd.config import CapacityTaskSettings
from hypd.kubernetes import TokenCache
from hypd.kubernetes.client import ClusterAccess
from hypd.operations.locks import LockStore
from hypd.operations.steps import Steps
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore


@dataclass
class CapacityServices:
    operations: OperationStore
    clusters: ClusterStore
    locks: LockStore
    waiters: WaiterStore
    autoscaling: AutoscalingStore
    client: Callable[[str], Any]
    """A boto3 client per service name, created on first use and reused."""
    settings: CapacityTaskSettings
    tokens: TokenCache | None = None
    steps: Steps = field(init=False)
    """The stage bookkeeping of the operations store."""

    def __post_init__(self) -> None:
        self.steps = Steps(self.operations, self.locks)
        self._access = ClusterAccess(
            lambda: self.client("eks"), lambda: self.settings.region, self.tokens
        )

    def kubernetes(self, tag: str) -> Any:
        return self._access.api(eks_cluster_name(tag))

    def kube_nodes(self, tag: str) -> list[dict[str, Any]]:
        """The Kubernetes nodes of cluster `tag`, as dicts."""
        from kubernetes.client import CoreV1Api

        api = self.kubernetes(tag)
        return [api.sanitize_for_serialization(n) for n in CoreV1Api(api).list_node().items]

    def live(self, tag: str) -> LiveCluster:
        return read_live_cluster(self.client("sagemaker"), self.client("ec2"), tag)
