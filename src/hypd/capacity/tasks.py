"""The tasks of the capacity state machines (instance_group, node_action, enable_autoscaling,
disable_autoscaling .asl.json).

Each task is thin: it reads the operation (its input says what to do) and the live cluster,
lets the pure modules decide (`changes`, `verify`, `autoscaling`), makes the AWS or Kubernetes
calls they ask for, and records the stage through `Steps.step`. Nothing but `operationId` flows
between states, so a retry resumes from the record alone.

Every task is a module-level function of (input, `CapacityServices`) on one router
(`hypd.capacity.task_router`): the instance-group and node-action tasks here, managed
Karpenter's own stages in `hypd.capacity.autoscaling_tasks`. The function binds it to its
services: `router.bind(services)`.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from hypd import clock
from hypd.aws import ec2 as ec2_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.capacity import autoscaling_tasks as _autoscaling_tasks  # noqa: F401 (registers them)
from hypd.capacity import changes
from hypd.capacity import verify as checks
from hypd.capacity.autoscaling_tasks import RoleOutput, record_autoscaling
from hypd.capacity.inputs import (
    AddGroupInput,
    AutoscalingInput,
    DeleteGroupInput,
    NodeActionInput,
    UpdateGroupInput,
    input_of,
)
from hypd.capacity.live import LiveCluster
from hypd.capacity.services import CapacityServices
from hypd.capacity.task_router import load, polled, router
from hypd.errors import OperationStateError
from hypd.instance_groups import placement
from hypd.instance_groups.spec import group_spec
from hypd.network import ensure_compute_subnet
from hypd.operations import lifecycle
from hypd.operations.models import Operation
from hypd.operations.steps import (
    AwaitInput,
    FailInput,
    OperationInput,
    Steps,
    poll_result,
    ready,
    summary,
)
from hypd.operations.waiters import park_and_look

__all__ = ["CapacityServices", "router"]

WAIT_FAILURE_STATES = ("Failed", "RollingBack")
"""Cluster statuses in which a change cannot complete: the parked token fails."""


def group_of(request: Any) -> str:
    """The instance group an operation's input is about."""
    if isinstance(request, AddGroupInput):
        return request.group.name
    if isinstance(request, UpdateGroupInput | DeleteGroupInput | NodeActionInput):
        return request.group
    raise OperationStateError(f"a {type(request).__name__} names no instance group")


def calls_of(operation: Operation, stage: str) -> dict[str, Any]:
    return dict(operation.stage(stage).progress or {})


# -------------------------------------------------------------------- network (add)
@router.task("ensure-group-subnet", OperationInput)
def ensure_group_subnet(task: OperationInput, services: CapacityServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, request = load(services, task.operation_id)
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

    services.steps.step(task, "network", work, start=True, complete=True, summarize=lambda r: r)
    return {}


# -------------------------------------------------------------------- hyperpod (every kind)
def decide(
    services: CapacityServices, operation: Operation, request: Any, live: LiveCluster
) -> changes.Decision:
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
        role = Steps.output_of(operation, "role", RoleOutput)
        return changes.enable_autoscaling(
            live, role.role_arn, calls, enable_sent=bool(progress.get("enableSent"))
        )
    return changes.disable_autoscaling(live, calls)


def hyperpod_change(
    task: OperationInput, services: CapacityServices, *, start: bool
) -> dict[str, Any]:
    def work() -> tuple[changes.Decision, dict[str, Any]]:
        operation, request = load(services, task.operation_id)
        live = services.live(request.tag)
        decision = decide(services, operation, request, live)
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
        progress.update(clusterStatus=live.status, note=decision.note, at=clock.now_iso())
        return decision, progress

    decision, _progress = services.steps.step(
        task,
        "hyperpod",
        work,
        start=start,
        complete=lambda r: r[0].done,
        summarize=lambda r: r[0].output,
        progress=lambda r: r[1],
    )
    return decision.answer()


@router.task("hyperpod-change", OperationInput)
def start_hyperpod_change(task: OperationInput, services: CapacityServices) -> dict[str, Any]:
    return hyperpod_change(task, services, start=True)


@router.task("check-hyperpod-change", OperationInput)
def check_hyperpod_change(task: OperationInput, services: CapacityServices) -> dict[str, Any]:
    return hyperpod_change(task, services, start=False)


@router.task("await-hyperpod-cluster", AwaitInput)
def await_hyperpod_cluster(task: AwaitInput, services: CapacityServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, request = load(services, task.operation_id)
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

    return services.steps.step(task, "hyperpod", work)


# -------------------------------------------------------------------- verify
def check(services: CapacityServices, request: Any, live: LiveCluster) -> checks.Check:
    sagemaker = services.client("sagemaker")
    kube_nodes = services.kube_nodes(request.tag)
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


def expected_seconds(request: Any, live: LiveCluster) -> int:
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


def latest_error(
    services: CapacityServices, request: Any, live: LiveCluster, since: str | None
) -> str | None:
    events = sagemaker_api.list_cluster_events(
        services.client("sagemaker"),
        live.name,
        instance_group=group_of(request),
        after=lifecycle.parse_time(since) if since else None,
    )
    errors = [e for e in events if e.get("EventLevel") == "Error"]
    return str(errors[0].get("Description")) if errors else None


@polled("verify-capacity", "check-capacity")
def verify_poll(
    task: OperationInput, services: CapacityServices, *, start: bool
) -> dict[str, Any]:
    steps = services.steps

    def work() -> dict[str, Any]:
        operation, request = load(services, task.operation_id)
        live = services.live(request.tag)
        result = check(services, request, live)
        if result.ready:
            return {**poll_result(True), **result.output}
        waited = steps.elapsed(operation, "verify")
        if start and waited < 1:
            # The change began when the hyperpod stage sent it: look when it should be done.
            since = steps.elapsed(operation, "hyperpod")
            first = math.ceil(expected_seconds(request, live) - since)
            return poll_result(False, max(checks.CHECK_SECONDS, first))
        if waited >= timeout_seconds(request, live):
            stage = operation.stage("verify")
            raise checks.VerificationTimedOut(
                checks.timed_out_message(
                    result.problems,
                    waited,
                    latest_error(services, request, live, stage.attempt_started_at),
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


# -------------------------------------------------------------------- end
@router.task("finish-capacity", OperationInput)
def finish_capacity(task: OperationInput, services: CapacityServices) -> dict[str, Any]:
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

    operation = services.steps.succeed(task, output)
    return {"operationId": operation.id, "status": operation.status.value}


@router.task("fail-capacity", FailInput)
def fail_capacity(task: FailInput, services: CapacityServices) -> dict[str, Any]:
    operation, _error = services.steps.fail(task)
    if operation is None:
        return {"operationId": task.operation_id, "stale": True}
    return {"operationId": operation.id, "status": operation.status.value}


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
