"""Task governance's teams: one SageMaker compute quota per team (docs/features.md).

`quota_config` turns a `TeamRequest` into the ComputeQuota fields (pure); `team_view` reads one
back; `advance_team` is one idempotent step of a set-team or delete-team operation: it creates,
updates (with the quota's current version) or deletes the quota and answers whether it is
settled. A quota created before the task governance add-on was ready ends CreateFailed: it is
deleted and created again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from hypd.aws import sagemaker as sagemaker_api
from hypd.clusters.feature_request import TeamRequest
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.features.progress import CHECK_SECONDS, Progress, failed

SETTLED = ("Created", "Updated")


class TeamInput(BaseModel):
    """A set-team or delete-team operation's input (`request` None: delete)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    tag: str
    team: str
    cluster_arn: str
    hyperpod_name: str
    request: TeamRequest | None = None


def namespace_of(team: str) -> str:
    """The Kubernetes namespace task governance makes for a team's quota."""
    return f"hyperpod-ns-{team}"


def quota_config(team: str, request: TeamRequest) -> dict[str, Any]:
    """ComputeQuotaConfig, ComputeQuotaTarget and ActivationState for `request`."""
    sharing: dict[str, Any] = {"Strategy": request.sharing.strategy.value}
    if request.sharing.borrow_limit is not None:
        sharing["BorrowLimit"] = request.sharing.borrow_limit
    target: dict[str, Any] = {"TeamName": team}
    if request.fair_share_weight is not None:
        target["FairShareWeight"] = request.fair_share_weight
    return {
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": [
                {"InstanceType": r.instance_type, "Count": r.count} for r in request.resources
            ],
            "ResourceSharingConfig": sharing,
            "PreemptTeamTasks": request.preempt_team_tasks.value,
        },
        "ComputeQuotaTarget": target,
        "ActivationState": "Enabled" if request.active else "Disabled",
    }


def team_view(quota: Mapping[str, Any]) -> dict[str, Any]:
    """A team as the API shows it, from DescribeComputeQuota (or a summary)."""
    config = quota.get("ComputeQuotaConfig") or {}
    target = quota.get("ComputeQuotaTarget") or {}
    sharing = config.get("ResourceSharingConfig") or {}
    team = str(target.get("TeamName") or quota.get("Name"))
    view: dict[str, Any] = {
        "name": team,
        "status": quota.get("Status"),
        "resources": [
            {"instanceType": r.get("InstanceType"), "count": r.get("Count")}
            for r in config.get("ComputeQuotaResources") or []
        ],
        "sharing": {
            "strategy": sharing.get("Strategy"),
            **({"borrowLimit": sharing["BorrowLimit"]} if "BorrowLimit" in sharing else {}),
        },
        "preemptTeamTasks": config.get("PreemptTeamTasks"),
        "active": quota.get("ActivationState", "Enabled") == "Enabled",
        "namespace": namespace_of(team),
        "queue": f"{namespace_of(team)}-localqueue",
        "quotaId": quota.get("ComputeQuotaId"),
        "quotaArn": quota.get("ComputeQuotaArn"),
    }
    if "FairShareWeight" in target:
        view["fairShareWeight"] = target["FairShareWeight"]
    if quota.get("FailureReason"):
        view["failureReason"] = quota["FailureReason"]
    return view


def find_quota(sagemaker: Any, cluster_arn: str, team: str) -> dict[str, Any] | None:
    """The team's quota (DescribeComputeQuota), or None."""
    for summary in sagemaker_api.list_compute_quotas(sagemaker, cluster_arn):
        name = (summary.get("ComputeQuotaTarget") or {}).get("TeamName") or summary.get("Name")
        if name == team:
            return sagemaker_api.describe_compute_quota(sagemaker, str(summary["ComputeQuotaId"]))
    return None


def matches(quota: Mapping[str, Any], team: str, request: TeamRequest) -> bool:
    """Does the quota already say what `request` asks for?"""
    wanted = quota_config(team, request)
    return all(quota.get(key) == value for key, value in wanted.items())


def advance_team(sagemaker: Any, work: TeamInput) -> Progress:
    """One step toward the team's quota as asked (or gone, for a delete)."""
    action = f"team {work.team} of HyperPod cluster {work.hyperpod_name}"
    quota = find_quota(sagemaker, work.cluster_arn, work.team)
    status = str((quota or {}).get("Status"))
    if work.request is None:
        if quota is None:
            return Progress(True)
        if status != "Deleting":
            sagemaker_api.governance_call(
                sagemaker, "delete_compute_quota", f"deleting the quota of {action}",
                ComputeQuotaId=quota["ComputeQuotaId"])
        return Progress(False, [f"delete quota {quota['ComputeQuotaId']}"], CHECK_SECONDS)
    if quota is None:
        sagemaker_api.governance_call(
            sagemaker, "create_compute_quota", f"creating the quota of {action}",
            Name=work.team, ClusterArn=work.cluster_arn,
            Tags=[{"Key": HYPD_TAG_KEY, "Value": work.tag}],
            **quota_config(work.team, work.request),
        )
        return Progress(False, ["create quota"], CHECK_SECONDS)
    if status == "CreateFailed":
        # Made before task governance was ready: delete it; the next look creates it again.
        sagemaker_api.governance_call(
            sagemaker, "delete_compute_quota", f"deleting the failed quota of {action}",
            ComputeQuotaId=quota["ComputeQuotaId"])
        return Progress(False, ["delete failed quota"], CHECK_SECONDS)
    if status.endswith("Failed"):
        raise failed("taskGovernance", f"team {work.team}",
                     f"its compute quota is {status}: {quota.get('FailureReason')}",
                     awsErrorCode=status)
    if status not in SETTLED:
        return Progress(False, [], CHECK_SECONDS)
    if not matches(quota, work.team, work.request):
        sagemaker_api.governance_call(
            sagemaker, "update_compute_quota", f"updating the quota of {action}",
            ComputeQuotaId=quota["ComputeQuotaId"], TargetVersion=quota["ComputeQuotaVersion"],
            **quota_config(work.team, work.request),
        )
        return Progress(False, ["update quota"], CHECK_SECONDS)
    return Progress(True)
