"""The upgrade-cluster machine's tasks (FeatureTasksFunction): each stage polled until the
version it moves to is read back (docs/upgrades.md).

Every look reads what is there first and acts only on what is missing, so a task run again
(Lambda's at-least-once, a retry of the stage) never starts a second update:

- control-plane: the cluster at the target version and ACTIVE is done; UPDATING waits; else
  UpdateClusterVersion to the next minor version with a client token of the operation, the
  version and the stage's attempt (EKS answers the same update for the same token, so a
  repeated call finds the update it started; a retry's new attempt starts a new one).
- addons: each add-on of the plan at its version and ACTIVE is done; UpdateAddon
  (``resolveConflicts`` PRESERVE: the user's own configuration is kept) for those that are not.
- chart: the bundled chart rendered for the cluster's version, applied, and recorded.
- nodes: HyperPod's UpdateClusterSoftware with the rolling deployment configuration, once;
  then one look per batch, recording per group how many nodes are on the new release. A
  rollback (an alarm in ALARM) or a failure ends the stage with what HyperPod says.
- verify: every version read back matches the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypd import clock
from hypd.aws import eks, sagemaker
from hypd.create import dependency_chart
from hypd.errors import PermanentError
from hypd.features.tasks import FeatureServices
from hypd.operations.models import Operation
from hypd.operations.steps import (
    FailInput,
    OperationInput,
    Steps,
    poll_result,
    polled,
    ready,
    summary,
)
from hypd.operations.waits import WaitPolicy
from hypd.tasks import TaskRouter
from hypd.upgrades.inputs import HYPERPOD_BATCH_TYPES, UpgradeInput
from hypd.upgrades.model import Plan
from hypd.upgrades.plan import (
    ADDON_UPDATE_SECONDS,
    CONTROL_PLANE_STEP_SECONDS,
    DEFAULT_BATCH,
    minor,
)

router = TaskRouter()

CONTROL_PLANE_WAIT = WaitPolicy(
    expected_seconds=CONTROL_PLANE_STEP_SECONDS, first_look_seconds=CONTROL_PLANE_STEP_SECONDS,
    interval_seconds=30, late_after_seconds=2 * CONTROL_PLANE_STEP_SECONDS,
    late_interval_seconds=60, give_up_after_seconds=6 * CONTROL_PLANE_STEP_SECONDS)
"""One control-plane step, from its EKS update's createdAt: given up after an hour (EKS's own
updates take minutes; one still InProgress after an hour is for AWS support)."""
ADDON_WAIT = WaitPolicy(
    expected_seconds=ADDON_UPDATE_SECONDS, first_look_seconds=ADDON_UPDATE_SECONDS,
    interval_seconds=30, late_after_seconds=5 * 60, late_interval_seconds=60,
    give_up_after_seconds=20 * 60)
"""The add-on updates of the stage, from the attempt's start."""
NODES_LOOK_SECONDS = 60


def nodes_wait(plan: Plan) -> WaitPolicy:
    """The nodes stage, from the attempt's start: the plan's estimate of its batches, looked at
    every minute after the first batch, given up at twice the estimate plus an hour."""
    expected = max(NODES_LOOK_SECONDS, sum(s.estimate_seconds for s in plan.of("nodes")))
    first = max(NODES_LOOK_SECONDS, plan.of("nodes")[0].estimate_seconds
                if plan.of("nodes") else NODES_LOOK_SECONDS)
    return WaitPolicy(expected_seconds=expected, first_look_seconds=min(first, expected),
                      interval_seconds=NODES_LOOK_SECONDS, late_after_seconds=expected,
                      late_interval_seconds=5 * 60, give_up_after_seconds=2 * expected + 3600)


class ControlPlaneUpgradeFailed(PermanentError):
    """EKS's version update ended Failed or Cancelled (its errors are in the message)."""

    code = "ControlPlaneUpgradeFailed"


class AddonUpgradeFailed(PermanentError):
    code = "AddonUpgradeFailed"


class NodesRolledBack(PermanentError):
    """HyperPod rolled the nodes back (an alarm of AutoRollbackConfiguration went to ALARM)."""

    code = "NodesRolledBack"


class NodeUpdateFailed(PermanentError):
    code = "NodeUpdateFailed"


class UpgradeStageTimedOut(PermanentError):
    """A stage's update is still not done long after it should be (its `WaitPolicy`)."""

    code = "UpgradeStageTimedOut"


def _check_overdue(policy: WaitPolicy, elapsed: float, what: str) -> None:
    if policy.overdue(elapsed):
        raise UpgradeStageTimedOut(
            f"{what} is still not done after {int(elapsed) // 60} minutes (expected about "
            f"{policy.expected_seconds // 60}); look at it in the AWS console, then retry the "
            "operation to wait again")


