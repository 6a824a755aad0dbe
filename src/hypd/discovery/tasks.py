"""The discover operation's tasks: inventory EKS, inventory HyperPod, link and record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import Field

from hypd import clock
from hypd.aws import eks, sagemaker
from hypd.clusters.models import EksCluster, HyperPodCluster
from hypd.clusters.store import ClusterStore
from hypd.discovery.plan import plan_discovery
from hypd.errors import ConflictError
from hypd.operations.stages import run_stage
from hypd.operations.store import OperationStore
from hypd.tasks import TaskInput, TaskRouter

C = TypeVar("C", EksCluster, HyperPodCluster)


@dataclass(frozen=True)
class DiscoverServices:
    operations: OperationStore
    clusters: ClusterStore
    eks_client: Callable[[], Any]
    sagemaker_client: Callable[[], Any]
    region: str | None


class ListInput(TaskInput):
    operation_id: str = Field(alias="operationId")


class RecordInput(TaskInput):
    operation_id: str = Field(alias="operationId")
    eks_clusters: list[EksCluster] = Field(alias="eksClusters")
    hyperpod_clusters: list[HyperPodCluster] = Field(alias="hyperPodClusters")
    cluster_names: list[str] | None = Field(default=None, alias="clusterNames")


def build_router(services: DiscoverServices) -> TaskRouter:
    router = TaskRouter()

    def inventory(
        operation_id: str,
        stage: str,
        list_names: Callable[[Any], list[str]],
        describe: Callable[[Any, str], C | None],
        client: Callable[[], Any],
    ) -> dict[str, Any]:
        """One inventory stage: list the names, describe each (skipping ones deleted since)."""

        def work() -> list[C]:
            api = client()
            found = (describe(api, name) for name in list_names(api))
            return [cluster for cluster in found if cluster is not None]

        clusters = run_stage(
            services.operations,
            operation_id,
            stage,
            work,
            lambda found: {"found": len(found), "names": [c.name for c in found]},
        )
        return {"clusters": [c.model_dump(mode="json", by_alias=True) for c in clusters]}

    @router.task("list-eks-clusters", ListInput)
    def list_eks_clusters(task: ListInput) -> dict[str, Any]:
        return inventory(
            task.operation_id,
            "eks-clusters",
            eks.list_cluster_names,
            eks.describe_cluster,
            services.eks_client,
        )

    @router.task("list-hyperpod-clusters", ListInput)
    def list_hyperpod_clusters(task: ListInput) -> dict[str, Any]:
        return inventory(
            task.operation_id,
            "hyperpod-clusters",
            sagemaker.list_cluster_names,
            sagemaker.describe_cluster,
            services.sagemaker_client,
        )

    @router.task("record-clusters", RecordInput)
    def record_clusters(task: RecordInput) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            plan = plan_discovery(
                task.eks_clusters,
                task.hyperpod_clusters,
                services.clusters.all(),
                now=clock.now_iso(),
                region=services.region,
                operation_id=task.operation_id,
                only_names=set(task.cluster_names) if task.cluster_names else None,
            )
            recorded: list[str] = []
            conflicts = [conflict.to_api() for conflict in plan.conflicts]
            for cluster in plan.clusters:
                try:
                    services.clusters.save(cluster)
                except ConflictError as exc:
                    # Another writer took the tag between our read and this write.
                    conflicts.append({"tag": cluster.tag, "reason": exc.message, "arns": []})
                    continue
                recorded.append(cluster.tag)
            return {
                "recorded": recorded,
                "conflicts": conflicts,
                "missing": plan.missing,
                "eksClusters": len(task.eks_clusters),
                "hyperPodClusters": len(task.hyperpod_clusters),
            }

        return run_stage(services.operations, task.operation_id, "record", work, lambda r: r)

    return router
