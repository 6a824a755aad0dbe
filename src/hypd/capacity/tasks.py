"""The tasks of the capacity state machines (instance_group, node_action, enable_autoscaling,
disable_autoscaling .asl.json).

Each task is thin: it reads the operation (its input says what to do) and the live cluster,
lets the pure modules decide (`changes`, `verify`, `autoscaling`), makes the AWS or Kubernetes
calls they ask for, and records the stage through `Steps.step`. Nothing but `operationId` flows
between states, so a retry resumes from the record alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd import clock
from hypd.aws import ec2 as ec2_api
from hypd.aws import iam as iam_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.capacity import autoscaling, changes
from hypd.capacity import verify as checks
from hypd.capacity.inputs import (
    AddGroupInput,
    AutoscalingInput,
    DeleteGroupInput,
    NodeActionInput,
    UpdateGroupInput,
    input_of,
)
from hypd.capacity.live import LiveCluster, read_live_cluster
from hypd.capacity.state import AutoscalingState, AutoscalingStore
from hypd.clusters.create_request import eks_cluster_name
from hypd.clusters.store import ClusterStore
from hypd.config import CapacityTaskSettings
from hypd.errors import OperationStateError, PermanentError
from hypd.instance_groups import placement
from hypd.instance_groups.spec import group_spec
from hypd.kubernetes import TokenCache
from hypd.kubernetes.apply import apply_manifests, delete_object, read_object
from hypd.kubernetes.client import ClusterAccess
from hypd.network import ensure_compute_subnet
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation
from hypd.operations.steps import (
    AwaitInput,
    FailInput,
    OperationInput,
    Poll,
    Steps,
    poll_result,
    ready,
    summary,
)
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore, park_and_look
from hypd.tasks import TaskRouter

KARPENTER_CHECK_SECONDS = 15
KARPENTER_TIMEOUT_SECONDS = 10 * 60
WAIT_FAILURE_STATES = ("Failed", "RollingBack")
"""Cluster statuses in which a change cannot complete: the parked token fails."""


class AutoscalingPrerequisite(PermanentError):
    """A documented prerequisite of managed Karpenter is not met."""

    code = "AutoscalingPrerequisite"


class NodeClassNotReady(PermanentError):
    """The HyperpodNodeClass or NodePool did not become Ready."""

    code = "NodeClassNotReady"


class KarpenterObjectConflict(PermanentError):
    """A NodeClass or NodePool of hypd's name exists that hypd did not make."""

    code = "KarpenterObjectConflict"


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

    def __post_init__(self) -> None:
        self._access = ClusterAccess(
            lambda: self.client("eks"), lambda: self.settings.region, self.tokens
        )

    def kubernetes(self, tag: str) -> Any:
        return self._access.api(eks_cluster_name(tag))

    def live(self, tag: str) -> LiveCluster:
        return read_live_cluster(self.client("sagemaker"), self.client("ec2"), tag)


def _kube_nodes(api: Any) -> list[dict[str, Any]]:
    from kubernetes.client import CoreV1Api

    return [api.sanitize_for_serialization(n) for n in CoreV1Api(api).list_node().items]


def group_of(request: Any) -> str:
    """The instance group an operation's input is about."""
    if isinstance(request, AddGroupInput):
        return request.group.name
    if isinstance(request, UpdateGroupInput | DeleteGroupInput | NodeActionInput):
        return request.group
    raise OperationStateError(f"a {type(request).__name__} names no instance group")


def settings_of(request: Any) -> autoscaling.AutoscalingSettings:
    """The autoscaling settings an enable operation recorded."""
    if not isinstance(request, AutoscalingInput) or request.settings is None:
        raise OperationStateError("the operation recorded no autoscaling settings")
    return request.settings


