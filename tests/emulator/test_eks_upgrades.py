"""EKS day-two upgrades in the emulator: UpdateClusterVersion, DescribeClusterVersions, upgrade
insights and add-ons across a control-plane upgrade (docs/emulator.md, "EKS upgrades").

Every call is checked against botocore's EKS model (`call`, `error_of`); time is the fake
clock the tests move.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hypd_local.emulator.eks import EksDurations, EksEmulator
from hypd_local.emulator.eks_catalog import PLATFORM_VERSIONS
from tests.emulator.test_eks import ACCOUNT, REGION, Events, FakeClock, active, call, error_of

UPGRADE = EksDurations().cluster_version_update


@pytest.fixture
def emu(clock: FakeClock, events: Events) -> EksEmulator:
    return EksEmulator(clock, events, ACCOUNT, REGION)


def upgrade(emu: EksEmulator, version: str, **extra: object) -> dict[str, Any]:
    update: dict[str, Any] = call(emu, "UpdateClusterVersion", name="ml", version=version,
                        **extra)["update"]
    return update


def test_a_version_update_is_updating_then_active_at_the_next_minor(emu, clock):
    active(emu, clock, version="1.32")
    update = upgrade(emu, "1.33")
    assert update["type"] == "VersionUpdate"
    assert update["status"] == "InProgress"
    assert update["params"] == [{"type": "Version", "value": "1.33"},
                                {"type": "PlatformVersion", "value": PLATFORM_VERSIONS["1.33"]}]
    cluster = call(emu, "DescribeCluster", name="ml")["cluster"]
    assert (cluster["status"], cluster["version"]) == ("UPDATING", "1.32")
    assert call(emu, "ListUpdates", name="ml")["updateIds"] == [update["id"]]
    clock.advance(UPGRADE - 1)
    assert call(emu, "DescribeCluster", name="ml")["cluster"]["status"] == "UPDATING"
    assert call(emu, "DescribeUpdate", name="ml",
                updateId=update["id"])["update"]["status"] == "InProgress"
    clock.advance(1)
    cluster = call(emu, "DescribeCluster", name="ml")["cluster"]
    assert (cluster["status"], cluster["version"]) == ("ACTIVE", "1.33")
    assert cluster["platformVersion"] == PLATFORM_VERSIONS["1.33"]
    assert call(emu, "DescribeUpdate", name="ml",
                updateId=update["id"])["update"]["status"] == "Successful"


@pytest.mark.parametrize("target", ["1.32", "1.31", "1.34"])
def test_only_the_next_minor_version_is_accepted(emu, clock, target):
    active(emu, clock, version="1.32")
    error = error_of(emu, "UpdateClusterVersion", name="ml", version=target)
    assert error.code == "InvalidParameterException"
    assert error.message == f"Unsupported Kubernetes minor version update from 1.32 to {target}"
    assert call(emu, "DescribeCluster", name="ml")["cluster"]["status"] == "ACTIVE"


def test_a_version_the_catalogue_does_not_offer_is_refused(emu, clock):
    active(emu, clock, version="1.34")
    assert error_of(emu, "UpdateClusterVersion", name="ml",
                    version="1.35").code == "InvalidParameterException"


def test_refused_while_another_update_runs_and_while_not_active(emu, clock):
    call(emu, "CreateCluster", name="ml", roleArn="arn:aws:iam::123456789012:role/eks",
         version="1.32", accessConfig={"authenticationMode": "API"},
         resourcesVpcConfig={"subnetIds": ["subnet-0a", "subnet-0b"]})
    assert error_of(emu, "UpdateClusterVersion", name="ml",
                    version="1.33").code == "ResourceInUseException"  # CREATING
    clock.advance(12 * 60)
    upgrade(emu, "1.33")
    error = error_of(emu, "UpdateClusterVersion", name="ml", version="1.34")
    assert error.code == "ResourceInUseException"
    assert "update in progress" in error.message
    # Nor may another kind of update start meanwhile.
    assert error_of(emu, "UpdateClusterConfig", name="ml",
                    accessConfig={"authenticationMode": "API"}
                    ).code in ("ResourceInUseException", "InvalidParameterException")
    assert error_of(emu, "UpdateClusterVersion", name="nope",
                    version="1.34").code == "ResourceNotFoundException"
    clock.advance(UPGRADE)
    upgrade(emu, "1.34")  # one step at a time: 1.32 -> 1.33 -> 1.34


def test_a_client_request_token_replays_the_update(emu, clock):
    active(emu, clock, version="1.32")
    first = upgrade(emu, "1.33", clientRequestToken="t-1")
    again = upgrade(emu, "1.33", clientRequestToken="t-1")
    assert again["id"] == first["id"]
    assert len(call(emu, "ListUpdates", name="ml")["updateIds"]) == 1
    clock.advance(UPGRADE)
    assert error_of(emu, "UpdateClusterVersion", name="ml", version="1.34",
                    clientRequestToken="t-1").code == "InvalidParameterException"


def test_addons_keep_their_versions_and_incompatible_versions_are_refused(emu, clock):
    active(emu, clock, version="1.32")
    call(emu, "CreateAddon", clusterName="ml", addonName="kube-proxy")
    assert error_of(emu, "CreateAddon", clusterName="ml", addonName="coredns",
                    addonVersion="v1.12.1-eksbuild.3").code == "InvalidParameterException"
    clock.advance(60)
    before = call(emu, "DescribeAddon", clusterName="ml", addonName="kube-proxy")["addon"]
    assert before["addonVersion"] == "v1.32.0-eksbuild.2"
    upgrade(emu, "1.33")
    clock.advance(UPGRADE)
    after = call(emu, "DescribeAddon", clusterName="ml", addonName="kube-proxy")["addon"]
    assert after["addonVersion"] == "v1.32.0-eksbuild.2"  # EKS does not update add-ons
    # A 1.32 build is no update target on 1.33; the 1.33 build is.
    assert error_of(emu, "UpdateAddon", clusterName="ml", addonName="kube-proxy",
                    addonVersion="v1.32.0-eksbuild.1").code == "InvalidParameterException"
    update = call(emu, "UpdateAddon", clusterName="ml", addonName="kube-proxy",
                  addonVersion="v1.33.0-eksbuild.2", resolveConflicts="PRESERVE")["update"]
    assert update["type"] == "AddonUpdate"  # botocore's UpdateType (no AddonVersionUpdate)
    assert {"type": "ResolveConflicts", "value": "PRESERVE"} in update["params"]
    described = call(emu, "DescribeUpdate", name="ml", updateId=update["id"],
                     addonName="kube-proxy")["update"]
    assert described["id"] == update["id"]
    clock.advance(EksDurations().addon_update)
    assert call(emu, "DescribeAddon", clusterName="ml",
                addonName="kube-proxy")["addon"]["addonVersion"] == "v1.33.0-eksbuild.2"


# --------------------------------------------------------------------------- versions


def test_cluster_versions_follow_the_published_calendar_on_the_virtual_clock(emu, clock):
    # the tests' clock: 2026-01-05
    versions = call(emu, "DescribeClusterVersions")["clusterVersions"]
    by_version = {v["clusterVersion"]: v for v in versions}
    assert [v["clusterVersion"] for v in versions] == ["1.34", "1.33", "1.32", "1.31", "1.30",
                                                       "1.29"]
    assert by_version["1.33"]["versionStatus"] == "STANDARD_SUPPORT"
    assert by_version["1.33"]["status"] == "standard-support"
    assert by_version["1.33"]["defaultVersion"] is True
    assert by_version["1.31"]["versionStatus"] == "EXTENDED_SUPPORT"
    assert by_version["1.31"]["endOfStandardSupportDate"] == datetime(2025, 11, 26, tzinfo=UTC)
    assert by_version["1.31"]["endOfExtendedSupportDate"] == datetime(2026, 11, 26, tzinfo=UTC)
    assert by_version["1.34"]["defaultPlatformVersion"] == PLATFORM_VERSIONS["1.34"]
    assert [v["clusterVersion"] for v in call(
        emu, "DescribeClusterVersions", defaultOnly=True)["clusterVersions"]] == ["1.33"]
    assert [v["clusterVersion"] for v in call(
        emu, "DescribeClusterVersions", versionStatus="STANDARD_SUPPORT")["clusterVersions"]
    ] == ["1.34", "1.33", "1.32"]
    # Past 2026-03-23, 1.29 is out of extended support and listed only with includeAll.
    clock.t = datetime(2026, 4, 1, tzinfo=UTC)
    listed = [v["clusterVersion"] for v in call(emu, "DescribeClusterVersions")["clusterVersions"]]
    assert "1.29" not in listed
    everything = call(emu, "DescribeClusterVersions", includeAll=True)["clusterVersions"]
    assert everything[-1]["clusterVersion"] == "1.29"
    assert everything[-1]["versionStatus"] == "UNSUPPORTED"
    assert {v["clusterVersion"]: v["versionStatus"] for v in everything}["1.32"] == (
        "EXTENDED_SUPPORT")


# --------------------------------------------------------------------------- insights


def test_every_cluster_has_passing_upgrade_insights_for_the_next_version(emu, clock):
    active(emu, clock, version="1.32")
    insights = call(emu, "ListInsights", clusterName="ml")["insights"]
    assert len(insights) == 4
    assert {i["category"] for i in insights} == {"UPGRADE_READINESS"}
    assert {i["kubernetesVersion"] for i in insights} == {"1.33"}
    assert {i["insightStatus"]["status"] for i in insights} == {"PASSING"}
    one = call(emu, "DescribeInsight", clusterName="ml", id=insights[0]["id"])["insight"]
    assert one["name"] == "Deprecated APIs removed in Kubernetes v1.33"
    assert error_of(emu, "DescribeInsight", clusterName="ml",
                    id="nope").code == "ResourceNotFoundException"
    assert error_of(emu, "ListInsights", clusterName="nope").code == "ResourceNotFoundException"
    assert call(emu, "ListInsights", clusterName="ml",
                filter={"statuses": ["ERROR"]})["insights"] == []
    assert call(emu, "ListInsights", clusterName="ml",
                filter={"categories": ["MISCONFIGURATION"]})["insights"] == []


DEPRECATION = {
    "usage": "/apis/flowcontrol.apiserver.k8s.io/v1beta3/flowschemas",
    "replacedWith": "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
    "stopServingVersion": "1.32",
    "startServingReplacementVersion": "1.29",
    "clientStats": [{"userAgent": "legacy-controller", "numberOfRequestsLast30Days": 1200,
                     "lastRequestTime": datetime(2026, 1, 4, tzinfo=UTC)}],
}


def test_a_planted_error_finding_blocks_the_upgrade_unless_forced(emu, clock):
    active(emu, clock, version="1.31")
    insight_id = emu.plant_insight(
        "ml", "deprecated-apis", "ERROR", reason="Deprecated API usage detected.",
        recommendation="Update manifests and API clients to use newer Kubernetes APIs.",
        deprecation_details=[DEPRECATION])
    listed = call(emu, "ListInsights", clusterName="ml",
                  filter={"statuses": ["ERROR"]})["insights"]
    assert [i["id"] for i in listed] == [insight_id]
    insight = call(emu, "DescribeInsight", clusterName="ml", id=insight_id)["insight"]
    assert insight["insightStatus"] == {"status": "ERROR",
                                        "reason": "Deprecated API usage detected."}
    assert insight["categorySpecificSummary"]["deprecationDetails"] == [DEPRECATION]
    assert insight["recommendation"].startswith("Update manifests")
    assert insight["lastTransitionTime"] == clock.now()
    error = error_of(emu, "UpdateClusterVersion", name="ml", version="1.32")
    assert error.code == "InvalidStateException"
    assert error.fields == {"clusterName": "ml"}
    assert call(emu, "DescribeCluster", name="ml")["cluster"]["status"] == "ACTIVE"
    # A WARNING does not block; force overrides an ERROR.
    emu.plant_insight("ml", "deprecated-apis", "WARNING")
    emu.plant_insight("ml", "deprecated-apis", "ERROR")
    upgrade(emu, "1.32", force=True)
    clock.advance(UPGRADE)
    # The finding was for 1.32; at 1.32 the insights look at 1.33 and pass again.
    insights = call(emu, "ListInsights", clusterName="ml")["insights"]
    assert {(i["kubernetesVersion"], i["insightStatus"]["status"]) for i in insights} == {
        ("1.33", "PASSING")}


def test_a_warning_does_not_block_and_passing_clears_a_finding(emu, clock):
    active(emu, clock, version="1.32")
    emu.plant_insight("ml", "addon-compatibility", "WARNING",
                      addon_compatibility_details=[{"name": "kube-proxy",
                                                    "compatibleVersions": ["v1.33.0-eksbuild.2"]}])
    emu.plant_insight("ml", "cluster-health", "ERROR")
    emu.plant_insight("ml", "cluster-health", "PASSING")
    upgrade(emu, "1.33")
    with pytest.raises(ValueError, match="no-such-insight"):
        emu.plant_insight("ml", "no-such-insight")


def test_insights_are_refreshed_every_24_hours(emu, clock: FakeClock):
    cluster = active(emu, clock, version="1.32")
    first = call(emu, "ListInsights", clusterName="ml")["insights"][0]
    clock.advance(25 * 3600)
    later = call(emu, "ListInsights", clusterName="ml")["insights"][0]
    assert (later["lastRefreshTime"] - first["lastRefreshTime"]).total_seconds() == 24 * 3600
    assert first["lastTransitionTime"] <= first["lastRefreshTime"]
    assert cluster["createdAt"] <= first["lastRefreshTime"]
