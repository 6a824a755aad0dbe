"""Node actions end to end on the local cloud: reboot, replace and delete one node."""

from __future__ import annotations

from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from tests.e2e.capacity import TAG, created_cluster, described_groups, group_nodes, run, stages
from tests.support import fail_calls, group_body


def nodes(api: ApiClient, group: str = "workers") -> list[dict[str, Any]]:
    return list(api.call("listNodes", tag=TAG, instanceGroup=group)["nodes"])


def test_a_node_is_rebooted_replaced_and_deleted(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud, group_body(count=3))
    first, second, third = (n["nodeId"] for n in nodes(api))
    assert all(n["status"] == "Running" for n in nodes(api))

    rebooted = run(api, cloud, api.call("rebootNode", tag=TAG, nodeId=first))
    assert rebooted["status"] == "SUCCEEDED", rebooted.get("error")
    assert rebooted["kind"] == "reboot-node"
    assert {n["nodeId"]: n["status"] for n in nodes(api)}[first] == "Running"

    replaced = run(api, cloud, api.call("replaceNode", tag=TAG, nodeId=second))
    assert replaced["status"] == "SUCCEEDED", replaced.get("error")
    now = [n["nodeId"] for n in nodes(api)]
    assert second not in now
    assert len(now) == 3
    assert sorted(stages(replaced)["verify"]["output"]["groupNodes"]) == sorted(now)
    kube_names = {n["metadata"]["name"] for n in group_nodes(cloud, "workers")}
    assert f"hyperpod-{second}" not in kube_names

    deleted = run(api, cloud, api.call("deleteNode", tag=TAG, nodeId=third))
    assert deleted["status"] == "SUCCEEDED", deleted.get("error")
    assert third not in [n["nodeId"] for n in nodes(api)]
    assert described_groups(cloud)["workers"]["TargetCount"] == 2
    assert len(group_nodes(cloud, "workers")) == 2


def test_a_node_action_hyperpod_cannot_take_is_refused_up_front(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud, group_body(count=1))
    (node,) = nodes(api)
    with pytest.raises(ApiError) as raised:
        api.call("rebootNode", tag=TAG, nodeId="i-0123456789abcdef0")
    assert (raised.value.status, raised.value.code) == (404, "NodeNotFound")

    # a node that is already being replaced cannot be rebooted
    cloud.client("sagemaker").batch_replace_cluster_nodes(
        ClusterName=f"hypd-{TAG}", NodeIds=[node["nodeId"]]
    )
    with pytest.raises(ApiError) as raised:
        api.call("rebootNode", tag=TAG, nodeId=node["nodeId"])
    assert (raised.value.status, raised.value.code) == (409, "NodeActionNotAllowed")
    assert "ShuttingDown" in raised.value.message


def test_a_refused_node_action_fails_its_stage_and_a_retry_completes_it(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud, group_body(count=2))
    node = nodes(api)[0]["nodeId"]

    with fail_calls(cloud, "sagemaker", "batch_replace_cluster_nodes", "ValidationException",
                    times=1):
        failed = run(api, cloud, api.call("replaceNode", tag=TAG, nodeId=node))

    assert failed["status"] == "FAILED"
    assert stages(failed)["hyperpod"]["status"] == "FAILED"
    assert failed["error"]["code"] == "ValidationException"
    assert node in [n["nodeId"] for n in nodes(api)]  # nothing happened to it

    api.post(f"/operations/{failed['id']}/retry")
    done = run(api, cloud, {"operationId": failed["id"]})
    assert done["status"] == "SUCCEEDED", done.get("error")
    assert node not in [n["nodeId"] for n in nodes(api)]
