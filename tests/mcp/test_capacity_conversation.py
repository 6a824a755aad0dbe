"""A capacity conversation of an agent, as MCP tool calls only, against the local cloud: a real
MCP client session from the SDK over stdio with ``hypd mcp serve --allow-write``, on one cluster
created first; each destructive call confirmed (a wrong confirm refused, nothing started). The
SDK checks every structured result against the tool's output schema (for a change the API may
find made: the 202 or the 200 ``changed: false`` model)."""

from __future__ import annotations

from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import demo_request, follow
from tests.mcp.conftest import call, call_error, mcp_session
from tests.mcp.test_create_conversation import (
    BUCKET,
    INSTANCE_TYPE,
    assert_each_wait_returned_on_a_change,
    make_bucket,
    poll,
    request,
)

pytestmark = pytest.mark.anyio

TAG = "capacity"


async def test_groups_nodes_and_autoscaling_run_on_tools_alone(
    cloud: Any, api: ApiClient
) -> None:
    # Given a cluster hypd created (the create conversation has its own tests)
    make_bucket(cloud)
    zone = demo_request(api, TAG, BUCKET)["availabilityZone"]
    created = follow(api, cloud, api.create_cluster(request(TAG, zone, INSTANCE_TYPE))[
        "operationId"])
    assert created["status"] == "SUCCEEDED", created.get("error")

    async with mcp_session(cloud.api_url, allow_write=True) as session:
        # Inspect first: the groups there are, what may change, what the zone offers.
        groups = await call(session, "instance_group_list", tag=TAG)
        assert [(g["name"], g["availabilityZone"]) for g in groups["instanceGroups"]] == [
            ("gpu", zone)]
        fields = await call(session, "catalog_instance_group_fields")
        mutable = {f["name"] for f in fields["fields"] if f["mutable"]}
        assert mutable == {"count", "minCount", "labels", "taints"}
        offered = await call(session, "catalog_instance_types", availabilityZone=zone)
        assert INSTANCE_TYPE in {t["instanceType"] for t in offered["instanceTypes"]}

        # Add a spot group (no zone: it takes the cluster's), poll it to its end.
        accepted = await call(session, "instance_group_add", tag=TAG, name="spot",
                              instanceType=INSTANCE_TYPE, count=1, capacity={"type": "spot"})
        assert accepted["kind"] == "add-instance-group"
        # The execution may have begun before the 202 was written.
        assert accepted["status"] in {"PENDING", "RUNNING"}
        added, answers = await poll(session, accepted["operationId"])
        assert added["status"] == "SUCCEEDED", added.get("error")
        assert [s["name"] for s in added["stages"]] == ["network", "hyperpod", "verify"]
        assert_each_wait_returned_on_a_change(answers)
        exists = await call_error(session, "instance_group_add", tag=TAG, name="spot",
                                  instanceType=INSTANCE_TYPE, count=1, capacity={"type": "spot"})
        assert (exists["status"], exists["code"]) == (409, "InstanceGroupExists")

        # Scale it; the same count again is a 200 changed: false, nothing to poll.
        scaling = await call(session, "instance_group_update", tag=TAG, name="spot", count=2)
        scaled, _ = await poll(session, scaling["operationId"])
        assert scaled["status"] == "SUCCEEDED", scaled.get("error")
        unchanged = await call(session, "instance_group_update", tag=TAG, name="spot", count=2)
        assert unchanged["changed"] is False
        assert (unchanged["instanceGroup"]["count"],
                unchanged["instanceGroup"]["currentCount"]) == (2, 2)
        assert unchanged["instanceGroup"]["capacity"]["type"] == "spot"

        # A create-time field cannot change: the tool error names it and what to do instead.
        immutable = await call_error(session, "instance_group_update", tag=TAG, name="spot",
                                     instanceType="ml.g5.8xlarge")
        assert (immutable["status"], immutable["code"]) == (400, "ImmutableField")
        assert immutable["details"]["field"] == "instanceType"
        assert "add a group with the value you want" in immutable["message"]

        # A node action, polled to its end.
        nodes = await call(session, "node_list", tag=TAG, instanceGroup="spot")
        assert [n["status"] for n in nodes["nodes"]] == ["Running", "Running"]
        node = nodes["nodes"][0]["nodeId"]
        rebooting = await call(session, "node_reboot", tag=TAG, nodeId=node, confirm=node)
        rebooted, _ = await poll(session, rebooting["operationId"])
        assert rebooted["status"] == "SUCCEEDED", rebooted.get("error")

        # Managed Karpenter on the spot group; a group it scales cannot be deleted.
        enabling = await call(session, "autoscaling_set", tag=TAG, enabled=True,
                              instanceGroups=["spot"])
        enabled, _ = await poll(session, enabling["operationId"])
        assert enabled["status"] == "SUCCEEDED", enabled.get("error")
        autoscaling = await call(session, "autoscaling_get", tag=TAG)
        assert (autoscaling["enabled"], autoscaling["status"], autoscaling["instanceGroups"]) \
            == (True, "InService", ["spot"])
        again = await call(session, "autoscaling_set", tag=TAG, enabled=True,
                           instanceGroups=["spot"])
        assert again["changed"] is False
        autoscaled = await call_error(session, "instance_group_delete", tag=TAG, name="spot",
                                      confirm="spot")
        assert (autoscaled["status"], autoscaled["code"]) == (409, "InstanceGroupAutoscaled")

        disabling = await call(session, "autoscaling_set", tag=TAG, enabled=False)
        disabled, _ = await poll(session, disabling["operationId"])
        assert disabled["status"] == "SUCCEEDED", disabled.get("error")
        # A delete confirmed for another group is refused, naming the group: nothing started.
        before = api.list_operations(cluster_tag=TAG)["operations"]
        wrong = await call_error(session, "instance_group_delete", tag=TAG, name="spot",
                                 confirm="gpu")
        assert (wrong["status"], wrong["code"]) == (None, "ConfirmationRequired")
        assert "deletes instance group 'spot'" in wrong["message"]
        assert wrong["details"] == {"confirm": "spot"}
        assert api.list_operations(cluster_tag=TAG)["operations"] == before
        deleting = await call(session, "instance_group_delete", tag=TAG, name="spot",
                              confirm="spot")
        deleted, _ = await poll(session, deleting["operationId"])
        assert deleted["status"] == "SUCCEEDED", deleted.get("error")
        groups = await call(session, "instance_group_list", tag=TAG)
        assert [g["name"] for g in groups["instanceGroups"]] == ["gpu"]
