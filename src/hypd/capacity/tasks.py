"""The tasks of the capacity state machines (instance_group, node_action, enable_autoscaling,
disable_autoscaling .asl.json).

Each task is thin: it reads the operation (its input says what to do) and the live cluster,
lets its kind's strategy decide (`STRATEGIES[operation.kind]`, over the pure rules of
`changes` and `verify`), makes the AWS or Kubernetes calls they ask for, and records the stage
through `Steps.step`. Nothing but `operationId` flows between states, so a retry resumes from
the record alone.

Every task is a module-level function of (input, `CapacityServices`) on one router
(`hypd.capacity.task_router`): the instance-group and node-action tasks here, managed
Karpenter's own stages in `hypd.capacity.autoscaling_tasks`. The function binds it to its
services: `router.bind(services)`.
"""

from __future__ import annotations

import math
from typing import Any

from hypd import clock
from hypd.aws import ec2 as ec2_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.capacity import autoscaling_tasks as _autoscaling_tasks  # noqa: F401 (registers them)
from hypd.capacity import changes
from hypd.capacity import verify as checks
from hypd.capacity.inputs import AddGroupInput
from hypd.capacity.live import LiveCluster
from hypd.capacity.services import CapacityServices
from hypd.capacity.strategies import Context, Verified, strategy_of, verified_of
from hypd.capacity.task_router import load, load_as, polled, router
from hypd.instance_groups import placement
from hypd.network import ensure_compute_subnet
from hypd.operations import lifecycle
from hypd.operations.models import Operation
from hypd.operations.stages import waiting_of
from hypd.operations.steps import (
    AwaitInput,
    FailInput,
    OperationInput,
    poll_result,
    ready,
    summary,
)
from hypd.operations.waiters import park_and_look

# What the capacity tasks function binds: every task here and in autoscaling_tasks.
__all__ = ["router"]

WAIT_FAILURE_STATES = ("Failed", "RollingBack")
"""Cluster statuses in which a change cannot complete: the parked token fails."""


# -------------------------------------------------------------------- network (add)
@router.task("ensure-group-subnet", OperationInput)
def ensure_group_subnet(task: OperationInput, services: CapacityServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, request = load_as(services, task.operation_id, AddGroupInput)
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
def hyperpod_change(
    task: OperationInput, services: CapacityServices, *, start: bool
) -> dict[str, Any]:
    def work() -> tuple[changes.Decision, dict[str, Any]]:
        operation, strategy, request = load(services, task.operation_id)
        context = Context(operation, services.live(request.tag), services)
        live = context.live
        decision = strategy.ask(request, context)
        progress = context.progress
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
        wait=lambda r: waiting_of(r[0].answer()),
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
        _operation, _strategy, request = load(services, task.operation_id)
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
def timeout_seconds(strategy: Verified[Any], request: Any, live: LiveCluster) -> float:
    deep = strategy.deep_health_checks(request, live)
    return checks.verification_timeout(checks.TIMEOUT, deep_health_checks=deep).total_seconds()


def latest_error(context: Context, group: str, since: str | None) -> str | None:
    events = sagemaker_api.list_cluster_events(
        context.services.client("sagemaker"),
        context.live.name,
        instance_group=group,
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
        operation, _strategy, request = load(services, task.operation_id)
        strategy = verified_of(operation.kind)
        context = Context(operation, services.live(request.tag), services)
        live = context.live
        result = strategy.verify(request, context, services.kube_nodes(request.tag))
        if result.ready:
            return {**poll_result(True), **result.output}
        waited = steps.elapsed(operation, "verify")
        if start and waited < 1:
            # The change began when the hyperpod stage sent it: look when it should be done.
            since = steps.elapsed(operation, "hyperpod")
            first = math.ceil(strategy.first_look(request, live) - since)
            return poll_result(
                False, max(checks.CHECK_SECONDS, first), waiting="; ".join(result.problems)
            )
        if waited >= timeout_seconds(strategy, request, live):
            stage = operation.stage("verify")
            raise checks.VerificationTimedOut(
                checks.timed_out_message(
                    result.problems,
                    waited,
                    latest_error(context, strategy.group(request), stage.attempt_started_at),
                ),
                details={"problems": result.problems},
            )
        return {
            **poll_result(
                False, checks.check_interval(waited), waiting="; ".join(result.problems)
            ),
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
        strategy = strategy_of(operation.kind)
        request = strategy.read(operation)
        context = Context(operation, services.live(request.tag), services)
        refresh_record(services, operation, context.live)
        return {
            "tag": request.tag,
            "warnings": request.warnings,
            **strategy.result(request, context),
        }

    return services.steps.finish(task, output)


@router.task("fail-capacity", FailInput)
def fail_capacity(task: FailInput, services: CapacityServices) -> dict[str, Any]:
    return services.steps.fail_answer(task)


def refresh_record(services: CapacityServices, operation: Operation, live: LiveCluster) -> None:
    """The cluster record's HyperPod summary, as it is after the change."""
    record = services.clusters.find(live.tag)
    if record is None:
        return
    hyperpod = sagemaker_api.to_model(dict(live.described), record.hyperpod.tags
                                      if record.hyperpod else {})
    # only these fields: a change the API made meanwhile (protection) stays
    services.clusters.update(live.tag, hyperpod=hyperpod, last_seen_at=clock.now_iso(),
                             last_operation_id=operation.id)
