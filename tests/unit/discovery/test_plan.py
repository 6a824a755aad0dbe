"""hypd.discovery.plan: pairing HyperPod with EKS, choosing tags, reporting conflicts."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hypd.clusters.models import Cluster, ClusterSource, EksCluster, HyperPodCluster
from hypd.discovery.plan import DiscoveryPlan, plan_discovery
from tests.unit.support import REGION, cluster_record, eks, eks_arn, hyperpod, hyperpod_arn

NOW = "2026-01-15T10:00:00.000Z"
OP_ID = "op-" + "d" * 32


def plan(
    eks_clusters: list[EksCluster],
    hyperpod_clusters: list[HyperPodCluster],
    existing: list[Cluster] | None = None,
    **kwargs: Any,
) -> DiscoveryPlan:
    return plan_discovery(
        eks_clusters,
        hyperpod_clusters,
        existing or [],
        now=NOW,
        region=REGION,
        operation_id=OP_ID,
        **kwargs,
    )


def by_tag(result: DiscoveryPlan) -> dict[str, Cluster]:
    return {cluster.tag: cluster for cluster in result.clusters}


# ---------------------------------------------------------------------------- pairing
def test_hyperpod_cluster_is_paired_with_the_eks_cluster_it_orchestrates_on() -> None:
    # Given EKS "train-eks" and HyperPod "train" whose Orchestrator names it
    result = plan([eks("train-eks")], [hyperpod("train", eks_name="train-eks")])
    # Then one record, anchored on the EKS ARN, holds both, tagged with the HyperPod name
    assert [c.tag for c in result.clusters] == ["train"]
    cluster = result.clusters[0]
    assert cluster.anchor_arn == eks_arn("train-eks")
    assert cluster.eks is not None
    assert cluster.eks.name == "train-eks"
    assert cluster.hyperpod is not None
    assert cluster.hyperpod.name == "train"
    assert cluster.source is ClusterSource.DISCOVERED
    assert (cluster.region, cluster.last_operation_id) == (REGION, OP_ID)
    assert cluster.created_at == cluster.updated_at == cluster.last_seen_at == NOW
    assert result.conflicts == []
    assert result.missing == []


def test_eks_cluster_without_hyperpod_stands_alone() -> None:
    result = plan([eks("infer"), eks("train-eks")], [hyperpod("train", eks_name="train-eks")])
    clusters = by_tag(result)
    assert set(clusters) == {"train", "infer"}
    assert clusters["infer"].hyperpod is None
    assert clusters["infer"].anchor_arn == eks_arn("infer")


def test_hyperpod_whose_eks_cluster_is_missing_is_anchored_on_its_own_arn() -> None:
    # Given a HyperPod cluster naming an EKS cluster that is not in the inventory
    result = plan([], [hyperpod("orphan", eks_name="elsewhere")])
    # Then it is recorded alone, anchored on the HyperPod ARN
    cluster = by_tag(result)["orphan"]
    assert cluster.eks is None
    assert cluster.anchor_arn == hyperpod_arn("orphan")


def test_hyperpod_without_orchestrator_is_anchored_on_its_own_arn() -> None:
    result = plan([eks("train")], [hyperpod("solo")])
    clusters = by_tag(result)
    assert clusters["solo"].anchor_arn == hyperpod_arn("solo")
    assert clusters["train"].hyperpod is None


def test_two_hyperpod_clusters_naming_one_eks_cluster_is_a_conflict() -> None:
    # Given HyperPod "alpha" and "beta" both naming EKS "shared"
    result = plan(
        [eks("shared")],
        [hyperpod("beta", eks_name="shared"), hyperpod("alpha", eks_name="shared")],
    )
    # Then the first by name is paired, the second reported, and the EKS cluster used once
    assert [c.tag for c in result.clusters] == ["alpha"]
    assert result.clusters[0].anchor_arn == eks_arn("shared")
    assert len(result.conflicts) == 1
    conflict = result.conflicts[0]
    assert conflict.tag is None
    assert conflict.arns == [hyperpod_arn("beta"), eks_arn("shared")]
    assert "alpha and beta both name EKS cluster" in conflict.reason
    assert conflict.to_api() == {"tag": None, "reason": conflict.reason, "arns": conflict.arns}


# ---------------------------------------------------------------------------- tags
def test_hypd_tag_resource_tag_wins_over_names() -> None:
    result = plan(
        [eks("train-eks")],
        [hyperpod("train", eks_name="train-eks", tags={"hypd:tag": "research"})],
    )
    assert [c.tag for c in result.clusters] == ["research"]


def test_hypd_tag_on_the_eks_cluster_wins_over_names() -> None:
    result = plan(
        [eks("train-eks", tags={"hypd:tag": "prod"})], [hyperpod("train", eks_name="train-eks")]
    )
    assert [c.tag for c in result.clusters] == ["prod"]


def test_hyperpods_hypd_tag_wins_over_the_eks_clusters() -> None:
    result = plan(
        [eks("train-eks", tags={"hypd:tag": "from-eks"})],
        [hyperpod("train", eks_name="train-eks", tags={"hypd:tag": "from-hyperpod"})],
    )
    assert [c.tag for c in result.clusters] == ["from-hyperpod"]


def test_hyperpod_name_wins_over_eks_name() -> None:
    result = plan([eks("train-eks")], [hyperpod("train", eks_name="train-eks")])
    assert [c.tag for c in result.clusters] == ["train"]


def test_invalid_tag_candidates_are_skipped() -> None:
    # Given a hypd:tag that is not a valid cluster tag (space, too long)
    result = plan(
        [eks("a-eks", tags={"hypd:tag": "x" * 101}), eks("b-eks")],
        [hyperpod("a", eks_name="a-eks", tags={"hypd:tag": "my cluster!"})],
    )
    # Then the next valid candidate is used
    assert by_tag(result)["a"].anchor_arn == eks_arn("a-eks")
    assert "b-eks" in by_tag(result)


def test_existing_record_keeps_its_tag_on_rediscovery() -> None:
    # Given a record "legacy" for EKS cluster train-eks, created earlier by hypd
    existing = cluster_record(
        "legacy", eks_arn("train-eks"), source=ClusterSource.CREATED, at="2025-06-01T00:00:00.000Z"
    )
    # When discovery finds it with a hypd:tag and a HyperPod cluster that would suggest others
    result = plan(
        [eks("train-eks", tags={"hypd:tag": "new-name"})],
        [hyperpod("train", eks_name="train-eks")],
        [existing],
    )
    # Then the record keeps its tag, source and creation time; it is refreshed
    cluster = by_tag(result)["legacy"]
    assert [c.tag for c in result.clusters] == ["legacy"]
    assert cluster.source is ClusterSource.CREATED
    assert cluster.created_at == "2025-06-01T00:00:00.000Z"
    assert cluster.updated_at == cluster.last_seen_at == NOW
    assert cluster.hyperpod is not None


def test_a_tag_used_by_other_resources_is_never_taken() -> None:
    # Given a record "train" anchored on other resources
    other = cluster_record("train", eks_arn("old-eks"))
    # When discovery finds HyperPod "train" on EKS "train-eks"
    result = plan([eks("train-eks")], [hyperpod("train", eks_name="train-eks")], [other])
    # Then the next candidate (the EKS name) is used
    assert [c.tag for c in result.clusters] == ["train-eks"]
    assert result.conflicts == []


def test_every_candidate_taken_is_a_conflict() -> None:
    # Given records that hold both names
    existing = [
        cluster_record("train", eks_arn("x-eks")),
        cluster_record("train-eks", eks_arn("y-eks")),
    ]
    # When discovery finds the pair
    result = plan([eks("train-eks")], [hyperpod("train", eks_name="train-eks")], existing)
    # Then it is reported, naming the preferred tag and both ARNs
    assert result.clusters == []
    assert len(result.conflicts) == 1
    conflict = result.conflicts[0]
    assert conflict.tag == "train"
    assert conflict.arns == [eks_arn("train-eks"), hyperpod_arn("train")]
    assert "invalid or used by other resources" in conflict.reason


def test_two_new_pairs_wanting_one_tag_get_distinct_tags() -> None:
    result = plan(
        [eks("a", tags={"hypd:tag": "shared"}), eks("b", tags={"hypd:tag": "shared"})], []
    )
    assert by_tag(result)["shared"].anchor_arn == eks_arn("a")
    assert by_tag(result)["b"].anchor_arn == eks_arn("b")


def test_only_names_limits_the_plan_to_the_named_clusters_and_their_pairs() -> None:
    # Given three clusters and a discovered record that is no longer there
    gone = cluster_record("gone", eks_arn("gone"))
    result = plan(
        [eks("train-eks"), eks("infer"), eks("dev")],
        [hyperpod("train", eks_name="train-eks")],
        [gone],
        only_names={"train-eks", "dev"},
    )
    # Then only the named ones (with their linked cluster) are planned, nothing is missing
    assert sorted(c.tag for c in result.clusters) == ["dev", "train"]
    assert by_tag(result)["train"].hyperpod is not None
    assert result.missing == []


def test_missing_lists_discovered_records_not_seen() -> None:
    # Given two discovered records and one created record, none of them seen now,
    # and a discovered record that is seen
    existing = [
        cluster_record("zeta", eks_arn("zeta")),
        cluster_record("alpha", hyperpod_arn("alpha")),
        cluster_record("made", eks_arn("made"), source=ClusterSource.CREATED),
        cluster_record("here", eks_arn("here")),
    ]
    result = plan([eks("here")], [], existing)
    # Then the unseen discovered ones are missing, sorted; the created one is not
    assert result.missing == ["alpha", "zeta"]
    assert [c.tag for c in result.clusters] == ["here"]


# ---------------------------------------------------------------------------- properties
NAMES = ["a", "b", "c", "d", "e"]
TAG_VALUES = ["a", "b", "x", "y", "", "bad tag", "-bad"]


@st.composite
def inventories(draw: st.DrawFn) -> tuple[list[EksCluster], list[HyperPodCluster], list[Cluster]]:
    tag_of = st.none() | st.sampled_from(TAG_VALUES)

    def tags() -> dict[str, str]:
        value = draw(tag_of)
        return {} if value is None else {"hypd:tag": value}

    eks_names = draw(st.lists(st.sampled_from(NAMES), unique=True))
    hyperpod_names = draw(st.lists(st.sampled_from(NAMES), unique=True))
    eks_clusters = [eks(name, tags=tags()) for name in eks_names]
    hyperpod_clusters = [
        hyperpod(name, eks_name=draw(st.none() | st.sampled_from(NAMES)), tags=tags())
        for name in hyperpod_names
    ]
    anchors = [eks_arn(n) for n in NAMES] + [hyperpod_arn(n) for n in NAMES]
    existing_pairs = draw(
        st.lists(
            st.tuples(st.sampled_from([*NAMES, "x", "y", "z"]), st.sampled_from(anchors)),
            unique_by=(lambda pair: pair[0], lambda pair: pair[1]),
            max_size=4,
        )
    )
    existing = [
        cluster_record(
            tag,
            anchor,
            source=draw(st.sampled_from([ClusterSource.DISCOVERED, ClusterSource.CREATED])),
        )
        for tag, anchor in existing_pairs
    ]
    return eks_clusters, hyperpod_clusters, existing


@settings(max_examples=300, deadline=None, derandomize=True)
@given(inventories())
def test_planning_is_unique_and_stable(
    inventory: tuple[list[EksCluster], list[HyperPodCluster], list[Cluster]],
) -> None:
    eks_clusters, hyperpod_clusters, existing = inventory
    # When discovery plans
    first = plan(eks_clusters, hyperpod_clusters, existing)
    # Then tags and anchors are unique, and no tag of another anchor's record is taken
    tags = [c.tag for c in first.clusters]
    anchors = [c.anchor_arn for c in first.clusters]
    assert len(set(tags)) == len(tags)
    assert len(set(anchors)) == len(anchors)
    existing_anchor = {c.tag: c.anchor_arn for c in existing}
    for cluster in first.clusters:
        assert existing_anchor.get(cluster.tag, cluster.anchor_arn) == cluster.anchor_arn
    # And re-planning with the recorded clusters as `existing` keeps every tag
    planned_anchors = set(anchors)
    recorded = first.clusters + [c for c in existing if c.anchor_arn not in planned_anchors]
    second = plan(eks_clusters, hyperpod_clusters, recorded)
    assert {c.anchor_arn: c.tag for c in second.clusters} == {
        c.anchor_arn: c.tag for c in first.clusters
    }
    assert second.missing == first.missing
