"""Every AWS call the capacity operations make is allowed by their functions' roles, as IAM
authorises it on the local cloud (resource types, conditions, PassRole, the boundary).

One run covers every path that calls AWS: a group added in a dedicated subnet, scaled, a
verification that times out and reads the cluster's events, node actions, autoscaling on and
off (the role made and deleted), and the API's checks of each request.
"""

from __future__ import annotations

from typing import Any

from hypd_cli.api_client import ApiClient
from tests.e2e.capacity import TAG, created_cluster, run
from tests.e2e.iam_calls import Calls, assert_allowed, calls_by_function
from tests.support import group_body

__all__ = ["calls_by_function"]  # the fixture

FUNCTIONS = ("CapacityTasksFunction", "ApiFunction", "ClusterEventsFunction")


def test_the_capacity_calls_are_allowed_by_the_functions_policies(
    cloud: Any, api: ApiClient, calls_by_function: Calls
) -> None:
    created_cluster(api, cloud, group_body(count=1))
    added = run(api, cloud, api.call("addInstanceGroup", tag=TAG, body=group_body(
        name="burst", count=1, dedicatedSubnet=True)))
    assert added["status"] == "SUCCEEDED", added.get("error")
    cloud.emulation.hyperpod.insufficient_capacity("ml.g6.4xlarge", "us-west-2a")
    starved = run(api, cloud, api.call("updateInstanceGroup", tag=TAG, name="burst",
                                       body={"count": 3}))
    assert starved["status"] == "FAILED"  # reads the cluster's events to say why
    cloud.emulation.hyperpod.insufficient_capacity("ml.g6.4xlarge", "us-west-2a", enabled=False)
    assert run(api, cloud, {"operationId": api.post(
        f"/operations/{starved['id']}/retry")["id"]})["status"] == "SUCCEEDED"
    nodes = api.call("listNodes", tag=TAG, instanceGroup="burst")["nodes"]
    for action in ("rebootNode", "replaceNode", "deleteNode"):
        done = run(api, cloud, api.call(action, tag=TAG, nodeId=nodes.pop()["nodeId"]))
        assert done["status"] == "SUCCEEDED", (action, done.get("error"))
    scaled_to_zero = run(api, cloud, api.call("updateInstanceGroup", tag=TAG, name="burst",
                                              body={"count": 0}))
    assert scaled_to_zero["status"] == "SUCCEEDED"
    on = run(api, cloud, api.call("setAutoscaling", tag=TAG,
                                  body={"enabled": True, "instanceGroups": ["burst"]}))
    assert on["status"] == "SUCCEEDED", on.get("error")
    api.call("getAutoscaling", tag=TAG)
    off = run(api, cloud, api.call("setAutoscaling", tag=TAG, body={"enabled": False}))
    assert off["status"] == "SUCCEEDED", off.get("error")
    api.call("listInstanceGroups", tag=TAG)
    deleted = run(api, cloud, api.call("deleteInstanceGroup", tag=TAG, name="burst"))
    assert deleted["status"] == "SUCCEEDED", deleted.get("error")

    assert_allowed(calls_by_function, FUNCTIONS)
