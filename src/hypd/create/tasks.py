"""The create-cluster state machine's tasks (statemachines/create_cluster.asl.json).

Each task is thin: it reads the operation (the resolved request is its input; what earlier
stages made is in their recorded outputs, so a resumed execution needs nothing from the
failed one), calls one stage module, and records the stage through `stage_step`. Polling
tasks answer ``{"ready": bool, "waitSeconds": int}``; the Wait state after them uses the
seconds, which each stage derives from its resource's expected duration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd import clock
from hypd.aws import ec2 as ec2_api
from hypd.aws import eks as eks_api
from hypd.clusters.create_request import ResolvedCreate
from hypd.clusters.models import (
    HYPD_TAG_KEY,
    Cluster,
    ClusterStatus,
    EksCluster,
    HyperPodCluster,
)
from hypd.clusters.store import ClusterStore
from hypd.config import CreateTaskSettings
from hypd.create import addons, chart, control_plane, hyperpod, network_stack, storage, verify
from hypd.errors import OperationStateError
from hypd.instance_groups import placement
from hypd.instance_groups.nodes import check_interval, verification_timeout
from hypd.kubernetes import TokenCache
from hypd.kubernetes.apply import AppliedObject, apply_manifests, check_rollout
from hypd.kubernetes.client import ClusterAccess
from hypd.network import ensure_compute_subnet
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation
from hypd.operations.steps import (
    AwaitInput,
    FailInput,
    OperationInput,
    Poll,
    Steps,
    dump,
    poll_result,
    ready,
    summary,
)
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore, park_and_look
from hypd.tasks import TaskRouter

WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet")


def pod_identity_roles(settings: CreateTaskSettings) -> dict[str, str]:
    """The role of each CSI driver add-on's pod identity (each driver its own)."""
    roles = {
        addons.CSI_DRIVERS["s3"]: settings.s3_csi_driver_role_arn,
        addons.CSI_DRIVERS["fsx"]: settings.fsx_csi_driver_role_arn,
    }
    return {addon: role for addon, role in roles.items() if role}


@dataclass
class CreateServices:
    operations: OperationStore
    clusters: ClusterStore
    locks: LockStore
    waiters: WaiterStore
    client: Callable[[str], Any]
    """A boto3 client per service name, created on first use and reused."""
    settings: CreateTaskSettings
    tokens: TokenCache | None = None

    def __post_init__(self) -> None:
        self._access = ClusterAccess(
            lambda: self.client("eks"), lambda: self.settings.region, self.tokens
        )

    def kubernetes(self, cluster_name: str) -> Any:
        """A Kubernetes API client for the EKS cluster, authenticated as this function."""
        return self._access.api(cluster_name)


