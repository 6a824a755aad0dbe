"""EventBridge delivery to Lambda, Step Functions and API Gateway targets.

moto matches events against rules (its own pattern matcher is used) and delivers to SQS, logs
and other buses, but raises NotImplementedError for Lambda and Step Functions targets and has
no API Gateway targets. The local cloud hands those targets to this module, which delivers
asynchronously as EventBridge does:

- Lambda target: an asynchronous invocation (`hypd_local.asyncinvoke`) on a worker thread with
  the event (or the target's Input / InputPath / InputTransformer result). As on AWS, a handler
  error is Lambda's business: retries, then the function's OnFailure destination or DLQ.
- Step Functions target: StartExecution with the event as input.
- API Gateway target (``arn:aws:execute-api:...``): a request to the local REST API front,
  signed as the target's role, retried on 429 and 5xx (`hypd_local.apitarget`).
- EventBridge acts as ``events.amazonaws.com`` (a target without a role): the function's
  Lambda permission, the topic's policy (and its key's), the dead-letter queue's policy must let
  it, with ``aws:SourceArn`` the rule's ARN (`hypd_local.iam.resource_policies`); a dead letter
  the queue's policy refuses is lost, as on AWS (`EventDelivery.lost_dead_letters`).
- A failed *delivery* (no such function or state machine, bad input transformation, a refused
  permission, an API Gateway target's final refusal) is recorded in `EventDelivery.failures`
  and, when the target has a DeadLetterConfig, sent to that queue with EventBridge's message
  attributes (RULE_ARN, TARGET_ARN, ERROR_CODE, ERROR_MESSAGE, RETRY_ATTEMPTS, and
  EXHAUSTED_RETRY_CONDITION when retries ran out). Only API Gateway targets are retried.

It also emits the ``Step Functions Execution Status Change`` events AWS puts on the default bus.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

from hypd_local.activity import Activity
from hypd_local.apitarget import EVENTS_PRINCIPAL, ApiArn, ApiTargets
from hypd_local.asyncinvoke import AsyncInvoker
from hypd_local.iam.resource_policies import ResourcePolicies
from hypd_local.lambdas import FunctionNotFound, LambdaRuntime
from hypd_local.queues import send_to_queue

LOG = logging.getLogger(__name__)

EXECUTION_STATUS_CHANGE = "Step Functions Execution Status Change"


@dataclass(frozen=True)
class DeliveryFailure:
    rule_arn: str
    target_id: str
    target_arn: str
    error_code: str
    error_message: str
    event: Mapping[str, Any]
    attempts: int = 1
    status: int | None = None
    """The last HTTP status of an API Gateway target, if it answered."""
    exhausted: str | None = None
    """``MaximumRetryAttempts`` / ``MaximumEventAgeInSeconds`` when retries ran out."""


class Delivered(NamedTuple):
    """A successful delivery: the target accepted the input (an API answered below 400)."""

    rule_arn: str
    target_arn: str
    payload: Any
    status: int | None = None
    """The HTTP status of an API Gateway target's response; None for other targets."""
    attempts: int = 1
    """The requests it took (an API Gateway target's retries included)."""


