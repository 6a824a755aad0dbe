"""`Idempotency-Key`: the store's claims and answers on moto DynamoDB and the clock of the
test, then the middleware through functions/api/app.py in-process (docs/api.md)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from hypd.aws.dynamodb import Table
from hypd.errors import IdempotencyKeyInUse, IdempotencyKeyMismatch
from hypd.table import TTL_ATTRIBUTE
from tests.unit.support import ACCOUNT, REGION, FakeClock
from tests.unit.test_api_handler import Api as HandlerApi
from tests.unit.test_api_handler import Response, api_event, discover_api

# Every test on the clock of the test (a claim goes stale, a key expires, as it moves).
pytestmark = pytest.mark.usefixtures("fresh_imports", "fixed_clock")

SAMPLE_ROLE = "arn:aws:sts::123456789012:assumed-role/PlatformEngineer"
"""The principal of events/api-get-operation.json's caller (its session name left out)."""
UNKNOWN_OP = "op-" + "0" * 32


# ---------------------------------------------------------------------------- the store
@pytest.fixture
def store(table: Table) -> Any:
    from hypd.idempotency.store import IdempotencyStore

    return IdempotencyStore(table)


def request(key: str = "k-1", fingerprint: str = "f-1", principal: str = SAMPLE_ROLE) -> Any:
    from hypd.idempotency.models import IdempotentRequest

    return IdempotentRequest(principal, "POST /clusters/discover", key, fingerprint)


def answer(status: int = 202, body: str = '{"operationId":"op-1"}') -> Any:
    from hypd.idempotency.models import StoredResponse

    return StoredResponse(status, body, {"Content-Type": "application/json"})


def claimed(store: Any, wanted: Any) -> Any:
    from hypd.idempotency.models import Claim

    outcome = store.claim(wanted)
    assert isinstance(outcome, Claim), outcome
    return outcome


def test_a_first_request_claims_its_key_and_a_repeat_gets_its_answer(store: Any) -> None:
    # Given a first request that claimed its key and answered 202
    claim = claimed(store, request())
    assert store.complete(claim, answer()) is True
    # When the same request comes again
    # Then it gets that answer, and runs nothing (no claim)
    assert store.claim(request()) == answer()


def test_a_repeat_while_the_first_runs_is_told_to_come_back(
    store: Any, fixed_clock: FakeClock
) -> None:
    from hypd.idempotency.store import MAX_RETRY_AFTER_SECONDS

    # Given a first request still running
    claimed(store, request())
    fixed_clock.advance(1)
    # When it is repeated
    with pytest.raises(IdempotencyKeyInUse) as refused:
        store.claim(request())
    # Then a 429 that says when to ask again, soon
    assert refused.value.status == 429
    assert 1 <= refused.value.retry_after <= MAX_RETRY_AFTER_SECONDS
    assert refused.value.details["header"] == "Idempotency-Key"


@pytest.mark.parametrize("completed", [False, True])
def test_the_key_of_another_request_is_a_mismatch(store: Any, completed: bool) -> None:
    # Given a key used for one request (still running, or answered)
    claim = claimed(store, request(fingerprint="discover all"))
    if completed:
        store.complete(claim, answer())
    # When another request (another body, say) comes with the same key
    with pytest.raises(IdempotencyKeyMismatch) as refused:
        store.claim(request(fingerprint="discover train"))
    # Then 422, whatever state the first is in
    assert (refused.value.status, refused.value.code) == (422, "IdempotencyKeyMismatch")


def test_keys_are_each_callers_own(store: Any) -> None:
    # Given alice's request answered
    store.complete(claimed(store, request(principal="arn:aws:iam::1:user/alice")), answer())
    # When bob sends the same key with another request
    # Then his is a request of its own, not a mismatch nor alice's answer
    claimed(store, request(principal="arn:aws:iam::1:user/bob", fingerprint="f-2"))


