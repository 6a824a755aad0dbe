"""The dependencies stage's tasks: the EKS add-ons in dependency order, then the HyperPod
dependency chart."""

from __future__ import annotations

from typing import Any

from hypd import clock
from hypd.clusters.create_request import ResolvedCreate
from hypd.config import CreateTaskSettings
from hypd.create import addons, dependency_chart
from hypd.create.tasks.common import CreateServices, EksOutput, router
from hypd.operations.models import Operation
from hypd.operations.steps import OperationInput, Steps, poll_result, polled

WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet")


def pod_identity_roles(settings: CreateTaskSettings) -> dict[str, str]:
    """The role of each CSI driver add-on's pod identity (each driver its own)."""
    return settings.csi_roles()


def _advance_addons(
    services: CreateServices, operation: Operation, resolved: ResolvedCreate
) -> addons.AddonProgress:
    storage_kind = "s3" if resolved.storage.s3 is not None else "fsx"
    return addons.advance_addons(
        services.client("eks"),
        resolved.eks_cluster_name,
        addons.plan_addons(storage_kind),
        pod_identity_roles=pod_identity_roles(services.settings),
        client_token=f"{operation.id}-addons",
    )


@polled(router, "install-addons", "check-addons")
def addons_poll(task: OperationInput, services: CreateServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation, resolved = services.load(task.operation_id)
        progress = _advance_addons(services, operation, resolved)
        addons.check_overdue(progress, Steps.elapsed(operation, "dependencies"))
        return poll_result(progress.done, progress.next_check_seconds, waiting=progress.waiting)

    return services.steps.step(task, "dependencies", work, start=start)


@router.task("apply-dependency-chart", OperationInput)
def apply_dependency_chart(task: OperationInput, services: CreateServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation, resolved = services.load(task.operation_id)
        eks = Steps.output_of(operation, "eks", EksOutput)
        applied = dependency_chart.apply(
            services.kubernetes(resolved.eks_cluster_name), services.settings.dependency_chart,
            region=services.settings.region,
            kubernetes_version=eks.version or resolved.kubernetes_version,
            applied_at=clock.now_iso())
        progress = _advance_addons(services, operation, resolved)
        return {
            "addons": progress.summary(),
            "chartObjects": len(applied),
            # Checked by verify: workloads can only roll out once nodes have joined.
            "workloads": [
                {**obj.to_json(), "path": obj.path}
                for obj in applied
                if obj.kind in WORKLOAD_KINDS
            ],
        }

    services.steps.step(task, "dependencies", work, complete=True, summarize=lambda r: r)
    return {}
