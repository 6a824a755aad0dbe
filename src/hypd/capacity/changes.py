"""The hyperpod stage of every capacity operation: what to ask HyperPod, given what it says.

`decide` looks at the live cluster and the operation's input and answers with a `Decision`: the
change is in place (`done`), or a request to send now (UpdateCluster, or a batch node call), or
a wait (for the cluster's state-change event, or a poll). Pure: the task
(`hypd.capacity.tasks`) reads the cluster, sends what the decision says and records it.

A stage attempt sends a change at most `MAX_CALLS` times: a cluster that is InService again
without it (HyperPod rolled it back) after that fails the stage with its FailureMessage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hypd.capacity.inputs import (
    AddGroupInput,
    DeleteGroupInput,
    NodeActionInput,
    UpdateGroupInput,
)
from hypd.capacity.live import LiveCluster
from hypd.errors import PermanentError
from hypd.instance_groups.errors import InstanceGroupNotFound
from hypd.instance_groups.normalise import resubmittable_group
from hypd.instance_groups.update import update_request

IN_SERVICE = "InService"
BUSY = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack"})
"""Cluster statuses that end by themselves (with a state-change event)."""
GROUP_BUSY = frozenset({"Creating", "Updating", "SystemUpdating", "Deleting"})
MAX_CALLS = 2
POLL_SECONDS = 30
"""How often autoscaling's own status is looked at (it has no state-change event)."""


class HyperPodUpdateFailed(PermanentError):
    """The cluster (or the change) failed in HyperPod; its FailureMessage says why."""

    code = "HyperPodUpdateFailed"


class HyperPodChangeNotApplied(PermanentError):
    """HyperPod accepted the change but the cluster is back in service without it."""

    code = "HyperPodChangeNotApplied"


class NodeGone(PermanentError):
    """The node an action names is no longer in the cluster."""

    code = "NodeGone"


class AutoscalingFailed(PermanentError):
    """HyperPod reports AutoScaling Failed; its FailureMessage says why."""

    code = "AutoscalingFailed"


@dataclass(frozen=True)
class Decision:
    done: bool = False
    request: dict[str, Any] | None = None
    """UpdateCluster to send (`call` "update"), or a batch node call's (`call` "node")."""
    call: Literal["update", "node"] | None = None
    wait_for: Literal["cluster", "poll"] = "cluster"
    wait_seconds: int = POLL_SECONDS
    note: str = ""
    output: dict[str, Any] = field(default_factory=dict)

    def answer(self) -> dict[str, Any]:
        """The state machine's view: ready, or which wait (and what for, in words)."""
        if self.done:
            return {"ready": True, "waitSeconds": 0, **self.output}
        return {"ready": False, "waitFor": self.wait_for, "waitSeconds": self.wait_seconds,
                **({"waiting": self.note} if self.note else {})}


def _failure(live: LiveCluster) -> str:
    return str(live.described.get("FailureMessage") or "no failure message")


def _blocked(live: LiveCluster, calls: int, what: str) -> Decision | None:
    """The cluster cannot take a change now: wait for it, or fail."""
    if live.status == "Failed":
        raise HyperPodUpdateFailed(
            f"HyperPod cluster {live.name} is Failed: {_failure(live)}",
            details={"clusterName": live.name},
        )
    if live.status in BUSY:
        return Decision(note=f"the cluster is {live.status}; waiting to {what}")
    if live.status != IN_SERVICE:
        return Decision(note=f"the cluster is {live.status}; waiting to {what}")
    if calls >= MAX_CALLS:
        raise HyperPodChangeNotApplied(
            f"HyperPod cluster {live.name} is InService again without the change ({what}) "
            f"after {calls} requests: {_failure(live)}",
            details={"clusterName": live.name},
        )
    return None


def _send(request: dict[str, Any], note: str) -> Decision:
    return Decision(request=request, call="update", note=note)


# ---------------------------------------------------------------------------- groups
def add_group(
    live: LiveCluster, task: AddGroupInput, spec: Mapping[str, Any], calls: int
) -> Decision:
    name = task.group.name
    details = live.group(name)
    if details is not None:
        status = details.get("Status")
        if status == "Failed":
            raise HyperPodUpdateFailed(
                f"instance group {name} is Failed in HyperPod: {_failure(live)}",
                details={"instanceGroup": name},
            )
        if live.status == IN_SERVICE and status not in GROUP_BUSY:
            return Decision(done=True, output={"instanceGroup": name, "status": status})
        return Decision(note=f"instance group {name} is {status}")
    return _blocked(live, calls, f"add instance group {name}") or _send(
        update_request(live.described, add=[spec]), f"adding instance group {name}"
    )


def _same(member: str, have: Any, want: Any) -> bool:
    """Whether a member already has the asked value (taint order does not matter)."""
    if member == "KubernetesConfig":
        have, want = dict(have or {}), dict(want or {})
        for config in (have, want):
            config["Labels"] = dict(config.get("Labels") or {})
            config["Taints"] = sorted(
                (t.get("Key"), t.get("Value"), t.get("Effect")) for t in config.get("Taints") or []
            )
    return bool(have == want)