def test_a_claim_whose_request_died_goes_stale_and_is_taken_over(
    store: Any, fixed_clock: FakeClock
) -> None:
    from hypd.idempotency.store import IN_PROGRESS

    # Given a first request that claimed its key and never ended (its function timed out)
    first = claimed(store, request())
    # When the repeat comes once the claim went stale on the clock
    fixed_clock.advance(IN_PROGRESS.total_seconds() - 1)
    with pytest.raises(IdempotencyKeyInUse):
        store.claim(request())
    fixed_clock.advance(1)
    second = claimed(store, request())
    # Then it runs; the first, should it still end, cannot overwrite the second's answer
    assert second.claim_id != first.claim_id
    assert store.complete(first, answer(body='{"operationId":"op-first"}')) is False
    assert store.complete(second, answer()) is True
    assert store.claim(request()) == answer()


def test_a_released_claim_lets_a_repeat_run_again(store: Any) -> None:
    # Given a first request whose answer was a 5xx (the middleware releases its claim)
    store.release(claimed(store, request()))
    # When it is repeated, it runs again
    claimed(store, request())


def test_a_key_is_remembered_a_day_then_forgotten(
    store: Any, table: Table, fixed_clock: FakeClock
) -> None:
    from hypd.idempotency.store import RETENTION

    # Given an answered request
    store.complete(claimed(store, request()), answer())
    # Then its record expires a day later (the table's TTL attribute)
    (item,) = table.query_prefix(f"IDEMPOTENCY#{request().scope}", "IDEMPOTENCY")
    expected = fixed_clock.value + RETENTION
    assert int(item[TTL_ATTRIBUTE]["N"]) == int(expected.timestamp())
    # And until then it answers (even a day minus a second later)
    fixed_clock.advance(RETENTION.total_seconds() - 1)
    assert store.claim(request()) == answer()
    # And once past, before DynamoDB deleted it, the key is free, for any request
    fixed_clock.advance(1)
    claimed(store, request(fingerprint="another request"))


def test_an_answer_too_large_to_keep_is_not_kept(store: Any) -> None:
    from hypd.idempotency.store import MAX_STORED_BYTES

    claim = claimed(store, request())
    assert store.complete(claim, answer(200, "x" * MAX_STORED_BYTES)) is False
    # the claim is released: a repeat runs again
    claimed(store, request())


def test_a_claim_outlasts_the_api_functions_timeout(template: dict[str, Any]) -> None:
    from hypd.idempotency.store import IN_PROGRESS

    timeout = template["Resources"]["ApiFunction"]["Properties"]["Timeout"]
    assert timedelta(seconds=timeout + 10) < IN_PROGRESS


# ---------------------------------------------------------------------------- the request
def event_with_key(
    method: str, path: str, key: str | list[str] | None, **kwargs: Any
) -> dict[str, Any]:
    event = api_event(method, path, **kwargs)
    keys = [key] if isinstance(key, str) else key
    if keys is not None:
        event["headers"]["Idempotency-Key"] = keys[-1]
        event["multiValueHeaders"]["Idempotency-Key"] = keys
    return event


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ('{"clusterNames": ["a", "b"]}', '{ "clusterNames" : ["a","b"] }'),
        ('{"b": 1, "a": {"d": 2, "c": 3}}', '{"a": {"c": 3, "d": 2}, "b": 1}'),
    ],
)
def test_a_json_body_in_another_spacing_or_key_order_is_the_same_request(
    first: str, second: str
) -> None:
    from hypd.api.idempotency import fingerprint

    one = event_with_key("POST", "/clusters/discover", "k", body=first)
    two = event_with_key("POST", "/clusters/discover", "k", body=second)
    assert fingerprint(one) == fingerprint(two)


