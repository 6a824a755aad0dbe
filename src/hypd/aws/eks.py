"""EKS adapter."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hypd import clock
from hypd.aws.errors import all_pages, code_in, unless_not_found
from hypd.clusters.models import EksCluster


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
