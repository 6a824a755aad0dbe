"""SQS adapter: keeping what could not be processed in a dead-letter queue."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from hypd.aws.errors import NETWORK_ERRORS, translate

MAX_BODY_CHARACTERS = 262_000
"""SQS takes at most 256 KiB per message; a longer body is cut."""


def send_message(
    client: Any, queue_url: str, body: str, attributes: dict[str, str], *, doing: str
) -> None:
    """Send one message (string attributes, each at most 256 characters)."""
    try:
        client.send_message(
            QueueUrl=queue_url,
            MessageBody=body[:MAX_BODY_CHARACTERS],
            MessageAttributes={
                name: {"DataType": "String", "StringValue": value[:256]}
                for name, value in attributes.items()
            },
        )
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, doing) from exc
