"""The create conversation of an agent, as MCP tool calls only, against the local cloud: a real
MCP client session from the SDK over stdio with ``hypd mcp serve --allow-write`` (each tool is
one REST operation; the local cloud runs the real pipeline, a create takes a few real seconds)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp_types import TextContent

from tests.mcp.conftest import call, call_error, mcp_session, text_of

pytestmark = pytest.mark.anyio

BUCKET = "hypd-mcp-data"
INSTANCE_TYPE = "ml.g6.4xlarge"
STAGES = ["network", "eks", "dependencies", "hyperpod", "storage", "verify", "features"]
TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def make_bucket(cloud: Any) -> None:
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )


async def poll(
    session: ClientSession, operation_id: str
) -> tuple[dict[str, Any], list[tuple[dict[str, Any], str]]]:
    """operation_get_status with wait_seconds until the operation ends: it, and each wait's
    answer (the operation and the server's note on why the wait returned)."""
    answers: list[tuple[dict[str, Any], str]] = []
    with anyio.fail_after(240):
        while True:
            result = await session.call_tool(
                "operation_get_status", {"operationId": operation_id, "wait_seconds": 60})
            assert not result.is_error, text_of(result)
            operation: dict[str, Any] = result.structured_content
            note = result.content[-1]
            answers.append((operation, note.text if isinstance(note, TextContent) else ""))
            if operation["status"] in TERMINAL:
                return operation, answers


def progress(operation: dict[str, Any]) -> tuple[Any, ...]:
    """What a wait watches: the status and each stage's status and attempts."""
    return operation["status"], tuple(
        (s["name"], s["status"], s["attempts"]) for s in operation["stages"])


def assert_each_wait_returned_on_a_change(answers: list[tuple[dict[str, Any], str]]) -> None:
    """Every wait returned because the operation ended or changed, or said it saw no change;
    none returned an unchanged operation as a change. How many waits an operation took is the
    machine's speed (a fast one ends it within the first), so that is not counted."""
    *running, (last, ended) = answers
    assert "the operation has ended" in ended, ended
    previous: tuple[Any, ...] | None = None
    for operation, note in running:
        assert operation["status"] not in TERMINAL
        if "the operation changed" in note:
            assert progress(operation) != previous, note
        else:
            assert "no change" in note, note
        previous = progress(operation)
    assert progress(last) != previous


async def choose(session: ClientSession) -> tuple[str, str]:
    """Inspect before create: a zone of the Region that offers the instance type."""
    zones = await call(session, "catalog_availability_zones")
    names = [z["name"] for z in zones["availabilityZones"]]
    assert names
    for zone in names:
        offered = await call(session, "catalog_instance_types", availabilityZone=zone)
        assert offered["availabilityZone"] == zone
        types = {t["instanceType"]: t for t in offered["instanceTypes"]}
        if INSTANCE_TYPE in types:
            assert types[INSTANCE_TYPE]["gpus"], "the catalogue gives the GPU facts"
            return zone, INSTANCE_TYPE
    raise AssertionError(f"no zone offers {INSTANCE_TYPE}")


def request(tag: str, zone: str, instance_type: str) -> dict[str, Any]:
    return {
        "tag": tag,
        "availabilityZone": zone,
        "instanceGroups": [{"name": "gpu", "instanceType": instance_type, "count": 1,
                            "capacity": {"type": "on-demand"}}],
        "storage": {"s3": {"bucket": BUCKET}},
    }


async def test_the_create_conversation_runs_on_tools_alone(cloud: Any) -> None:
    make_bucket(cloud)
    async with mcp_session(cloud.api_url, allow_write=True) as session:
        # Look before you create: the tag is free, and the catalogue offers the choices.
        listed = await call(session, "cluster_list_all")
        assert all(c["tag"] != "mcp" for c in listed["clusters"])
        zone, instance_type = await choose(session)

        accepted = await call(session, "cluster_create", **request("mcp", zone, instance_type))
        assert accepted["kind"] == "create-cluster"
        # The execution may have begun before the 202 was written.
        assert accepted["status"] in {"PENDING", "RUNNING"}
        operation_id = accepted["operationId"]

        operation, answers = await poll(session, operation_id)
        assert operation["status"] == "SUCCEEDED", operation.get("error")
        assert [s["name"] for s in operation["stages"]] == STAGES
        assert all(s["status"] == "SUCCEEDED" for s in operation["stages"])
        assert_each_wait_returned_on_a_change(answers)

        # The summary, from the records.
        cluster = await call(session, "cluster_get", tag="mcp")
        assert cluster["status"] == "ACTIVE"
        assert cluster["lastOperationId"] == operation_id
        assert cluster["eks"]["name"] == "hypd-mcp"
        assert cluster["hyperpod"]["status"] == "InService"
        assert operation["output"]["storage"]["claimPhase"] == "Bound"
        listed = await call(session, "cluster_list_all")
        assert [c["tag"] for c in listed["clusters"]] == ["mcp"]

        # Never recreate what exists; an ended operation is neither retried nor cancelled.
        exists = await call_error(session, "cluster_create", **request("mcp", zone,
                                                                        instance_type))
        assert (exists["status"], exists["code"]) == (409, "ClusterExists")
        assert exists["details"]["lastOperationId"] == operation_id
        retry = await call_error(session, "operation_retry", operationId=operation_id)
        assert (retry["status"], retry["code"]) == (409, "OperationNotRetryable")
        cancel = await call_error(session, "operation_cancel", operationId=operation_id)
        assert (cancel["status"], cancel["code"]) == (409, "OperationNotCancellable")


async def test_an_interrupted_create_is_resumed_from_its_operation_record(cloud: Any) -> None:
    # The bucket is missing: the pipeline fails at its storage stage (beside the EKS side,
    # which stops).
    async with mcp_session(cloud.api_url, allow_write=True) as session:
        zone, instance_type = await choose(session)
        accepted = await call(session, "cluster_create",
                              **request("resume", zone, instance_type))
        failed, _ = await poll(session, accepted["operationId"])

    assert failed["status"] == "FAILED"
    by_name = {s["name"]: s for s in failed["stages"]}
    assert by_name["storage"]["error"]["code"] == "NoSuchBucket"
    assert BUCKET in by_name["storage"]["error"]["message"]
    make_bucket(cloud)  # the cause, outside hypd, fixed

    # A new session (the conversation was interrupted) finds the operation from the records.
    async with mcp_session(cloud.api_url, allow_write=True) as session:
        found = await call(session, "operation_list", clusterTag="resume", status="FAILED")
        assert [op["id"] for op in found["operations"]] == [failed["id"]]

        retried = await call(session, "operation_retry", operationId=failed["id"])
        assert retried["retries"][0]["failedStage"] == "storage"
        assert retried["retries"][0]["resumeFrom"] == "eks"  # stopped beside it
        done, _ = await poll(session, failed["id"])

        assert done["status"] == "SUCCEEDED", done.get("error")
        attempts = {s["name"]: s["attempts"] for s in done["stages"]}
        assert attempts["network"] == 1, "stages that succeeded were not repeated"
        assert attempts["storage"] == 2
        cluster = await call(session, "cluster_get", tag="resume")
        assert cluster["status"] == "ACTIVE"


async def test_a_bad_request_is_a_tool_error_with_the_apis_code_and_message(cloud: Any) -> None:
    async with mcp_session(cloud.api_url, allow_write=True) as session:
        zone, instance_type = await choose(session)

        bad_tag = await call_error(session, "cluster_create",
                                   **request("not_a_tag!", zone, instance_type))
        assert (bad_tag["status"], bad_tag["code"]) == (400, "ValidationError")
        assert "tag" in bad_tag["message"]

        bad_zone = await call_error(session, "catalog_instance_types",
                                    availabilityZone="mars-north-1a")
        assert (bad_zone["status"], bad_zone["code"]) == (400, "ValidationError")
        assert "availabilityZone" in bad_zone["message"]

        missing = await call_error(session, "cluster_get", tag="nothing")
        assert (missing["status"], missing["code"]) == (404, "NotFound")
        unknown = await call_error(session, "operation_get_status",
                                   operationId="op-" + "0" * 32, wait_seconds=5)
        assert unknown["status"] == 404

        # The other tools answer too: training plans, and a discover polled to its end.
        plans = await call(session, "catalog_training_plans")
        assert isinstance(plans["trainingPlans"], list)
        accepted = await call(session, "cluster_discover")
        assert accepted["kind"] == "discover"
        discovered, _ = await poll(session, accepted["operationId"])
        assert discovered["status"] == "SUCCEEDED", discovered.get("error")
