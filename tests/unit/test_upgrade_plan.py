"""The upgrade plan (hypd.upgrades.plan): the order of its steps, each blocker, the batches
and the estimate, from facts made by hand."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from hypd.upgrades.inputs import BatchSize, BatchType, UpgradeRequest
from hypd.upgrades.model import (
    Addon,
    Chart,
    Disruption,
    Insight,
    KubernetesVersion,
    NodeGroup,
    Plan,
    UpgradeFacts,
)
from hypd.upgrades.plan import (
    ADDON_UPDATE_SECONDS,
    CONTROL_PLANE_STEP_SECONDS,
    NODE_BATCH_SECONDS,
    batch_sizes,
    control_plane_path,
    plan,
)
from hypd.upgrades.tasks import check_read_back, deployment_config
from hypd.upgrades.views import upgrades_view

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def facts(**changes: Any) -> UpgradeFacts:
    base = UpgradeFacts(
        tag="demo", eks_name="hypd-demo", hyperpod_name="hypd-demo",
        kubernetes_version="1.32", eks_status="ACTIVE", now=NOW,
        versions=tuple(KubernetesVersion(v, s) for v, s in (
            ("1.34", "STANDARD_SUPPORT"), ("1.33", "STANDARD_SUPPORT"),
            ("1.32", "EXTENDED_SUPPORT"), ("1.28", "UNSUPPORTED"))),
        insights=(Insight("i1", "Deprecated APIs removed in Kubernetes v1.33", "1.33",
                          "PASSING"),),
        addons=(Addon("vpc-cni", "v1.18.0", "ACTIVE", {
            "1.32": ("v1.19.0", "v1.18.0"), "1.33": ("v1.19.0", "v1.18.0"),
            "1.34": ("v1.20.0", "v1.19.0")}),
                Addon("coredns", "v1.11.1", "ACTIVE", {
                    "1.32": ("v1.11.1",), "1.34": ("v1.11.4", "v1.11.3")})),
        chart=Chart(bundled="hyperpod-dependencies-0.2.0",
                    installed="hyperpod-dependencies-0.1.0", rendered_for="1.32"),
        groups=(NodeGroup("gpu", 4, "1.2.0", image_status="UpdateAvailable"),
                NodeGroup("cpu", 2, "1.3.0", image_status="UpToDate")),
        hyperpod_status="InService",
    )
    return replace(base, **changes)


def request(**body: Any) -> UpgradeRequest:
    return UpgradeRequest.model_validate(body)


def codes(found: Plan) -> list[str]:
    return [b.code for b in found.blockers]


def test_two_minor_versions_are_two_control_plane_steps_then_addons_chart_nodes() -> None:
    found = plan(facts(), request(kubernetesVersion="1.34", addons="compatible",
                                  chart="bundled", nodes={"batch": {"type": "count",
                                                                    "value": 2}}))
    assert found.blockers == ()
    assert [(s.stage, s.name) for s in found.steps] == [
        ("control-plane", "kubernetes-1.33"), ("control-plane", "kubernetes-1.34"),
        ("addons", "addon-coredns"), ("addons", "addon-vpc-cni"),
        ("chart", "chart"), ("nodes", "gpu-batch-1"), ("nodes", "gpu-batch-2")]
    assert [s.target for s in found.of("addons")] == [
        {"addon": "coredns", "version": "v1.11.4"}, {"addon": "vpc-cni", "version": "v1.20.0"}]
    assert found.estimate_seconds == (2 * CONTROL_PLANE_STEP_SECONDS + ADDON_UPDATE_SECONDS
                                      + 2 * NODE_BATCH_SECONDS)
    assert Plan.from_json(found.to_json()) == found


def test_the_control_plane_path_is_one_minor_at_a_time() -> None:
    assert control_plane_path("1.31", "1.34") == ["1.32", "1.33", "1.34"]
    assert control_plane_path("1.33", "1.33") == []


@pytest.mark.parametrize(("version", "code"), [
    ("1.31", "DowngradeNotSupported"), ("1.35", "KubernetesVersionNotOffered")])
def test_a_version_eks_cannot_move_to_blocks_naming_the_field(version: str, code: str) -> None:
    found = plan(facts(), request(kubernetesVersion=version))
    assert codes(found) == [code]
    assert found.blockers[0].field == "kubernetesVersion"
    assert found.steps == ()


def test_an_insight_in_error_blocks_unless_forced() -> None:
    failing = Insight("i1", "Deprecated APIs removed in Kubernetes v1.33", "1.33", "ERROR",
                      reason="deprecated API use", recommendation="migrate the manifests",
                      findings=("/apis/flowcontrol.apiserver.k8s.io/v1beta2 is removed",))
    blocked = plan(facts(insights=(failing,)), request(kubernetesVersion="1.33"))
    assert codes(blocked) == ["UpgradeInsightError"]
    assert "flowcontrol" in blocked.blockers[0].message
    assert "force" in blocked.blockers[0].action
    forced = plan(facts(insights=(failing,)), request(kubernetesVersion="1.33", force=True))
    assert forced.blockers == ()
    assert "force" in forced.warnings[0]


def test_an_insight_about_a_later_version_does_not_block_the_next() -> None:
    later = Insight("i2", "x", "1.34", "ERROR")
    assert plan(facts(insights=(later,)), request(kubernetesVersion="1.33")).blockers == ()


def test_an_addon_version_not_compatible_with_the_target_is_refused() -> None:
    found = plan(facts(), request(kubernetesVersion="1.34", addons={"vpc-cni": "v1.18.0"}))
    assert codes(found) == ["AddonVersionIncompatible"]
    assert found.blockers[0].field == "addons.vpc-cni"
    assert "v1.20.0" in found.blockers[0].action
    missing = plan(facts(), request(addons={"nope": "v1"}))
    assert codes(missing) == ["AddonNotInstalled"]


def test_compatible_with_an_addon_that_has_no_version_for_the_target_blocks() -> None:
    found = plan(facts(), request(kubernetesVersion="1.33", addons="compatible"))
    assert codes(found) == ["AddonHasNoCompatibleVersion"]  # coredns lists nothing for 1.33


def test_an_upgrade_without_addons_warns_of_the_incompatible_ones() -> None:
    found = plan(facts(), request(kubernetesVersion="1.34"))
    assert found.blockers == ()
    assert any("vpc-cni" in w and "compatible" in w for w in found.warnings)


def test_state_blockers_say_what_to_do() -> None:
    found = plan(facts(running_operation=("op-1", "set-features"), eks_status="UPDATING",
                       disruptions=(Disruption("ml", "llama"),)),
                 request(kubernetesVersion="1.33", nodes={}))
    assert codes(found) == ["OperationRunning", "ClusterNotActive", "DisruptionBudgetBlocks"]
    assert "hypd ops watch op-1" in found.blockers[0].action
    assert "kubectl -n ml edit pdb llama" in found.blockers[2].action


def test_nodes_skip_groups_up_to_date_and_refuse_unknown_ones() -> None:
    found = plan(facts(), request(nodes={"instanceGroups": ["gpu", "cpu"]}))
    assert {s.target["instanceGroup"] for s in found.of("nodes")} == {"gpu"}
    assert any("cpu is up to date" in w for w in found.warnings)
    unknown = plan(facts(), request(nodes={"instanceGroups": ["tpu"]}))
    assert unknown.blockers[0].field == "nodes.instanceGroups[0]"
    busy = plan(facts(groups=(NodeGroup("gpu", 4, update_status="InProgress"),)),
                request(nodes={}))
    assert codes(busy) == ["NodesUpdating"]


@pytest.mark.parametrize(("nodes", "batch", "sizes"), [
    (4, BatchSize(type=BatchType.COUNT, value=2), [2, 2]),
    (5, BatchSize(type=BatchType.COUNT, value=2), [2, 2, 1]),
    (5, BatchSize(type=BatchType.COUNT, value=9), [5]),
    (10, BatchSize(type=BatchType.PERCENTAGE, value=25), [2, 2, 2, 2, 2]),
    (3, BatchSize(type=BatchType.PERCENTAGE, value=10), [1, 1, 1]),
    (2, BatchSize(type=BatchType.PERCENTAGE, value=50), [1, 1]),
    (0, BatchSize(type=BatchType.COUNT, value=1), []),
])
def test_batches(nodes: int, batch: BatchSize, sizes: list[int]) -> None:
    assert batch_sizes(nodes, batch) == sizes


def test_the_wait_between_batches_is_in_the_estimate_but_not_after_the_last() -> None:
    found = plan(facts(), request(nodes={"batch": {"type": "percentage", "value": 50},
                                         "waitSeconds": 300}))
    assert [s.estimate_seconds for s in found.of("nodes")] == [
        NODE_BATCH_SECONDS + 300, NODE_BATCH_SECONDS]


def test_the_deployment_configuration_is_hyperpods() -> None:
    from hypd.upgrades.inputs import UpgradeInput

    work = UpgradeInput(tag="demo", eks_name="hypd-demo", plan={}, request=request(nodes={
        "batch": {"type": "percentage", "value": 50}, "waitSeconds": 120,
        "rollbackAlarms": ["gpu-errors"]}))
    assert deployment_config(work) == {
        "RollingUpdatePolicy": {"MaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE",
                                                     "Value": 50}},
        "WaitIntervalInSeconds": 120,
        "AutoRollbackConfiguration": [{"AlarmName": "gpu-errors"}]}


@pytest.mark.parametrize("body", [
    {}, {"kubernetesVersion": "1.34.1"}, {"addons": {}}, {"addons": "newest"},
    {"nodes": {"batch": {"type": "percentage", "value": 101}}},
    {"nodes": {"waitSeconds": 3601}}, {"nodes": {"rollbackAlarms": []}},
    {"nodes": {"instanceGroups": ["a", "a"]}}, {"chart": "latest"}, {"force": "yes"},
])
def test_bad_requests_are_refused_by_the_model(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        UpgradeRequest.model_validate(body)


def test_the_read_back_names_what_differs() -> None:
    found = plan(facts(), request(kubernetesVersion="1.34", addons="compatible",
                                  chart="bundled"))
    read = {"kubernetesVersion": "1.33", "addons": {"vpc-cni": "v1.20.0",
                                                    "coredns": "v1.11.1"},
            "chart": {"release": "hyperpod-dependencies-0.2.0", "kubernetesVersion": "1.34"},
            "nodes": []}
    assert check_read_back(found, read) == [
        "Kubernetes is 1.33, not 1.34", "add-on coredns is v1.11.1, not v1.11.4"]


def test_the_view_reports_the_next_version_and_its_blockers() -> None:
    view = upgrades_view(facts())
    assert view["kubernetes"]["next"]["version"] == "1.33"
    assert view["kubernetes"]["available"] == ["1.33", "1.34"]
    assert view["blockers"][0]["code"] == "AddonHasNoCompatibleVersion"
    assert [g["updateAvailable"] for g in view["nodes"]] == [True, False]
    assert view["chart"]["upToDate"] is False


def test_a_discovered_cluster_is_not_upgraded_by_hypds_roles() -> None:
    found = plan(facts(created_by_hypd=False), request(kubernetesVersion="1.33"))
    assert codes(found) == ["NotCreatedByHypd"]
    assert "hypd-demo" in found.blockers[0].message
