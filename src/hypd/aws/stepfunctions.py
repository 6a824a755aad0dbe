"""Step Functions adapter."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from hypd.aws.errors import NETWORK_ERRORS, translate


def start_execution(client: Any, state_machine_arn: str, name: str, payload: dict[str, Any]) -> str:
    """Start an execution named `name` (the operation id) and return its ARN.

    Starting an execution again with the same name and input returns the first one, so a
    retried request never starts two.
    """
    try:
        response = client.start_execution(
            stateMachineArn=state_machine_arn, name=name, input=json.dumps(payload)
        )
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, f"starting {state_machine_arn.rsplit(':', 1)[-1]} for {name}") from exc
    return str(response["executionArn"])