class UpgradeNotReadBack(PermanentError):
    """After every stage, a version read back is not the one the plan moved to."""

    code = "UpgradeNotReadBack"


def _load(services: FeatureServices, operation_id: str) -> tuple[Operation, UpgradeInput, Plan]:
    operation = services.operations.get(operation_id)
    work = UpgradeInput.model_validate(operation.input)
    return operation, work, Plan.from_json(work.plan)


# ---------------------------------------------------------------------------- control plane
def advance_control_plane(services: FeatureServices, operation: Operation, work: UpgradeInput,
                          plan: Plan) -> dict[str, Any]:
    steps = plan.of("control-plane")
    if not steps:
        return poll_result(True) | {"skipped": True}
    target = str(steps[-1].target["kubernetesVersion"])
    client = services.client("eks")
    cluster = eks.read_cluster(client, work.eks_name)
    version, status = str(cluster.get("version")), str(cluster.get("status"))
    if minor(version) >= minor(target) and status == "ACTIVE":
        return poll_result(True) | {"kubernetesVersion": version}
    if status != "ACTIVE":
        # The stage's time over its steps: each may take the policy's time.
        elapsed = Steps.elapsed(operation, "control-plane") / len(steps)
        _check_overdue(CONTROL_PLANE_WAIT, elapsed, f"EKS cluster {work.eks_name} ({status})")
        return poll_result(False, CONTROL_PLANE_WAIT.interval_seconds,
                           waiting=f"EKS cluster {status}") | {"kubernetesVersion": version}
    following = f"1.{minor(version) + 1}"
    attempt = operation.stage("control-plane").attempts
    update = eks.update_cluster_version(
        client, work.eks_name, following, force=work.request.force,
        token=f"{operation.id}-{following}-{attempt}")
    state = update.get("status")
    if state in ("Failed", "Cancelled"):
        errors = "; ".join(f"{e.get('errorCode')}: {e.get('errorMessage')}"
                           for e in update.get("errors") or []) or state
        raise ControlPlaneUpgradeFailed(
            f"EKS's update {update.get('id')} of {work.eks_name} to {following} ended "
            f"{state}: {errors}", details={"updateId": update.get("id"), "to": following})
    created = update.get("createdAt")
    since = (clock.now() - created).total_seconds() if created else 0.0
    _check_overdue(CONTROL_PLANE_WAIT, since, f"EKS's update of {work.eks_name} to {following}")
    return poll_result(False, CONTROL_PLANE_WAIT.next_check(since),
                       waiting=f"EKS control plane {version} -> {following}") | {
        "kubernetesVersion": version, "updateId": update.get("id"), "to": following}


@polled(router, "upgrade-control-plane", "upgrade-control-plane-check")
def control_plane(task: OperationInput, services: FeatureServices, *, start: bool
                  ) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return advance_control_plane(services, *_load(services, task.operation_id))

    return services.steps.step(
        task, "control-plane", work, start=start, complete=ready, summarize=summary,
        progress=lambda r: {k: r[k] for k in ("kubernetesVersion", "updateId", "to") if k in r})


# ---------------------------------------------------------------------------- add-ons
def advance_addons(services: FeatureServices, operation: Operation, work: UpgradeInput,
                   plan: Plan, *, start: bool) -> dict[str, Any]:
    client = services.client("eks")
    waiting, done = [], {}
    for step in plan.of("addons"):
        name, version = str(step.target["addon"]), str(step.target["version"])
        found = eks.find_addon(client, work.eks_name, name)
        if found is None:
            raise AddonUpgradeFailed(f"add-on {name} is no longer installed on "
                                     f"{work.eks_name}", details={"addon": name})
        status, now_at = str(found.get("status")), str(found.get("addonVersion"))
        if now_at == version and status == "ACTIVE":
            done[name] = version
            continue
        if status in ("CREATING", "UPDATING", "DELETING"):
            waiting.append(f"{name} {status}")
            continue
        # After this attempt's UpdateAddon, a failed update, or one that left the add-on
        # DEGRADED at its new version, is what EKS says of it; a new attempt updates again.
        if not start and (status == "UPDATE_FAILED"
                          or (status == "DEGRADED" and now_at == version)):
            issues = "; ".join(f"{i.get('code')}: {i.get('message')}" for i in
                               (found.get("health") or {}).get("issues") or []) or status
            raise AddonUpgradeFailed(f"add-on {name} did not update to {version} ({status}): "
                                     f"{issues}", details={"addon": name, "version": version})
        eks.update_addon(client, {
            "clusterName": work.eks_name, "addonName": name, "addonVersion": version,
            "resolveConflicts": "PRESERVE",
            "clientRequestToken": f"{operation.id}-{name}-{operation.stage('addons').attempts}"})
        waiting.append(f"{name} -> {version}")
    if waiting:
        elapsed = Steps.elapsed(operation, "addons")
        _check_overdue(ADDON_WAIT, elapsed, f"the add-on updates ({', '.join(waiting)})")
        return poll_result(False, ADDON_WAIT.next_check(elapsed),
                           waiting=", ".join(waiting)) | {"addons": done}
    return poll_result(True) | {"addons": done}


