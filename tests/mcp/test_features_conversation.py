"""A features-and-teams conversation of an agent, as MCP tool calls only, against the local cloud:
a real MCP client session from the SDK over stdio with ``hypd mcp serve --allow-write``, on one
cluster created first. Read the features, change only what was asked, poll each operation, then
a team; turning a feature off, and deleting the team, only with confirm naming them."""

from __future__ import annotations

from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from tests.e2e.capacity import created_cluster
from tests.mcp.conftest import call, call_error, mcp_session
from tests.mcp.test_create_conversation import poll

pytestmark = pytest.mark.anyio

TAG = "features"
TEAM = {"team": "ml", "resources": [{"instanceType": "ml.g6.4xlarge", "count": 1}],
        "fairShareWeight": 50}


async def test_features_and_a_team_run_on_tools_alone(cloud: Any, api: ApiClient) -> None:
    created_cluster(api, cloud, tag=TAG)  # the create conversation has its own tests

    async with mcp_session(cloud.api_url, allow_write=True) as session:
        # Read first: everything is off.
        before = await call(session, "features_get", tag=TAG)
        assert {n: f["enabled"] for n, f in before["features"].items()} == dict.fromkeys(
            before["features"], False)

        # Send only what the user asked for: task governance on, with fair share.
        accepted = await call(session, "features_set", tag=TAG,
                              taskGovernance={"enabled": True, "fairShare": True})
        assert accepted["kind"] == "set-features"
        # The execution may have begun before the 202 was written.
        assert accepted["status"] in {"PENDING", "RUNNING"}
        done, _ = await poll(session, accepted["operationId"])
        assert done["status"] == "SUCCEEDED", done.get("error")
        after = await call(session, "features_get", tag=TAG)
        governance = after["features"]["taskGovernance"]
        assert (governance["status"], governance["fairShare"]) == ("ACTIVE", True)
        # Nothing else was touched.
        assert {n: f for n, f in after["features"].items() if n != "taskGovernance"} == {
            n: f for n, f in before["features"].items() if n != "taskGovernance"}

        # A team: set, polled, read; the same quota again starts nothing.
        started = await call(session, "team_set", tag=TAG, **TEAM)
        made, _ = await poll(session, started["operationId"])
        assert made["status"] == "SUCCEEDED", made.get("error")
        team = await call(session, "team_get", tag=TAG, team="ml")
        assert (team["status"], team["fairShareWeight"]) == ("Created", 50)
        assert (await call(session, "team_set", tag=TAG, **TEAM))["changed"] is False
        listed = await call(session, "team_list", tag=TAG)
        assert [t["name"] for t in listed["teams"]] == ["ml"]

        # Turning a feature off needs confirm naming it: refused before any request.
        unconfirmed = await call_error(session, "features_set", tag=TAG,
                                       taskGovernance={"enabled": False})
        assert (unconfirmed["status"], unconfirmed["code"]) == (None, "ConfirmationRequired")
        assert "confirm set to 'taskGovernance'" in unconfirmed["message"]
        # Task governance stays while the team has a quota; deleting the team lets it go.
        kept = await call_error(session, "features_set", tag=TAG,
                                taskGovernance={"enabled": False}, confirm="taskGovernance")
        assert (kept["status"], kept["details"]["teams"]) == (409, ["ml"])
        deleting = await call(session, "team_delete", tag=TAG, team="ml", confirm="ml")
        deleted, _ = await poll(session, deleting["operationId"])
        assert deleted["status"] == "SUCCEEDED", deleted.get("error")
        assert (await call(session, "team_list", tag=TAG))["teams"] == []

        # Confirmed, task governance is turned off.
        disabling = await call(session, "features_set", tag=TAG,
                               taskGovernance={"enabled": False}, confirm="taskGovernance")
        disabled, _ = await poll(session, disabling["operationId"])
        assert disabled["status"] == "SUCCEEDED", disabled.get("error")
        governance = (await call(session, "features_get", tag=TAG))["features"]["taskGovernance"]
        assert (governance["enabled"], governance["status"]) == (False, "DISABLED")
