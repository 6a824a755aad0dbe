"""Day-two upgrades end to end (docs/upgrades.md): the versions and blockers a cluster reports,
the plan, each refusal, and an upgrade of the control plane (two minor versions), its add-ons
and the chart, through the REST API on the local cloud, with every version read back from the
emulated services."""

from __future__ import annotations

from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from hypd_cli.demo import follow
from tests.e2e.capacity import BUCKET, CLUSTER, TAG, run, stages
from tests.support import create_body, fail_calls


def upgrades(api: ApiClient) -> dict[str, Any]:
    return dict(api.call("getUpgrades", tag=TAG))


def post(api: ApiClient, *, dry_run: bool = False, **body: Any) -> dict[str, Any]:
    if dry_run:
        return dict(api.call("upgradeCluster", tag=TAG, dryRun="true", body=body))
    return dict(api.call("upgradeCluster", tag=TAG, body=body))


def refused(api: ApiClient, **body: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        post(api, **body)
    return caught.value


@pytest.fixture
def old_cluster(api: ApiClient, cloud: Any) -> dict[str, Any]:
    """A cluster made on Kubernetes 1.32."""
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
    accepted = api.post("/clusters", create_body(kubernetesVersion="1.32"))
    operation = follow(api, cloud, str(accepted["operationId"]), timeout=240)
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    return operation


def addon_versions(cloud: Any) -> dict[str, str]:
    eks = cloud.client("eks")
    return {name: eks.describe_addon(clusterName=CLUSTER, addonName=name)["addon"][
        "addonVersion"] for name in eks.list_addons(clusterName=CLUSTER)["addons"]}


def newest_for(cloud: Any, addon: str, kubernetes: str) -> str:
    found = cloud.client("eks").describe_addon_versions(addonName=addon,
                                                        kubernetesVersion=kubernetes)
    versions = [v["addonVersion"] for v in found["addons"][0]["addonVersions"]
                if any(c["clusterVersion"] == kubernetes for c in v["compatibilities"])]
    return str(versions[0])


def version_updates(cloud: Any) -> list[dict[str, Any]]:
    """The cluster's EKS version updates (UpdateClusterVersion), oldest first."""
    eks = cloud.client("eks")
    updates = [eks.describe_update(name=CLUSTER, updateId=u)["update"]
               for u in eks.list_updates(name=CLUSTER)["updateIds"]]
    return [u for u in updates if u["type"] == "VersionUpdate"]


def test_the_view_names_versions_now_and_what_is_next(
        api: ApiClient, cloud: Any, old_cluster: dict[str, Any]) -> None:
    view = upgrades(api)
    assert view["kubernetes"]["version"] == "1.32"
    assert view["kubernetes"]["next"]["version"] == "1.33"
    assert view["kubernetes"]["available"] == ["1.33", "1.34"]
    assert view["kubernetes"]["support"]["endOfStandardSupport"] == "2026-03-23"
    names = {a["name"] for a in view["addons"]}
    assert names == set(addon_versions(cloud))
    assert view["chart"]["renderedFor"] is not None
    assert [g["instanceGroup"] for g in view["nodes"]] == ["workers"]
    assert view["blockers"] == []
    assert {i["status"] for i in view["insights"]} == {"PASSING"}


def test_the_plan_lists_every_step_and_changes_nothing(
        api: ApiClient, cloud: Any, old_cluster: dict[str, Any]) -> None:
    before = addon_versions(cloud)
    plan = post(api, dry_run=True, kubernetesVersion="1.34", addons="compatible",
                chart="bundled")
    control = [s for s in plan["steps"] if s["stage"] == "control-plane"]
    assert [s["target"]["kubernetesVersion"] for s in control] == ["1.33", "1.34"]
    assert {s["stage"] for s in plan["steps"]} >= {"control-plane", "addons"}
    assert plan["estimateSeconds"] == sum(s["estimateSeconds"] for s in plan["steps"])
    assert plan["startable"] is True
    assert cloud.client("eks").describe_cluster(name=CLUSTER)["cluster"]["version"] == "1.32"
    assert addon_versions(cloud) == before


def test_refusals_name_the_field_or_the_state(
        api: ApiClient, cloud: Any, old_cluster: dict[str, Any]) -> None:
    downgrade = refused(api, kubernetesVersion="1.31")
    assert downgrade.status == 400
    assert "kubernetesVersion" in downgrade.message
    unknown = refused(api, kubernetesVersion="1.40")
    assert unknown.status == 400
    assert "1.35" in unknown.message
    addon = next(iter(addon_versions(cloud)))
    incompatible = refused(api, kubernetesVersion="1.33", addons={addon: "v0.0.1-eksbuild.1"})
    assert incompatible.status == 400
    assert f"addons.{addon}" in incompatible.message
    group = refused(api, nodes={"instanceGroups": ["nope"]})
    assert group.status == 400
    assert "nodes.instanceGroups[0]" in group.message
    cloud.emulation.eks.plant_insight(CLUSTER, "deprecated-apis", "ERROR",
                                      reason="flowcontrol.apiserver.k8s.io/v1beta3 in use")
    blocked = refused(api, kubernetesVersion="1.33")
    assert blocked.status == 409
    assert "flowcontrol" in blocked.message
    assert "force" in blocked.message
    assert any(b["code"] == "UpgradeInsightError" for b in upgrades(api)["blockers"])
    forced = post(api, dry_run=True, kubernetesVersion="1.33", force=True)
    assert forced["startable"] is True
    assert forced["warnings"]
    assert cloud.client("eks").describe_cluster(name=CLUSTER)["cluster"]["version"] == "1.32"


def test_an_upgrade_of_two_minor_versions_with_addons_and_chart(
        api: ApiClient, cloud: Any, old_cluster: dict[str, Any]) -> None:
    accepted = post(api, kubernetesVersion="1.34", addons="compatible", chart="bundled")
    operation = run(api, cloud, accepted)
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert operation["kind"] == "upgrade-cluster"
    assert all(s["status"] == "SUCCEEDED" for s in operation["stages"])
    eks = cloud.client("eks")
    assert eks.describe_cluster(name=CLUSTER)["cluster"]["version"] == "1.34"
    versions = [p["value"] for u in version_updates(cloud) for p in u["params"]
                if p["type"] == "Version"]
    assert versions == ["1.33", "1.34"]
    now = addon_versions(cloud)
    assert now == {name: newest_for(cloud, name, "1.34") for name in now}
    verified = stages(operation)["verify"]["output"]
    assert verified["kubernetesVersion"] == "1.34"
    assert verified["addons"] == now
    assert verified["chart"]["kubernetesVersion"] == "1.34"
    view = upgrades(api)
    assert view["kubernetes"]["version"] == "1.34"
    assert view["chart"]["upToDate"] is True
    assert all(a["compatibleWithCurrent"] for a in view["addons"])


@pytest.mark.parametrize(("stage", "method", "code"), [
    ("control-plane", "update_cluster_version", "InvalidStateException"),
    ("addons", "update_addon", "InvalidParameterException"),
])
def test_a_failed_stage_is_retried_from_where_it_failed(
        api: ApiClient, cloud: Any, old_cluster: dict[str, Any], stage: str, method: str,
        code: str) -> None:
    with fail_calls(cloud, "eks", method, code, times=100):
        accepted = post(api, kubernetesVersion="1.33", addons="compatible", chart="bundled")
        cloud.wait_for_executions(timeout=120)
    failed = api.get(f"/operations/{accepted['operationId']}")
    assert failed["status"] == "FAILED"
    order = ["control-plane", "addons", "chart", "nodes", "verify"]
    states = {s["name"]: s["status"] for s in failed["stages"]}
    assert [states[s] for s in order[:order.index(stage)]] == ["SUCCEEDED"] * order.index(stage)
    assert states[stage] == "FAILED"

    retried = api.post(f"/operations/{accepted['operationId']}/retry")
    assert retried["retries"][0]["resumeFrom"] == stage
    done = follow(api, cloud, str(accepted["operationId"]), timeout=240)
    assert done["status"] == "SUCCEEDED", done.get("error")
    assert cloud.client("eks").describe_cluster(name=CLUSTER)["cluster"]["version"] == "1.33"
    assert [u["status"] for u in version_updates(cloud)] == ["Successful"]
    now = addon_versions(cloud)
    assert now == {name: newest_for(cloud, name, "1.33") for name in now}


def test_a_control_plane_step_that_never_ends_fails_the_stage_and_a_retry_waits_again(
        api: ApiClient, cloud: Any, old_cluster: dict[str, Any]) -> None:
    # EKS keeps the update InProgress for two hours (the policy gives up after one)
    cloud.emulation.eks.set_durations(cluster_version_update=2 * 3600)
    accepted = post(api, kubernetesVersion="1.33")
    failed = run(api, cloud, accepted)
    assert failed["status"] == "FAILED"
    control = stages(failed)["control-plane"]
    assert control["status"] == "FAILED"
    assert control["error"]["code"] == "UpgradeStageTimedOut"
    # the retry finds the same update (the cluster still UPDATING), starts no second one
    api.post(f"/operations/{accepted['operationId']}/retry")
    done = follow(api, cloud, str(accepted["operationId"]), timeout=240)
    assert done["status"] == "SUCCEEDED", done.get("error")
    assert cloud.client("eks").describe_cluster(name=CLUSTER)["cluster"]["version"] == "1.33"
    assert [u["status"] for u in version_updates(cloud)] == ["Successful"]
