"""EKS adapter."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hypd import clock
from hypd.aws.errors import NETWORK_ERRORS, error_code, translate
from hypd.clusters.models import EksCluster


def list_cluster_names(client: Any) -> list[str]:
    names: list[str] = []
    try:
        for page in client.get_paginator("list_clusters").paginate():
            names.extend(page.get("clusters", []))
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, "listing EKS clusters") from exc
    return sorted(names)


def describe_cluster(client: Any, name: str) -> EksCluster | None:
    """The cluster, or None if it disappeared since it was listed."""
    try:
        cluster = client.describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return None
        raise translate(exc, f"describing EKS cluster {name}") from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, f"describing EKS cluster {name}") from exc
    return to_model(cluster)


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
