"""The hyperpod and storage stages' tasks: the HyperPod cluster on the EKS cluster (asked for,
then waited for through its state-change events), then the shared storage and its claim."""

from __future__ import annotations

from typing import Any

from hypd.clusters.models import HyperPodCluster
from hypd.create import hyperpod, storage
from hypd.create.tasks.common import CreateServices, EksOutput, NetworkOutput, router
from hypd.operations.steps import (
    AwaitInput,
    OperationInput,
    Steps,
    poll_result,
    polled,
    ready,
    summary,
)
from hypd.operations.waiters import park_and_look


# ---------------------------------------------------------------------------- hyperpod
@polled(router, "create-hyperpod-cluster", "replace-hyperpod-cluster")
def hyperpod_poll(task: OperationInput, services: CreateServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation, resolved = services.load(task.operation_id)
        network = Steps.output_of(operation, "network", NetworkOutput)
        eks = Steps.output_of(operation, "eks", EksOutput)
        request = hyperpod.cluster_request(
            resolved,
            eks_cluster_arn=eks.arn,
            security_group_id=network.security_group_id,
            group_subnets=network.compute_subnets,
            execution_role_arn=services.settings.hyperpod_execution_role_arn,
        )
        cluster = hyperpod.ensure_cluster(
            services.client("sagemaker"),
            request,
            replace_failed=operation.stage("hyperpod").attempts > 1,
        )
        if cluster is None:  # a failed cluster of an earlier attempt is being deleted
            return poll_result(
                False,
                hyperpod.REPLACE_CHECK_SECONDS,
                waiting=f"the failed HyperPod cluster {resolved.hyperpod_cluster_name} of an "
                "earlier attempt is being deleted",
            )
        return {**poll_result(True), "status": cluster.status}

    return services.steps.step(task, "hyperpod", work, start=start)


@router.task("await-hyperpod-cluster", AwaitInput)
def await_hyperpod_cluster(task: AwaitInput, services: CreateServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, resolved = services.load(task.operation_id)
        name = resolved.hyperpod_cluster_name

        def look() -> tuple[str, str]:
            cluster = hyperpod.read_cluster_or_none(services.client("sagemaker"), name)
            if cluster is None:
                return "Missing", ""
            return cluster.status, cluster.failure_message or ""

        return park_and_look(
            services.waiters,
            lambda: services.client("stepfunctions"),
            name,
            task.operation_id,
            task.task_token,
            look,
            failure_states=hyperpod.FAILED_STATES,
            failure_error=hyperpod.HyperPodClusterFailed.code,
        )

    return services.steps.step(task, "hyperpod", work)


@router.task("check-hyperpod-cluster", OperationInput)
def check_hyperpod_cluster(task: OperationInput, services: CreateServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, resolved = services.load(task.operation_id)
        cluster = hyperpod.read_cluster(
            services.client("sagemaker"), resolved.hyperpod_cluster_name
        )
        # Not InService: the next state parks a new token (its own look says so).
        return {
            "ready": cluster.status == hyperpod.IN_SERVICE,
            "status": cluster.status,
            "waiting": f"HyperPod cluster {cluster.name} is {cluster.status}",
        }

    return services.steps.step(task, "hyperpod", work)


@router.task("record-hyperpod-cluster", OperationInput)
def record_hyperpod_cluster(task: OperationInput, services: CreateServices) -> dict[str, Any]:
    def work() -> HyperPodCluster:
        _operation, resolved = services.load(task.operation_id)
        return hyperpod.read_cluster(services.client("sagemaker"), resolved.hyperpod_cluster_name)

    services.steps.step(task, "hyperpod", work, complete=True, summarize=hyperpod.cluster_summary)
    return {}


# ---------------------------------------------------------------------------- storage
@polled(router, "create-storage", "check-storage")
def storage_poll(task: OperationInput, services: CreateServices, *, start: bool) -> dict[str, Any]:
    """The bucket checked, or the FSx file system created and AVAILABLE (beside the EKS side:
    it needs only the network). The verify stage mounts it (`storage.volume_manifests`)."""
    def work() -> dict[str, Any]:
        operation, resolved = services.load(task.operation_id)
        named = {"volume": storage.volume_name(resolved.tag),
                 "claim": f"{storage.CLAIM_NAMESPACE}/{storage.CLAIM_NAME}"}
        if resolved.storage.s3 is not None:
            storage.check_bucket(services.client("s3"), resolved.storage.s3.bucket)
            return {**poll_result(True), "kind": "s3", "bucket": resolved.storage.s3.bucket,
                    **named}
        network = Steps.output_of(operation, "network", NetworkOutput)
        system = storage.ensure_file_system(
            services.client("fsx"),
            resolved,
            subnet_id=network.compute_subnets[resolved.instance_groups[0].name],
            security_group_id=network.security_group_id,
            client_token=f"{operation.id}-storage",
        )
        if not storage.file_system_ready(system):
            return poll_result(
                False,
                storage.next_check_seconds(Steps.elapsed(operation, "storage")),
                waiting=f"FSx file system {system.get('FileSystemId')} is "
                f"{system.get('Lifecycle')}",
            )
        return {**poll_result(True), "kind": "fsx", **storage.mount_of(system), **named}

    return services.steps.step(
        task, "storage", work, start=start, complete=ready, summarize=summary
    )
