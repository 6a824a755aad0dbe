"""Seeding EKS and linked HyperPod clusters through plain boto3 calls."""

from __future__ import annotations

from hypd_local import LocalCloud
from hypd_local.seed import ClusterSeed, InstanceGroupSeed, seed_clusters


def test_seeded_hyperpod_clusters_point_at_their_eks_cluster(cloud: LocalCloud) -> None:
    seeded = seed_clusters(cloud, [
        "alpha",
        ClusterSeed("beta", instance_groups=(InstanceGroupSeed("gpu", "ml.p5.48xlarge", 1),),
                    tags={"team": "research"}),
        ClusterSeed("gamma", hyperpod=False),
    ])

    eks, sagemaker = cloud.client("eks"), cloud.client("sagemaker")
    assert set(eks.list_clusters()["clusters"]) >= {"alpha-eks", "beta-eks", "gamma-eks"}
    names = {c["ClusterName"] for c in sagemaker.list_clusters()["ClusterSummaries"]}
    assert {"alpha", "beta"} <= names
    assert "gamma" not in names
    beta = sagemaker.describe_cluster(ClusterName="beta")
    assert beta["Orchestrator"]["Eks"]["ClusterArn"] == seeded[1].eks_arn
    assert beta["NodeRecovery"] == "Automatic"
    assert beta["InstanceGroups"][0]["InstanceType"] == "ml.p5.48xlarge"
    assert seeded[2].hyperpod_arn is None
    assert eks.describe_cluster(name="beta-eks")["cluster"]["tags"] == {"team": "research"}


def test_seeding_with_a_boto3_session(cloud: LocalCloud) -> None:
    (seeded,) = seed_clusters(cloud.boto3_session(), ["delta"])

    assert seeded.hyperpod_arn is not None
    # A plain session cannot move virtual time: the cluster is still being created...
    sagemaker = cloud.client("sagemaker")
    assert sagemaker.describe_cluster(ClusterName="delta")["ClusterStatus"] == "Creating"
    # ...until time passes, as on AWS.
    cloud.clock.advance(3600)
    assert sagemaker.describe_cluster(ClusterName="delta")["ClusterStatus"] == "InService"
