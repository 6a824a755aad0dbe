"""Lambda's asynchronous invocation: retries, destinations, dead-letter queue.

What EventBridge targets and ``InvocationType=Event`` get on AWS, in virtual time:

- the handler runs; on error it is retried ``MaximumRetryAttempts`` times (default 2), one and
  then two minutes apart (the virtual clock advances, nothing sleeps);
- the outcome goes to the function's ``EventInvokeConfig`` destination (OnSuccess / OnFailure:
  SQS, SNS, Lambda or EventBridge) as Lambda's invocation record;
- a failure with no OnFailure destination goes to the function's ``DeadLetterQueue``;
- every failure is also kept in `AsyncInvoker.failures`, so a test sees it without a queue.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.credentials import Credentials

from hypd_local.clock import VirtualClock
from hypd_local.credentials import signing_as
from hypd_local.lambdas import Invocation, LambdaRuntime
from hypd_local.queues import send_to_queue
from hypd_local.template import FunctionSpec

LOG = logging.getLogger(__name__)

# Lambda waits about one minute before the first retry and two before the second.
_RETRY_DELAYS_SECONDS = (60, 120)


@dataclass(frozen=True)
class AsyncFailure:
    function: str
    request_id: str
    error_type: str
    error_message: str
    event: Any
    attempts: int


class AsyncInvoker:
    """Runs asynchronous invocations to completion on the calling thread."""

    def __init__(
        self, *, lambdas: LambdaRuntime, clock: VirtualClock, client: Callable[[str], Any]
    ) -> None:
        self._lambdas = lambdas
        self._clock = clock
        self._client = client
        self._lock = threading.Lock()
        self._failures: list[AsyncFailure] = []

    @property
    def failures(self) -> list[AsyncFailure]:
        with self._lock:
            return list(self._failures)

    def run(self, function: FunctionSpec, event: Any) -> Invocation:
        """Invoke with Lambda's asynchronous semantics; returns the last attempt."""
        config = function.async_config
        retries = config.maximum_retry_attempts if config is not None else 2
        attempts = 0
        while True:
            attempts += 1
            result = self._lambdas.invoke(function, event)
            if not result.error or attempts > retries:
                break
            self._clock.sleep(_RETRY_DELAYS_SECONDS[min(attempts, len(_RETRY_DELAYS_SECONDS)) - 1])
        if result.error:
            body = _json(result.payload)
            failure = AsyncFailure(
                function.logical_id, result.request_id, str(body.get("errorType", "Unhandled")),
                str(body.get("errorMessage", "")), event, attempts,
            )
            with self._lock:
                self._failures.append(failure)
            LOG.warning("asynchronous invocation of %s failed %d time(s): %s: %s",
                        function.logical_id, attempts, failure.error_type, failure.error_message)
        self._route(function, event, result, attempts)
        return result

    def _route(self, function: FunctionSpec, event: Any, result: Invocation, attempts: int) -> None:
        config = function.async_config
        if config is None:
            return
        destination = config.on_failure if result.error else config.on_success
        try:
            # Lambda sends to destinations and dead-letter queues with the function's
            # execution role: its policy must allow it.
            credentials = self._lambdas.credentials_of(function)
            if destination:
                self._send(destination, _record(function, event, result, attempts, self._clock),
                           success=not result.error, credentials=credentials)
            elif result.error and config.dead_letter_arn:
                self._dead_letter(config.dead_letter_arn, event, result, credentials)
        except Exception:
            LOG.exception("cannot route the outcome of %s's asynchronous invocation",
                          function.logical_id)

    def _send(self, arn: str, record: Mapping[str, Any], *, success: bool,
              credentials: Credentials | None = None) -> None:
        service = arn.split(":")[2]
        body = json.dumps(record)
        if service == "sqs":
            send_to_queue(self._client, arn, body, credentials=credentials)
        elif service == "sns":
            with signing_as(credentials):
                self._client("sns").publish(TopicArn=arn, Message=body)
        elif service == "lambda":
            self._lambdas.invoke(arn, record)
        elif service == "events":
            outcome = "Success" if success else "Failure"
            with signing_as(credentials):
                self._client("events").put_events(Entries=[{
                    "Source": "lambda",
                    "DetailType": f"Lambda Function Invocation Result - {outcome}",
                    "Detail": body,
                    "EventBusName": arn,
                }])
        else:
            LOG.warning("destination %s is not supported by the local cloud", arn)

    def _dead_letter(self, arn: str, event: Any, result: Invocation,
                     credentials: Credentials | None = None) -> None:
        body = _json(result.payload)
        attributes = {
            "RequestID": result.request_id,
            "ErrorCode": "200",
            "ErrorMessage": str(body.get("errorMessage", ""))[:256] or "-",
        }
        if arn.split(":")[2] == "sns":
            with signing_as(credentials):
                self._client("sns").publish(TopicArn=arn, Message=json.dumps(event))
            return
        send_to_queue(self._client, arn, json.dumps(event), attributes=attributes,
                      credentials=credentials)


def _record(
    function: FunctionSpec, event: Any, result: Invocation, attempts: int, clock: VirtualClock
) -> dict[str, Any]:
    """Lambda's invocation record, as a destination receives it."""
    response_context: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if result.error:
        response_context["functionError"] = "Unhandled"
    return {
        "version": "1.0",
        "timestamp": clock.now().isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "requestContext": {
            "requestId": result.request_id,
            "functionArn": f"{function.arn}:$LATEST",
            "condition": "RetriesExhausted" if result.error else "Success",
            "approximateInvokeCount": attempts,
        },
        "requestPayload": event,
        "responseContext": response_context,
        "responsePayload": _json(result.payload),
    }


def _json(payload: str) -> Any:
    try:
        return json.loads(payload)
    except ValueError:
        return payload
