"""EKS adapter."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hypd import clock
from hypd.aws.errors import (
    NETWORK_ERRORS,
    all_pages,
    code_in,
    error_code,
    translate,
    translated,
    unless_not_found,
)
from hypd.clusters.models import EksCluster
from hypd.errors import ConcurrentUpdate, HypdError, PermanentError

NEVER_ACTIVE = frozenset({"PENDING", "CREATING", "FAILED"})
"""The statuses of a cluster whose control plane never came up: EKS gives it no endpoint and
no certificate authority (DescribeCluster), so it has no Kubernetes API."""


class UnsupportedAvailabilityZone(PermanentError):
    """EKS refused a subnet's zone for a control plane (UnsupportedAvailabilityZoneException);
    `valid_zones` are the zones it names as supported for the account."""

    code = "UnsupportedAvailabilityZone"

    @property
    def valid_zones(self) -> list[str]:
        return [str(zone) for zone in self.details.get("validZones") or []]


def list_cluster_names(client: Any) -> list[str]:
    return sorted(all_pages(client, "list_clusters", "clusters", "listing EKS clusters"))


def describe_cluster(client: Any, name: str) -> EksCluster | None:
    """The cluster, or None if it disappeared since it was listed."""
    cluster = unless_not_found(
        lambda: client.describe_cluster(name=name)["cluster"],
        f"describing EKS cluster {name}",
        code_in("ResourceNotFoundException"),
    )
    return None if cluster is None else to_model(cluster)


def to_model(cluster: dict[str, Any]) -> EksCluster:
    vpc = cluster.get("resourcesVpcConfig") or {}
    created = cluster.get("createdAt")
    return EksCluster(
        name=cluster["name"],
        arn=cluster["arn"],
        status=cluster.get("status", "UNKNOWN"),
        version=cluster.get("version"),
        endpoint=cluster.get("endpoint"),
        created_at=clock.isoformat(created) if isinstance(created, datetime) else None,
        authentication_mode=(cluster.get("accessConfig") or {}).get("authenticationMode"),
        vpc_id=vpc.get("vpcId"),
        subnet_ids=list(vpc.get("subnetIds") or []),
        tags=dict(cluster.get("tags") or {}),
    )


# ---------------------------------------------------------------------------- create pipeline
# Raw EKS shapes (DescribeCluster's ``cluster``, DescribeAddon's ``addon``): the create pipeline
# needs the endpoint and CA data, which the EksCluster model does not carry.
_NOT_FOUND = code_in("ResourceNotFoundException")
_IN_USE = code_in("ResourceInUseException")


def read_cluster(client: Any, name: str) -> dict[str, Any]:
    """DescribeCluster's ``cluster``; `hypd.errors.AwsResourceNotFound` when there is none."""
    cluster: dict[str, Any] = translated(
        lambda: client.describe_cluster(name=name)["cluster"], f"describing EKS cluster {name}")
    return cluster


def find_cluster(client: Any, name: str) -> dict[str, Any] | None:
    """DescribeCluster's ``cluster``, or None when there is no cluster of that name."""
    cluster: dict[str, Any] | None = unless_not_found(
        lambda: client.describe_cluster(name=name)["cluster"],
        f"describing EKS cluster {name}",
        _NOT_FOUND,
    )
    return cluster


def create_cluster(client: Any, params: dict[str, Any]) -> dict[str, Any] | None:
    """CreateCluster's ``cluster``; None when a cluster of that name already exists.

    Raises:
        UnsupportedAvailabilityZone: a subnet is in a zone EKS does not support (the error's
            ``validZones`` member, botocore puts it at the top of the error response).
    """
    name = params["name"]

    def create() -> Any:
        try:
            return client.create_cluster(**params)["cluster"]
        except ClientError as exc:
            if error_code(exc) != "UnsupportedAvailabilityZoneException":
                raise
            raise UnsupportedAvailabilityZone(
                f"creating EKS cluster {name}: {exc.response['Error'].get('Message', '')}",
                details={
                    "awsErrorCode": error_code(exc),
                    "clusterName": name,
                    "validZones": list(exc.response.get("validZones") or []),
                },
            ) from exc

    cluster: dict[str, Any] | None = unless_not_found(
        create, f"creating EKS cluster {name}", _IN_USE
    )
    return cluster


def delete_cluster(client: Any, name: str) -> bool:
    """Start deleting the cluster (already gone, or already being deleted: nothing to do).
    False when EKS refuses for now (ResourceInUseException: it is being created or updated):
    the caller looks again later."""
    try:
        unless_not_found(lambda: client.delete_cluster(name=name),
                         f"deleting EKS cluster {name}", _NOT_FOUND)
    except HypdError as exc:
        if exc.details.get("awsErrorCode") == "ResourceInUseException":
            return False
        raise
    return True


