"""hypd.capacity.changes: what the hyperpod stage asks HyperPod, given what it says."""

from __future__ import annotations

from typing import Any

import pytest

from hypd.capacity import changes
from hypd.capacity.inputs import NODE_ACTIONS, DeleteGroupInput, NodeActionInput, UpdateGroupInput
from hypd.capacity.strategies import STRATEGIES, NodeAction
from hypd.instance_groups import resubmittable_group
from hypd.operations.models import OperationKind
from tests.unit.capacity.support import details, live

SPEC = {"InstanceGroupName": "spot", "InstanceType": "ml.g6.4xlarge", "InstanceCount": 1,
        "ExecutionRole": "arn:aws:iam::123456789012:role/x", "CapacityRequirements": {"Spot": {}}}


def add_input() -> Any:
    from hypd.capacity.inputs import AddGroupInput

    return AddGroupInput.model_validate(
        {
            "tag": "train",
            "availabilityZone": "us-west-2a",
            "availabilityZoneSource": "cluster",
            "group": {
                "name": "spot", "instanceType": "ml.g6.4xlarge", "count": 1,
                "capacity": {"type": "spot"},
                "resolvedCapacity": {"type": "spot", "availabilityZone": "us-west-2a"},
            },
        }
    )


def update_input(**changes_: Any) -> UpdateGroupInput:
    return UpdateGroupInput(tag="train", group="gpu", changes=changes_, fields={"x": 1},
                            previous_count=2)


def test_a_new_group_is_sent_once_and_then_waited_for() -> None:
    decision = changes.add_group(live(details("gpu")), add_input(), SPEC, calls=0)

    assert decision.call == "update"
    assert decision.request == {"ClusterName": "hypd-train", "InstanceGroups": [SPEC]}
    assert decision.answer() == {"ready": False, "waitFor": "cluster", "waitSeconds": 30,
                                 "waiting": "adding instance group spot"}


def test_a_new_group_hyperpod_has_is_done_once_in_service() -> None:
    creating = live(details("gpu"), details("spot", Status="Creating"), status="Updating")
    assert not changes.add_group(creating, add_input(), SPEC, calls=1).done
    ready = live(details("gpu"), details("spot"))
    assert changes.add_group(ready, add_input(), SPEC, calls=1).answer()["ready"]


def test_a_busy_cluster_is_waited_for_before_anything_is_sent() -> None:
    decision = changes.add_group(live(details("gpu"), status="SystemUpdating"), add_input(),
                                 SPEC, calls=0)
    assert decision.request is None
    assert decision.wait_for == "cluster"


def test_a_change_hyperpod_rolled_back_is_sent_twice_then_fails_with_the_reason() -> None:
    back = live(details("gpu"), FailureMessage="InsufficientInstanceCapacity for ml.g6.4xlarge")
    assert changes.add_group(back, add_input(), SPEC, calls=1).call == "update"
    with pytest.raises(changes.HyperPodChangeNotApplied, match="InsufficientInstanceCapacity"):
        changes.add_group(back, add_input(), SPEC, calls=2)


def test_a_failed_cluster_fails_the_stage_with_its_message() -> None:
    failed = live(details("gpu"), status="Failed", FailureMessage="lifecycle script failed")
    with pytest.raises(changes.HyperPodUpdateFailed, match="lifecycle script failed"):
        changes.update_group(failed, update_input(InstanceCount=4), calls=0)


def test_a_scale_resubmits_the_group_through_the_normaliser() -> None:
    decision = changes.update_group(live(details("gpu")), update_input(InstanceCount=4), 0)

    assert decision.request == {
        "ClusterName": "hypd-train",
        "InstanceGroups": [{**resubmittable_group(details("gpu")), "InstanceCount": 4}],
    }


def test_a_change_hyperpod_has_is_not_sent_again() -> None:
    scaled = live(details("gpu", TargetCount=4))
    assert changes.update_group(scaled, update_input(InstanceCount=4), 1).done
    labelled = live(details("gpu", KubernetesConfig={
        "DesiredTaints": [{"Key": "b", "Effect": "NoSchedule"},
                          {"Key": "a", "Value": "1", "Effect": "NoExecute"}]}))
    same = {"Labels": {}, "Taints": [{"Key": "a", "Value": "1", "Effect": "NoExecute"},
                                      {"Key": "b", "Effect": "NoSchedule"}]}
    assert changes.update_group(labelled, update_input(KubernetesConfig=same), 0).done


