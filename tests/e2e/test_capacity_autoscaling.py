"""Managed Karpenter autoscaling end to end: a validated, idempotent toggle that makes (and
removes) the cluster role, HyperPod's AutoScaling, the HyperpodNodeClass and the NodePool."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from tests.e2e.capacity import (
    CLUSTER,
    TAG,
    created_cluster,
    kube_object,
    operations_of,
    run,
    stages,
)
from tests.support import group_body

ROLE = "hypd-train-autoscaling"


def put(api: ApiClient, **body: Any) -> dict[str, Any]:
    return api.call("setAutoscaling", tag=TAG, body=body)


def burst_cluster(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud, group_body(count=1), group_body(name="burst", count=0))


def node_class(cloud: Any) -> dict[str, Any] | None:
    return kube_object(cloud, "karpenter.sagemaker.amazonaws.com", "v1",
                       "hyperpodnodeclasses", "hypd")


def node_pool(cloud: Any) -> dict[str, Any] | None:
    return kube_object(cloud, "karpenter.sh", "v1", "nodepools", "hypd")


def snapshot(api: ApiClient, cloud: Any) -> dict[str, Any]:
    """Everything autoscaling touches, without what changes on every write."""
    iam = cloud.client("iam")
    try:
        role = iam.get_role(RoleName=ROLE)["Role"]
        policies = {
            name: iam.get_role_policy(RoleName=ROLE, PolicyName=name)["PolicyDocument"]
            for name in iam.list_role_policies(RoleName=ROLE)["PolicyNames"]
        }
        role_view: Any = {
            "arn": role["Arn"],
            "trust": role["AssumeRolePolicyDocument"],
            "boundary": role.get("PermissionsBoundary"),
            "policies": policies,
        }
    except iam.exceptions.NoSuchEntityException:
        role_view = None
    described = cloud.client("sagemaker").describe_cluster(ClusterName=CLUSTER)

    def spec(obj: dict[str, Any] | None) -> Any:
        return None if obj is None else {"spec": obj["spec"], "labels": obj["metadata"]["labels"]}

    view = api.call("getAutoscaling", tag=TAG)
    return {
        "role": role_view,
        "autoscaling": described.get("AutoScaling"),
        "clusterRole": described.get("ClusterRole"),
        "groups": described["InstanceGroups"],
        "nodeClass": spec(node_class(cloud)),
        "nodePool": spec(node_pool(cloud)),
        "view": {k: v for k, v in view.items() if k != "lastOperationId"},
    }


def test_autoscaling_is_switched_on_and_off_twice_with_no_drift(
    api: ApiClient, cloud: Any
) -> None:
    burst_cluster(api, cloud)
    off_before = snapshot(api, cloud)
    assert off_before["view"]["enabled"] is False

    on: list[dict[str, Any]] = []
    off: list[dict[str, Any]] = []
    for _ in range(2):
        enabled = run(api, cloud, put(api, enabled=True, instanceGroups=["burst"]))
        assert enabled["status"] == "SUCCEEDED", enabled.get("error")
        assert [s["name"] for s in enabled["stages"]] == [
            "prerequisites", "role", "hyperpod", "kubernetes"
        ]
        on.append(snapshot(api, cloud))
        # only the fields sent change: a new consolidation delay reaches the NodePool alone
        slower = run(api, cloud, put(api, enabled=True, consolidateAfter="30m"))
        assert slower["status"] == "SUCCEEDED", slower.get("error")
        pool = node_pool(cloud)
        assert pool is not None
        assert pool["spec"]["disruption"]["consolidateAfter"] == "30m"
        assert node_class(cloud)["spec"] == {"instanceGroups": ["burst"]}  # type: ignore[index]
        assert run(api, cloud, put(api, enabled=True, consolidateAfter="5m"))["status"] == (
            "SUCCEEDED"
        )
        assert snapshot(api, cloud) == on[-1]
        # a request that matches reality changes nothing
        assert put(api, enabled=True)["changed"] is False
        assert put(api, enabled=True, instanceGroups=["burst"])["changed"] is False

        disabled = run(api, cloud, put(api, enabled=False))
        assert disabled["status"] == "SUCCEEDED", disabled.get("error")
        off.append(snapshot(api, cloud))
        assert put(api, enabled=False)["changed"] is False

    assert on[0] == on[1]
    assert off[0] == off[1]
    state = on[0]
    assert state["autoscaling"]["Mode"] == "Enable"
    assert state["autoscaling"]["Status"] == "InService"
    assert state["clusterRole"] == state["role"]["arn"]
    assert state["role"]["trust"]["Statement"][0]["Principal"] == {
        "Service": "hyperpod.sagemaker.amazonaws.com"
    }
    (policy,) = state["role"]["policies"].values()
    assert policy["Statement"][0]["Resource"].endswith(":cluster/" + cloud.client(
        "sagemaker").describe_cluster(ClusterName=CLUSTER)["ClusterArn"].rsplit("/", 1)[-1])
    assert state["role"]["boundary"]["PermissionsBoundaryArn"].endswith("AutoscalingRoleBoundary")
    assert state["nodeClass"]["spec"] == {"instanceGroups": ["burst"]}
    assert state["nodePool"]["spec"]["disruption"]["consolidationPolicy"] == (
        "WhenEmptyOrUnderutilized"
    )
    assert state["view"]["instanceGroups"] == ["burst"]
    assert {g["InstanceGroupName"] for g in state["groups"]} == {"workers", "burst"}
    # off removes what on made
    assert off[0]["role"] is None
    assert off[0]["nodeClass"] is None
    assert off[0]["nodePool"] is None
    assert off[0]["autoscaling"] is None
    assert off[0]["view"]["enabled"] is False
    assert off[0]["groups"] == off_before["groups"]
    ready = node_pool(cloud)
    assert ready is None
    assert len(operations_of(api)) == 9  # create, then twice: on, 30m, 5m, off


def test_groups_karpenter_cannot_scale_are_refused_naming_them(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(
        api, cloud, group_body(count=1, deepHealthChecks=["InstanceStress"]),
        group_body(name="burst", count=0),
    )
    with pytest.raises(ApiError) as raised:
        put(api, enabled=True, instanceGroups=["burst", "workers", "ghost"])
    error = raised.value
    assert error.status == 400
    fields = [e["field"] for e in error.details["errors"]]
    assert fields == ["instanceGroups[1]", "instanceGroups[2]"]
    assert "deep health checks" in error.message
    with pytest.raises(ApiError) as raised:
        put(api, enabled=True)
    assert raised.value.details["field"] == "instanceGroups"
    assert len(operations_of(api)) == 1


def test_an_autoscaled_group_cannot_be_deleted(api: ApiClient, cloud: Any) -> None:
    burst_cluster(api, cloud)
    assert run(api, cloud, put(api, enabled=True, instanceGroups=["burst"]))["status"] == (
        "SUCCEEDED"
    )
    with pytest.raises(ApiError) as raised:
        api.call("deleteInstanceGroup", tag=TAG, name="burst")
    assert (raised.value.status, raised.value.code) == (409, "InstanceGroupAutoscaled")
    groups = {g["name"]: g for g in api.call("listInstanceGroups", tag=TAG)["instanceGroups"]}
    assert groups["burst"]["autoscaled"] is True
    assert groups["workers"]["autoscaled"] is False


@contextmanager
def _role_refused(cloud: Any) -> Iterator[None]:
    cloud.faults.fail("iam", "CreateRole", code="AccessDenied", times=1)
    try:
        yield
    finally:
        cloud.faults.clear()


@contextmanager
def _autoscaling_fails(cloud: Any) -> Iterator[None]:
    cloud.emulation.hyperpod.fail_next_autoscaling(CLUSTER, "Karpenter could not start")
    yield


@pytest.mark.parametrize(
    ("stage", "inject", "code"),
    [
        ("role", _role_refused, "AccessDenied"),
        ("hyperpod", _autoscaling_fails, "AutoscalingFailed"),
    ],
)
def test_a_fault_fails_its_stage_and_a_retry_completes_enabling(
    api: ApiClient, cloud: Any, stage: str, inject: Any, code: str
) -> None:
    burst_cluster(api, cloud)
    order = ["prerequisites", "role", "hyperpod", "kubernetes"]

    with inject(cloud):
        failed = run(api, cloud, put(api, enabled=True, instanceGroups=["burst"]))

    assert failed["status"] == "FAILED"
    by_name = stages(failed)
    index = order.index(stage)
    assert [by_name[s]["status"] for s in order[:index]] == ["SUCCEEDED"] * index
    assert by_name[stage]["status"] == "FAILED"
    assert failed["error"]["code"] == code
    assert node_pool(cloud) is None

    api.post(f"/operations/{failed['id']}/retry")
    done = run(api, cloud, {"operationId": failed["id"]})

    assert done["status"] == "SUCCEEDED", done.get("error")
    assert stages(done)[stage]["attempts"] == 2
    view = api.call("getAutoscaling", tag=TAG)
    assert view["enabled"] is True
    assert view["status"] == "InService"
    assert node_pool(cloud) is not None


def test_a_node_pool_hypd_did_not_make_is_not_taken_over(api: ApiClient, cloud: Any) -> None:
    burst_cluster(api, cloud)
    first = run(api, cloud, put(api, enabled=True, instanceGroups=["burst"]))
    assert first["status"] == "SUCCEEDED"
    assert run(api, cloud, put(api, enabled=False))["status"] == "SUCCEEDED"
    server = cloud.emulation.kube.get(CLUSTER)
    rtype = server.store.find_type("karpenter.sh", "v1", "nodepools")
    server.store.create(rtype, None, {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                                      "metadata": {"name": "hypd"}, "spec": {}}, "someone")

    failed = run(api, cloud, put(api, enabled=True, instanceGroups=["burst"]))

    assert failed["status"] == "FAILED"
    assert failed["error"]["code"] == "KarpenterObjectConflict"
    assert stages(failed)["kubernetes"]["status"] == "FAILED"
    server.store.delete(rtype, None, "hypd")
    api.post(f"/operations/{failed['id']}/retry")
    done = run(api, cloud, {"operationId": failed["id"]})
    assert done["status"] == "SUCCEEDED", done.get("error")
    pool = node_pool(cloud)
    assert pool is not None
    assert pool["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "hypd"}


def test_a_missing_prerequisite_fails_its_stage_and_a_retry_completes_enabling(
    api: ApiClient, cloud: Any
) -> None:
    burst_cluster(api, cloud)
    store = cloud.emulation.kube.get(CLUSTER).store
    daemonsets = store.builtin_type("apps", "daemonsets")
    agent = store.get(daemonsets, "aws-hyperpod", "health-monitoring-agent")
    store.delete(daemonsets, "aws-hyperpod", "health-monitoring-agent")

    failed = run(api, cloud, put(api, enabled=True, instanceGroups=["burst"]))

    assert failed["status"] == "FAILED"
    assert failed["error"]["code"] == "AutoscalingPrerequisite"
    assert "health-monitoring agent" in failed["error"]["message"]
    assert stages(failed)["role"]["status"] == "PENDING"
    assert cloud.client("sagemaker").describe_cluster(ClusterName=CLUSTER).get(
        "AutoScaling") is None
    store.create(daemonsets, "aws-hyperpod",
                 {k: agent[k] for k in ("apiVersion", "kind", "metadata", "spec")}, "helm")
    api.post(f"/operations/{failed['id']}/retry")
    assert run(api, cloud, {"operationId": failed["id"]})["status"] == "SUCCEEDED"


def test_a_fault_while_disabling_keeps_what_is_left_and_a_retry_removes_it(
    api: ApiClient, cloud: Any
) -> None:
    burst_cluster(api, cloud)
    assert run(api, cloud, put(api, enabled=True, instanceGroups=["burst"]))["status"] == (
        "SUCCEEDED"
    )
    cloud.faults.fail("iam", "DeleteRole", code="DeleteConflict", times=1)
    try:
        failed = run(api, cloud, put(api, enabled=False))
    finally:
        cloud.faults.clear()

    assert failed["status"] == "FAILED"
    by_name = stages(failed)
    assert [by_name[s]["status"] for s in ("kubernetes", "hyperpod", "role")] == [
        "SUCCEEDED", "SUCCEEDED", "FAILED"
    ]
    assert failed["error"]["code"] == "DeleteConflict"
    assert cloud.client("iam").get_role(RoleName=ROLE)["Role"]  # still there, and recorded
    assert node_pool(cloud) is None

    api.post(f"/operations/{failed['id']}/retry")
    done = run(api, cloud, {"operationId": failed["id"]})
    assert done["status"] == "SUCCEEDED", done.get("error")
    assert api.call("getAutoscaling", tag=TAG)["enabled"] is False
    with pytest.raises(cloud.client("iam").exceptions.NoSuchEntityException):
        cloud.client("iam").get_role(RoleName=ROLE)