def build_router(services: CapacityServices) -> TaskRouter:
    router = TaskRouter()
    operations = services.operations
    steps = Steps(operations, services.locks)

    def polling(first: str, then: str) -> Callable[[Poll], Poll]:
        return steps.polled(router, first, then)

    def load(operation_id: str) -> tuple[Operation, Any]:
        operation = operations.get(operation_id)
        return operation, input_of(operation)

    def calls_of(operation: Operation, stage: str) -> dict[str, Any]:
        return dict(operation.stage(stage).progress or {})

    # ---------------------------------------------------------------- network (add)
    @router.task("ensure-group-subnet", OperationInput)
    def ensure_group_subnet(task: OperationInput) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            _operation, request = load(task.operation_id)
            assert isinstance(request, AddGroupInput)
            live = services.live(request.tag)
            ec2 = services.client("ec2")
            group = request.group
            facts = ec2_api.describe_instance_types(ec2, [group.instance_type.removeprefix("ml.")])
            subnet = ensure_compute_subnet(
                ec2,
                placement.subnet_request(
                    group,
                    facts.get(group.instance_type.removeprefix("ml.")),
                    vpc_id=live.vpc_id,
                    availability_zone=request.availability_zone,
                    cluster_tag=request.tag,
                    field="instanceGroup",
                ),
            )
            return {
                "subnetId": subnet.subnet_id,
                "availabilityZone": subnet.availability_zone,
                "cidrBlock": subnet.cidr_block,
                "source": subnet.source.value,
                "dedicated": subnet.dedicated_to == group.name,
                "override": subnet.subnet_id != live.subnet_id,
            }

        steps.step(task, "network", work, start=True, complete=True, summarize=lambda r: r)
        return {}

    # ---------------------------------------------------------------- hyperpod (every kind)
    def decide(operation: Operation, request: Any, live: LiveCluster) -> changes.Decision:
        progress = calls_of(operation, "hyperpod")
        calls = int(progress.get("calls") or 0)
        if isinstance(request, AddGroupInput):
            network = operation.stage("network").output or {}
            subnet = str(network.get("subnetId") or live.subnet_id)
            spec = group_spec(
                request.group,
                execution_role_arn=services.settings.hyperpod_execution_role_arn,
                override_subnet=subnet if subnet != live.subnet_id else None,
                security_group_id=live.security_group_ids[0],
            )
            return changes.add_group(live, request, spec, calls)
        if isinstance(request, UpdateGroupInput):
            return changes.update_group(live, request, calls)
        if isinstance(request, DeleteGroupInput):
            return changes.delete_group(live, request, calls)
        if isinstance(request, NodeActionInput):
            node = sagemaker_api.describe_cluster_node(
                services.client("sagemaker"), live.name, request.node_id
            )
            return changes.node_action(node, request, calls)
        assert isinstance(request, AutoscalingInput)
        if request.enabled:
            role = steps.output_of(operation, "role", _RoleOutput)
            return changes.enable_autoscaling(
                live, role.role_arn, calls, enable_sent=bool(progress.get("enableSent"))
            )
        return changes.disable_autoscaling(live, calls)

    def hyperpod_change(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> tuple[changes.Decision, dict[str, Any]]:
            operation, request = load(task.operation_id)
            live = services.live(request.tag)
            decision = decide(operation, request, live)
            progress = calls_of(operation, "hyperpod")
            if decision.request is not None:
                if decision.call == "node":
                    sagemaker_api.batch_node_action(
                        services.client("sagemaker"),
                        decision.request["action"],
                        live.name,
                        decision.request["nodeId"],
                    )
                else:
                    sagemaker_api.update_cluster(services.client("sagemaker"), decision.request)
                progress["calls"] = int(progress.get("calls") or 0) + 1
                if (decision.request.get("AutoScaling") or {}).get("Mode") == "Enable":
                    progress["enableSent"] = True
                if decision.call == "node":  # accepted: the node's recovery is verify's
                    decision = changes.Decision(
                        done=True, output={"nodeId": decision.request["nodeId"], "requested": True}
                    )
            progress.update(clusterStatus=live.status, note=decision.note,
                            at=clock.now_iso())
            return decision, progress

        decision, _progress = steps.step(
            task,
            "hyperpod",
            work,
            start=start,
            complete=lambda r: r[0].done,
            summarize=lambda r: r[0].output,
            progress=lambda r: r[1],
        )
        return decision.answer()

    router.task("hyperpod-change", OperationInput)(
        lambda task: hyperpod_change(task, start=True)
    )
    router.task("check-hyperpod-change", OperationInput)(
        lambda task: hyperpod_change(task, start=False)
    )

    @router.task("await-hyperpod-cluster", AwaitInput)
    def await_hyperpod_cluster(task: AwaitInput) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            _operation, request = load(task.operation_id)
            name = request.cluster_name

            def look() -> tuple[str, str]:
                found = sagemaker_api.find_cluster(services.client("sagemaker"), name)
                if found is None:
                    return "Missing", ""
                return str(found.get("ClusterStatus")), str(found.get("FailureMessage") or "")

            return park_and_look(
                services.waiters,
                lambda: services.client("stepfunctions"),
                name,
                task.operation_id,
                task.task_token,
                look,
                failure_states=WAIT_FAILURE_STATES,
                failure_error=changes.HyperPodUpdateFailed.code,
            )

        return steps.step(task, "hyperpod", work)

    # ---------------------------------------------------------------- verify
    def check(operation: Operation, request: Any, live: LiveCluster) -> checks.Check:
        sagemaker = services.client("sagemaker")
        kube_nodes = _kube_nodes(services.kubernetes(request.tag))
        if isinstance(request, AddGroupInput):
            nodes = sagemaker_api.list_cluster_nodes(
                sagemaker, live.name, instance_group=request.group.name
            )
            return checks.group_check(live, request.group.name, request.group.count, nodes,
                                      kube_nodes)
        if isinstance(request, UpdateGroupInput):
            details = live.group(request.group) or {}
            count = int(request.changes.get("InstanceCount", details.get("TargetCount") or 0))
            nodes = sagemaker_api.list_cluster_nodes(
                sagemaker, live.name, instance_group=request.group
            )
            return checks.group_check(live, request.group, count, nodes, kube_nodes)
        if isinstance(request, DeleteGroupInput):
            return checks.group_gone_check(live, request.group, kube_nodes)
        assert isinstance(request, NodeActionInput)
        nodes = sagemaker_api.list_cluster_nodes(sagemaker, live.name, instance_group=request.group)
        return checks.node_check(
            request.action, request.node_id, request.group, live, nodes, kube_nodes
        )

    def expected_seconds(operation: Operation, request: Any, live: LiveCluster) -> int:
        """When to look first: the change's expected duration."""
        if isinstance(request, AddGroupInput):
            deep = bool(request.group.deep_health_checks)
            boot = checks.NODE_BOOT + (checks.DEEP_HEALTH_CHECKS if deep else timedelta(0))
            return checks.first_look(boot) if request.group.count else checks.CHECK_SECONDS
        if isinstance(request, UpdateGroupInput):
            details = live.group(request.group) or {}
            count = request.changes.get("InstanceCount")
            if count is None:
                return checks.CHECK_SECONDS
            deep = bool(details.get("OnStartDeepHealthChecks"))
            boot = checks.NODE_BOOT + (checks.DEEP_HEALTH_CHECKS if deep else timedelta(0))
            grow = int(count) > request.previous_count
            return checks.first_look(boot if grow else checks.NODE_TERMINATE)
        if isinstance(request, DeleteGroupInput):
            return checks.first_look(checks.GROUP_DELETE)
        assert isinstance(request, NodeActionInput)
        return checks.first_look(
            {
                "reboot": checks.NODE_REBOOT,
                "replace": checks.NODE_BOOT,
                "delete": checks.NODE_TERMINATE,
            }[request.action]
        )

    def timeout_seconds(request: Any, live: LiveCluster) -> float:
        details = live.group(group_of(request)) or {}
        deep = bool(details.get("OnStartDeepHealthChecks")) or (
            isinstance(request, AddGroupInput) and bool(request.group.deep_health_checks)
        )
        return checks.verification_timeout(checks.TIMEOUT, deep_health_checks=deep).total_seconds()

    def latest_error(request: Any, live: LiveCluster, since: str | None) -> str | None:
        events = sagemaker_api.list_cluster_events(
            services.client("sagemaker"),
            live.name,
            instance_group=group_of(request),
            after=lifecycle.parse_time(since) if since else None,
        )
        errors = [e for e in events if e.get("EventLevel") == "Error"]
        return str(errors[0].get("Description")) if errors else None

    @polling("verify-capacity", "check-capacity")
    def verify_poll(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation, request = load(task.operation_id)
            live = services.live(request.tag)
            result = check(operation, request, live)
            if result.ready:
                return {**poll_result(True), **result.output}
            waited = steps.elapsed(operation, "verify")
            if start and waited < 1:
                # The change began when the hyperpod stage sent it: look when it should be done.
                since = steps.elapsed(operation, "hyperpod")
                first = math.ceil(expected_seconds(operation, request, live) - since)
                return poll_result(False, max(checks.CHECK_SECONDS, first))
            if waited >= timeout_seconds(request, live):
                stage = operation.stage("verify")
                raise checks.VerificationTimedOut(
                    checks.timed_out_message(
                        result.problems,
                        waited,
                        latest_error(request, live, stage.attempt_started_at),
                    ),
                    details={"problems": result.problems},
                )
            return {
                **poll_result(False, checks.check_interval(waited)),
                "problems": result.problems,
            }

        return steps.step(
            task,
            "verify",
            work,
            start=start,
            complete=ready,
            summarize=summary,
            progress=lambda r: {"problems": r.get("problems", [])} if not r["ready"] else None,
        )

    # ---------------------------------------------------------------- autoscaling
    @router.task("check-prerequisites", OperationInput)
    def check_prerequisites(task: OperationInput) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            _operation, request = load(task.operation_id)
            settings = settings_of(request)
            live = services.live(request.tag)
            problems = autoscaling.cluster_problems(live) + [
                f"{p.field}: {p.message}"
                for p in autoscaling.group_problems(live, settings.instance_groups)
            ]
            agent = read_object(
                services.kubernetes(request.tag),
                "apps/v1",
                "DaemonSet",
                autoscaling.HEALTH_AGENT_NAME,
                autoscaling.HEALTH_AGENT_NAMESPACE,
            )
            if agent is None:
                problems.append(
                    "the HyperPod health-monitoring agent is not installed (DaemonSet "
                    f"{autoscaling.HEALTH_AGENT_NAMESPACE}/{autoscaling.HEALTH_AGENT_NAME} of "
                    "the HyperPod dependency chart)"
                )
            if problems:
                raise AutoscalingPrerequisite(
                    f"cluster {request.tag} cannot use managed Karpenter: " + "; ".join(problems),
                    details={"problems": problems},
                )
            return {
                "instanceGroups": list(settings.instance_groups),
                "warnings": autoscaling.warnings(live, settings.instance_groups),
            }

        steps.step(task, "prerequisites", work, start=True, complete=True, summarize=lambda r: r)
        return {}

    @router.task("ensure-cluster-role", OperationInput)
    def ensure_cluster_role(task: OperationInput) -> dict[str, Any]:
        def work() -> _RoleOutput:
            _operation, request = load(task.operation_id)
            live = services.live(request.tag)
            return ensure_role(services, request.tag, live.arn)

        steps.step(task, "role", work, start=True, complete=True,
                   summarize=lambda r: r.model_dump(by_alias=True))
        return {}

    @router.task("delete-cluster-role", OperationInput)
    def delete_cluster_role(task: OperationInput) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            _operation, request = load(task.operation_id)
            name = autoscaling.role_name(request.tag)
            return {"roleName": name, "deleted": iam_api.delete_role(services.client("iam"), name)}

        steps.step(task, "role", work, start=True, complete=True, summarize=lambda r: r)
        return {}

    def karpenter_objects(api: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        return (
            read_object(api, autoscaling.NODE_CLASS_API, autoscaling.NODE_CLASS_KIND,
                        autoscaling.OBJECT_NAME),
            read_object(api, autoscaling.NODE_POOL_API, autoscaling.NODE_POOL_KIND,
                        autoscaling.OBJECT_NAME),
        )

    def ours(obj: Mapping[str, Any] | None) -> bool:
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        return all(labels.get(k) == v for k, v in autoscaling.MANAGED_BY.items())

    @polling("apply-karpenter", "check-karpenter")
    def apply_karpenter(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation, request = load(task.operation_id)
            settings = settings_of(request)
            live = services.live(request.tag)
            api = services.kubernetes(request.tag)
            manifests = [
                autoscaling.node_class(settings),
                autoscaling.node_pool(
                    settings, autoscaling.instance_types(live, settings.instance_groups)
                ),
            ]
            current = karpenter_objects(api)
            for obj, manifest in zip(current, manifests, strict=True):
                if obj is not None and not ours(obj):
                    raise KarpenterObjectConflict(
                        f"a {manifest['kind']} named {autoscaling.OBJECT_NAME} exists in "
                        f"cluster {request.tag} and was not made by hypd; remove or rename it",
                        details={"kind": manifest["kind"], "name": autoscaling.OBJECT_NAME},
                    )
            if not all(
                autoscaling.spec_matches(obj, manifest)
                for obj, manifest in zip(current, manifests, strict=True)
            ):
                apply_manifests(api, manifests)
                current = karpenter_objects(api)
            named = autoscaling.OBJECT_NAME
            problems = [
                problem
                for problem in (
                    autoscaling.ready_problem(current[0], f"HyperpodNodeClass {named}"),
                    autoscaling.ready_problem(current[1], f"NodePool {named}"),
                )
                if problem
            ]
            if not problems:
                return {
                    **poll_result(True),
                    "nodeClass": autoscaling.OBJECT_NAME,
                    "nodePool": autoscaling.OBJECT_NAME,
                    "instanceGroups": list(settings.instance_groups),
                }
            waited = steps.elapsed(operation, "kubernetes")
            if waited >= KARPENTER_TIMEOUT_SECONDS:
                raise NodeClassNotReady(
                    f"after {int(waited)} s: " + "; ".join(problems),
                    details={"problems": problems},
                )
            return {**poll_result(False, KARPENTER_CHECK_SECONDS), "problems": problems}

        return steps.step(
            task, "kubernetes", work, start=start, complete=ready, summarize=summary,
            progress=lambda r: {"problems": r.get("problems", [])} if not r["ready"] else None,
        )

    @polling("remove-karpenter", "check-karpenter-removal")
    def remove_karpenter(task: OperationInput, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            _operation, request = load(task.operation_id)
            api = services.kubernetes(request.tag)
            node_class, node_pool = karpenter_objects(api)
            removed: list[str] = []
            # The NodePool first: Karpenter stops launching before its NodeClass goes.
            for obj, api_version, kind in (
                (node_pool, autoscaling.NODE_POOL_API, autoscaling.NODE_POOL_KIND),
                (node_class, autoscaling.NODE_CLASS_API, autoscaling.NODE_CLASS_KIND),
            ):
                if obj is not None and ours(obj):
                    delete_object(api, api_version, kind, autoscaling.OBJECT_NAME)
                    removed.append(kind)
            left = [o for o in karpenter_objects(api) if o is not None and ours(o)]
            if left:
                return poll_result(False, KARPENTER_CHECK_SECONDS)
            return {**poll_result(True), "removed": removed}

        return steps.step(task, "kubernetes", work, start=start, complete=ready,
                          summarize=summary)

    # ---------------------------------------------------------------- end
    @router.task("finish-capacity", OperationInput)
    def finish_capacity(task: OperationInput) -> dict[str, Any]:
        def output(operation: Operation) -> dict[str, Any]:
            request = input_of(operation)
            live = services.live(request.tag)
            refresh_record(services, operation, live)
            result: dict[str, Any] = {"tag": request.tag, "warnings": request.warnings}
            if isinstance(request, AutoscalingInput):
                state = record_autoscaling(services, operation, request)
                result["autoscaling"] = state.model_dump(mode="json", by_alias=True)
            elif isinstance(request, NodeActionInput):
                result["node"] = operation.stage("verify").output
            else:
                view = live.view(group_of(request))
                result["instanceGroup"] = (
                    view.model_dump(mode="json", by_alias=True) if view else None
                )
                if isinstance(request, AddGroupInput):
                    result["subnet"] = operation.stage("network").output
            return result

        operation = steps.succeed(task, output)
        return {"operationId": operation.id, "status": operation.status.value}

    @router.task("fail-capacity", FailInput)
    def fail_capacity(task: FailInput) -> dict[str, Any]:
        operation, _error = steps.fail(task)
        if operation is None:
            return {"operationId": task.operation_id, "stale": True}
        return {"operationId": operation.id, "status": operation.status.value}

    return router


class _RoleOutput(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    role_name: str = Field(alias="roleName")
    role_arn: str = Field(alias="roleArn")
    changed: list[str] = Field(default_factory=list)


def ensure_role(services: CapacityServices, tag: str, cluster_arn: str) -> _RoleOutput:
    """The cluster role, exactly as documented: created, or brought back to its trust and
    policy. `changed` lists what had to be written (empty: it was as it should be)."""
    iam = services.client("iam")
    name = autoscaling.role_name(tag)
    trust = autoscaling.trust_policy()
    policy = autoscaling.role_policy(cluster_arn)
    changed: list[str] = []
    role = iam_api.get_role(iam, name)
    if role is None:
        role = iam_api.create_role(
            iam,
            name=name,
            path=autoscaling.ROLE_PATH,
            trust_policy=trust,
            permissions_boundary=services.settings.autoscaling_role_boundary_arn,
            description=f"HyperPod managed Karpenter of hypd cluster {tag}",
            tags=autoscaling.role_tags(tag),
        )
        changed.append("role")
    elif role.trust_policy != trust:
        iam_api.update_trust_policy(iam, name, trust)
        changed.append("trust")
    if iam_api.inline_policy(iam, name, autoscaling.ROLE_POLICY_NAME) != policy:
        iam_api.put_inline_policy(iam, name, autoscaling.ROLE_POLICY_NAME, policy)
        changed.append("policy")
    return _RoleOutput(role_name=name, role_arn=role.arn, changed=changed)


def refresh_record(services: CapacityServices, operation: Operation, live: LiveCluster) -> None:
    """The cluster record's HyperPod summary, as it is after the change."""
    record = services.clusters.find(live.tag)
    if record is None:
        return
    hyperpod = sagemaker_api.to_model(dict(live.described), record.hyperpod.tags
                                      if record.hyperpod else {})
    now = clock.now_iso()
    services.clusters.save(
        record.model_copy(
            update={"hyperpod": hyperpod, "updated_at": now, "last_seen_at": now,
                    "last_operation_id": operation.id}
        )
    )


def record_autoscaling(
    services: CapacityServices, operation: Operation, request: AutoscalingInput
) -> AutoscalingState:
    role = operation.stage("role").output or {}
    state = AutoscalingState(
        enabled=request.enabled,
        settings=request.settings if request.enabled else None,
        role_arn=role.get("roleArn") if request.enabled else None,
        node_class=autoscaling.OBJECT_NAME if request.enabled else None,
        node_pool=autoscaling.OBJECT_NAME if request.enabled else None,
        operation_id=operation.id,
        updated_at=clock.now_iso(),
    )
    services.autoscaling.put(request.tag, state)
    return state

