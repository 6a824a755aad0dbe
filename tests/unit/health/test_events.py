"""Reading EventBridge events: the documented samples in events/, and what is malformed."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from hypd.health.events import (
    AddonDetail,
    ClusterEventDetail,
    Malformed,
    NodeHealthDetail,
    StateChangeDetail,
    read_event,
)
from tests.unit.support import EVENTS


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return loaded


def test_the_documented_node_health_event_is_read() -> None:
    event = read_event(sample("eventbridge-hyperpod-node-health"))
    assert isinstance(event.detail, NodeHealthDetail)
    assert event.tag == "train"
    assert event.detail.instance_id == "i-12345678abcdefghi"  # the docs' id: not hex
    summary = event.detail.health_summary
    assert summary.health_status == "Unhealthy"
    assert not summary.healthy
    assert not summary.repaired_by_hyperpod  # RepairAction "None"
    assert summary.recommended == "replace"  # from "Please Replace the Faulty Node."
    assert event.order == ("2026-01-15T11:52:12.000Z", "0bd4a141-0a02-9d8a-f977-3924c3fb259c")


@pytest.mark.parametrize(
    ("repair_action", "recommendation", "recommended", "by_hyperpod"),
    [
        ("None", "Please Reboot the Faulty Node.", "reboot", False),
        ("None", "Please Replace the Faulty Node.", "replace", False),
        (None, "Replace the node to restore capacity.", "replace", False),
        ("None", "Investigate the node.", None, False),
        ("None", None, None, False),
        ("Replace", "Please Replace the Faulty Node.", None, True),
        ("Reboot", None, None, True),
    ],
)
def test_the_recommended_repair_is_the_one_hyperpod_does_not_take(
    repair_action: str | None, recommendation: str | None, recommended: str | None,
    by_hyperpod: bool,
) -> None:
    raw = sample("eventbridge-hyperpod-node-health")
    raw["detail"]["HealthSummary"].update(RepairAction=repair_action,
                                           Recommendation=recommendation)
    summary = read_event(raw).detail.health_summary
    assert summary.recommended == recommended
    assert summary.repaired_by_hyperpod is by_hyperpod


def test_a_healthy_node_has_no_recommended_repair() -> None:
    raw = sample("eventbridge-hyperpod-node-health")
    raw["detail"]["HealthSummary"] = {"HealthStatus": "Healthy", "HealthStatusReason": "ok",
                                      "RepairAction": "None",
                                      "Recommendation": "Please Replace the Faulty Node."}
    summary = read_event(raw).detail.health_summary
    assert summary.healthy
    assert summary.recommended is None


def test_the_documented_cluster_event_is_read_with_its_own_time() -> None:
    event = read_event(sample("eventbridge-hyperpod-cluster-event"))
    assert isinstance(event.detail, ClusterEventDetail)
    found = event.detail.event_details
    assert (found.event_level, found.resource_type, found.instance_group_name) == (
        "Error", "Instance", "gpu")
    assert found.event_time == datetime(2026, 1, 15, 11, 59, 0, 412000, tzinfo=UTC)
    # ordered by EventTime (epoch ms), not by the envelope's time
    assert event.order[0] == "2026-01-15T11:59:00.412Z"
    assert event.tag == "train"


def test_the_state_change_sample_is_read() -> None:
    event = read_event(sample("eventbridge-hyperpod-cluster-state-change"))
    assert isinstance(event.detail, StateChangeDetail)
    assert (event.detail.cluster_name, event.detail.cluster_status) == ("hypd-demo", "InService")


def test_an_eks_add_on_event_names_its_cluster_and_add_on_from_its_arn() -> None:
    event = read_event(sample("eventbridge-eks-addon-health-degraded"))
    assert isinstance(event.detail, AddonDetail)
    assert event.tag == "train"
    assert event.detail.addon_name == "amazon-sagemaker-hyperpod-training-operator"
    assert event.detail.status == "DEGRADED"
    assert [i["code"] for i in event.detail.issues] == ["InsufficientNumberOfReplicas"]


def test_members_the_detail_names_win_over_the_arn() -> None:
    raw = sample("eventbridge-eks-addon-health-degraded")
    raw["detail"]["addonName"] = "cert-manager"
    assert read_event(raw).detail.addon_name == "cert-manager"


def test_a_cluster_hypd_does_not_name_has_no_tag() -> None:
    raw = sample("eventbridge-hyperpod-node-health")
    raw["detail"]["ClusterName"] = "sample-cluster"
    assert read_event(raw).tag is None


def test_members_aws_adds_later_are_ignored() -> None:
    raw = sample("eventbridge-hyperpod-node-health")
    raw["detail"]["NewMember"] = {"x": 1}
    raw["detail"]["HealthSummary"]["Severity"] = "High"
    assert read_event(raw).detail.instance_id == "i-12345678abcdefghi"


def _broken(change: Any) -> dict[str, Any]:
    raw = copy.deepcopy(sample("eventbridge-hyperpod-node-health"))
    change(raw)
    return raw


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not json", "not an EventBridge event: a str"),
        ({"detail": {}}, "not an EventBridge event"),
        (_broken(lambda e: e.update({"detail-type": "SageMaker Endpoint State Change"})),
         "not an event hypd handles"),
        (_broken(lambda e: e.update({"source": "aws.ec2"})), "not an event hypd handles"),
        (_broken(lambda e: e["detail"].pop("HealthSummary")), "HealthSummary"),
        (_broken(lambda e: e["detail"].update(InstanceId="../../etc")), "InstanceId"),
        (_broken(lambda e: e["detail"]["HealthSummary"].update(HealthStatus="")),
         "HealthStatus"),
        (_broken(lambda e: e.update(detail="a string")), "detail"),
        (_broken(lambda e: e.update(time="yesterday")), "time"),
    ],
)
def test_a_malformed_event_says_why(raw: Any, reason: str) -> None:
    with pytest.raises(Malformed) as raised:
        read_event(raw)
    assert reason in raised.value.reason


def test_a_malformed_detail_keeps_its_detail_type() -> None:
    with pytest.raises(Malformed) as raised:
        read_event(_broken(lambda e: e["detail"].pop("InstanceId")))
    assert raised.value.detail_type == "SageMaker HyperPod Cluster Node Health Event"


def test_an_add_on_event_without_an_add_on_arn_is_malformed() -> None:
    raw = sample("eventbridge-eks-addon-health-degraded")
    raw["resources"] = []
    with pytest.raises(Malformed) as raised:
        read_event(raw)
    assert "clusterName" in raised.value.reason
