"""`Idempotency-Key` over HTTP on the local cloud (docs/api.md): a request sent again with its
key is answered as the first was and runs nothing; without a key nothing changes.

Each test has a cloud of its own (tests/conftest.py's `cloud`); the API function's record of a
key is written and read under its own role, which the local cloud's IAM judges.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, RawAnswer
from hypd_cli.demo import demo_request, follow
from hypd_local.seed import seed_clusters
from tests.e2e.test_create_pipeline import BUCKET, create
from tests.support import fail_calls

KEY = "5b3c0a52-7d0e-4d8e-9a0f-2f4c9e1d7a61"


def keyed(
    api: ApiClient, method: str, path: str, body: dict[str, Any] | None, key: str | None
) -> RawAnswer:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Idempotency-Key": key} if key is not None else None
    return api.send(method, path, data=data, headers=headers)


def assert_replayed(again: RawAnswer, first: RawAnswer) -> None:
    """`again` is `first`'s answer, sent again and marked so."""
    assert first.headers.get("Idempotent-Replayed") is None
    assert (again.status, json.loads(again.body)) == (first.status, json.loads(first.body))
    assert again.headers.get("Idempotent-Replayed") == "true"


def operations(api: ApiClient, kind: str) -> list[str]:
    return [op["id"] for op in api.get("/operations")["operations"] if op["kind"] == kind]


@pytest.mark.frozen_clock
def test_a_create_sent_twice_with_one_key_is_one_operation_and_one_answer(
    cloud: Any, api: ApiClient
) -> None:
    # Given a create request answered 202
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )
    body = demo_request(api, "e2e", BUCKET)
    first = keyed(api, "POST", "/clusters", body, KEY)
    assert first.status == 202, first.body
    # When it is sent again with the same key (a client that lost the first answer)
    again = keyed(api, "POST", "/clusters", body, KEY)
    # Then the same 202 and operation id, marked as replayed, and one create operation
    assert_replayed(again, first)
    assert operations(api, "create-cluster") == [json.loads(first.body)["operationId"]]
    cloud.wait_for_executions(timeout=240)
    assert api.get(f"/operations/{json.loads(first.body)['operationId']}")["status"] == (
        "SUCCEEDED"
    )


def test_a_retry_sent_twice_with_one_key_is_one_retry(cloud: Any, api: ApiClient) -> None:
    # Given a discover that failed (HyperPod refused to list clusters)
    seed_clusters(cloud)
    with fail_calls(cloud, "sagemaker", "list_clusters", "AccessDeniedException", times=100):
        operation_id = api.post("/clusters/discover")["operationId"]
        cloud.wait_for_executions(timeout=60)
    assert api.get(f"/operations/{operation_id}")["status"] == "FAILED"
    # When its retry is sent twice with one key
    first = keyed(api, "POST", f"/operations/{operation_id}/retry", None, KEY)
    assert first.status == 202, first.body
    again = keyed(api, "POST", f"/operations/{operation_id}/retry", None, KEY)
    # Then the second is the first's answer, and the operation was retried once, to success
    assert_replayed(again, first)
    cloud.wait_for_executions(timeout=60)
    done = api.get(f"/operations/{operation_id}")
    assert done["status"] == "SUCCEEDED", done
    assert len(done["retries"]) == 1
    # And a new key is a new request: a succeeded operation is not retried
    refused = keyed(api, "POST", f"/operations/{operation_id}/retry", None, "another key")
    assert refused.status == 409
    assert json.loads(refused.body)["code"] == "OperationNotRetryable"


def test_while_a_discover_runs_its_key_replays_another_body_is_422_and_no_key_is_409(
    cloud: Any, api: ApiClient
) -> None:
    # Given a discover sent with a key, still listing EKS clusters
    seed_clusters(cloud)
    release = threading.Event()
    with fail_calls(cloud, "eks", "list_clusters", None, times=1, block=release):
        first = keyed(api, "POST", "/clusters/discover", None, KEY)
        assert first.status == 202, first.body
        # When the same request comes again with its key, it gets the first's answer
        assert_replayed(keyed(api, "POST", "/clusters/discover", None, KEY), first)
        # When the key comes with another body, 422 naming the header
        other = keyed(api, "POST", "/clusters/discover", {"clusterNames": ["train"]}, KEY)
        assert other.status == 422, other.body
        assert json.loads(other.body)["code"] == "IdempotencyKeyMismatch"
        assert "Idempotency-Key" in json.loads(other.body)["message"]
        # When a malformed key comes, 400 naming the header
        malformed = keyed(api, "POST", "/clusters/discover", None, "caf\u00e9")
        assert malformed.status == 400, malformed.body
        assert "Idempotency-Key" in json.loads(malformed.body)["message"]
        # When no key comes, the request is what it always was: a conflict with the first
        plain = keyed(api, "POST", "/clusters/discover", None, None)
        assert plain.status == 409, plain.body
        assert plain.headers.get("Idempotent-Replayed") is None
        release.set()
        cloud.wait_for_executions(timeout=60)
    # Then one discover ran
    assert operations(api, "discover") == [json.loads(first.body)["operationId"]]


@pytest.mark.function_concurrency(2)  # as Lambda would, a second environment serves the repeat
def test_a_scale_repeated_while_the_first_is_served_is_429_then_gets_the_first_answer(
    cloud: Any, api: ApiClient
) -> None:
    # Given a cluster, and a scale sent with a key that is still being served (held in its
    # read of the live cluster, as a slow first delivery EventBridge gave up on after 5 s is)
    assert follow(api, cloud, create(api, cloud), timeout=240)["status"] == "SUCCEEDED"
    cloud.wait_for_executions()
    path, body = "/clusters/e2e/instance-groups/gpu", {"count": 0}
    held, entered = threading.Event(), threading.Event()
    answers: list[RawAnswer] = []
    with fail_calls(cloud, "sagemaker", "describe_cluster", None, times=1, block=held,
                    entered=entered):
        first = threading.Thread(target=lambda: answers.append(keyed(api, "PATCH", path, body,
                                                                     KEY)))
        first.start()
        assert entered.wait(timeout=60)
        # When it is sent again meanwhile
        busy = keyed(api, "PATCH", path, body, KEY)
        held.set()
        first.join(timeout=60)
    # Then 429 (which EventBridge retries, unlike a 409) saying when to ask again
    assert busy.status == 429, busy.body
    assert json.loads(busy.body)["code"] == "IdempotencyKeyInUse"
    assert 1 <= int(busy.headers["Retry-After"]) <= 5
    # And once the first has answered, the repeat gets its answer: one scale operation
    (answer,) = answers
    assert answer.status == 202, answer.body
    assert_replayed(keyed(api, "PATCH", path, body, KEY), answer)
    assert operations(api, "update-instance-group") == [json.loads(answer.body)["operationId"]]
