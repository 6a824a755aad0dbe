"""EKS upgrades through the local cloud's endpoint: botocore's own client against the
emulator (routing, serialisation, IAM), and the ``eks/insight`` fault route that plants an
upgrade-insight finding (docs/emulator.md, "EKS upgrades")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from hypd_local import LocalCloud
from tests.local_cloud.conftest import FIXTURE_TEMPLATE
from tests.local_cloud.test_emulation import active_eks


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(FIXTURE_TEMPLATE) as running:
        yield running


def test_an_upgrade_blocked_by_a_planted_finding_then_forced(cloud: LocalCloud) -> None:
    eks = cloud.client("eks")
    versions = eks.describe_cluster_versions()["clusterVersions"]
    assert {v["versionStatus"] for v in versions} <= {"STANDARD_SUPPORT", "EXTENDED_SUPPORT"}
    cluster, _ = active_eks(cloud, "upgrading")
    target = f"1.{int(cluster['version'].split('.')[1]) + 1}"
    answer = requests.post(f"{cloud.local_url}/_local/faults/eks/insight", json={
        "clusterName": "upgrading", "insight": "deprecated-apis", "status": "ERROR",
        "deprecationDetails": [{"usage": "/apis/example.k8s.io/v1beta1/widgets",
                                "replacedWith": "/apis/example.k8s.io/v1/widgets",
                                "stopServingVersion": target}]}, timeout=10)
    assert answer.status_code == 201, answer.text
    insight_id = answer.json()["id"]
    insight = eks.describe_insight(clusterName="upgrading", id=insight_id)["insight"]
    assert insight["insightStatus"]["status"] == "ERROR"
    assert insight["categorySpecificSummary"]["deprecationDetails"][0]["stopServingVersion"] == (
        target)
    with pytest.raises(eks.exceptions.InvalidStateException):
        eks.update_cluster_version(name="upgrading", version=target)
    update = eks.update_cluster_version(name="upgrading", version=target, force=True)["update"]
    assert update["type"] == "VersionUpdate"
    assert eks.describe_cluster(name="upgrading")["cluster"]["status"] == "UPDATING"
    cloud.clock.advance(10 * 60)
    upgraded = eks.describe_cluster(name="upgrading")["cluster"]
    assert (upgraded["status"], upgraded["version"]) == ("ACTIVE", target)
    assert eks.describe_update(name="upgrading",
                               updateId=update["id"])["update"]["status"] == "Successful"
    bad = requests.post(f"{cloud.local_url}/_local/faults/eks/insight",
                        json={"clusterName": "upgrading", "status": "BROKEN"}, timeout=10)
    assert bad.status_code == 400
    assert "status" in bad.json()["message"]