@polled(router, "upgrade-addons", "upgrade-addons-check")
def addons(task: OperationInput, services: FeatureServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return advance_addons(services, *_load(services, task.operation_id), start=start)

    return services.steps.step(task, "addons", work, start=start, complete=ready,
                               summarize=summary, progress=lambda r: {"addons": r["addons"]})


# ---------------------------------------------------------------------------- chart
@router.task("upgrade-chart", OperationInput)
def upgrade_chart(task: OperationInput, services: FeatureServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, work, plan = _load(services, task.operation_id)
        if not plan.of("chart"):
            return {"skipped": True}
        setting = services.settings.dependency_chart
        if not setting:
            raise PermanentError("the dependency chart is not configured for this function")
        cluster = eks.read_cluster(services.client("eks"), work.eks_name)
        version = str(cluster.get("version"))
        applied = dependency_chart.apply(
            services.clients.kubernetes(work.eks_name), setting,
            region=services.settings.region, kubernetes_version=version,
            applied_at=clock.now_iso())
        return {"chart": plan.of("chart")[0].target["chart"], "kubernetesVersion": version,
                "objects": len(applied)}

    services.steps.step(task, "chart", work, start=True, complete=True, summarize=lambda r: r)
    return {}


# ---------------------------------------------------------------------------- nodes
def deployment_config(work: UpgradeInput) -> dict[str, Any]:
    """UpdateClusterSoftware's DeploymentConfig for the request's ``nodes``."""
    nodes = work.request.nodes
    batch = (nodes.batch if nodes and nodes.batch else DEFAULT_BATCH)
    config: dict[str, Any] = {"RollingUpdatePolicy": {"MaximumBatchSize": {
        "Type": HYPERPOD_BATCH_TYPES[batch.type], "Value": batch.value}}}
    if nodes and nodes.wait_seconds is not None:
        config["WaitIntervalInSeconds"] = nodes.wait_seconds
    if nodes and nodes.rollback_alarms:
        config["AutoRollbackConfiguration"] = [{"AlarmName": a} for a in nodes.rollback_alarms]
    return config


def _group_progress(services: FeatureServices, name: str, group: Mapping[str, Any]
                    ) -> dict[str, Any]:
    nodes = sagemaker.list_cluster_nodes(services.client("sagemaker"), name,
                                         instance_group=str(group["InstanceGroupName"]))
    desired = group.get("DesiredImageReleaseVersion") or group.get("CurrentImageReleaseVersion")
    updated = sum(1 for n in nodes if desired and n.get("CurrentImageReleaseVersion") == desired)
    return {"instanceGroup": group["InstanceGroupName"], "nodes": len(nodes),
            "updated": updated, "release": desired,
            "status": group.get("SoftwareUpdateStatus")}


def advance_nodes(services: FeatureServices, operation: Operation, work: UpgradeInput,
                  plan: Plan, *, start: bool) -> dict[str, Any]:
    steps = plan.of("nodes")
    if not steps or not work.hyperpod_name:
        return poll_result(True) | {"skipped": True}
    names = list(dict.fromkeys(str(s.target["instanceGroup"]) for s in steps))
    client = services.client("sagemaker")
    cluster = sagemaker.find_cluster(client, work.hyperpod_name)
    if cluster is None:
        raise NodeUpdateFailed(f"HyperPod cluster {work.hyperpod_name} no longer exists")
    groups = {g["InstanceGroupName"]: g for g in cluster.get("InstanceGroups") or []}
    chosen = [groups[n] for n in names if n in groups]
    statuses = {str(g["InstanceGroupName"]): g.get("SoftwareUpdateStatus") for g in chosen}
    busy = [n for n, s in statuses.items() if s in ("Pending", "InProgress",
                                                     "RollbackInProgress")]
    policy = nodes_wait(plan)
    if busy or cluster.get("ClusterStatus") == "SystemUpdating":
        elapsed = Steps.elapsed(operation, "nodes")
        _check_overdue(policy, elapsed, f"HyperPod's software update of {', '.join(statuses)}")
        progress = [_group_progress(services, work.hyperpod_name, g) for g in chosen]
        return poll_result(False, policy.next_check(elapsed), waiting=", ".join(
            f"{p['instanceGroup']} {p['updated']}/{p['nodes']} on {p['release']}"
            for p in progress)) | {"groups": progress}
    if not start:
        rolled = [n for n, s in statuses.items() if s == "RollbackComplete"]
        if rolled:
            alarms = (work.request.nodes.rollback_alarms if work.request.nodes else None) or []
            raise NodesRolledBack(
                f"HyperPod rolled instance groups {', '.join(rolled)} back to their previous "
                f"release: an alarm of {', '.join(alarms) or 'the update'} went to ALARM",
                details={"instanceGroups": rolled, "alarms": alarms})
        failed = [n for n, s in statuses.items() if s == "Failed"]
        if failed:
            raise NodeUpdateFailed(f"HyperPod's software update of {', '.join(failed)} "
                                   "failed", details={"instanceGroups": failed})
        if all(g.get("ImageVersionStatus") in ("UpToDate", None) for g in chosen):
            return poll_result(True) | {"groups": [
                _group_progress(services, work.hyperpod_name, g) for g in chosen]}
    elif all(g.get("ImageVersionStatus") == "UpToDate" for g in chosen):
        return poll_result(True) | {"groups": []}
    sagemaker.update_cluster_software(client, {
        "ClusterName": work.hyperpod_name,
        "InstanceGroups": [{"InstanceGroupName": n} for n in statuses],
        "DeploymentConfig": deployment_config(work),
    })
    return poll_result(False, policy.next_check(Steps.elapsed(operation, "nodes")),
                       waiting=f"HyperPod updating {', '.join(statuses)}") | {"groups": []}


@polled(router, "upgrade-nodes", "upgrade-nodes-check")
def nodes(task: OperationInput, services: FeatureServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return advance_nodes(services, *_load(services, task.operation_id), start=start)

    return services.steps.step(task, "nodes", work, start=start, complete=ready,
                               summarize=summary, progress=lambda r: {"groups": r["groups"]})


# ---------------------------------------------------------------------------- verify
def versions(services: FeatureServices, work: UpgradeInput) -> dict[str, Any]:
    """Every version as read back now."""
    client = services.client("eks")
    cluster = eks.read_cluster(client, work.eks_name)
    addons = {name: str((eks.find_addon(client, work.eks_name, name) or {}).get(
        "addonVersion")) for name in eks.list_addon_names(client, work.eks_name)}
    release, rendered_for = dependency_chart.read(services.clients.kubernetes(work.eks_name))
    groups = []
    if work.hyperpod_name:
        found = sagemaker.find_cluster(services.client("sagemaker"), work.hyperpod_name) or {}
        groups = [{"instanceGroup": g["InstanceGroupName"],
                   "imageRelease": g.get("CurrentImageReleaseVersion"),
                   "imageStatus": g.get("ImageVersionStatus")}
                  for g in found.get("InstanceGroups") or []]
    return {"kubernetesVersion": cluster.get("version"), "addons": addons,
            "chart": {"release": release, "kubernetesVersion": rendered_for},
            "nodes": groups}


def check_read_back(plan: Plan, read: Mapping[str, Any]) -> list[str]:
    """What is not as the plan left it (empty: everything matches)."""
    wrong = []
    for step in plan.of("control-plane")[-1:]:
        if read["kubernetesVersion"] != step.target["kubernetesVersion"]:
            wrong.append(f"Kubernetes is {read['kubernetesVersion']}, not "
                         f"{step.target['kubernetesVersion']}")
    for step in plan.of("addons"):
        name = str(step.target["addon"])
        if read["addons"].get(name) != step.target["version"]:
            wrong.append(f"add-on {name} is {read['addons'].get(name)}, not "
                         f"{step.target['version']}")
    for step in plan.of("chart"):
        if read["chart"]["release"] != step.target["chart"]:
            wrong.append(f"the chart is {read['chart']['release']}, not {step.target['chart']}")
    upgraded = {str(s.target["instanceGroup"]) for s in plan.of("nodes")}
    for group in read["nodes"]:
        if group["instanceGroup"] in upgraded and group["imageStatus"] not in ("UpToDate",
                                                                              None):
            wrong.append(f"instance group {group['instanceGroup']} is "
                         f"{group['imageStatus']}")
    return wrong


@router.task("upgrade-verify", OperationInput)
def verify(task: OperationInput, services: FeatureServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, upgrade, plan = _load(services, task.operation_id)
        read = versions(services, upgrade)
        wrong = check_read_back(plan, read)
        if wrong:
            raise UpgradeNotReadBack("after the upgrade, " + "; ".join(wrong),
                                     details={"versions": read})
        return read

    services.steps.step(task, "verify", work, start=True, complete=True, summarize=lambda r: r)
    return {}


@router.task("finish-upgrade", OperationInput)
def finish_upgrade(task: OperationInput, services: FeatureServices) -> dict[str, Any]:
    return services.steps.finish(
        task, lambda operation: dict(operation.stage("verify").output or {}))


@router.task("fail-upgrade", FailInput)
def fail_upgrade(task: FailInput, services: FeatureServices) -> dict[str, Any]:
    return services.steps.fail_answer(task)

