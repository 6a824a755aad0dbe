"""The add-on planner, one installation step over a stubbed EKS client, failure handling and the
add-on wait policy."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hypd.create.addons import (
    ADDON_WAIT,
    AWAITING_NODES,
    CATALOG,
    MISSING,
    AddonFailed,
    AddonSpec,
    AddonUnavailable,
    advance_addons,
    create_addon_params,
    next_check_seconds,
    plan_addons,
    status_of,
)
from hypd.errors import AwsThrottled
from tests.unit.support import ACCOUNT, REGION

CLUSTER = "hypd-demo"
NOW = datetime(2026, 1, 15, 10, 0, tzinfo=UTC)
ROLE = f"arn:aws:iam::{ACCOUNT}:role/hypd-s3-csi"
FSX_ROLE = f"arn:aws:iam::{ACCOUNT}:role/hypd-fsx-csi"


@pytest.fixture
def eks() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "eks", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def names(plan: list[AddonSpec]) -> list[str]:
    return [spec.name for spec in plan]


# ---------------------------------------------------------------------------- planner
def test_the_s3_plan_is_the_base_addons_then_the_mountpoint_driver() -> None:
    plan = plan_addons("s3")
    assert names(plan) == [
        "vpc-cni",
        "kube-proxy",
        "coredns",
        "eks-pod-identity-agent",
        "aws-mountpoint-s3-csi-driver",
    ]
    assert plan[-1].service_account == "s3-csi-driver-sa"
    assert plan[-1].prerequisites == ("eks-pod-identity-agent", "coredns")


def test_the_fsx_plan_ends_with_the_fsx_driver() -> None:
    plan = plan_addons("fsx")
    assert names(plan)[-1] == "aws-fsx-csi-driver"
    assert "aws-mountpoint-s3-csi-driver" not in names(plan)
    assert plan[-1].service_account == "fsx-csi-controller-sa"


def test_cert_manager_and_metrics_server_come_only_with_features_that_need_them() -> None:
    assert not {"cert-manager", "metrics-server"} & set(names(plan_addons("s3")))
    training = names(plan_addons("s3", extras=["amazon-sagemaker-hyperpod-training-operator"]))
    assert training[-2:] == ["cert-manager", "amazon-sagemaker-hyperpod-training-operator"]
    inference = names(plan_addons("s3", extras=["amazon-sagemaker-hyperpod-inference"]))
    assert {"aws-fsx-csi-driver", "metrics-server", "cert-manager"} <= set(inference)
    assert inference[-1] == "amazon-sagemaker-hyperpod-inference"


@pytest.mark.parametrize("storage", ["s3", "fsx"])
def test_every_plan_is_in_dependency_order(storage: str) -> None:
    extras = [name for name in CATALOG if name.startswith("amazon-sagemaker")]
    plan = names(plan_addons(storage, extras=extras))
    assert len(plan) == len(set(plan))
    for index, name in enumerate(plan):
        assert set(CATALOG[name].prerequisites) <= set(plan[:index])


def test_unknown_storage_and_addons_are_refused() -> None:
    with pytest.raises(ValueError, match="storage kind"):
        plan_addons("ebs")
    with pytest.raises(ValueError, match="unknown add-on"):
        plan_addons("s3", extras=["nope"])


def test_the_create_request_overwrites_and_carries_the_pod_identity() -> None:
    csi = CATALOG["aws-mountpoint-s3-csi-driver"]
    assert create_addon_params(
        csi,
        cluster_name=CLUSTER,
        version="v2.0.0-eksbuild.1",
        pod_identity_role_arn=ROLE,
        client_token="op-1-addons",
    ) == {
        "clusterName": CLUSTER,
        "addonName": csi.name,
        "addonVersion": "v2.0.0-eksbuild.1",
        "resolveConflicts": "OVERWRITE",
        "clientRequestToken": "op-1-addons-aws-mountpoint-s3-csi-driver",
        "podIdentityAssociations": [{"serviceAccount": "s3-csi-driver-sa", "roleArn": ROLE}],
    }
    plain = create_addon_params(
        CATALOG["coredns"],
        cluster_name=CLUSTER,
        version="v1",
        pod_identity_role_arn=ROLE,
        client_token=None,
    )
    assert "podIdentityAssociations" not in plain
    assert "clientRequestToken" not in plain


# ---------------------------------------------------------------------------- statuses
def addon(
    name: str, status: str, issues: list[dict[str, Any]] | None = None, age: float = 0.0
) -> dict[str, Any]:
    return {
        "addonName": name,
        "clusterName": CLUSTER,
        "status": status,
        "addonVersion": "v1.0.0-eksbuild.1",
        "createdAt": NOW - timedelta(seconds=age),
        "health": {"issues": issues or []},
    }


def issue(code: str, message: str = "") -> dict[str, Any]:
    return {"code": code, "message": message or f"{code} happened", "resourceIds": []}


@pytest.mark.parametrize("status", ["CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED"])
def test_failed_statuses_raise_addon_failed(status: str) -> None:
    with pytest.raises(AddonFailed, match=f"add-on coredns is {status}") as failed:
        status_of(
            "coredns",
            addon("coredns", status, [issue("AccessDenied", "no role")]),
            awaiting_nodes=True,
        )
    assert "AccessDenied: no role" in failed.value.message
    assert failed.value.details["awsErrorCode"] == "AccessDenied"


def test_degraded_with_issues_fails_unless_it_only_lacks_nodes() -> None:
    lacking = addon("coredns", "DEGRADED", [issue("InsufficientNumberOfReplicas")])
    assert status_of("coredns", lacking, awaiting_nodes=True).status == AWAITING_NODES
    assert status_of("coredns", lacking, awaiting_nodes=True).settled
    with pytest.raises(AddonFailed, match="InsufficientNumberOfReplicas"):
        status_of("coredns", lacking, awaiting_nodes=False)
    mixed = addon(
        "coredns",
        "DEGRADED",
        [issue("InsufficientNumberOfReplicas"), issue("ConfigurationConflict")],
    )
    with pytest.raises(AddonFailed, match="ConfigurationConflict"):
        status_of("coredns", mixed, awaiting_nodes=True)


def test_degraded_without_issues_and_creating_are_waited_for() -> None:
    assert not status_of("coredns", addon("coredns", "DEGRADED"), awaiting_nodes=True).settled
    assert not status_of("coredns", addon("coredns", "CREATING"), awaiting_nodes=True).settled
    assert status_of("coredns", None, awaiting_nodes=True).status == MISSING


# ---------------------------------------------------------------------------- one step
def missing(stub: Stubber, name: str) -> None:
    stub.add_client_error(
        "describe_addon",
        "ResourceNotFoundException",
        "No addon",
        404,
        expected_params={"clusterName": CLUSTER, "addonName": name},
    )


def present(stub: Stubber, name: str, status: str, **kwargs: Any) -> None:
    stub.add_response(
        "describe_addon",
        {"addon": addon(name, status, **kwargs)},
        {"clusterName": CLUSTER, "addonName": name},
    )


def versions(stub: Stubber, name: str, default: str = "v2", kubernetes: str = "1.33") -> None:
    stub.add_response(
        "describe_addon_versions",
        {
            "addons": [
                {
                    "addonName": name,
                    "addonVersions": [
                        {
                            "addonVersion": "v3",
                            "compatibilities": [
                                {"clusterVersion": kubernetes, "defaultVersion": False}
                            ],
                        },
                        {
                            "addonVersion": default,
                            "compatibilities": [
                                {"clusterVersion": kubernetes, "defaultVersion": True}
                            ],
                        },
                    ],
                }
            ]
        },
        {"addonName": name, "kubernetesVersion": kubernetes},
    )


def created(stub: Stubber, name: str, version: str = "v2", **extra: Any) -> None:
    params = {
        "clusterName": CLUSTER,
        "addonName": name,
        "addonVersion": version,
        "resolveConflicts": "OVERWRITE",
        "clientRequestToken": f"op-1-addons-{name}",
        **extra,
    }
    stub.add_response("create_addon", {"addon": addon(name, "CREATING")}, params)


def step(client: Any, storage: str = "s3", **kwargs: Any) -> Any:
    kwargs.setdefault("version_for", "1.33")
    return advance_addons(
        client, CLUSTER, plan_addons(storage), client_token="op-1-addons", now=NOW, **kwargs
    )


def test_the_first_step_creates_the_addons_without_prerequisites(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    for name in names(plan_addons("s3")):
        missing(stub, name)
    versions(stub, "vpc-cni")
    created(stub, "vpc-cni")
    versions(stub, "kube-proxy")
    created(stub, "kube-proxy")

    progress = step(client)

    assert progress.created == ("vpc-cni", "kube-proxy")
    assert progress.statuses == {
        "vpc-cni": "CREATING",
        "kube-proxy": "CREATING",
        "coredns": MISSING,
        "eks-pod-identity-agent": MISSING,
        "aws-mountpoint-s3-csi-driver": MISSING,
    }
    assert not progress.done
    assert progress.next_check_seconds == ADDON_WAIT.first_look_seconds
    summary = progress.summary()
    assert summary["created"] == ["vpc-cni", "kube-proxy"]
    assert summary["nextCheckSeconds"] == 60


def test_the_kubernetes_version_is_read_from_the_cluster_when_not_given(
    eks: tuple[Any, Stubber],
) -> None:
    client, stub = eks
    for name in names(plan_addons("s3")):
        missing(stub, name)
    stub.add_response(
        "describe_cluster",
        {
            "cluster": {
                "name": CLUSTER,
                "arn": "arn:aws:eks:us-west-2:1:cluster/x",
                "status": "ACTIVE",
                "version": "1.31",
            }
        },
        {"name": CLUSTER},
    )
    versions(stub, "vpc-cni", kubernetes="1.31")
    created(stub, "vpc-cni")
    versions(stub, "kube-proxy", kubernetes="1.31")
    created(stub, "kube-proxy")

    assert step(client, version_for=None).created == ("vpc-cni", "kube-proxy")


def test_later_addons_start_when_their_prerequisites_are_settled(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    present(stub, "vpc-cni", "ACTIVE", age=70)
    present(stub, "kube-proxy", "ACTIVE", age=70)
    present(stub, "coredns", "DEGRADED", issues=[issue("InsufficientNumberOfReplicas")], age=70)
    present(stub, "eks-pod-identity-agent", "ACTIVE", age=70)
    missing(stub, "aws-mountpoint-s3-csi-driver")
    versions(stub, "aws-mountpoint-s3-csi-driver")
    created(
        stub,
        "aws-mountpoint-s3-csi-driver",
        podIdentityAssociations=[{"serviceAccount": "s3-csi-driver-sa", "roleArn": ROLE}],
    )

    progress = step(client, pod_identity_roles={"aws-mountpoint-s3-csi-driver": ROLE,
                                                "aws-fsx-csi-driver": FSX_ROLE})

    assert progress.created == ("aws-mountpoint-s3-csi-driver",)
    assert progress.awaiting_nodes == ["coredns"]


def test_each_csi_driver_gets_its_own_pod_identity_role(eks: tuple[Any, Stubber]) -> None:
    # Given FSx storage and a role for each CSI driver
    client, stub = eks
    for name in ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"):
        present(stub, name, "ACTIVE", age=70)
    missing(stub, "aws-fsx-csi-driver")
    versions(stub, "aws-fsx-csi-driver")
    # Then the FSx driver's service account gets the FSx role (the stub checks the request)
    created(
        stub,
        "aws-fsx-csi-driver",
        podIdentityAssociations=[{"serviceAccount": "fsx-csi-controller-sa",
                                  "roleArn": FSX_ROLE}],
    )

    progress = step(client, "fsx", pod_identity_roles={"aws-mountpoint-s3-csi-driver": ROLE,
                                                       "aws-fsx-csi-driver": FSX_ROLE})

    assert progress.created == ("aws-fsx-csi-driver",)


def test_nothing_is_created_while_prerequisites_are_still_creating(
    eks: tuple[Any, Stubber],
) -> None:
    client, stub = eks
    present(stub, "vpc-cni", "CREATING", age=20)
    present(stub, "kube-proxy", "ACTIVE", age=70)
    for name in ("coredns", "eks-pod-identity-agent", "aws-mountpoint-s3-csi-driver"):
        missing(stub, name)

    progress = step(client)

    assert progress.created == ()
    assert progress.next_check_seconds == 40  # vpc-cni's expected end


def test_all_settled_is_done(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    for name in names(plan_addons("fsx")):
        present(stub, name, "ACTIVE", age=300)
    progress = step(client, "fsx")
    assert progress.done
    assert progress.summary()["nextCheckSeconds"] == 0


def test_an_addon_created_meanwhile_is_read_back(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    for name in names(plan_addons("s3")):
        if name in ("vpc-cni", "kube-proxy"):
            present(stub, name, "ACTIVE", age=70)
        else:
            missing(stub, name)
    versions(stub, "coredns")
    stub.add_client_error("create_addon", "ResourceInUseException", "Addon already exists.", 409)
    present(stub, "coredns", "CREATING")
    versions(stub, "eks-pod-identity-agent")
    created(stub, "eks-pod-identity-agent")

    progress = step(client)
    assert progress.statuses["coredns"] == "CREATING"
    assert progress.created == ("coredns", "eks-pod-identity-agent")


def test_an_addon_without_a_version_for_the_cluster_is_unavailable(
    eks: tuple[Any, Stubber],
) -> None:
    client, stub = eks
    for name in names(plan_addons("s3")):
        missing(stub, name)
    stub.add_response(
        "describe_addon_versions",
        {"addons": []},
        {"addonName": "vpc-cni", "kubernetesVersion": "1.33"},
    )
    with pytest.raises(AddonUnavailable, match="vpc-cni"):
        step(client)


def test_a_failed_addon_stops_the_step(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    present(stub, "vpc-cni", "CREATE_FAILED", issues=[issue("AddonPermissionFailure", "denied")])
    with pytest.raises(AddonFailed, match="vpc-cni is CREATE_FAILED: AddonPermissionFailure"):
        step(client)


def test_throttling_is_temporary(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    stub.add_client_error("describe_addon", "ThrottlingException", "slow down", 429)
    with pytest.raises(AwsThrottled):
        step(client)


def test_a_plan_without_its_prerequisites_is_refused(eks: tuple[Any, Stubber]) -> None:
    client, _stub = eks
    with pytest.raises(ValueError, match="without its prerequisites"):
        advance_addons(client, CLUSTER, [CATALOG["coredns"]])


# ---------------------------------------------------------------------------- wait policy
def test_addons_are_first_looked_at_after_a_minute_then_every_15_s() -> None:
    assert next_check_seconds(0) == 60
    assert next_check_seconds(45) == 15
    assert next_check_seconds(60) == 15
    assert next_check_seconds(9 * 60) == 15
    assert next_check_seconds(10 * 60) == 30
    assert ADDON_WAIT.overdue(30 * 60)