# ---------------------------------------------------------------------------- stage outputs
class _Output(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class NetworkOutput(_Output):
    stack_name: str = Field(alias="stackName")
    vpc_id: str = Field(alias="vpcId")
    control_plane_subnet_ids: list[str] = Field(alias="controlPlaneSubnetIds")
    security_group_id: str = Field(alias="securityGroupId")
    compute_subnets: dict[str, str] = Field(alias="computeSubnets")
    """Instance group name -> its compute subnet."""


class EksOutput(_Output):
    name: str
    arn: str
    version: str | None = None
    endpoint: str | None = None
    access_principal: str = Field(alias="accessPrincipal")


def build_router(services: CreateServices) -> TaskRouter:
    router = TaskRouter()
    operations = services.operations
    steps = Steps(operations, services.locks)
    step, polled, output_of, elapsed = steps.step, steps.polled, steps.output_of, steps.elapsed

    def load(operation_id: str) -> tuple[Operation, ResolvedCreate]:
        operation = operations.get(operation_id)
        return operation, ResolvedCreate.model_validate(operation.input)

    def polling(first: str, then: str) -> Callable[[Poll], Poll]:
        return polled(router, first, then)

    # ---------------------------------------------------------------- network
    @polling("create-network-stack", "check-network-stack")
    def network_poll(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation, resolved = load(task.operation_id)
            attempt = operation.stage("network").attempts

            def zones() -> tuple[str, str]:  # asked only when the stack is to be created
                region = ec2_api.list_availability_zones(services.client("ec2"))
                return network_stack.control_plane_zones(
                    resolved.availability_zone,
                    [z.name for z in region],
                    unsupported=network_stack.known_unsupported_zones(region),
                )

            # Inspect before create, on every look: a failed stack of an earlier attempt is
            # replaced (the retry path), whose deletion may take several looks.
            stack = network_stack.ensure_network_stack(
                services.client("cloudformation"),
                resolved.tag,
                zones,
                client_token=f"{operation.id}-network-{attempt}",
                replace_failed=attempt > 1,
                role_arn=services.settings.network_stack_role_arn,
            )
            return poll_result(
                stack.ready, network_stack.next_check_seconds(elapsed(operation, "network"))
            )

        return step(task, "network", work, start=start)

    @router.task("ensure-compute-subnet", OperationInput)
    def ensure_compute_subnet_task(task: OperationInput) -> dict[str, Any]:
        def work() -> NetworkOutput:
            _operation, resolved = load(task.operation_id)
            stack = network_stack.read_network_stack(
                services.client("cloudformation"), resolved.tag
            )
            assert stack.vpc_id
            assert stack.security_group_id
            ec2 = services.client("ec2")
            facts = ec2_api.describe_instance_types(
                ec2, [g.instance_type.removeprefix("ml.") for g in resolved.instance_groups]
            )
            subnets: dict[str, str] = {}
            for index, group in enumerate(resolved.instance_groups):
                subnet = ensure_compute_subnet(
                    ec2,
                    placement.subnet_request(
                        group,
                        facts.get(group.instance_type.removeprefix("ml.")),
                        vpc_id=stack.vpc_id,
                        availability_zone=resolved.availability_zone,
                        cluster_tag=resolved.tag,
                        field=f"instanceGroups[{index}]",
                    ),
                )
                subnets[group.name] = subnet.subnet_id
            return NetworkOutput(
                stack_name=stack.stack_name,
                vpc_id=stack.vpc_id,
                control_plane_subnet_ids=list(stack.control_plane_subnet_ids),
                security_group_id=stack.security_group_id,
                compute_subnets=subnets,
            )

        step(task, "network", work, complete=True, summarize=dump)
        return {}

    # ---------------------------------------------------------------- eks
    @polling("create-eks-cluster", "check-eks-cluster")
    def eks_poll(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation, resolved = load(task.operation_id)
            cfn = services.client("cloudformation")
            attempt = operation.stage("eks").attempts
            moves = int((operation.stage("eks").progress or {}).get("controlPlaneMoves", 0))
            waited = elapsed(operation, "eks")
            # The stack's control-plane subnets as they are now: a zone EKS refused may have
            # been replaced (below), also in an earlier attempt.
            network = network_stack.read_network_stack(cfn, resolved.tag)
            if not network.ready:  # control-plane subnets being added
                control_plane.check_overdue(
                    resolved.eks_cluster_name,
                    f"waiting for control-plane subnets in zones EKS supports (network stack "
                    f"{network.stack_name} is {network.status})",
                    waited,
                )
                return poll_result(False, network_stack.UPDATE_CHECK_SECONDS)
            assert network.security_group_id
            # A new CreateCluster request after each move (other subnets): a fresh token.
            token = f"{operation.id}-eks-{attempt}" + (f"-z{moves}" if moves else "")
            try:
                # Inspect before create, on every look: a FAILED cluster of an earlier attempt
                # is replaced (the retry path), whose deletion takes several looks.
                state = control_plane.ensure_eks_cluster(
                    services.client("eks"),
                    name=resolved.eks_cluster_name,
                    role_arn=services.settings.eks_cluster_role_arn,
                    subnet_ids=network.control_plane_subnet_ids,
                    security_group_ids=[network.security_group_id],
                    kubernetes_version=resolved.kubernetes_version,
                    tags={HYPD_TAG_KEY: resolved.tag},
                    client_token=token,
                    replace_failed=attempt > 1,
                )
            except eks_api.UnsupportedAvailabilityZone as refused:
                # EKS refuses a zone: the stack gains control-plane subnets in zones it
                # supports (nothing made so far is lost), and CreateCluster is asked again.
                moving = network_stack.move_control_plane(
                    cfn,
                    resolved.tag,
                    refused.valid_zones,
                    client_token=f"{operation.id}-eks-{attempt}-zones-{moves + 1}",
                    role_arn=services.settings.network_stack_role_arn,
                    moved_before=moves > 0,
                )
                if moving is None:
                    raise
                return {
                    **poll_result(False, network_stack.UPDATE_CHECK_SECONDS),
                    "controlPlaneMoves": moves + 1,
                    "validZones": refused.valid_zones,
                }
            if not state.ready:
                control_plane.check_overdue(state.name, f"still {state.status}", waited)
            return poll_result(state.ready, control_plane.next_check_seconds(waited))

        def moved(result: dict[str, Any]) -> dict[str, Any] | None:
            if "controlPlaneMoves" not in result:
                return None
            return {k: result[k] for k in ("controlPlaneMoves", "validZones")}

        return step(task, "eks", work, start=start, progress=moved)

    @router.task("grant-cluster-access", OperationInput)
    def grant_cluster_access(task: OperationInput) -> dict[str, Any]:
        def work() -> EksOutput:
            _operation, resolved = load(task.operation_id)
            eks = services.client("eks")
            principal = control_plane.principal_of(services.client("sts"))
            # EKS admits a principal by its own access entry: every function that calls the
            # cluster's Kubernetes API needs one.
            for role in (principal, *services.settings.kubernetes_access_roles):
                control_plane.ensure_admin_access(eks, resolved.eks_cluster_name, role)
            state = control_plane.read_eks_cluster(eks, resolved.eks_cluster_name)
            return EksOutput(
                name=resolved.eks_cluster_name,
                arn=state.arn,
                version=state.version,
                endpoint=state.endpoint,
                access_principal=principal,
            )

        step(task, "eks", work, complete=True, summarize=dump)
        return {}

    # ---------------------------------------------------------------- dependencies
    def advance_addons(operation: Operation, resolved: ResolvedCreate) -> addons.AddonProgress:
        return addons.advance_addons(
            services.client("eks"),
            resolved.eks_cluster_name,
            addons.plan_addons(_storage_kind(resolved)),
            pod_identity_roles=pod_identity_roles(services.settings),
            client_token=f"{operation.id}-addons",
        )

    @polling("install-addons", "check-addons")
    def addons_poll(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation, resolved = load(task.operation_id)
            progress = advance_addons(operation, resolved)
            addons.check_overdue(progress, elapsed(operation, "dependencies"))
            return poll_result(progress.done, progress.next_check_seconds)

        return step(task, "dependencies", work, start=start)

    @router.task("apply-dependency-chart", OperationInput)
    def apply_dependency_chart(task: OperationInput) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation, resolved = load(task.operation_id)
            eks = output_of(operation, "eks", EksOutput)
            manifests = chart.render_chart(
                chart.chart_source(services.settings.dependency_chart),
                release="hyperpod-dependencies",
                namespace="kube-system",
                values=chart.chart_values(services.settings.region),
                kube_version=eks.version or resolved.kubernetes_version,
            )
            applied = apply_manifests(
                services.kubernetes(resolved.eks_cluster_name), manifests, namespace="kube-system"
            )
            progress = advance_addons(operation, resolved)
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

        step(task, "dependencies", work, complete=True, summarize=lambda r: r)
        return {}

    # ---------------------------------------------------------------- hyperpod
    @polling("create-hyperpod-cluster", "replace-hyperpod-cluster")
    def hyperpod_poll(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation, resolved = load(task.operation_id)
            network = output_of(operation, "network", NetworkOutput)
            eks = output_of(operation, "eks", EksOutput)
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
                return poll_result(False, hyperpod.REPLACE_CHECK_SECONDS)
            return {**poll_result(True), "status": cluster.status}

        return step(task, "hyperpod", work, start=start)

    @router.task("await-hyperpod-cluster", AwaitInput)
    def await_hyperpod_cluster(task: AwaitInput) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            _operation, resolved = load(task.operation_id)
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

        return step(task, "hyperpod", work)

    @router.task("check-hyperpod-cluster", OperationInput)
    def check_hyperpod_cluster(task: OperationInput) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            _operation, resolved = load(task.operation_id)
            cluster = hyperpod.read_cluster(
                services.client("sagemaker"), resolved.hyperpod_cluster_name
            )
            return {"ready": cluster.status == hyperpod.IN_SERVICE, "status": cluster.status}

        return step(task, "hyperpod", work)

    @router.task("record-hyperpod-cluster", OperationInput)
    def record_hyperpod_cluster(task: OperationInput) -> dict[str, Any]:
        def work() -> HyperPodCluster:
            _operation, resolved = load(task.operation_id)
            return hyperpod.read_cluster(
                services.client("sagemaker"), resolved.hyperpod_cluster_name
            )

        step(task, "hyperpod", work, complete=True, summarize=hyperpod.cluster_summary)
        return {}

    # ---------------------------------------------------------------- storage
    @polling("mount-storage", "check-storage")
    def storage_poll(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation, resolved = load(task.operation_id)
            if resolved.storage.s3 is not None:
                storage.check_bucket(services.client("s3"), resolved.storage.s3.bucket)
                manifests = storage.s3_manifests(
                    resolved.tag, resolved.storage, services.settings.region
                )
                kind = "s3"
            else:
                network = output_of(operation, "network", NetworkOutput)
                system = storage.ensure_file_system(
                    services.client("fsx"),
                    resolved,
                    subnet_id=network.compute_subnets[resolved.instance_groups[0].name],
                    security_group_id=network.security_group_id,
                    client_token=f"{operation.id}-storage",
                )
                if not storage.file_system_ready(system):
                    return poll_result(
                        False, storage.next_check_seconds(elapsed(operation, "storage"))
                    )
                manifests = storage.fsx_manifests(resolved.tag, system)
                kind = "fsx"
            apply_manifests(services.kubernetes(resolved.eks_cluster_name), manifests)
            return {
                **poll_result(True),
                "kind": kind,
                "volume": storage.volume_name(resolved.tag),
                "claim": f"{storage.CLAIM_NAMESPACE}/{storage.CLAIM_NAME}",
            }

        return step(task, "storage", work, start=start, complete=ready, summarize=summary)

    # ---------------------------------------------------------------- verify
    @polling("verify-cluster", "check-verification")
    def verify_poll(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation, resolved = load(task.operation_id)
            api = services.kubernetes(resolved.eks_cluster_name)
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
            waited = elapsed(operation, "verify")
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
            return poll_result(False, check_interval(waited))

        answer = step(task, "verify", work, start=start, complete=ready, summarize=summary)
        return poll_result(True) if answer["ready"] else answer

    # ---------------------------------------------------------------- end
    @router.task("finish-create", OperationInput)
    def finish_create(task: OperationInput) -> dict[str, Any]:
        def output(operation: Operation) -> dict[str, Any]:
            resolved = ResolvedCreate.model_validate(operation.input)
            record = _record_cluster(services, operation, resolved, status=ClusterStatus.ACTIVE)
            return create_summary(operation, record)

        operation = steps.succeed(task, output)
        return {"operationId": operation.id, "status": operation.status.value}

    @router.task("fail-create", FailInput)
    def fail_create(task: FailInput) -> dict[str, Any]:
        operation, _error = steps.fail(task)
        if operation is None:
            # A superseded execution ends here; the operation belongs to its successor.
            return {"operationId": task.operation_id, "stale": True}
        services.clusters.set_status(
            operation.cluster_tag or "", ClusterStatus.FAILED, operation.id
        )
        return {"operationId": operation.id, "status": operation.status.value}

    return router


def _storage_kind(resolved: ResolvedCreate) -> str:
    return "s3" if resolved.storage.s3 is not None else "fsx"


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