def create_access_entry(
    client: Any, cluster_name: str, principal_arn: str, client_token: str | None = None
) -> bool:
    """A STANDARD access entry for `principal_arn`; False when it already existed."""
    params: dict[str, Any] = {
        "clusterName": cluster_name,
        "principalArn": principal_arn,
        "type": "STANDARD",
    }
    if client_token:
        params["clientRequestToken"] = client_token
    created = unless_not_found(
        lambda: client.create_access_entry(**params),
        f"creating the access entry of {principal_arn} on EKS cluster {cluster_name}",
        _IN_USE,
    )
    return created is not None


def access_policy_arn(partition: str, name: str) -> str:
    """The ARN of the EKS access policy `name` in `partition`: AWS owns them (account `aws`),
    one set per partition (`arn:aws-cn:eks::aws:cluster-access-policy/...` in China)."""
    return f"arn:{partition}:eks::aws:cluster-access-policy/{name}"


def associated_policies(client: Any, cluster_name: str, principal_arn: str) -> list[dict[str, Any]]:
    """The access policies associated with `principal_arn`'s access entry."""
    return all_pages(
        client,
        "list_associated_access_policies",
        "associatedAccessPolicies",
        f"listing the access policies of {principal_arn} on EKS cluster {cluster_name}",
        clusterName=cluster_name,
        principalArn=principal_arn,
    )


def associate_cluster_policy(
    client: Any, cluster_name: str, principal_arn: str, policy_arn: str
) -> None:
    """Associate `policy_arn` with cluster scope (re-associating is accepted by EKS)."""
    unless_not_found(
        lambda: client.associate_access_policy(
            clusterName=cluster_name,
            principalArn=principal_arn,
            policyArn=policy_arn,
            accessScope={"type": "cluster"},
        ),
        f"associating {policy_arn} with {principal_arn} on EKS cluster {cluster_name}",
        _IN_USE,
    )


def find_addon(client: Any, cluster_name: str, addon_name: str) -> dict[str, Any] | None:
    """DescribeAddon's ``addon``, or None when the add-on is not installed.

    A missing *cluster* is also ResourceNotFoundException; callers read the cluster first.
    """
    addon: dict[str, Any] | None = unless_not_found(
        lambda: client.describe_addon(clusterName=cluster_name, addonName=addon_name)["addon"],
        f"describing add-on {addon_name} of EKS cluster {cluster_name}",
        _NOT_FOUND,
    )
    return addon


def default_addon_version(client: Any, addon_name: str, kubernetes_version: str) -> str | None:
    """The version CreateAddon would install by default on `kubernetes_version` (the one
    DescribeAddonVersions marks ``defaultVersion`` for it), else the newest compatible one,
    else None (the add-on is not offered for that Kubernetes version)."""
    infos = all_pages(
        client,
        "describe_addon_versions",
        "addons",
        f"listing the versions of add-on {addon_name} for Kubernetes {kubernetes_version}",
        addonName=addon_name,
        kubernetesVersion=kubernetes_version,
    )
    compatible: list[str] = []
    for info in infos:
        if info.get("addonName") != addon_name:
            continue
        for version in info.get("addonVersions") or []:
            for compatibility in version.get("compatibilities") or []:
                if compatibility.get("clusterVersion") != kubernetes_version:
                    continue
                if compatibility.get("defaultVersion"):
                    return str(version["addonVersion"])
                compatible.append(str(version["addonVersion"]))
    return compatible[0] if compatible else None


def create_addon(client: Any, params: dict[str, Any]) -> dict[str, Any] | None:
    """CreateAddon's ``addon``; None when the add-on already exists."""
    addon: dict[str, Any] | None = unless_not_found(
        lambda: client.create_addon(**params)["addon"],
        f"creating add-on {params['addonName']} on EKS cluster {params['clusterName']}",
        _IN_USE,
    )
    return addon


def list_addon_names(client: Any, cluster_name: str) -> list[str]:
    return sorted(
        all_pages(
            client, "list_addons", "addons", f"listing add-ons of EKS cluster {cluster_name}",
            clusterName=cluster_name,
        )
    )


def delete_addon(client: Any, cluster_name: str, addon_name: str) -> bool:
    """Start deleting the add-on (its software goes too: ``preserve`` false); False when it was
    not there."""
    answer = unless_not_found(
        lambda: client.delete_addon(
            clusterName=cluster_name, addonName=addon_name, preserve=False
        ),
        f"deleting add-on {addon_name} of EKS cluster {cluster_name}",
        _NOT_FOUND,
    )
    return answer is not None


def update_addon(client: Any, params: dict[str, Any]) -> None:
    """UpdateAddon. Raises ConcurrentUpdate while the add-on is being created or updated
    (ResourceInUseException: retried)."""
    action = f"updating add-on {params['addonName']} of EKS cluster {params['clusterName']}"
    try:
        client.update_addon(**params)
    except ClientError as exc:
        if error_code(exc) == "ResourceInUseException":
            raise ConcurrentUpdate(
                f"{action}: {exc.response['Error'].get('Message', '')}",
                details={"awsErrorCode": error_code(exc)},
            ) from exc
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc


def list_pod_identity_associations(client: Any, cluster_name: str) -> list[dict[str, Any]]:
    """The summaries (namespace, serviceAccount, associationId, ownerArn...) of the cluster's
    pod identity associations."""
    return all_pages(
        client,
        "list_pod_identity_associations",
        "associations",
        f"listing pod identity associations of EKS cluster {cluster_name}",
        clusterName=cluster_name,
    )


