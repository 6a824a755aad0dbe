"""Discovery: turn the EKS and HyperPod clusters found in an account into cluster records.

Pure logic: the inventory is read by the adapters and the records written by the store.

Rules:
* A HyperPod cluster is linked to the EKS cluster named by its Orchestrator.Eks.ClusterArn.
  HyperPod allows one HyperPod cluster per EKS cluster; a second one is reported as a conflict.
* Each record is anchored on the EKS cluster's ARN (the HyperPod cluster's when its EKS cluster
  is not in this account and Region). An anchor that already has a record keeps its tag.
* A new record's tag is the `hypd:tag` resource tag, else the HyperPod cluster's name, else
  the EKS cluster's name. A tag held by a record of other resources is reported, never taken.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hypd.clusters.models import (
    CLUSTER_TAG_PATTERN,
    HYPD_TAG_KEY,
    Cluster,
    ClusterSource,
    ClusterStatus,
    EksCluster,
    HyperPodCluster,
)

_TAG_RE = re.compile(CLUSTER_TAG_PATTERN)


@dataclass(frozen=True)
class Conflict:
    tag: str | None
    reason: str
    arns: list[str]

    def to_api(self) -> dict[str, object]:
        return {"tag": self.tag, "reason": self.reason, "arns": self.arns}


@dataclass
class DiscoveryPlan:
    clusters: list[Cluster] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Pair:
    eks: EksCluster | None
    hyperpod: HyperPodCluster | None

    @property
    def anchor(self) -> str:
        if self.eks is not None:
            return self.eks.arn
        assert self.hyperpod is not None
        return self.hyperpod.arn

    def names(self) -> set[str]:
        return {c.name for c in (self.eks, self.hyperpod) if c is not None}

    def preferred_tags(self) -> list[str]:
        candidates = [c.tags.get(HYPD_TAG_KEY) for c in (self.hyperpod, self.eks) if c is not None]
        candidates += [c.name for c in (self.hyperpod, self.eks) if c is not None]
        return [tag for tag in candidates if tag]


def pair_clusters(
    eks_clusters: list[EksCluster], hyperpod_clusters: list[HyperPodCluster]
) -> tuple[list[_Pair], list[Conflict]]:
    """Link every HyperPod cluster to its EKS cluster; EKS clusters without one stand alone."""
    eks_by_arn = {cluster.arn: cluster for cluster in eks_clusters}
    pairs: list[_Pair] = []
    conflicts: list[Conflict] = []
    linked: dict[str, HyperPodCluster] = {}
    for hyperpod in sorted(hyperpod_clusters, key=lambda c: c.name):
        eks_arn = hyperpod.eks_cluster_arn
        if eks_arn and eks_arn in linked:
            conflicts.append(
                Conflict(
                    tag=None,
                    reason=(
                        f"HyperPod clusters {linked[eks_arn].name} and {hyperpod.name} both "
                        f"name EKS cluster {eks_arn}; only {linked[eks_arn].name} was recorded"
                    ),
                    arns=[hyperpod.arn, eks_arn],
                )
            )
            continue
        if eks_arn:
            linked[eks_arn] = hyperpod
        pairs.append(_Pair(eks=eks_by_arn.get(eks_arn) if eks_arn else None, hyperpod=hyperpod))
    for eks in sorted(eks_clusters, key=lambda c: c.name):
        if eks.arn not in linked:
            pairs.append(_Pair(eks=eks, hyperpod=None))
    return pairs, conflicts


def plan_discovery(
    eks_clusters: list[EksCluster],
    hyperpod_clusters: list[HyperPodCluster],
    existing: list[Cluster],
    *,
    now: str,
    region: str | None,
    operation_id: str | None,
    only_names: set[str] | None = None,
) -> DiscoveryPlan:
    pairs, conflicts = pair_clusters(eks_clusters, hyperpod_clusters)
    plan = DiscoveryPlan(conflicts=conflicts)
    by_anchor = {cluster.anchor_arn: cluster for cluster in existing}
    tags_taken = {cluster.tag: cluster.anchor_arn for cluster in existing}
    seen_anchors: set[str] = set()

    for pair in pairs:
        seen_anchors.add(pair.anchor)
        if only_names is not None and not (pair.names() & only_names):
            continue
        previous = by_anchor.get(pair.anchor)
        tag = previous.tag if previous else _choose_tag(pair, tags_taken)
        if tag is None:
            plan.conflicts.append(
                Conflict(
                    tag=pair.preferred_tags()[0] if pair.preferred_tags() else None,
                    reason="every candidate tag is invalid or used by other resources",
                    arns=[c.arn for c in (pair.eks, pair.hyperpod) if c is not None],
                )
            )
            continue
        tags_taken[tag] = pair.anchor
        plan.clusters.append(
            Cluster(
                tag=tag,
                source=previous.source if previous else ClusterSource.DISCOVERED,
                region=region,
                anchor_arn=pair.anchor,
                eks=pair.eks,
                hyperpod=pair.hyperpod,
                created_at=previous.created_at if previous else now,
                updated_at=now,
                last_seen_at=now,
                # A cluster hypd creates keeps its status; while its create runs, the record
                # stays that operation's (its retry and failure paths look for it).
                status=previous.status if previous else None,
                last_operation_id=(
                    previous.last_operation_id
                    if previous and previous.status is ClusterStatus.CREATING
                    else operation_id
                ),
            )
        )

    if only_names is None:
        plan.missing = sorted(
            cluster.tag
            for cluster in existing
            if cluster.source is ClusterSource.DISCOVERED and cluster.anchor_arn not in seen_anchors
        )
    return plan


def _choose_tag(pair: _Pair, tags_taken: dict[str, str]) -> str | None:
    for tag in pair.preferred_tags():
        if _TAG_RE.match(tag) and tags_taken.get(tag, pair.anchor) == pair.anchor:
            return tag
    return None
