"""The discover operation's tasks (statemachines/discover.asl.json): inventory EKS and
HyperPod side by side, link and record, end.

Plain functions on the module's `router`, given the discover function's `DiscoverServices`
(`router.dispatch(event, services)`). Each stage runs through `Steps.step`, as every kind's
does: a task of an execution the operation has moved on from changes nothing, and the stage is
recorded. The operation record is the source of truth: the execution's input is its
`operationId` (the `resumeFrom` a retry adds is not read: a retry reruns every stage, they are
cheap and idempotent) and the names a discover is limited to are its recorded input's.

The two inventories are what flows between states: the record stage needs every cluster's
facts, 0.5 to 1 KB a cluster in the state's data, whose limit is 256 KB (a few hundred
clusters; EKS allows 100 a Region unless the quota is raised). The stages record their
summaries only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import Field

from hypd import clock
from hypd.aws import eks, sagemaker
from hypd.clusters.models import EksCluster, HyperPodCluster
from hypd.clusters.store import ClusterStore
from hypd.discovery.inputs import DiscoverInput
from hypd.discovery.plan import plan_discovery
from hypd.errors import ConflictError, OperationStateError
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation
from hypd.operations.steps import FailInput, OperationInput, Steps, dump
from hypd.operations.store import OperationStore
from hypd.tasks import TaskRouter

C = TypeVar("C", EksCluster, HyperPodCluster)


@dataclass(frozen=True)
class DiscoverServices:
    operations: OperationStore
    clusters: ClusterStore
    locks: LockStore
    eks_client: Callable[[], Any]
    sagemaker_client: Callable[[], Any]
    region: str | None

    @property
    def steps(self) -> Steps:
        return Steps(self.operations, self.locks)


class RecordInput(OperationInput):
    eks_clusters: list[EksCluster] = Field(alias="eksClusters")
    hyperpod_clusters: list[HyperPodCluster] = Field(alias="hyperPodClusters")


router = TaskRouter()


def _inventory(
    services: DiscoverServices,
    task: OperationInput,
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

    clusters = services.steps.step(
        task,
        stage,
        work,
        start=True,
        complete=True,
        summarize=lambda found: {"found": len(found), "names": [c.name for c in found]},
    )
    return {"clusters": [dump(cluster) for cluster in clusters]}


@router.task("list-eks-clusters", OperationInput)
def list_eks_clusters(task: OperationInput, services: DiscoverServices) -> dict[str, Any]:
    return _inventory(
        services,
        task,
        "eks-clusters",
        eks.list_cluster_names,
        eks.describe_cluster,
        services.eks_client,
    )


@router.task("list-hyperpod-clusters", OperationInput)
def list_hyperpod_clusters(task: OperationInput, services: DiscoverServices) -> dict[str, Any]:
    return _inventory(
        services,
        task,
        "hyperpod-clusters",
        sagemaker.list_cluster_names,
        sagemaker.describe_cluster,
        services.sagemaker_client,
    )


@router.task("record-clusters", RecordInput)
def record_clusters(task: RecordInput, services: DiscoverServices) -> dict[str, Any]:
    """Link the inventories and record the pairs; the result is the stage's output (and the
    operation's, once it succeeds)."""

    def work() -> dict[str, Any]:
        request = DiscoverInput.model_validate(services.operations.get(task.operation_id).input)
        plan = plan_discovery(
            task.eks_clusters,
            task.hyperpod_clusters,
            services.clusters.all(),
            now=clock.now_iso(),
            region=services.region,
            operation_id=task.operation_id,
            only_names=request.only_names,
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

    return services.steps.step(
        task, "record", work, start=True, complete=True, summarize=lambda result: result
    )


def _recorded(operation: Operation) -> dict[str, Any]:
    """What the record stage recorded: the operation's output."""
    output = operation.stage("record").output
    if output is None:
        raise OperationStateError(
            f"operation {operation.id}: stage record has no recorded output",
            details={"stage": "record"},
        )
    return output


@router.task("finish-discover", OperationInput)
def finish_discover(task: OperationInput, services: DiscoverServices) -> dict[str, Any]:
    return services.steps.finish(task, _recorded)


@router.task("fail-discover", FailInput)
def fail_discover(task: FailInput, services: DiscoverServices) -> dict[str, Any]:
    return services.steps.fail_answer(task)