class EventDelivery:
    """Delivers matched events to Lambda, Step Functions and API Gateway targets on background
    threads."""

    def __init__(
        self,
        *,
        lambdas: LambdaRuntime,
        invoker: AsyncInvoker,
        activity: Activity,
        executor: Executor,
        client: Callable[[str], Any],
        account_id: str,
        region: str,
    ) -> None:
        self._lambdas = lambdas
        self._invoker = invoker
        self._activity = activity
        self._executor = executor
        self._client = client
        self._account_id = account_id
        self._region = region
        self._lock = threading.Lock()
        self._failures: list[DeliveryFailure] = []
        self._delivered: list[Delivered] = []
        self.api_targets: ApiTargets | None = None
        """Set once the local cloud serves its REST API (else API targets fail)."""
        self.policies: ResourcePolicies | None = None
        """The resource-based policies EventBridge's deliveries need (None: not checked)."""
        self.lost_dead_letters: list[tuple[str, str]] = []
        """(queue ARN, why) of each failed event a dead-letter queue's policy refused."""

    @property
    def failures(self) -> list[DeliveryFailure]:
        with self._lock:
            return list(self._failures)

    @property
    def delivered(self) -> list[Delivered]:
        """Every successful delivery, in order."""
        with self._lock:
            return list(self._delivered)

    @staticmethod
    def handles(target_arn: str) -> bool:
        """True for the target kinds moto cannot deliver to (Lambda, Step Functions, API
        Gateway, SNS)."""
        parts = target_arn.split(":")
        return len(parts) > 2 and parts[2] in ("lambda", "states", "execute-api", "sns")

    def dispatch(self, rule_arn: str, target: Mapping[str, Any], event: Mapping[str, Any]) -> None:
        """Schedule one delivery (called for a rule whose pattern matched)."""
        label = f"{target.get('Id')} <- {event.get('detail-type')}"
        token = self._activity.begin("delivery", label)
        try:
            self._executor.submit(self._run, token, rule_arn, dict(target), dict(event))
        except RuntimeError:  # executor shut down: the cloud is stopping
            self._activity.end("delivery", token)
            LOG.warning("dropped event for %s: the local cloud is stopping", target.get("Arn"))

    def _run(
        self, token: int, rule_arn: str, target: dict[str, Any], event: dict[str, Any]
    ) -> None:
        try:
            self._deliver(rule_arn, target, event)
        except Exception:  # a bug here must not kill the worker silently
            LOG.exception("delivery to %s failed unexpectedly", target.get("Arn"))
        finally:
            self._activity.end("delivery", token)

    def _deliver(self, rule_arn: str, target: dict[str, Any], raw_event: dict[str, Any]) -> None:
        event = aws_event_shape(raw_event)
        target_arn = str(target["Arn"])
        try:
            payload = target_input(target, event, raw_event)
        except Exception as exc:
            self._fail(rule_arn, target, event, "InputTransformationFailed", str(exc))
            return
        service = target_arn.split(":")[2]
        if service == "execute-api":
            self._deliver_to_api(rule_arn, target, event, payload)
            return
        if service == "lambda":
            try:
                function = self._lambdas.find(target_arn)
            except FunctionNotFound as exc:
                self._fail(rule_arn, target, event, "ResourceNotFoundException", str(exc))
                return
        refused = self._refusal(service, target_arn, rule_arn)
        if refused is not None:
            self._fail(rule_arn, target, event, "AccessDeniedException", refused)
            return
        if service == "lambda":
            with self._lock:
                self._delivered.append(Delivered(rule_arn, target_arn, payload))
            self._invoker.run(function, payload)  # Lambda accepted the event: delivered
            return
        try:
            if service == "sns":
                # The transformed input as the message: a template that makes a string is sent
                # as that text, anything else as JSON.
                message = payload if isinstance(payload, str) else json.dumps(payload)
                self._client("sns").publish(TopicArn=target_arn, Message=message)
            else:
                self._client("stepfunctions").start_execution(
                    stateMachineArn=target_arn, name=str(uuid.uuid4()),
                    input=json.dumps(payload))
        except Exception as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code", type(exc).__name__)
            self._fail(rule_arn, target, event, str(code), str(exc))
            return
        with self._lock:
            self._delivered.append(Delivered(rule_arn, target_arn, payload))

    def _refusal(self, service: str, target_arn: str, rule_arn: str) -> str | None:
        """Why the target's resource policy refuses EventBridge (a Lambda or SNS target)."""
        if self.policies is None:
            return None
        if service == "lambda":
            return self.policies.for_source(EVENTS_PRINCIPAL, "lambda:InvokeFunction", target_arn,
                                            rule_arn)
        if service == "sns":
            return self.policies.publish_refusal(target_arn, EVENTS_PRINCIPAL, source_arn=rule_arn)
        return None

    def _deliver_to_api(self, rule_arn: str, target: dict[str, Any], event: dict[str, Any],
                        payload: Any) -> None:
        target_arn = str(target["Arn"])
        if self.api_targets is None or ApiArn.parse(target_arn) is None:
            self._fail(rule_arn, target, event, "ResourceNotFoundException",
                       f"no REST API of the local cloud answers {target_arn}")
            return
        outcome = self.api_targets.deliver(target, event, payload)
        if outcome.ok:
            with self._lock:
                self._delivered.append(Delivered(rule_arn, target_arn, payload, outcome.status,
                                                 outcome.attempts))
            return
        self._fail(rule_arn, target, event, str(outcome.error_code), outcome.body,
                   attempts=outcome.attempts, status=outcome.status, exhausted=outcome.exhausted)

    def _fail(
        self, rule_arn: str, target: Mapping[str, Any], event: dict[str, Any], code: str,
        message: str, *, attempts: int = 1, status: int | None = None,
        exhausted: str | None = None,
    ) -> None:
        failure = DeliveryFailure(rule_arn, str(target.get("Id")), str(target["Arn"]), code,
                                  message, event, attempts, status, exhausted)
        with self._lock:
            self._failures.append(failure)
        dlq_arn = (target.get("DeadLetterConfig") or {}).get("Arn")
        LOG.warning("event delivery to %s failed (%s: %s)%s", failure.target_arn, code, message,
                    f"; sent to {dlq_arn}" if dlq_arn else "")
        if not dlq_arn:
            return
        refused = (self.policies.for_source(EVENTS_PRINCIPAL, "sqs:SendMessage", str(dlq_arn),
                                            rule_arn)
                   if self.policies is not None else None)
        if refused is not None:
            LOG.error("the failed event is lost: %s", refused)
            with self._lock:
                self.lost_dead_letters.append((str(dlq_arn), refused))
            return
        try:
            attributes = {
                "RULE_ARN": rule_arn,
                "TARGET_ARN": failure.target_arn,
                "ERROR_CODE": code,
                "ERROR_MESSAGE": message[:256] or "-",
                "RETRY_ATTEMPTS": str(max(attempts - 1, 0)),
            }
            if exhausted:
                attributes["EXHAUSTED_RETRY_CONDITION"] = exhausted
            send_to_queue(self._client, str(dlq_arn), json.dumps(event), attributes=attributes)
        except Exception:
            LOG.exception("cannot send the failed event to the dead-letter queue %s", dlq_arn)

    # ------------------------------------------------------------------ emitting
    def put_event(
        self, *, source: str, detail_type: str, detail: Mapping[str, Any],
        resources: list[str] | None = None, event_bus: str = "default",
    ) -> None:
        """Put an event on a bus in-process, as an AWS service would."""
        from moto.events.models import events_backends

        backend = events_backends[self._account_id][self._region]
        entries = backend.put_events([{
            "Source": source,
            "DetailType": detail_type,
            "Detail": json.dumps(detail, default=str),
            "Resources": resources or [],
            "EventBusName": event_bus,
        }])
        for entry in entries:
            if "ErrorCode" in entry:
                LOG.error("cannot emit %s event: %s", detail_type, entry)


