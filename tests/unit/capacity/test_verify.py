"""hypd.capacity.verify: HyperPod and Kubernetes agree that a change happened."""

from __future__ import annotations

from typing import Any

from hypd.capacity import verify
from tests.unit.capacity.support import details, live


def node(instance_id: str, status: str = "Running", group: str = "gpu") -> dict[str, Any]:
    return {"InstanceId": instance_id, "InstanceGroupName": group,
            "InstanceStatus": {"Status": status}}


def kube(instance_id: str, group: str = "gpu", *, ready: bool = True,
         labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"hyperpod-{instance_id}",
            "labels": {
                "sagemaker.amazonaws.com/instance-group-name": group,
                "sagemaker.amazonaws.com/node-health-status": "Schedulable",
                **(labels or {}),
            },
        },
        "spec": {"taints": taints or []},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


TEAM = {"team": "ml"}


def test_a_group_is_verified_when_every_node_runs_joined_and_labelled() -> None:
    cluster = live(details("gpu"))
    nodes = [node("i-1"), node("i-2")]
    check = verify.group_check(cluster, "gpu", 2, nodes,
                               [kube("i-1", labels=TEAM), kube("i-2", labels=TEAM)])
    assert check.ready, check.problems
    assert check.output["count"] == 2


def test_what_is_missing_is_said() -> None:
    cluster = live(details("gpu", CurrentCount=1))
    check = verify.group_check(cluster, "gpu", 2, [node("i-1"), node("i-2", "Pending")],
                               [kube("i-1", ready=False)])
    assert not check.ready
    assert "1 of 2 instances are up" in check.problems
    assert "1 of 2 nodes Running (2 in the group)" in check.problems
    assert any("not schedulable" in p for p in check.problems)
    assert any("lacks the group's labels" in p for p in check.problems)


def test_a_scaled_down_group_still_has_extra_nodes_until_they_leave_kubernetes() -> None:
    cluster = live(details("gpu", TargetCount=1, CurrentCount=1))
    check = verify.group_check(cluster, "gpu", 1, [node("i-1")],
                               [kube("i-1", labels=TEAM), kube("i-2", labels=TEAM)])
    assert check.problems == ["Kubernetes still has nodes that left the group: hyperpod-i-2"]


def test_taints_of_the_group_must_reach_its_nodes() -> None:
    group = details("gpu", OnStartDeepHealthChecks=None, TargetCount=1, CurrentCount=1,
                    KubernetesConfig={"DesiredTaints": [{"Key": "gpu", "Effect": "NoSchedule"}]})
    taint = [{"key": "gpu", "effect": "NoSchedule"}]
    tainted = [kube("i-1", taints=taint)]
    assert verify.group_check(live(group), "gpu", 1, [node("i-1")], tainted).ready
    assert not verify.group_check(live(group), "gpu", 1, [node("i-1")], [kube("i-1")]).ready


def test_a_deleted_group_is_gone_from_hyperpod_and_kubernetes() -> None:
    assert not verify.group_gone_check(live(details("gpu"), details("cpu")), "cpu", []).ready
    assert not verify.group_gone_check(live(details("gpu")), "cpu", [kube("i-9", "cpu")]).ready
    assert verify.group_gone_check(live(details("gpu")), "cpu", [kube("i-1")]).ready


def test_a_rebooted_node_is_running_and_ready_again() -> None:
    cluster = live(details("gpu"))
    assert not verify.node_rebooted("i-1", "gpu", cluster, [node("i-1", "Pending")],
                                    [kube("i-1")]).ready
    assert verify.node_rebooted("i-1", "gpu", cluster, [node("i-1")], [kube("i-1")]).ready


def test_a_replaced_node_is_gone_and_the_group_is_whole_again() -> None:
    cluster = live(details("gpu"))
    during = verify.node_replaced("i-1", "gpu", cluster,
                                  [node("i-1", "ShuttingDown"), node("i-2"),
                                   node("i-3", "Pending")],
                                  [kube("i-1"), kube("i-2")])
    assert not during.ready
    after = verify.node_replaced("i-1", "gpu", cluster, [node("i-2"), node("i-3")],
                                 [kube("i-2"), kube("i-3")])
    assert after.ready
    assert after.output["groupNodes"] == ["i-2", "i-3"]


def test_a_replacement_does_not_wait_for_another_failed_node_of_its_group() -> None:
    cluster = live(details("gpu", TargetCount=3))
    failed_other = node("i-2", "Failure")
    during = verify.node_replaced("i-1", "gpu", cluster,
                                  [failed_other, node("i-3"), node("i-4", "Pending")],
                                  [kube("i-2", ready=False), kube("i-3")])
    assert not during.ready
    assert during.problems[0] == "1 of 3 nodes of group gpu Running (1 failed)"
    after = verify.node_replaced("i-1", "gpu", cluster,
                                 [failed_other, node("i-3"), node("i-4")],
                                 [kube("i-2", ready=False), kube("i-3"), kube("i-4")])
    assert after.ready, after.problems


def test_a_deleted_node_is_gone_from_both() -> None:
    cluster = live(details("gpu", TargetCount=1))
    assert verify.node_deleted("i-1", "gpu", cluster, [node("i-2")], [kube("i-2")]).ready
