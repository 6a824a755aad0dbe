"""Managed tiered checkpointing in the HyperPod emulator: TieredStorageConfig on CreateCluster
and UpdateCluster (EKS clusters only), the update's time in Updating, and what DescribeCluster
reports before and after."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from hypd_local.emulator.errors import AwsError, ConflictException, ValidationException
from hypd_local.emulator.hyperpod import HyperPodDurations
from hypd_local.emulator.validation import validate
from tests.emulator.test_hyperpod_support import (
    Events,
    cluster_request,
    make,
    sagemaker_model,
)

D = HyperPodDurations()
ENABLED = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
STATE = "SageMaker HyperPod Cluster State Change"


def in_service(**extra: Any) -> tuple[Any, Any, Any, Events]:
    emu, api, clock, events = make(**extra)
    api.create_cluster(**cluster_request())
    clock.advance(hours=1)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"
    return emu, api, clock, events


def test_create_keeps_the_config_of_an_eks_cluster() -> None:
    _emu, api, clock, _events = make()
    api.create_cluster(**cluster_request(TieredStorageConfig=ENABLED))
    assert api.describe_cluster(ClusterName="hp1")["TieredStorageConfig"] == ENABLED
    clock.advance(hours=1)
    assert api.describe_cluster(ClusterName="hp1")["TieredStorageConfig"] == ENABLED


def test_a_cluster_without_eks_takes_none() -> None:
    _emu, api, clock, _events = make()
    request = cluster_request(TieredStorageConfig=ENABLED)
    del request["Orchestrator"]
    with pytest.raises(ValidationException) as refused:
        api.create_cluster(**request)
    assert refused.value.message == (
        "TieredStorageConfig is supported only for clusters orchestrated by Amazon EKS "
        "(Orchestrator.Eks).")
    request = cluster_request("slurm", Orchestrator={"Slurm": {}})
    api.create_cluster(**request)
    clock.advance(hours=1)
    with pytest.raises(ValidationException, match="orchestrated by Amazon EKS"):
        api.update_cluster(ClusterName="slurm", TieredStorageConfig=ENABLED)


def test_update_is_updating_then_reports_the_new_config() -> None:
    _emu, api, clock, events = in_service()
    assert "TieredStorageConfig" not in api.describe_cluster(ClusterName="hp1")
    api.update_cluster(ClusterName="hp1", TieredStorageConfig=ENABLED)
    described = api.describe_cluster(ClusterName="hp1")
    assert described["ClusterStatus"] == "Updating"
    assert "TieredStorageConfig" not in described  # not yet: the old config (none)
    clock.advance(seconds=D.tiered_storage_update.total_seconds() - 1)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "Updating"
    clock.advance(seconds=1)
    described = api.describe_cluster(ClusterName="hp1")
    assert described["ClusterStatus"] == "InService"
    assert described["TieredStorageConfig"] == ENABLED
    last = events.of(STATE)[-1]
    assert (last["ClusterStatus"], last["TieredStorageConfig"]) == ("InService", ENABLED)

    api.update_cluster(ClusterName="hp1", TieredStorageConfig={"Mode": "Disable"})
    assert api.describe_cluster(ClusterName="hp1")["TieredStorageConfig"] == ENABLED
    clock.advance(seconds=D.tiered_storage_update.total_seconds())
    assert api.describe_cluster(ClusterName="hp1")["TieredStorageConfig"] == {"Mode": "Disable"}


def test_the_update_duration_is_configurable() -> None:
    emu, api, clock, _events = in_service()
    emu.set_durations(tiered_storage_update=timedelta(minutes=20))
    api.update_cluster(ClusterName="hp1", TieredStorageConfig=ENABLED)
    assert emu.next_due() == clock.t + timedelta(minutes=20)
    clock.advance(minutes=19)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "Updating"
    clock.advance(minutes=1)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"


def test_an_update_while_not_in_service_is_a_conflict() -> None:
    _emu, api, _clock, _events = in_service()
    api.update_cluster(ClusterName="hp1", TieredStorageConfig=ENABLED)
    with pytest.raises(ConflictException) as refused:
        api.update_cluster(ClusterName="hp1", TieredStorageConfig={"Mode": "Disable"})
    assert refused.value.message == (
        "Cluster 'hp1' is in Updating status; it can only be updated when InService.")


@pytest.mark.parametrize(("config", "message"), [
    ({"Mode": "On"}, "TieredStorageConfig.Mode must be Enable or Disable, not 'On'."),
    ({"Mode": "Enable", "InstanceMemoryAllocationPercentage": 101},
     "TieredStorageConfig.InstanceMemoryAllocationPercentage must be an integer from 0 to 100, "
     "not 101."),
    ({"Mode": "Enable", "InstanceMemoryAllocationPercentage": -1},
     "TieredStorageConfig.InstanceMemoryAllocationPercentage must be an integer from 0 to 100, "
     "not -1."),
])
def test_direct_calls_check_mode_and_percentage(config: dict[str, Any], message: str) -> None:
    emu, _api, _clock, _events = in_service()
    with pytest.raises(ValidationException) as refused:
        emu.update_cluster({"ClusterName": "hp1", "TieredStorageConfig": config})
    assert refused.value.message == message
    with pytest.raises(ValidationException, match="TieredStorageConfig"):
        emu.create_cluster({**cluster_request("hp2"), "TieredStorageConfig": config})


def test_the_middleware_validation_names_the_members() -> None:
    with pytest.raises(AwsError) as refused:
        validate(sagemaker_model(), "UpdateCluster", {
            "ClusterName": "hp1",
            "TieredStorageConfig": {"Mode": "On", "InstanceMemoryAllocationPercentage": 150}})
    assert refused.value.code == "ValidationException"
    assert "'TieredStorageConfig.Mode'" in refused.value.message
    assert "'TieredStorageConfig.InstanceMemoryAllocationPercentage'" in refused.value.message
    assert refused.value.message.startswith("2 validation errors detected")
