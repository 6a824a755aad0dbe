"""Events publisher function: the table's stream -> hypd's events on EventBridge
(hypd.events.publish), once per transition (docs/automation.md).

Lambda's DynamoDB event source mapping calls it with a batch of stream records; the answer's
``batchItemFailures`` names the first record not published, from which Lambda retries.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd.config import PublisherSettings
from hypd.wiring.publisher import publisher

SETTINGS = PublisherSettings.from_env()
PUBLISH = publisher(SETTINGS)

logger = Logger()


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return PUBLISH(event.get("Records") or [])