def execution_status_detail(execution: Any) -> dict[str, Any]:
    """The detail of a ``Step Functions Execution Status Change`` event for an execution."""
    status = execution.exec_status.value if execution.exec_status is not None else "RUNNING"
    output = None
    if status == "SUCCEEDED" and execution.output is not None:
        output = json.dumps(execution.output, separators=(",", ":"))
    return {
        "executionArn": execution.exec_arn,
        "stateMachineArn": getattr(execution, "state_machine_arn", None),
        "name": execution.name,
        "status": status,
        "startDate": _epoch_ms(execution.start_date),
        "stopDate": _epoch_ms(execution.stop_date) if status != "RUNNING" else None,
        "input": json.dumps(execution.input_data, separators=(",", ":")),
        "output": output,
        "inputDetails": {"included": True},
        "outputDetails": {"included": True} if output is not None else None,
        "error": execution.error,
        "cause": execution.cause,
    }


def aws_event_shape(event: Mapping[str, Any]) -> dict[str, Any]:
    """An event as moto holds it, shaped as EventBridge delivers it (ISO time, no internals)."""
    shaped = {key: value for key, value in event.items() if key != "ingestion-time"}
    when = shaped.get("time")
    if isinstance(when, (int, float)):
        shaped["time"] = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    elif isinstance(when, datetime):
        shaped["time"] = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return shaped


def target_input(
    target: Mapping[str, Any], event: dict[str, Any], raw_event: Mapping[str, Any]
) -> Any:
    """What the target receives: Input, InputPath, InputTransformer, or the whole event."""
    if target.get("Input") is not None:
        return json.loads(str(target["Input"]))
    if target.get("InputPath"):
        from jsonpath_ng.ext import parse  # type: ignore[attr-defined]

        matches = parse(str(target["InputPath"])).find(event)
        return matches[0].value if matches else None
    transformer = target.get("InputTransformer")
    if transformer:
        from moto.events.utils import EventTemplateParser

        with_ingestion = dict(event)
        with_ingestion["ingestion-time"] = raw_event.get("ingestion-time", "")
        return EventTemplateParser.parse(
            input_template=transformer.get("InputTemplate"),
            input_paths_map=transformer.get("InputPathsMap", {}),
            event=cast(Any, with_ingestion),
        )
    return event


def _epoch_ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return int(value.timestamp() * 1000)
    return int(float(value) * 1000)