def update_group(live: LiveCluster, task: UpdateGroupInput, calls: int) -> Decision:
    name = task.group
    details = live.group(name)
    if details is None:
        raise InstanceGroupNotFound(
            f"instance group {name} is no longer in cluster {live.name}",
            details={"instanceGroup": name},
        )
    current = resubmittable_group(details)
    if all(_same(m, current.get(m), v) for m, v in task.changes.items()):
        if live.status == IN_SERVICE and details.get("Status") not in GROUP_BUSY:
            return Decision(done=True, output={"instanceGroup": name, "changes": task.fields})
        return Decision(note=f"instance group {name} is {details.get('Status')}")
    return _blocked(live, calls, f"change instance group {name}") or _send(
        update_request(live.described, changes={name: task.changes}),
        f"changing instance group {name}: {', '.join(sorted(task.fields))}",
    )


def delete_group(live: LiveCluster, task: DeleteGroupInput, calls: int) -> Decision:
    name = task.group
    details = live.group(name)
    if details is None:
        if live.status in BUSY:
            return Decision(note=f"the cluster is {live.status}")
        return Decision(done=True, output={"deleted": name})
    if details.get("Status") == "Deleting":
        return Decision(note=f"instance group {name} is Deleting")
    return _blocked(live, calls, f"delete instance group {name}") or _send(
        update_request(live.described, delete=[name]), f"deleting instance group {name}"
    )


# ---------------------------------------------------------------------------- nodes
ACTION_STATUSES: dict[str, frozenset[str]] = {
    "reboot": frozenset({"Running", "Failure"}),
    "replace": frozenset({"Running", "Failure"}),
    "delete": frozenset({"Running", "Failure", "Pending", "DeepHealthCheckInProgress"}),
}
"""The node statuses from which HyperPod takes each action (the API checks them first)."""


def node_action(
    node: Mapping[str, Any] | None, task: NodeActionInput, calls: int, *, missing_fails: bool
) -> Decision:
    """One batch call per attempt. A node no longer in a status the action starts from is one
    HyperPod is acting on already (a crashed earlier run sent the call): it is not asked again.
    A node that is gone fails the stage when the action needs it (`missing_fails`: a reboot),
    else the action has nothing left to do.
    """
    status = ((node or {}).get("InstanceStatus") or {}).get("Status")
    if calls:
        return Decision(done=True, output={"nodeId": task.node_id, "requested": True})
    if node is None and missing_fails:
        raise NodeGone(
            f"node {task.node_id} is no longer in cluster {task.cluster_name}",
            details={"nodeId": task.node_id},
        )
    if node is None or status not in ACTION_STATUSES[task.action]:
        return Decision(done=True, output={"nodeId": task.node_id, "status": status or "gone"})
    return Decision(
        request={"action": task.action, "nodeId": task.node_id},
        call="node",
        note=f"{task.action} node {task.node_id} (it is {status})",
    )


# ---------------------------------------------------------------------------- autoscaling
def _autoscaling(live: LiveCluster) -> tuple[str | None, str | None]:
    found = live.autoscaling or {}
    return found.get("Mode"), found.get("Status")


def enable_autoscaling(
    live: LiveCluster, role_arn: str, calls: int, *, enable_sent: bool
) -> Decision:
    """Mode Enable and Status InService. A Failed autoscaling this attempt did not cause (an
    earlier attempt's) is first turned off (HyperPod does not retry an Enable it already has),
    then on again; one this attempt's Enable led to fails the stage."""
    mode, status = _autoscaling(live)
    if mode == "Enable" and status == IN_SERVICE:
        return Decision(done=True, output={"autoscaling": "InService", "roleArn": role_arn})
    if mode == "Enable" and status == "Failed":
        failure = (live.autoscaling or {}).get("FailureMessage") or "no failure message"
        if enable_sent:
            raise AutoscalingFailed(
                f"HyperPod could not turn on autoscaling of {live.name}: {failure}",
                details={"clusterName": live.name},
            )
        blocked = _blocked(live, 0, "turn off the failed autoscaling")
        return blocked or Decision(
            request={"ClusterName": live.name, "AutoScaling": {"Mode": "Disable"}},
            call="update",
            note=f"autoscaling is Failed ({failure}); turning it off before enabling again",
        )
    if status in ("Creating", "Deleting"):
        if live.status in BUSY:
            return Decision(note=f"the cluster is {live.status}; autoscaling is {status}")
        return Decision(wait_for="poll", note=f"autoscaling is {status}")
    return _blocked(live, calls, "turn on autoscaling") or _send(
        {
            "ClusterName": live.name,
            "AutoScaling": {"Mode": "Enable", "AutoScalerType": "Karpenter"},
            "ClusterRole": role_arn,
        },
        "turning on autoscaling (Karpenter)",
    )


def disable_autoscaling(live: LiveCluster, calls: int) -> Decision:
    mode, status = _autoscaling(live)
    if mode is None or (mode == "Disable" and status != "Deleting"):
        if live.status in BUSY:
            return Decision(note=f"the cluster is {live.status}")
        return Decision(done=True, output={"autoscaling": "off"})
    if status == "Deleting":
        if live.status in BUSY:
            return Decision(note=f"the cluster is {live.status}; autoscaling is Deleting")
        return Decision(wait_for="poll", note="autoscaling is Deleting")
    return _blocked(live, calls, "turn off autoscaling") or _send(
        {"ClusterName": live.name, "AutoScaling": {"Mode": "Disable"}},
        "turning off autoscaling",
    )
