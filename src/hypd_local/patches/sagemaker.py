"""SageMaker: the cluster fields moto drops are kept.

``SageMakerResponse.create_cluster`` / ``Cluster.describe``: Orchestrator, NodeRecovery,
NodeProvisioningMode, ClusterRole, AutoScaling and TieredStorageConfig are kept and described
(moto drops them; discovery links HyperPod to EKS through Orchestrator).
"""

from __future__ import annotations

from typing import Any

from hypd_local.patches.engine import active, replace

_CLUSTER_CREATE_FIELDS = (
    "Orchestrator",
    "NodeRecovery",
    "NodeProvisioningMode",
    "ClusterRole",
    "AutoScaling",
    "TieredStorageConfig",
)


def patch_sagemaker() -> None:
    from moto.sagemaker.models import Cluster
    from moto.sagemaker.responses import SageMakerResponse

    original_create: Any = SageMakerResponse.create_cluster
    original_describe: Any = Cluster.describe

    def create_cluster(self: Any) -> Any:
        result = original_create(self)
        if active() is not None:
            cluster = self.sagemaker_backend.clusters.get(self._get_param("ClusterName"))
            if cluster is not None:
                cluster.local_cloud_fields = {
                    key: value
                    for key in _CLUSTER_CREATE_FIELDS
                    if (value := self._get_param(key)) is not None
                }
        return result

    def describe(self: Any) -> dict[str, Any]:
        described: dict[str, Any] = original_describe(self)
        described.update(getattr(self, "local_cloud_fields", {}))
        return described

    replace(SageMakerResponse, "create_cluster", create_cluster)
    replace(Cluster, "describe", describe)
