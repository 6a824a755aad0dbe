"""One read of a cluster's record per request, on the local cloud.

The guard of the tag-scoped routes (hypd.api.absent_clusters) reads the route's cluster record,
and the route reads it again from the request's memo (hypd.api.context.request_clusters), not
the table. The memo is the request's alone: the API function's next request, in the same warm
execution environment, reads the table again and sees what changed in between.
"""

from __future__ import annotations

import json
from typing import Any

from hypd.aws.dynamodb import Table
from hypd.clusters.models import ClusterSource, ClusterStatus
from hypd.clusters.store import ClusterStore
from hypd.table import cluster_key
from hypd_cli.api_client import ApiClient
from hypd_local.calls import Call, watch_calls
from tests.unit.support import cluster_record, eks_arn

TAG = "reads"
CREATION = "op-" + "c" * 32
TEARDOWN = "op-" + "d" * 32


def record(cloud: Any, status: ClusterStatus, operation_id: str) -> None:
    """The cluster's record as a create (CREATING) or a teardown (DELETED) leaves it, written to
    the cloud's table directly: nothing of it exists in AWS."""
    store = ClusterStore(Table(cloud.client("dynamodb"), cloud.resources["HypdTable"]))
    store.save(cluster_record(TAG, eks_arn(f"hypd-{TAG}"), source=ClusterSource.CREATED)
               .model_copy(update={"status": status, "last_operation_id": operation_id}))
    cloud.wait_for_executions(timeout=60)  # what its stream record set off, done


def reads_of_the_record(calls: list[Call]) -> int:
    key = {name: {"S": value} for name, value in cluster_key(TAG).items()}
    return sum(1 for call in calls
               if call.operation == "GetItem" and call.params.get("Key") == key)


def test_a_tag_scoped_get_reads_the_cluster_record_once(api: ApiClient, cloud: Any) -> None:
    # Given an ACTIVE cluster's record
    record(cloud, ClusterStatus.ACTIVE, CREATION)

    # When a route under its tag that reads the record is asked, every AWS call watched
    calls: list[Call] = []
    with watch_calls(calls.append):
        policy = api.call("getHealthPolicy", tag=TAG)

    # Then the record was read once: the guard's read, reused by the route
    assert policy["default"] is True
    assert reads_of_the_record(calls) == 1


def test_the_next_request_sees_the_record_as_it_is_now(api: ApiClient, cloud: Any) -> None:
    # Given a cluster whose creation has not made its HyperPod cluster yet
    record(cloud, ClusterStatus.CREATING, CREATION)
    first = api.send("GET", f"/clusters/{TAG}/nodes")
    assert first.status == 409
    assert json.loads(first.body)["details"]["status"] == "CREATING"

    # When its record changes between two requests (a teardown recorded it DELETED)
    record(cloud, ClusterStatus.DELETED, TEARDOWN)
    calls: list[Call] = []
    with watch_calls(calls.append):
        second = api.send("GET", f"/clusters/{TAG}/nodes")

    # Then the second request read the record again and answers from the new one
    assert reads_of_the_record(calls) == 1
    answer = json.loads(second.body)
    assert (second.status, answer["code"]) == (409, "ClusterDeleted"), answer
    assert answer["details"] == {"tag": TAG, "status": "DELETED", "operationId": TEARDOWN}
