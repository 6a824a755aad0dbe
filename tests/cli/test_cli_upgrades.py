"""``hypd clusters upgrades|upgrade`` against canned answers: the body the flags make, the plan
printed with its estimate and blockers, the view, and the usage errors."""

from __future__ import annotations

from collections.abc import Callable

from hypd_cli.cli import EXIT_OK, EXIT_USAGE
from tests.cli.conftest import CannedApi, RunCli

PLAN = {
    "tag": "demo", "startable": False, "estimateSeconds": 1260, "warnings": ["a note"],
    "steps": [
        {"stage": "control-plane", "name": "kubernetes-1.33",
         "description": "EKS control plane 1.32 -> 1.33", "target": {},
         "estimateSeconds": 600},
        {"stage": "control-plane", "name": "kubernetes-1.34",
         "description": "EKS control plane 1.33 -> 1.34", "target": {},
         "estimateSeconds": 600},
        {"stage": "addons", "name": "addon-vpc-cni", "description": "add-on vpc-cni a -> b",
         "target": {}, "estimateSeconds": 60}],
    "blockers": [{"code": "UpgradeInsightError", "message": "deprecated APIs in use",
                  "action": "migrate them; or send force: true"}],
}


def test_the_flags_make_the_body_and_dry_run_prints_the_plan(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    client = canned(PLAN)
    shown = run_cli("clusters", "upgrade", "demo", "--kubernetes", "1.34", "--addons",
                    "compatible", "--chart", "--group", "gpu", "--batch", "50%",
                    "--wait-between", "120", "--rollback-alarm", "gpu-errors", "--dry-run")
    assert shown.code == EXIT_OK, shown.text
    ((method, path, query, body),) = client.sent
    assert (method, path, query) == ("POST", "/clusters/demo/upgrades", {"dryRun": "true"})
    assert body == {"kubernetesVersion": "1.34", "addons": "compatible", "chart": "bundled",
                    "nodes": {"instanceGroups": ["gpu"],
                              "batch": {"type": "percentage", "value": 50},
                              "waitSeconds": 120, "rollbackAlarms": ["gpu-errors"]}}
    assert "EKS control plane 1.32 -> 1.33" in shown.out
    assert "Estimated: 21 min" in shown.out
    assert "Blocked: deprecated APIs in use (migrate them; or send force: true)" in shown.out


def test_addon_versions_by_name_and_the_view(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    client = canned({"operationId": "op-1", "status": "PENDING", "kind": "upgrade-cluster"})
    started = run_cli("clusters", "upgrade", "demo", "--addons", "vpc-cni=v1.20.0-eksbuild.1")
    assert started.code == EXIT_OK, started.text
    assert client.sent[0][3] == {"addons": {"vpc-cni": "v1.20.0-eksbuild.1"}}
    view = {"tag": "demo", "kubernetes": {
        "version": "1.32", "available": ["1.33"],
        "support": {"version": "1.32", "status": "EXTENDED_SUPPORT",
                    "endOfStandardSupport": "2026-03-23"},
        "next": {"version": "1.33", "status": "STANDARD_SUPPORT",
                 "endOfStandardSupport": "2026-07-29"}},
        "addons": [{"name": "vpc-cni", "version": "v1.18.0", "status": "ACTIVE",
                    "newestCompatible": "v1.19.0", "compatibleWithCurrent": True,
                    "compatibleWithNext": False}],
        "chart": None, "nodes": [], "insights": [], "blockers": [], "warnings": []}
    canned(view)
    shown = run_cli("clusters", "upgrades", "demo")
    assert shown.code == EXIT_OK, shown.text
    assert "Kubernetes 1.32 (extended support, standard until 2026-03-23)" in shown.out
    assert "v1.19.0" in shown.out


def test_usage_errors_name_the_flag(run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    client = canned()
    for args in (["--force"], ["--batch", "half"], ["--addons", "vpc-cni"]):
        refused = run_cli("clusters", "upgrade", "demo", *args)
        assert refused.code == EXIT_USAGE, (args, refused.text)
    assert client.sent == []
