"""Step Functions adapter."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from hypd.aws.errors import NETWORK_ERRORS, error_code, translate


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


_TOKEN_GONE = ("TaskTimedOut", "TaskDoesNotExist", "InvalidToken")
"""The token's task is over (timed out, execution ended or token already used)."""


def send_task_success(client: Any, task_token: str, output: dict[str, Any]) -> bool:
    """Complete a waiting task; False when its token is no longer waiting."""
    return _complete_token(
        lambda: client.send_task_success(taskToken=task_token, output=json.dumps(output))
    )


def send_task_failure(client: Any, task_token: str, *, error: str, cause: str) -> bool:
    """Fail a waiting task with `error` (its Catch sees this name); False when the token is
    no longer waiting."""
    return _complete_token(
        lambda: client.send_task_failure(taskToken=task_token, error=error, cause=cause[:32768])
    )


def _complete_token(call: Any) -> bool:
    try:
        call()
    except ClientError as exc:
        if error_code(exc) in _TOKEN_GONE:
            return False
        raise translate(exc, "completing a task token") from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, "completing a task token") from exc
    return True


def execution_arn(state_machine_arn: str, name: str) -> str:
    """The ARN of the execution `name` of a state machine (known before it starts)."""
    prefix, marker, machine = state_machine_arn.rpartition(":stateMachine:")
    if not marker:
        raise ValueError(f"{state_machine_arn!r} is not a state machine ARN")
    return f"{prefix}:execution:{machine}:{name}"


def stop_execution(client: Any, execution_arn: str, *, error: str, cause: str) -> bool:
    """Stop a running execution; False when there is no such execution (never started)."""
    try:
        client.stop_execution(executionArn=execution_arn, error=error, cause=cause[:32768])
    except ClientError as exc:
        if error_code(exc) == "ExecutionDoesNotExist":
            return False
        raise translate(exc, f"stopping execution {execution_arn.rsplit(':', 1)[-1]}") from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, f"stopping execution {execution_arn.rsplit(':', 1)[-1]}") from exc
    return True
