"""Task-token waits move virtual time to the emulators' next change, like a sleep interrupted by
callbacks: a ``.waitForTaskToken`` task completed by an EventBridge target when a HyperPod
cluster becomes InService finishes with no test advancing the clock, at the event's time.

The cloud runs ``fixtures/callbacks.yaml``: ParkerFunction stores the task token under the
cluster name, ResumerFunction (a target of a rule on HyperPod state changes) sends it back.
Its clock is frozen (it moves only when advanced, never with real time), so "at the event's
time" is exact, however long the machine takes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from hypd_local import LocalCloud
from hypd_local.clock import VirtualClock
from tests.local_cloud.conftest import FIXTURES
from tests.local_cloud.test_emulation import (
    Network,
    active_eks,
    create_hyperpod,
    group_spec,
    hyperpod_status,
    unique,
)

CALLBACKS_TEMPLATE = FIXTURES / "callbacks.yaml"
ROUNDING = timedelta(milliseconds=1)  # execution dates and CreationTime are in milliseconds


@pytest.fixture(scope="module")
def token_cloud() -> Iterator[LocalCloud]:
    with LocalCloud(CALLBACKS_TEMPLATE, clock=VirtualClock(ticking=False)) as running:
        yield running


@pytest.fixture
def eks(token_cloud: LocalCloud) -> tuple[dict[str, Any], Network]:
    """An ACTIVE EKS cluster (the test lets its creation pass before anything waits)."""
    return active_eks(token_cloud, unique("eks"))


def start(cloud: LocalCloud, machine: str, cluster_name: str) -> str:
    arn: str = cloud.client("stepfunctions").start_execution(
        stateMachineArn=cloud.resources[machine], name=str(uuid.uuid4()),
        input=json.dumps({"clusterName": cluster_name}),
    )["executionArn"]
    return arn


def in_service_at(cloud: LocalCloud, name: str) -> datetime:
    """When the emulator makes the cluster InService: its creation time + cluster_create."""
    assert cloud.emulation is not None
    created: datetime = cloud.client("sagemaker").describe_cluster(
        ClusterName=name)["CreationTime"]
    return created + cloud.emulation.hyperpod.durations.cluster_create


def hyperpod(cloud: LocalCloud, eks: tuple[dict[str, Any], Network], name: str) -> None:
    cluster, network = eks
    create_hyperpod(cloud, name, cluster["arn"], network,
                    [group_spec(cloud, "workers", "ml.c5.2xlarge", 1)])


def test_a_token_completed_by_an_event_target_finishes_at_the_event_time(
    token_cloud: LocalCloud, eks: tuple[dict[str, Any], Network]
) -> None:
    cloud = token_cloud
    # Given a HyperPod cluster being created and an execution waiting for it through a token
    name = unique("hp")
    hyperpod(cloud, eks, name)
    ready = in_service_at(cloud, name)
    arn = start(cloud, "TokenMachine", name)

    # When nobody advances the clock
    result = cloud.wait_for_execution(arn, timeout=60)

    # Then the InService event's target sent the token back and the execution succeeded
    assert result["status"] == "SUCCEEDED", result
    assert json.loads(result["output"])["status"] == "InService"
    assert hyperpod_status(cloud, name) == "InService"
    # at the virtual time the cluster became InService, exactly
    assert abs(result["stopDate"] - ready) <= ROUNDING
    assert not cloud.delivery_failures
    assert not cloud.async_failures


def test_a_wait_that_began_before_the_cluster_was_created_sees_it(
    token_cloud: LocalCloud, eks: tuple[dict[str, Any], Network]
) -> None:
    cloud = token_cloud
    # Given an execution waiting for a cluster that does not exist yet (nothing scheduled)
    name = unique("hp")
    arn = start(cloud, "TokenMachine", name)
    cloud.clock.wait_for_waiters(1)

    # When the cluster is created (through the AWS API, as the pipeline's task would)
    hyperpod(cloud, eks, name)
    ready = in_service_at(cloud, name)

    # Then the wait notices the new schedule and moves time to it
    result = cloud.wait_for_execution(arn, timeout=60)
    assert result["status"] == "SUCCEEDED", result
    assert abs(result["stopDate"] - ready) <= ROUNDING


def test_a_wait_never_jumps_past_the_last_change_to_its_deadline(
    token_cloud: LocalCloud, eks: tuple[dict[str, Any], Network]
) -> None:
    cloud = token_cloud
    # Given a cluster being created, and an execution waiting for another cluster's token
    name = unique("hp")
    hyperpod(cloud, eks, name)
    ready = in_service_at(cloud, name)
    arn = start(cloud, "TokenMachine", unique("nobody"))
    started = cloud.client("stepfunctions").describe_execution(executionArn=arn)["startDate"]

    # When the wait has moved time through the cluster's creation and nothing else is scheduled
    cloud.clock.wait_for_waiters(1)

    # Then the cluster is InService, the execution still waits, its deadline not reached
    assert hyperpod_status(cloud, name) == "InService"
    assert abs(cloud.clock.now() - ready) <= ROUNDING
    assert cloud.clock.now() - started < timedelta(seconds=3600) - timedelta(minutes=30)
    status = cloud.client("stepfunctions").describe_execution(executionArn=arn)["status"]
    assert status == "RUNNING"

    # and the timeout still comes when the clock reaches it
    cloud.clock.advance(3600)
    result = cloud.wait_for_execution(arn, timeout=30)
    assert result["status"] == "FAILED"
    assert result["error"] == "States.Timeout"


def test_a_heartbeat_wait_also_moves_time_to_the_event(
    token_cloud: LocalCloud, eks: tuple[dict[str, Any], Network]
) -> None:
    cloud = token_cloud
    # HeartbeatSeconds 1800: the creation (15 min) ends before a heartbeat is missed.
    name = unique("hp")
    hyperpod(cloud, eks, name)
    ready = in_service_at(cloud, name)

    result = cloud.wait_for_execution(start(cloud, "HeartbeatMachine", name), timeout=60)

    assert result["status"] == "SUCCEEDED", result
    assert abs(result["stopDate"] - ready) <= ROUNDING


def test_a_failed_creation_fails_the_waiting_task(
    token_cloud: LocalCloud, eks: tuple[dict[str, Any], Network]
) -> None:
    cloud = token_cloud
    assert cloud.emulation is not None
    name = unique("hp")
    cloud.emulation.hyperpod.fail_next_create(name, "lifecycle script exited with 1")
    hyperpod(cloud, eks, name)
    failed_at = in_service_at(cloud, name)  # a creation fails after the same duration

    result = cloud.wait_for_execution(start(cloud, "TokenMachine", name), timeout=60)

    assert result["status"] == "FAILED"
    assert result["error"] == "ClusterFailed"
    assert abs(result["stopDate"] - failed_at) <= ROUNDING
