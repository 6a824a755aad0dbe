"""Faults in each stage of an instance-group change: the operation FAILED with the reason, the
cluster's other groups as they were, and a retry that completes it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from tests.e2e.capacity import TAG, created_cluster, described_groups, run, stages
from tests.support import fail_calls, group_body

Inject = Callable[[Any], Any]


@contextmanager
def _subnet_refused(cloud: Any) -> Iterator[None]:
    cloud.faults.fail("ec2", "CreateSubnet", code="UnauthorizedOperation", times=1)
    try:
        yield
    finally:
        cloud.faults.clear()


def _update_refused(cloud: Any) -> Any:
    return fail_calls(cloud, "sagemaker", "update_cluster", "ValidationException", times=1)


@contextmanager
def _no_capacity(cloud: Any) -> Iterator[None]:
    # Continuous provisioning: the group is InService with no nodes, and HyperPod keeps trying.
    cloud.emulation.hyperpod.insufficient_capacity("ml.g6.4xlarge", "us-west-2a")
    yield


@pytest.mark.parametrize(
    ("stage", "inject", "code"),
    [
        ("network", _subnet_refused, "UnauthorizedOperation"),
        ("hyperpod", _update_refused, "ValidationException"),
        ("verify", _no_capacity, "VerificationTimedOut"),
    ],
)
def test_a_fault_fails_its_stage_and_a_retry_completes_the_added_group(
    api: ApiClient, cloud: Any, stage: str, inject: Inject, code: str
) -> None:
    created_cluster(api, cloud, group_body(count=1, labels={"team": "ml"}))
    before = described_groups(cloud)["workers"]
    body = group_body(name="big", count=1, dedicatedSubnet=True)

    with inject(cloud):
        failed = run(api, cloud, api.call("addInstanceGroup", tag=TAG, body=body))

    assert failed["status"] == "FAILED"
    by_name = stages(failed)
    order = ["network", "hyperpod", "verify"]
    index = order.index(stage)
    assert [by_name[s]["status"] for s in order[:index]] == ["SUCCEEDED"] * index
    assert by_name[stage]["status"] == "FAILED"
    assert failed["error"]["code"] == code
    assert by_name[stage]["error"]["code"] == code
    # the cluster's group is as it was
    assert described_groups(cloud)["workers"] == before
    if stage == "verify":
        assert "InsufficientInstanceCapacity" in failed["error"]["message"]
        assert "0 of 1 instances are up" in failed["error"]["message"]
        cloud.emulation.hyperpod.insufficient_capacity(
            "ml.g6.4xlarge", "us-west-2a", enabled=False
        )
    else:
        assert "big" not in described_groups(cloud)

    api.post(f"/operations/{failed['id']}/retry")
    done = run(api, cloud, {"operationId": failed["id"]})

    assert done["status"] == "SUCCEEDED", done.get("error")
    after = stages(done)
    assert [after[s]["attempts"] for s in order[:index]] == [1] * index
    assert after[stage]["attempts"] == 2
    groups = described_groups(cloud)
    assert groups["big"]["CurrentCount"] == 1
    assert groups["workers"] == before


def test_a_busy_cluster_and_throttling_are_waited_out(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud, group_body(count=1))

    # One ConflictException (another update in progress), then throttling botocore absorbs.
    with fail_calls(cloud, "sagemaker", "update_cluster", "ConflictException", times=1):
        scaled = run(
            api, cloud, api.call("updateInstanceGroup", tag=TAG, name="workers",
                                 body={"count": 2})
        )
    assert scaled["status"] == "SUCCEEDED", scaled.get("error")
    assert stages(scaled)["hyperpod"]["attempts"] == 2
    with fail_calls(cloud, "sagemaker", "update_cluster", "ThrottlingException", times=2):
        again = run(
            api, cloud, api.call("updateInstanceGroup", tag=TAG, name="workers",
                                 body={"count": 1})
        )
    assert again["status"] == "SUCCEEDED", again.get("error")
    assert stages(again)["hyperpod"]["attempts"] == 1
    assert described_groups(cloud)["workers"]["TargetCount"] == 1