def describe_pod_identity_association(
    client: Any, cluster_name: str, association_id: str
) -> dict[str, Any] | None:
    association: dict[str, Any] | None = unless_not_found(
        lambda: client.describe_pod_identity_association(
            clusterName=cluster_name, associationId=association_id
        )["association"],
        f"describing pod identity association {association_id} of EKS cluster {cluster_name}",
        _NOT_FOUND,
    )
    return association


def create_pod_identity_association(client: Any, params: dict[str, Any]) -> dict[str, Any] | None:
    """CreatePodIdentityAssociation's ``association``; None when the service account has one."""
    association: dict[str, Any] | None = unless_not_found(
        lambda: client.create_pod_identity_association(**params)["association"],
        f"creating the pod identity association of {params['namespace']}/"
        f"{params['serviceAccount']} on EKS cluster {params['clusterName']}",
        _IN_USE,
    )
    return association


def delete_pod_identity_association(client: Any, cluster_name: str, association_id: str) -> None:
    unless_not_found(
        lambda: client.delete_pod_identity_association(
            clusterName=cluster_name, associationId=association_id
        ),
        f"deleting pod identity association {association_id} of EKS cluster {cluster_name}",
        _NOT_FOUND,
    )


def update_pod_identity_association(
    client: Any, cluster_name: str, association_id: str, role_arn: str
) -> None:
    translated(
        lambda: client.update_pod_identity_association(
            clusterName=cluster_name, associationId=association_id, roleArn=role_arn
        ),
        f"updating pod identity association {association_id} of EKS cluster {cluster_name}",
    )


# ---------------------------------------------------------------------------- upgrades
class UpgradeRefused(PermanentError):
    """EKS refused UpdateClusterVersion: a version it does not offer or not the next minor
    (InvalidParameterException), or upgrade readiness errors (InvalidStateException)."""

    code = "UpgradeRefused"


def describe_cluster_versions(client: Any) -> list[dict[str, Any]]:
    """Every Kubernetes version EKS offers (``clusterType`` eks), newest first."""
    return all_pages(client, "describe_cluster_versions", "clusterVersions",
                     "listing the Kubernetes versions EKS offers", clusterType="eks")


def upgrade_insights(client: Any, cluster_name: str) -> list[dict[str, Any]]:
    """The cluster's UPGRADE_READINESS insights; those not PASSING in full (DescribeInsight,
    for what they name), the others as ListInsights summarises them."""
    action = f"reading the upgrade insights of EKS cluster {cluster_name}"
    summaries = all_pages(client, "list_insights", "insights", action,
                          clusterName=cluster_name,
                          filter={"categories": ["UPGRADE_READINESS"]})
    def describe(insight_id: str) -> dict[str, Any]:
        return dict(client.describe_insight(clusterName=cluster_name, id=insight_id)["insight"])

    insights = []
    for summary in summaries:
        status = (summary.get("insightStatus") or {}).get("status")
        if status in ("PASSING", None):
            insights.append(summary)
            continue
        insights.append(translated(functools.partial(describe, str(summary["id"])), action))
    return insights


def addon_versions(client: Any, addon_name: str) -> dict[str, list[str]]:
    """The add-on's versions compatible with each Kubernetes version (DescribeAddonVersions
    in the order EKS lists them: newest first)."""
    infos = all_pages(client, "describe_addon_versions", "addons",
                      f"listing the versions of add-on {addon_name}", addonName=addon_name)
    compatible: dict[str, list[str]] = {}
    for info in infos:
        if info.get("addonName") != addon_name:
            continue
        for version in info.get("addonVersions") or []:
            for compatibility in version.get("compatibilities") or []:
                kubernetes = compatibility.get("clusterVersion")
                if kubernetes:
                    compatible.setdefault(str(kubernetes), []).append(
                        str(version["addonVersion"]))
    return compatible


def update_cluster_version(client: Any, cluster_name: str, version: str, *, token: str,
                           force: bool = False) -> dict[str, Any]:
    """UpdateClusterVersion's ``update`` (the same update again for the same ``token``).

    Raises:
        ConcurrentUpdate: another update is in progress (ResourceInUseException; retried).
        UpgradeRefused: EKS refuses this version, or its readiness checks failed.
    """
    action = f"upgrading EKS cluster {cluster_name} to Kubernetes {version}"
    try:
        answer = client.update_cluster_version(name=cluster_name, version=version,
                                               clientRequestToken=token, force=force)
    except ClientError as exc:
        code = error_code(exc)
        message = f"{action}: {exc.response['Error'].get('Message', '')}"
        if code == "ResourceInUseException":
            raise ConcurrentUpdate(message, details={"awsErrorCode": code}) from exc
        if code in ("InvalidParameterException", "InvalidStateException",
                    "InvalidRequestException"):
            raise UpgradeRefused(message, details={"awsErrorCode": code}) from exc
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc
    return dict(answer["update"])

