"""DynamoDB stream event source mappings: batches in order, retries from a reported record,
bisection and the on-failure destination, and what Lambda refuses when the mapping is made."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from hypd_local import LocalCloud
from hypd_local.intrinsics import TemplateError
from hypd_local.patches.dynamodb import wire_copy
from tests.local_cloud.conftest import FIXTURES

TEMPLATE = FIXTURES / "streams.yaml"


@pytest.fixture
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(TEMPLATE) as running:
        yield running


def reader() -> Any:
    return sys.modules["hypd_fn_StreamReaderFunction"]


def write(cloud: LocalCloud, key: str, **flags: bool) -> None:
    item: dict[str, Any] = {"PK": {"S": key}}
    item.update({name: {"BOOL": value} for name, value in flags.items()})
    cloud.client("dynamodb").put_item(TableName=cloud.resources["SourceTable"], Item=item)


def processed(batches: list[list[str]]) -> list[str]:
    return [key for batch in batches for key in batch]


def test_writes_reach_the_function_in_order_in_batches_of_at_most_batch_size(
        cloud: LocalCloud) -> None:
    keys = [f"k{i:02d}" for i in range(10)]
    for key in keys:
        write(cloud, key)
    cloud.wait_for_executions()

    seen = reader().SEEN
    assert processed(seen) == keys  # each record once, in stream order
    assert all(1 <= len(batch) <= 4 for batch in seen)
    assert cloud.stream_failures == []


def test_a_reported_record_is_retried_with_those_after_it_not_those_before(
        cloud: LocalCloud) -> None:
    write(cloud, "a")
    write(cloud, "b", report=True)
    write(cloud, "c")
    cloud.wait_for_executions()

    # However the writes were batched: a is checkpointed, b is delivered again (with c when
    # they shared the batch), and the stream ends in order
    keys = processed(reader().SEEN)
    assert keys.count("a") == 1
    assert keys.count("b") == 2
    assert keys.count("c") in (1, 2)
    assert keys[-2:] == ["b", "c"]
    assert cloud.stream_failures == []


def test_a_record_that_keeps_failing_is_isolated_by_bisection_and_sent_to_the_destination(
        cloud: LocalCloud) -> None:
    for key in ("p", "q"):
        write(cloud, key)
    write(cloud, "bad", fail=True)
    write(cloud, "r")
    cloud.wait_for_executions()

    (failure,) = cloud.stream_failures
    assert (failure.size, failure.condition) == (1, "RetryAttemptsExhausted")
    assert failure.attempts == 3  # the first try and MaximumRetryAttempts 2
    keys = processed(reader().SEEN)
    assert {"p", "q", "r"} <= set(keys)
    assert keys[-1] == "r"  # the records after the bad one are processed once it is skipped
    sqs = cloud.client("sqs")
    (message,) = sqs.receive_message(QueueUrl=cloud.resources["FailedBatches"],
                                     MaxNumberOfMessages=10)["Messages"]
    record = json.loads(message["Body"])
    info = record["DDBStreamBatchInfo"]
    assert info["batchSize"] == 1
    assert info["streamArn"] == cloud.stack.tables["SourceTable"].stream_arn
    assert info["startSequenceNumber"] == failure.first_sequence
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 3


def test_the_stream_arn_is_the_one_describe_table_gives(cloud: LocalCloud) -> None:
    table = cloud.client("dynamodb").describe_table(
        TableName=cloud.resources["SourceTable"])["Table"]
    assert table["LatestStreamArn"] == cloud.stack.tables["SourceTable"].stream_arn
    assert table["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"


def _without(action: str) -> Any:
    def edit(template: dict[str, Any]) -> None:
        statements = template["Resources"]["StreamReaderRole"]["Properties"]["Policies"][0][
            "PolicyDocument"]["Statement"]
        for statement in statements:
            statement["Action"] = [a for a in statement["Action"] if a != action]
        statements[:] = [s for s in statements if s["Action"]]
    return edit


@pytest.mark.parametrize("action", ["dynamodb:GetRecords", "dynamodb:ListStreams"])
def test_a_role_that_cannot_read_the_stream_is_refused_when_the_mapping_is_made(
        action: str) -> None:
    expected = (r"Cannot access stream .*GetRecords, GetShardIterator, DescribeStream, "
                "and ListStreams")
    with pytest.raises(TemplateError, match=expected), LocalCloud(
            TEMPLATE, template_edit=_without(action)):
        pass


def test_a_role_that_cannot_reach_the_destination_is_refused() -> None:
    with pytest.raises(TemplateError, match="does not have permissions to call SendMessage on SQS"
                       ), LocalCloud(TEMPLATE, template_edit=_without("sqs:SendMessage")):
        pass


def test_a_cancelled_transaction_leaves_no_record_and_a_committed_one_its_writes(
        cloud: LocalCloud) -> None:
    dynamodb = cloud.client("dynamodb")
    table = cloud.resources["SourceTable"]
    write(cloud, "held")

    def transaction(condition: str) -> list[dict[str, Any]]:
        return [
            {"Put": {"TableName": table, "Item": {"PK": {"S": "t1"}}}},
            {"Put": {"TableName": table, "Item": {"PK": {"S": "held"}, "v": {"N": "2"}},
                     "ConditionExpression": condition}},
        ]

    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=transaction("attribute_not_exists(PK)"))
    dynamodb.transact_write_items(TransactItems=transaction("attribute_exists(PK)"))
    cloud.wait_for_executions()

    # the cancelled one's put of t1 never reached the stream; the committed one's did, once
    assert processed(reader().SEEN) == ["held", "t1", "held"]


def test_a_cancelled_transaction_puts_back_what_it_named_and_keeps_the_rest(
        cloud: LocalCloud) -> None:
    # Given a table with a range key and four items (only some of which a transaction names)
    dynamodb = cloud.client("dynamodb")
    dynamodb.create_table(
        TableName="ranged", BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"},
                              {"AttributeName": "SK", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"},
                   {"AttributeName": "SK", "KeyType": "RANGE"}])

    def key(pk: str, sk: str) -> dict[str, Any]:
        return {"PK": {"S": pk}, "SK": {"S": sk}}

    for pk, sk in (("p", "kept"), ("p", "updated"), ("p", "deleted"), ("q", "other")):
        dynamodb.put_item(TableName="ranged", Item={**key(pk, sk), "v": {"N": "1"}})

    def items() -> dict[tuple[str, str], str]:
        found = dynamodb.scan(TableName="ranged")["Items"]
        return {(i["PK"]["S"], i["SK"]["S"]): i["v"]["N"] for i in found}

    before = items()

    def transaction(condition: str) -> list[dict[str, Any]]:
        return [
            {"Update": {"TableName": "ranged", "Key": key("p", "updated"),
                        "UpdateExpression": "SET v = :two",
                        "ExpressionAttributeValues": {":two": {"N": "2"}}}},
            {"Delete": {"TableName": "ranged", "Key": key("p", "deleted")}},
            {"Put": {"TableName": "ranged", "Item": {**key("p", "new"), "v": {"N": "3"}}}},
            {"ConditionCheck": {"TableName": "ranged", "Key": key("q", "other"),
                                "ConditionExpression": condition}},
        ]

    # When a transaction fails its last condition
    with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
        dynamodb.transact_write_items(TransactItems=transaction("attribute_not_exists(PK)"))

    # Then every item is as it was (the update made in place is undone too)
    assert items() == before
    # and the table takes writes as before; a transaction that holds commits
    dynamodb.transact_write_items(TransactItems=transaction("attribute_exists(PK)"))
    assert items() == {("p", "kept"): "1", ("p", "updated"): "2", ("p", "new"): "3",
                       ("q", "other"): "1"}


def test_an_item_of_every_kind_of_attribute_reads_back_as_it_was_written(
        cloud: LocalCloud) -> None:
    # moto's items are answered in the wire's form without its generic walk (binaries still
    # walked): GetItem and Query give back exactly what was put
    dynamodb = cloud.client("dynamodb")
    table = cloud.resources["SourceTable"]
    item = {"PK": {"S": "every-kind"}, "yes": {"BOOL": True}, "no": {"BOOL": False},
            "nothing": {"NULL": True}, "number": {"N": "1.50"}, "empty": {"S": ""},
            "strings": {"SS": ["a", "b"]}, "numbers": {"NS": ["1", "2"]},
            "nested": {"M": {"list": {"L": [{"S": "x"}, {"N": "2"}, {"BOOL": False},
                                             {"M": {}}, {"L": []}, {"NULL": True}]}}},
            "binary": {"B": b"\x00\x01"}, "binaries": {"BS": [b"a"]}}
    dynamodb.put_item(TableName=table, Item=item)

    assert dynamodb.get_item(TableName=table, Key={"PK": {"S": "every-kind"}})["Item"] == item
    without_binaries = {k: v for k, v in item.items() if k not in ("binary", "binaries")}
    dynamodb.put_item(TableName=table, Item={**without_binaries, "PK": {"S": "plain"}})
    assert dynamodb.get_item(TableName=table, Key={"PK": {"S": "plain"}})["Item"] == {
        **without_binaries, "PK": {"S": "plain"}}
    # (the copy is taken for what has no binary, which the walk would base64-encode)
    assert [wire_copy(v) for v in without_binaries.values()] == list(without_binaries.values())
    assert wire_copy(item["binary"]) is None
    assert wire_copy({"M": {"b": item["binaries"]}}) is None