def test_the_method_path_query_and_body_each_make_another_request() -> None:
    from hypd.api.idempotency import fingerprint

    base = {"query": {"maxRetries": "2"}, "body": '{"a": 1}'}
    one = fingerprint(event_with_key("POST", "/operations/op-1/retry", "k", **base))
    others = [
        event_with_key("PUT", "/operations/op-1/retry", "k", **base),
        event_with_key("POST", "/operations/op-2/retry", "k", **base),
        event_with_key(
            "POST", "/operations/op-1/retry", "k", query={"maxRetries": "3"}, body='{"a": 1}'
        ),
        event_with_key(
            "POST", "/operations/op-1/retry", "k", query={"maxRetries": "2"}, body='{"a": 2}'
        ),
        event_with_key("POST", "/operations/op-1/retry", "k", query={"maxRetries": "2"}),
    ]
    assert len({one, *(fingerprint(event) for event in others)}) == 1 + len(others)


def test_a_roles_sessions_are_one_principal_and_users_are_themselves() -> None:
    from hypd.api.idempotency import ANONYMOUS, principal

    event = api_event("POST", "/clusters/discover")
    assert principal(event) == SAMPLE_ROLE
    event["requestContext"]["identity"]["userArn"] = "arn:aws:iam::123456789012:user/bob"
    assert principal(event) == "arn:aws:iam::123456789012:user/bob"
    event["requestContext"]["identity"]["userArn"] = None
    assert principal(event) == ANONYMOUS


# ---------------------------------------------------------------------------- through the API
class Api(HandlerApi):
    def keyed_discover(self, key: str | list[str] | None, body: str | None = None) -> Response:
        return self.send(event_with_key("POST", "/clusters/discover", key, body=body))

    def retry(self, operation_id: str, key: str | None) -> Response:
        return self.send(retry_event(operation_id, key))

    def executions(self) -> list[str]:
        listed = self.sfn.list_executions(stateMachineArn=self.state_machine_arn)["executions"]
        return [execution["name"] for execution in listed]


def keyed_api(monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table) -> Api:
    return Api(**vars(discover_api(monkeypatch, template, table)))


def retry_event(operation_id: str, key: str | None) -> dict[str, Any]:
    return event_with_key(
        "POST",
        f"/operations/{operation_id}/retry",
        key,
        resource="/operations/{operationId}/retry",
        path_parameters={"operationId": operation_id},
    )


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table) -> Api:
    return keyed_api(monkeypatch, template, table)


def test_a_repeated_discover_with_one_key_starts_one_operation_and_answers_alike(
    api: Api,
) -> None:
    # Given a discover answered 202
    first = api.keyed_discover("8e03978e-40d5-43e8-bc93-6894a57f9324")
    assert first.status == 202, first.body
    assert "Idempotent-Replayed" not in first.headers
    # When it is delivered again with the same key (EventBridge's retry of a slow delivery)
    second = api.keyed_discover("8e03978e-40d5-43e8-bc93-6894a57f9324")
    # Then the same 202 and body, marked as replayed, and still one operation and execution
    assert (second.status, second.body) == (first.status, first.body)
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.headers["Content-Type"] == "application/json"
    assert api.executions() == [first.body["operationId"]]
    assert [op.id for op in api.operations.list().operations] == [first.body["operationId"]]


def test_without_a_key_a_repeat_is_a_new_request(api: Api) -> None:
    assert api.keyed_discover(None).status == 202
    # The first still runs: a second is the conflict it always was
    assert api.keyed_discover(None).status == 409


def test_the_same_key_for_another_body_is_422(api: Api) -> None:
    assert api.keyed_discover("k-1", '{"clusterNames": ["train"]}').status == 202
    refused = api.keyed_discover("k-1", '{"clusterNames": ["infer"]}')
    assert refused.status == 422
    assert refused.body["code"] == "IdempotencyKeyMismatch"
    assert "Idempotency-Key" in refused.body["message"]
    assert len(api.executions()) == 1


