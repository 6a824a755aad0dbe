"""SNS adapter: publishing hypd's notifications."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from hypd.aws.errors import NETWORK_ERRORS, translate


def publish(
    client: Any, topic_arn: str, subject: str, message: str, attributes: dict[str, str]
) -> str:
    """Publish one message (string message attributes); returns its MessageId."""
    try:
        answer = client.publish(
            TopicArn=topic_arn,
            Subject=subject[:100],  # SNS: at most 100 characters
            Message=message,
            MessageAttributes={
                name: {"DataType": "String", "StringValue": value}
                for name, value in attributes.items()
                if value
            },
        )
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, f"publishing to {topic_arn}") from exc
    return str(answer["MessageId"])
