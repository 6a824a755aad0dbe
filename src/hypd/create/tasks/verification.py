"""The verify stage's tasks and the end of the operation: the cluster does what it was created
for, then its record becomes ACTIVE with what was made (or FAILED, with the operation)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hypd import clock
from hypd.aws import eks as eks_api
from hypd.clusters.create_request import ResolvedCreate
from hypd.clusters.models import Cluster, ClusterStatus, EksCluster, HyperPodCluster
from hypd.create import hyperpod, storage, verify
from hypd.create.tasks.common import CreateServices, router
from hypd.errors import OperationStateError
from hypd.instance_groups.nodes import check_interval, verification_timeout
from hypd.kubernetes.apply import AppliedObject, apply_manifests, check_rollout
from hypd.operations.models import Operation
from hypd.operations.steps import (
    FailInput,
    OperationInput,
    Steps,
    dump,
    poll_result,
    polled,
    ready,
    summary,
)


# ---------------------------------------------------------------------------- verify
@polled(router, "verify-cluster", "check-verification")
def verify_poll(task: OperationInput, services: CreateServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation, resolved = services.load(task.operation_id)
        api = services.kubernetes(resolved.eks_cluster_name)
        if start:  # the storage, made beside the EKS side, is mounted now the cluster is up
            apply_manifests(api, storage.volume_manifests(
                resolved.tag, resolved.storage, services.settings.region,
                operation.stage("storage").output or {}))
        nodes, claim = verify.observe(api, storage.CLAIM_NAMESPACE, storage.CLAIM_NAME)
        workloads = (operation.stage("dependencies").output or {}).get("workloads", [])
        rollout = check_rollout(
            api,
            [
                AppliedObject(
                    api_version=w["apiVersion"],
                    kind=w["kind"],
                    name=w["name"],
                    namespace=w.get("namespace"),
                    path=w["path"],
                    created=False,
                )
                for w in workloads
            ],
        )
        result = verify.evaluate(
            nodes,
            {g.name: g.count for g in resolved.instance_groups},
            claim,
            rollout=rollout,
        )
        if result.ready:
            return {**poll_result(True), **dump(result)}
        waited = Steps.elapsed(operation, "verify")
        # Deep health checks hold nodes Unschedulable for 60-90 minutes after they boot.
        deadline = verification_timeout(
            verify.VERIFY_TIMEOUT,
            deep_health_checks=any(g.deep_health_checks for g in resolved.instance_groups),
        )
        if waited >= deadline.total_seconds():
            raise verify.VerificationTimedOut(
                f"after {int(waited)} s: " + "; ".join(result.problems),
                details={"problems": result.problems,
                         "timeoutSeconds": int(deadline.total_seconds())},
            )
        return poll_result(False, check_interval(waited), waiting="; ".join(result.problems))

    answer = services.steps.step(
        task, "verify", work, start=start, complete=ready, summarize=summary
    )
    return poll_result(True) if answer["ready"] else answer


# ---------------------------------------------------------------------------- end
@router.task("finish-create", OperationInput)
def finish_create(task: OperationInput, services: CreateServices) -> dict[str, Any]:
    def output(operation: Operation) -> dict[str, Any]:
        resolved = ResolvedCreate.model_validate(operation.input)
        record = _record_cluster(services, operation, resolved, status=ClusterStatus.ACTIVE)
        return create_summary(operation, record)

    return services.steps.finish(task, output)


@router.task("fail-create", FailInput)
def fail_create(task: FailInput, services: CreateServices) -> dict[str, Any]:
    operation, _error = services.steps.fail(task)
    if operation is None:
        # A superseded execution ends here; the operation belongs to its successor.
        return {"operationId": task.operation_id, "stale": True}
    services.clusters.set_status(operation.cluster_tag or "", ClusterStatus.FAILED, operation.id)
    return {"operationId": operation.id, "status": operation.status.value}


def _record_cluster(
    services: CreateServices,
    operation: Operation,
    resolved: ResolvedCreate,
    *,
    status: ClusterStatus,
) -> Cluster:
    """The cluster record with what the pipeline made: the EKS and HyperPod clusters."""
    eks_model = eks_api.describe_cluster(services.client("eks"), resolved.eks_cluster_name)
    hyperpod_model = hyperpod.read_cluster_or_none(
        services.client("sagemaker"), resolved.hyperpod_cluster_name
    )
    now = clock.now_iso()
    record = services.clusters.find(resolved.tag)
    updates: dict[str, Any] = {
        "eks": eks_model,
        "hyperpod": hyperpod_model,
        "updated_at": now,
        "last_seen_at": now,
        "last_operation_id": operation.id,
        "status": status,
    }
    if record is None:  # the record POST /clusters wrote is gone: write it anew
        if eks_model is None:
            raise OperationStateError(
                f"EKS cluster {resolved.eks_cluster_name} of cluster {resolved.tag} is gone"
            )
        record = Cluster.model_validate(
            {
                "tag": resolved.tag,
                "source": "created",
                "region": services.settings.region,
                "anchorArn": eks_model.arn,
                "createdAt": now,
                "updatedAt": now,
            }
        )
        record = record.model_copy(update=updates)
        services.clusters.save(record)
        return record
    # only these fields: a change the API made meanwhile (protection) stays
    updates.pop("updated_at")
    updated = services.clusters.update(resolved.tag, **updates)
    if updated is None:
        raise OperationStateError(
            f"the record of cluster {resolved.tag} was removed or now names other resources")
    return updated


def create_summary(operation: Operation, record: Cluster) -> dict[str, Any]:
    """The operation's output: what was made, and the time each stage took (virtual time)."""
    stages: list[dict[str, Any]] = []
    for stage in operation.stages:
        seconds = None
        if stage.started_at and stage.ended_at:
            seconds = (
                datetime.fromisoformat(stage.ended_at) - datetime.fromisoformat(stage.started_at)
            ).total_seconds()
        stages.append(
            {
                "name": stage.name,
                "status": stage.status.value,
                "seconds": seconds,
                "attempts": stage.attempts,
            }
        )
    eks: EksCluster | None = record.eks
    hyperpod_cluster: HyperPodCluster | None = record.hyperpod
    verify_output: Mapping[str, Any] = operation.stage("verify").output or {}
    storage_output: Mapping[str, Any] = operation.stage("storage").output or {}
    return {
        "tag": record.tag,
        "eksCluster": eks.model_dump(mode="json", by_alias=True) if eks else None,
        "hyperPodCluster": (
            hyperpod_cluster.model_dump(mode="json", by_alias=True) if hyperpod_cluster else None
        ),
        "nodes": verify_output.get("nodes", []),
        "storage": {**storage_output, "claimPhase": verify_output.get("claimPhase")},
        "stages": stages,
    }
