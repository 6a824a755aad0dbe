"""A teardown conversation of an agent, as MCP tool calls only, against the local cloud: a real
MCP client session from the SDK over stdio with ``hypd mcp serve --allow-write``. Read the plan,
refuse a delete the user has not confirmed (no ``confirm``, or not the tag), protection refusing
a confirmed one, then the confirmed delete polled to its end; a discovered cluster forgotten."""

from __future__ import annotations

from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from tests.e2e.capacity import BUCKET, created_cluster, discovered_cluster
from tests.e2e.teardown import TEARDOWN_STAGES
from tests.mcp.conftest import call, call_error, mcp_session
from tests.mcp.test_create_conversation import poll

pytestmark = pytest.mark.anyio

TAG = "doomed"


async def test_plan_confirm_then_delete_on_tools_alone(cloud: Any, api: ApiClient) -> None:
    created_cluster(api, cloud, tag=TAG)  # the create conversation has its own tests

    async with mcp_session(cloud.api_url, allow_write=True) as session:
        cluster = await call(session, "cluster_get", tag=TAG)
        assert (cluster["source"], cluster["status"]) == ("created", "ACTIVE")

        # The plan first: every step in order, what stays, nothing blocking.
        plan = await call(session, "cluster_teardown_plan", tag=TAG)
        assert (plan["tag"], plan["deletable"], plan["blockers"]) == (TAG, True, [])
        assert [s["stage"] for s in plan["steps"]] == TEARDOWN_STAGES
        (hyperpod,) = next(s["resources"] for s in plan["steps"] if s["stage"] == "hyperpod")
        assert (hyperpod["type"], hyperpod["name"]) == ("HyperPodCluster", f"hypd-{TAG}")
        assert ("S3Bucket", BUCKET) in {(k["type"], k["name"]) for k in plan["kept"]}

        # Not confirmed, or confirmed for another tag: refused before any request.
        for confirm in ({}, {"confirm": "yes"}, {"confirm": f"{TAG}-other"}):
            unconfirmed = await call_error(session, "cluster_delete", tag=TAG, **confirm)
            assert (unconfirmed["status"], unconfirmed["code"]) == (
                None, "ConfirmationRequired")
            assert f"confirm set to {TAG!r}" in unconfirmed["message"]

        # Protection on: the plan is blocked, and a confirmed delete refused with the way out.
        protected = await call(session, "cluster_protection_set", tag=TAG, enabled=True)
        assert protected == {"tag": TAG, "enabled": True}
        blocked = await call(session, "cluster_teardown_plan", tag=TAG)
        assert blocked["deletable"] is False
        assert [b["code"] for b in blocked["blockers"]] == ["DeletionProtected"]
        refused = await call_error(session, "cluster_delete", tag=TAG, confirm=TAG)
        assert (refused["status"], refused["code"]) == (409, "DeletionProtected")
        assert f"PUT /clusters/{TAG}/protection" in refused["message"]
        # Nothing was deleted, nothing was started.
        assert (await call(session, "cluster_get", tag=TAG))["status"] == "ACTIVE"
        operations = await call(session, "operation_list", clusterTag=TAG)
        assert [o["kind"] for o in operations["operations"]] == ["create-cluster"]

        # The user agreed to turn it off, and to delete: confirm repeats the tag.
        unprotected = await call(session, "cluster_protection_set", tag=TAG, enabled=False)
        assert unprotected["enabled"] is False
        accepted = await call(session, "cluster_delete", tag=TAG, confirm=TAG)
        assert accepted["kind"] == "delete-cluster"
        # The execution may have begun before the 202 was written.
        assert accepted["status"] in {"PENDING", "RUNNING"}
        done, _ = await poll(session, accepted["operationId"])
        assert done["status"] == "SUCCEEDED", done.get("error")
        assert [(s["name"], s["status"]) for s in done["stages"]] == [
            (stage, "SUCCEEDED") for stage in TEARDOWN_STAGES]
        deleted = await call(session, "cluster_get", tag=TAG)
        assert (deleted["status"], deleted["lastOperationId"]) == (
            "DELETED", accepted["operationId"])

    assert cloud.client("sagemaker").list_clusters()["ClusterSummaries"] == []
    assert cloud.client("eks").list_clusters()["clusters"] == []


async def test_a_discovered_cluster_is_forgotten_on_tools_alone(
    cloud: Any, api: ApiClient
) -> None:
    seeded, tag = discovered_cluster(api, cloud)

    async with mcp_session(cloud.api_url, allow_write=True) as session:
        plan = await call(session, "cluster_teardown_plan", tag=tag)
        assert [b["code"] for b in plan["blockers"]] == ["NotCreatedByHypd"]
        refused = await call_error(session, "cluster_delete", tag=tag, confirm=tag, force=True)
        assert (refused["status"], refused["code"]) == (409, "NotCreatedByHypd")
        assert "forget=true" in refused["message"]

        forgotten = await call(session, "cluster_delete", tag=tag, confirm=tag, forget=True)

        assert forgotten == {"tag": tag, "forgotten": True}
        assert (await call(session, "cluster_list_all"))["clusters"] == []
    assert [c["ClusterName"] for c in cloud.client("sagemaker").list_clusters()[
        "ClusterSummaries"]] == ["theirs"]
    assert cloud.client("eks").list_clusters()["clusters"] == [seeded.eks_name]