def test_a_deleted_group_is_done_when_hyperpod_no_longer_lists_it() -> None:
    task = DeleteGroupInput(tag="train", group="cpu")
    first = changes.delete_group(live(details("gpu"), details("cpu")), task, 0)
    assert first.request == {"ClusterName": "hypd-train", "InstanceGroupsToDelete": ["cpu"]}
    deleting = live(details("gpu"), details("cpu", Status="Deleting"), status="Updating")
    assert changes.delete_group(deleting, task, 1).request is None
    assert changes.delete_group(live(details("gpu")), task, 1).done


def node_strategy(kind: OperationKind) -> NodeAction:
    strategy = STRATEGIES[kind]
    assert isinstance(strategy, NodeAction)
    return strategy


def _node(status: str | None) -> dict[str, Any] | None:
    if status is None:
        return None
    return {"InstanceId": "i-0123456789abcdef0", "InstanceStatus": {"Status": status}}


@pytest.mark.parametrize(
    ("kind", "status", "sent"),
    [
        (OperationKind.REBOOT_NODE, "Running", True),
        (OperationKind.REPLACE_NODE, "Failure", True),
        # a crashed earlier run sent it already
        (OperationKind.REPLACE_NODE, "ShuttingDown", False),
        (OperationKind.REBOOT_NODE, "Pending", False),
        (OperationKind.DELETE_NODE, None, False),
    ],
)
def test_a_node_action_is_sent_unless_hyperpod_is_acting_already(
    kind: OperationKind, status: str | None, sent: bool
) -> None:
    task = NodeActionInput(tag="train", node_id="i-0123456789abcdef0", group="gpu",
                           action=NODE_ACTIONS[kind])
    decision = node_strategy(kind).decide(_node(status), task, calls=0)
    assert (decision.call == "node") is sent
    assert decision.done is not sent


def test_a_node_gone_fails_a_reboot_and_leaves_a_replacement_or_deletion_nothing_to_do() -> None:
    def task(kind: OperationKind) -> NodeActionInput:
        return NodeActionInput(tag="train", node_id="i-0123456789abcdef0", group="gpu",
                               action=NODE_ACTIONS[kind])

    with pytest.raises(changes.NodeGone, match="no longer in cluster hypd-train"):
        node_strategy(OperationKind.REBOOT_NODE).decide(None, task(OperationKind.REBOOT_NODE), 0)
    for kind in (OperationKind.REPLACE_NODE, OperationKind.DELETE_NODE):
        decision = node_strategy(kind).decide(None, task(kind), 0)
        assert decision.output == {"nodeId": "i-0123456789abcdef0", "status": "gone"}


ROLE = "arn:aws:iam::123456789012:role/hypd/hypd-train-autoscaling"


def autoscaled(status: str | None, mode: str = "Enable", **extra: Any) -> Any:
    config = {"Mode": mode, "AutoScalerType": "Karpenter", **extra}
    if status:
        config["Status"] = status
    return live(details("gpu"), AutoScaling=config)


def test_autoscaling_is_turned_on_with_the_role_then_polled_until_in_service() -> None:
    first = changes.enable_autoscaling(live(details("gpu")), ROLE, 0, enable_sent=False)
    assert first.request == {
        "ClusterName": "hypd-train",
        "AutoScaling": {"Mode": "Enable", "AutoScalerType": "Karpenter"},
        "ClusterRole": ROLE,
    }
    creating = changes.enable_autoscaling(autoscaled("Creating"), ROLE, 1, enable_sent=True)
    assert creating.answer() == {"ready": False, "waitFor": "poll", "waitSeconds": 30,
                                 "waiting": "autoscaling is Creating"}
    assert changes.enable_autoscaling(autoscaled("InService"), ROLE, 1, enable_sent=True).done


def test_failed_autoscaling_of_an_earlier_attempt_is_turned_off_before_enabling_again() -> None:
    failed = autoscaled("Failed", FailureMessage="cannot assume the role")
    decision = changes.enable_autoscaling(failed, ROLE, 0, enable_sent=False)
    assert decision.request == {"ClusterName": "hypd-train", "AutoScaling": {"Mode": "Disable"}}
    with pytest.raises(changes.AutoscalingFailed, match="cannot assume the role"):
        changes.enable_autoscaling(failed, ROLE, 2, enable_sent=True)


def test_autoscaling_is_off_once_hyperpod_no_longer_shows_it() -> None:
    on = changes.disable_autoscaling(autoscaled("InService"), 0)
    assert on.request == {"ClusterName": "hypd-train", "AutoScaling": {"Mode": "Disable"}}
    assert changes.disable_autoscaling(autoscaled("Deleting"), 1).wait_for == "poll"
    assert changes.disable_autoscaling(live(details("gpu")), 1).done
