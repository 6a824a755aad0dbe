"""HyperPod task governance in the emulator: scheduler configs and compute quotas, their life
cycles on the virtual clock, versions, the task governance add-on trap and the refusals."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from hypd_local.emulator.errors import (
    AwsError,
    ConflictException,
    ResourceNotFound,
    ValidationException,
)
from hypd_local.emulator.hyperpod import HyperPodDurations, HyperPodEmulator
from hypd_local.emulator.hyperpod_governance import TASK_GOVERNANCE_ADDON
from hypd_local.emulator.validation import validate
from tests.emulator.test_hyperpod_support import (
    ACCOUNT,
    EKS_ARN,
    REGION,
    Checked,
    FakeClock,
    cluster_request,
    group,
    make,
    sagemaker_model,
)

D = HyperPodDurations()
POLICY = {"PriorityClasses": [{"Name": "inference", "Weight": 100},
                              {"Name": "training", "Weight": 50}],
          "FairShare": "Enabled", "IdleResourceSharing": "Enabled"}


class Governance:
    """An emulator with one InService EKS cluster ``hp1`` and an add-on table to play with."""

    def __init__(self, addon: str | None = "ACTIVE", **durations: timedelta) -> None:
        self.addons: dict[tuple[str, str], str | None] = {(EKS_ARN, TASK_GOVERNANCE_ADDON): addon}
        self.emu, self.api, self.clock, _events = make(
            HyperPodDurations(**durations) if durations else None,
            addon_lookup=lambda arn, name: self.addons.get((arn, name)),
            caller_arn=lambda: f"arn:aws:iam::{ACCOUNT}:role/admin",
        )
        self.cluster = self.api.create_cluster(**cluster_request(groups=[
            group(), group("cpu", 1, "ml.m5.xlarge")]))["ClusterArn"]
        self.clock.advance(hours=1)

    def addon(self, status: str | None) -> None:
        self.addons[(EKS_ARN, TASK_GOVERNANCE_ADDON)] = status

    def policy(self, name: str = "policy", **extra: Any) -> str:
        extra.setdefault("SchedulerConfig", POLICY)
        return str(self.api.create_cluster_scheduler_config(
            Name=name, ClusterArn=self.cluster, **extra)["ClusterSchedulerConfigId"])

    def quota(self, team: str = "team-a", name: str | None = None, **extra: Any) -> str:
        extra.setdefault("ComputeQuotaConfig", {
            "ComputeQuotaResources": [{"InstanceType": "ml.g5.8xlarge", "Count": 1}],
            "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
            "PreemptTeamTasks": "LowerPriority"})
        return str(self.api.create_compute_quota(
            Name=name or team, ClusterArn=self.cluster,
            ComputeQuotaTarget={"TeamName": team, "FairShareWeight": 10},
            **extra)["ComputeQuotaId"])

    def status(self, ident: str) -> str:
        kind = self.emu._governed[ident].kind
        if kind == "compute-quota":
            return str(self.api.describe_compute_quota(ComputeQuotaId=ident)["Status"])
        return str(self.api.describe_cluster_scheduler_config(
            ClusterSchedulerConfigId=ident)["Status"])


def test_a_scheduler_config_is_creating_then_created_with_its_arn_and_version() -> None:
    g = Governance()
    created = g.api.create_cluster_scheduler_config(
        Name="policy", ClusterArn=g.cluster, SchedulerConfig=POLICY, Description="prio",
        Tags=[{"Key": "hypd:tag", "Value": "t1"}])
    ident = created["ClusterSchedulerConfigId"]
    assert created["ClusterSchedulerConfigArn"] == (
        f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster-scheduler-config/{ident}")
    described = g.api.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
    assert described["Status"] == "Creating"
    assert described["ClusterSchedulerConfigVersion"] == 1
    assert described["SchedulerConfig"] == POLICY
    assert described["Description"] == "prio"
    assert described["ClusterArn"] == g.cluster
    assert described["CreatedBy"] == {"IamIdentity": {"Arn": f"arn:aws:iam::{ACCOUNT}:role/admin"}}
    assert g.emu.next_due() == g.clock.t + D.governance_create
    g.clock.advance(seconds=D.governance_create.total_seconds() - 1)
    assert g.status(ident) == "Creating"
    g.clock.advance(seconds=1)
    assert g.status(ident) == "Created"
    assert g.emu.next_due() is None
    assert g.api.list_tags(ResourceArn=created["ClusterSchedulerConfigArn"])["Tags"] == [
        {"Key": "hypd:tag", "Value": "t1"}]


def test_durations_are_configurable() -> None:
    g = Governance(governance_create=timedelta(minutes=10), governance_update=timedelta(minutes=3),
                   governance_delete=timedelta(minutes=2))
    ident = g.quota()
    g.clock.advance(minutes=9)
    assert g.status(ident) == "Creating"
    g.clock.advance(minutes=1)
    assert g.status(ident) == "Created"
    g.emu.set_durations(governance_update=timedelta(seconds=5))
    g.api.update_compute_quota(ComputeQuotaId=ident, TargetVersion=1, ActivationState="Disabled")
    g.clock.advance(seconds=5)
    assert g.status(ident) == "Updated"


def test_updates_need_the_current_version_and_each_adds_one() -> None:
    g = Governance()
    ident = g.policy()
    with pytest.raises(ConflictException, match="is Creating; it can be updated only when"):
        g.api.update_cluster_scheduler_config(ClusterSchedulerConfigId=ident, TargetVersion=1,
                                              Description="too early")
    g.clock.advance(minutes=1)
    with pytest.raises(ConflictException, match="TargetVersion 2 is not the current version 1"):
        g.api.update_cluster_scheduler_config(ClusterSchedulerConfigId=ident, TargetVersion=2,
                                              Description="wrong version")
    updated = g.api.update_cluster_scheduler_config(
        ClusterSchedulerConfigId=ident, TargetVersion=1,
        SchedulerConfig={"FairShare": "Disabled"})
    assert updated["ClusterSchedulerConfigVersion"] == 2
    assert g.status(ident) == "Updating"
    with pytest.raises(ConflictException, match="is Updating"):
        g.api.update_cluster_scheduler_config(ClusterSchedulerConfigId=ident, TargetVersion=2,
                                              Description="while updating")
    g.clock.advance(seconds=D.governance_update.total_seconds())
    current = g.api.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
    assert (current["Status"], current["ClusterSchedulerConfigVersion"]) == ("Updated", 2)
    assert current["SchedulerConfig"] == {"FairShare": "Disabled"}
    assert current["LastModifiedTime"] > current["CreationTime"]
    first = g.api.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident,
                                                    ClusterSchedulerConfigVersion=1)
    assert (first["ClusterSchedulerConfigVersion"], first["SchedulerConfig"]) == (1, POLICY)
    with pytest.raises(ResourceNotFound, match="Version 3 of cluster policy"):
        g.api.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident,
                                                ClusterSchedulerConfigVersion=3)
    g.api.update_cluster_scheduler_config(ClusterSchedulerConfigId=ident, TargetVersion=2,
                                          Description="third")
    g.clock.advance(minutes=1)
    third = g.api.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
    assert third["ClusterSchedulerConfigVersion"] == 3
    assert third["Description"] == "third"
    assert third["SchedulerConfig"] == {"FairShare": "Disabled"}  # unsent: kept


def test_deleted_is_gone_but_listed_when_asked_for() -> None:
    g = Governance()
    ident = g.policy()
    g.clock.advance(minutes=1)
    g.api.delete_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
    assert g.status(ident) == "Deleting"
    g.api.delete_cluster_scheduler_config(ClusterSchedulerConfigId=ident)  # again: no change
    g.clock.advance(seconds=D.governance_delete.total_seconds())
    with pytest.raises(ResourceNotFound, match=f"Cluster policy '{ident}' not found"):
        g.api.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
    with pytest.raises(ResourceNotFound):
        g.api.delete_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
    with pytest.raises(ResourceNotFound):
        g.api.update_cluster_scheduler_config(ClusterSchedulerConfigId=ident, TargetVersion=1)
    assert g.api.list_cluster_scheduler_configs()["ClusterSchedulerConfigSummaries"] == []
    deleted = g.api.list_cluster_scheduler_configs(Status="Deleted")[
        "ClusterSchedulerConfigSummaries"]
    assert [(d["ClusterSchedulerConfigId"], d["Status"]) for d in deleted] == [(ident, "Deleted")]


def test_a_config_created_before_the_addon_is_active_ends_create_failed() -> None:
    # The documented trap: it must be deleted and created again once the add-on is ACTIVE.
    g = Governance(addon="CREATING")
    ident = g.policy()
    g.clock.advance(minutes=1)
    failed = g.api.describe_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
    assert failed["Status"] == "CreateFailed"
    assert failed["FailureReason"] == (
        f"The task governance add-on {TASK_GOVERNANCE_ADDON} is CREATING, not ACTIVE on EKS "
        "cluster 'hp-eks'. Install the add-on and wait until it is ACTIVE, then delete this "
        "resource and create it again.")
    g.addon("ACTIVE")
    with pytest.raises(ConflictException, match="already has a cluster policy"):
        g.policy("again")
    with pytest.raises(ConflictException, match="is CreateFailed"):
        g.api.update_cluster_scheduler_config(ClusterSchedulerConfigId=ident, TargetVersion=1)
    g.api.delete_cluster_scheduler_config(ClusterSchedulerConfigId=ident)
    with pytest.raises(ConflictException, match="Deleting"):
        g.policy("again")  # Deleting still counts
    g.clock.advance(minutes=1)
    again = g.policy("again")
    g.clock.advance(minutes=1)
    assert g.status(again) == "Created"


def test_the_addon_is_judged_when_asked_and_when_the_creation_finishes() -> None:
    g = Governance(addon="CREATING")
    early = g.quota()
    g.clock.advance(seconds=30)
    g.addon("ACTIVE")  # installed before the creation finished: too late all the same
    g.clock.advance(seconds=30)
    assert g.status(early) == "CreateFailed"
    ident = g.quota("team-b")
    g.clock.advance(seconds=30)
    g.addon(None)  # removed while the creation was under way
    g.clock.advance(seconds=30)
    described = g.api.describe_compute_quota(ComputeQuotaId=ident)
    assert described["Status"] == "CreateFailed"
    assert "is not installed on EKS cluster 'hp-eks'" in described["FailureReason"]


def test_refusals_of_a_cluster() -> None:
    g = Governance()
    unknown = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdefabcdef"
    with pytest.raises(ResourceNotFound, match=r"Cluster 'arn:.*abcdefabcdef' not found"):
        g.api.create_cluster_scheduler_config(Name="p", ClusterArn=unknown,
                                              SchedulerConfig=POLICY)
    with pytest.raises(ResourceNotFound):
        g.api.create_compute_quota(Name="q", ClusterArn=unknown, ComputeQuotaConfig={},
                                   ComputeQuotaTarget={"TeamName": "a"})
    request = cluster_request("slurm")
    del request["Orchestrator"]
    slurm = g.api.create_cluster(**request)["ClusterArn"]
    with pytest.raises(ValidationException, match="orchestrated by Amazon EKS; cluster 'slurm'"):
        g.api.create_cluster_scheduler_config(Name="p", ClusterArn=slurm,
                                              SchedulerConfig=POLICY)


def test_one_scheduler_config_per_cluster() -> None:
    g = Governance()
    first = g.policy()
    with pytest.raises(ConflictException) as refused:
        g.policy("second")
    assert refused.value.message == (
        f"Cluster 'hp1' already has a cluster policy ('policy', {first}, Creating); delete it "
        "before creating another.")


def test_a_team_and_a_quota_name_are_unique_per_cluster() -> None:
    g = Governance()
    first = g.quota("team-a")
    with pytest.raises(ConflictException, match="Team 'team-a' already has a compute quota"):
        g.quota("team-a", name="other-name")
    with pytest.raises(ConflictException, match="A compute quota named 'team-a' already exists"):
        g.quota("team-b", name="team-a")
    second = g.quota("team-b")
    g.clock.advance(minutes=1)
    with pytest.raises(ConflictException, match="Team 'team-a'"):
        g.api.update_compute_quota(ComputeQuotaId=second, TargetVersion=1,
                                   ComputeQuotaTarget={"TeamName": "team-a"})
    g.api.delete_compute_quota(ComputeQuotaId=first)
    g.clock.advance(minutes=1)
    g.quota("team-a")  # the team is free again once its quota is Deleted


def test_quota_instance_types_must_be_the_clusters() -> None:
    g = Governance()
    with pytest.raises(ValidationException) as refused:
        g.quota(ComputeQuotaConfig={"ComputeQuotaResources": [
            {"InstanceType": "ml.g5.8xlarge", "Count": 1},
            {"InstanceType": "ml.p5.48xlarge", "Accelerators": 8}]})
    assert refused.value.message == (
        "ComputeQuotaConfig.ComputeQuotaResources[1].InstanceType: ml.p5.48xlarge is not the "
        "instance type of an instance group of cluster 'hp1' (ml.g5.8xlarge, ml.m5.xlarge).")
    with pytest.raises(ValidationException, match=r"AbsoluteBorrowLimits\[0\].InstanceType"):
        g.quota(ComputeQuotaConfig={"ResourceSharingConfig": {
            "Strategy": "LendAndBorrow",
            "AbsoluteBorrowLimits": [{"InstanceType": "ml.trn1.32xlarge", "Count": 1}]}})
    g.quota(ComputeQuotaConfig={"ComputeQuotaResources": [
        {"InstanceType": "ml.m5.xlarge", "VCpu": 2.0, "MemoryInGiB": 8.0}]})


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r["ComputeQuotaTarget"].update(TeamName="Team_A"),
     "ComputeQuotaTarget.TeamName 'Team_A' must match the pattern"),
    (lambda r: r["ComputeQuotaTarget"].update(FairShareWeight=101),
     "ComputeQuotaTarget.FairShareWeight must be an integer from 0 to 100, not 101."),
])
def test_direct_calls_are_checked_like_the_model(change: Any, message: str) -> None:
    g = Governance()
    request: dict[str, Any] = {"Name": "q", "ClusterArn": g.cluster, "ComputeQuotaConfig": {},
                               "ComputeQuotaTarget": {"TeamName": "team-a"}}
    change(request)
    with pytest.raises(ValidationException, match=message):
        g.emu.create_compute_quota(request)  # not through Checked: the model would refuse it


def test_priority_classes_are_checked() -> None:
    g = Governance()
    with pytest.raises(ValidationException,
                       match=r"PriorityClasses\[1\].Weight must be an integer from 0 to 100"):
        g.emu.create_cluster_scheduler_config({
            "Name": "p", "ClusterArn": g.cluster, "SchedulerConfig": {"PriorityClasses": [
                {"Name": "a", "Weight": 1}, {"Name": "b", "Weight": 101}]}})
    with pytest.raises(ValidationException, match="priority class 'a' is given more than once"):
        g.policy(SchedulerConfig={"PriorityClasses": [{"Name": "a", "Weight": 1},
                                                      {"Name": "a", "Weight": 2}]})


def test_the_middleware_validation_names_the_members() -> None:
    model = sagemaker_model()
    cluster = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdefabcdef"
    with pytest.raises(AwsError) as refused:
        validate(model, "CreateComputeQuota", {
            "Name": "q", "ClusterArn": cluster, "ComputeQuotaConfig": {},
            "ComputeQuotaTarget": {"TeamName": "Team_A", "FairShareWeight": 101}})
    assert refused.value.code == "ValidationException"
    assert "'ComputeQuotaTarget.TeamName'" in refused.value.message
    assert "'ComputeQuotaTarget.FairShareWeight'" in refused.value.message
    with pytest.raises(AwsError, match=r"SchedulerConfig.PriorityClasses\[0\].Weight"):
        validate(model, "CreateClusterSchedulerConfig", {
            "Name": "p", "ClusterArn": cluster,
            "SchedulerConfig": {"PriorityClasses": [{"Name": "a", "Weight": -1}]}})


def test_listing_filters_sorts_and_pages() -> None:
    g = Governance()
    ids = []
    for team in ("c-team", "a-team", "b-team"):
        ids.append(g.quota(team))
        g.clock.advance(seconds=10)
    rows = g.api.list_compute_quotas()["ComputeQuotaSummaries"]
    assert [r["ComputeQuotaId"] for r in rows] == list(reversed(ids))  # newest first
    by_name = g.api.list_compute_quotas(SortBy="Name", SortOrder="Ascending")
    assert [r["Name"] for r in by_name["ComputeQuotaSummaries"]] == ["a-team", "b-team", "c-team"]
    assert [r["Name"] for r in g.api.list_compute_quotas(NameContains="b")[
        "ComputeQuotaSummaries"]] == ["b-team"]
    assert g.api.list_compute_quotas(ClusterArn=g.cluster.replace(
        g.cluster[-12:], "abcdefabcdef"))["ComputeQuotaSummaries"] == []
    first = g.api.list_compute_quotas(MaxResults=2)
    assert len(first["ComputeQuotaSummaries"]) == 2
    rest = g.api.list_compute_quotas(MaxResults=2, NextToken=first["NextToken"])
    assert [r["ComputeQuotaId"] for r in rest["ComputeQuotaSummaries"]] == [ids[0]]
    assert "NextToken" not in rest
    g.clock.advance(seconds=40)  # the first two (created 70 and 60 s ago) are Created
    created = g.api.list_compute_quotas(Status="Created")["ComputeQuotaSummaries"]
    assert [r["ComputeQuotaId"] for r in created] == [ids[1], ids[0]]


def test_quotas_default_to_enabled_and_describe_their_settings() -> None:
    g = Governance()
    ident = g.quota(Description="team a")
    g.clock.advance(minutes=1)
    described = g.api.describe_compute_quota(ComputeQuotaId=ident)
    assert described["ActivationState"] == "Enabled"
    assert described["ComputeQuotaTarget"] == {"TeamName": "team-a", "FairShareWeight": 10}
    assert described["ComputeQuotaVersion"] == 1
    assert described["Description"] == "team a"
    assert described["Status"] == "Created"


def test_iam_reads_arns_and_tags_of_governance_resources() -> None:
    g = Governance()
    ident = g.quota(Tags=[{"Key": "hypd:tag", "Value": "t1"}])
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/{ident}"
    assert g.emu.governance_facts(ident) == (arn, {"hypd:tag": "t1"})
    assert g.emu.governance_facts(arn) == (arn, {"hypd:tag": "t1"})
    g.api.add_tags(ResourceArn=arn, Tags=[{"Key": "more", "Value": "x"}])
    assert g.emu.governance_facts(ident) == (arn, {"hypd:tag": "t1", "more": "x"})
    assert g.emu.cluster_eks_arn("hp1") == EKS_ARN
    g.api.delete_compute_quota(ComputeQuotaId=ident)
    g.clock.advance(minutes=1)
    assert g.emu.governance_facts(ident) is None
    with pytest.raises(ResourceNotFound):
        g.api.list_tags(ResourceArn=arn)


def test_a_bare_emulator_assumes_the_addon_is_active() -> None:
    emulator = HyperPodEmulator(FakeClock(), lambda *a: None, ACCOUNT, REGION)
    api = Checked(emulator)
    cluster = api.create_cluster(**cluster_request())["ClusterArn"]
    ident = api.create_compute_quota(Name="q", ClusterArn=cluster, ComputeQuotaConfig={},
                                     ComputeQuotaTarget={"TeamName": "a"})["ComputeQuotaId"]
    emulator._clock.advance(minutes=1)  # type: ignore[attr-defined]
    assert api.describe_compute_quota(ComputeQuotaId=ident)["Status"] == "Created"
    assert "CreatedBy" not in api.describe_compute_quota(ComputeQuotaId=ident)
