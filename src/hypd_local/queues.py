"""Sending to an SQS queue named by its ARN, as the local cloud's services do: dead-letter
queues of rules and schedules, Lambda's destinations, a stream mapping's on-failure queue."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from botocore.credentials import Credentials

from hypd_local.credentials import signing_as


def send_to_queue(client: Callable[[str], Any], arn: str, body: str, *,
                  attributes: Mapping[str, str] | None = None, group: str | None = None,
                  credentials: Credentials | None = None) -> None:
    """SendMessage to the queue ``arn`` names, with string message ``attributes``, signed
    with ``credentials`` (the role the service acts as; None: the local cloud's own). The
    queue's URL is looked up as the local cloud: finding it is the service's business, not
    the role's."""
    parts = arn.split(":")
    sqs = client("sqs")
    with signing_as(None):
        url = sqs.get_queue_url(QueueName=parts[5], QueueOwnerAWSAccountId=parts[4])["QueueUrl"]
    request: dict[str, Any] = {"QueueUrl": url, "MessageBody": body}
    if attributes:
        request["MessageAttributes"] = {
            key: {"DataType": "String", "StringValue": value}
            for key, value in attributes.items()}
    if group:
        request["MessageGroupId"] = group
    with signing_as(credentials):
        sqs.send_message(**request)