def test_a_repeat_while_the_first_is_served_is_429_with_retry_after(api: Api, table: Table) -> None:
    from hypd.api.idempotency import fingerprint
    from hypd.idempotency.models import IdempotentRequest
    from hypd.idempotency.store import IdempotencyStore

    # Given the first delivery of a discover is still being served (its claim taken)
    event = event_with_key("POST", "/clusters/discover", "k-1")
    IdempotencyStore(table).claim(
        IdempotentRequest(SAMPLE_ROLE, "POST /clusters/discover", "k-1", fingerprint(event))
    )
    # When the retry arrives
    refused = api.send(event)
    # Then 429 (which EventBridge retries) with Retry-After, and nothing started
    assert refused.status == 429
    assert refused.body["code"] == "IdempotencyKeyInUse"
    assert 1 <= int(refused.headers["Retry-After"]) <= 5
    assert api.executions() == []


def test_a_refusal_is_kept_and_replayed(api: Api) -> None:
    # Given a retry of an operation that does not exist, refused (404)
    first = api.retry(UNKNOWN_OP, "k-1")
    assert first.status == 404
    # When it is repeated with the same key
    second = api.retry(UNKNOWN_OP, "k-1")
    # Then the same refusal, replayed
    assert (second.status, second.body) == (404, first.body)
    assert second.headers["Idempotent-Replayed"] == "true"


def test_a_server_error_releases_the_key_so_a_repeat_runs_again(
    monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table
) -> None:
    # Given Step Functions throttles the first StartExecution only
    session = boto3.session.Session(region_name=REGION)
    calls: list[str] = []

    def throttle_once(**kwargs: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        calls.append("StartExecution")
        if len(calls) > 1:
            return None
        return AWSResponse("https://states.us-west-2.amazonaws.com/", 400, {}, None), {
            "Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    session.events.register("before-call.sfn.StartExecution", throttle_once)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)
    api = keyed_api(monkeypatch, template, table)
    # When a discover with a key is answered 503, then delivered again
    assert api.keyed_discover("k-1").status == 503
    second = api.keyed_discover("k-1")
    # Then the repeat ran (not a replay of the 503) and started its operation
    assert second.status == 202, second.body
    assert "Idempotent-Replayed" not in second.headers
    assert api.executions() == [second.body["operationId"]]


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "empty"),
        ("x" * 256, "256 characters"),
        ("caf\u00e9", "printable ASCII"),
        ("tab\there", "printable ASCII"),
        (" padded", "printable ASCII"),
        (["one", "two"], "send one"),
    ],
)
def test_a_malformed_key_is_400_naming_the_header(
    api: Api, key: str | list[str], problem: str
) -> None:
    refused = api.keyed_discover(key)
    assert refused.status == 400, refused.body
    assert refused.body["code"] == "ValidationError"
    assert "Idempotency-Key" in refused.body["message"]
    assert problem in refused.body["message"]
    assert refused.body["details"]["errors"][0]["in"] == "header"
    assert api.executions() == []


def test_a_malformed_key_is_named_even_when_the_body_is_wrong_too(api: Api) -> None:
    # When a request with a malformed key also has a body its route refuses
    refused = api.keyed_discover(" padded", '{"clusterNames": []}')
    # Then the 400 names the header: it is checked before the body
    assert refused.status == 400, refused.body
    assert "Idempotency-Key" in refused.body["message"]
    assert api.executions() == []


def test_a_key_of_255_printable_characters_is_taken(api: Api) -> None:
    assert api.keyed_discover("~ " * 127 + "!").status == 202


def test_a_read_ignores_the_header(api: Api) -> None:
    event = event_with_key(
        "GET",
        f"/operations/{UNKNOWN_OP}",
        "",
        resource="/operations/{operationId}",
        path_parameters={"operationId": UNKNOWN_OP},
    )
    assert api.send(event).status == 404


def test_two_callers_with_one_key_are_two_requests(api: Api) -> None:
    alice = retry_event(UNKNOWN_OP, "k-1")
    bob = json.loads(json.dumps(alice))
    bob["requestContext"]["identity"]["userArn"] = f"arn:aws:iam::{ACCOUNT}:user/bob"
    assert api.send(alice).status == 404
    answered = api.send(bob)
    assert answered.status == 404
    assert "Idempotent-Replayed" not in answered.headers
