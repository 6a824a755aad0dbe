"""Stream records -> PutEvents in order, ten to a request; a failure answers Lambda with the
first record not fully published, so the retry starts there and skips nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hypd.aws.dynamodb import Table
from hypd.aws.eventbridge import Entry, Refused, put_events
from hypd.errors import AwsThrottled
from hypd.events.model import OPERATION_STATE_CHANGE
from hypd.events.publish import publish
from hypd.operations import lifecycle
from hypd.operations.models import OperationKind
from tests.unit.events.test_derive import image


def record(sequence: int, old: dict[str, Any] | None, new: dict[str, Any] | None
           ) -> dict[str, Any]:
    images: dict[str, Any] = {"SequenceNumber": str(sequence)}
    if old is not None:
        images["OldImage"] = old
    if new is not None:
        images["NewImage"] = new
    return {"eventName": "INSERT" if old is None else "MODIFY", "dynamodb": images}


def new_operations(count: int) -> list[dict[str, Any]]:
    """``count`` INSERT records of new operations, then one rewrite that makes no event."""
    records = [record(100 + i, None, image(lifecycle.new_operation(
        OperationKind.CREATE_CLUSTER, cluster_tag=f"t{i}"))) for i in range(count)]
    same = records[0]["dynamodb"]["NewImage"]
    return [*records, record(999, same, same)]


class FakeBus:
    def __init__(self, fail_at: int | None = None, refuse_at: int | None = None) -> None:
        self.requests: list[list[Entry]] = []
        self.put: list[Entry] = []
        self.fail_at, self.refuse_at = fail_at, refuse_at

    def __call__(self, entries: Sequence[Entry]) -> list[Refused]:
        self.requests.append(list(entries))
        if self.fail_at is not None and len(self.put) + len(entries) > self.fail_at:
            raise AwsThrottled("putting events: ThrottlingException: Rate exceeded")
        refused = []
        for entry in entries:
            if self.refuse_at is not None and len(self.put) == self.refuse_at:
                refused.append(Refused(entry, "InternalFailure", "try again"))
                self.refuse_at = None
                continue
            self.put.append(entry)
        return refused


def test_all_records_published_in_order_ten_to_a_request() -> None:
    bus = FakeBus()
    answer = publish(new_operations(23), bus, "hypd")

    assert answer == {"batchItemFailures": []}
    assert [len(r) for r in bus.requests] == [10, 10, 3]  # the rewrite made no event
    assert [e.detail["clusterTag"] for e in bus.put] == [f"t{i}" for i in range(23)]
    assert {(e.source, e.detail_type) for e in bus.put} == {("hypd", OPERATION_STATE_CHANGE)}


@pytest.mark.parametrize(("bus", "first_failed"), [
    (FakeBus(fail_at=12), "110"),    # the second request fails: retry from its first record
    (FakeBus(refuse_at=13), "113"),  # one entry refused: retry from its record
])
def test_a_failure_answers_the_first_record_not_published(bus: FakeBus,
                                                          first_failed: str) -> None:
    answer = publish(new_operations(23), bus, "hypd")

    assert answer == {"batchItemFailures": [{"itemIdentifier": first_failed}]}
    assert len(bus.requests) == 2  # nothing after the failure is tried


def test_the_adapter_sends_one_request_of_json_details_and_returns_refused_entries() -> None:
    events = boto3.client("events", region_name="us-west-2", aws_access_key_id="x",
                          aws_secret_access_key="x")
    entries = [Entry("hypd", OPERATION_STATE_CHANGE, {"status": "RUNNING", "n": i},
                     ("arn:aws:states:us-west-2:123456789012:execution:x:y",) if i else ())
               for i in range(10)]
    with Stubber(events) as stub:
        stub.add_response("put_events", {"FailedEntryCount": 1, "Entries": [
            {"EventId": "a"}, {"ErrorCode": "InternalFailure", "ErrorMessage": "retry"},
            *[{"EventId": str(i)} for i in range(8)]]}, {"Entries": [
                {"Source": "hypd", "DetailType": OPERATION_STATE_CHANGE,
                 "Detail": f'{{"n":{i},"status":"RUNNING"}}', "EventBusName": "default",
                 **({"Resources": list(entries[i].resources)} if i else {})}
                for i in range(10)]})
        refused = put_events(events, "default", entries)
        stub.assert_no_pending_responses()
    assert refused == [Refused(entries[1], "InternalFailure", "retry")]
    with pytest.raises(ValueError, match="1 to 10 entries, not 11"):
        put_events(events, "default", [*entries, entries[0]])


@pytest.mark.usefixtures("fixed_clock")
def test_the_api_s_idempotency_records_publish_nothing(table: Table) -> None:
    from hypd.idempotency.models import IdempotentRequest, StoredResponse
    from hypd.idempotency.store import IdempotencyStore

    # Given the writes of an Idempotency-Key's record, as the store makes them: a claim, the
    # answer that replaces it, and TTL's removal of the answer
    store = IdempotencyStore(table)
    keyed = IdempotentRequest("arn:aws:iam::123456789012:user/a", "POST /clusters/discover",
                              "k-1", "f-1")
    claim = store.claim(keyed)
    assert not isinstance(claim, StoredResponse)
    (claimed,) = table.query_prefix(f"IDEMPOTENCY#{keyed.scope}", "IDEMPOTENCY")
    store.complete(claim, StoredResponse(202, '{"operationId":"op-1"}'))
    (answered,) = table.query_prefix(f"IDEMPOTENCY#{keyed.scope}", "IDEMPOTENCY")
    records = [record(1, None, claimed), record(2, claimed, answered), record(3, answered, None)]
    # When the stream delivers them to the publisher
    bus = FakeBus()
    answer = publish(records, bus, "hypd")
    # Then no event is put, and the batch is done
    assert answer == {"batchItemFailures": []}
    assert bus.requests == []
