"""Lambda's DynamoDB stream event source mappings, as AWS runs them.

moto hands a table's stream records to a mapping's function synchronously, inside the write
(and only for mappings made in its own Lambda backend). On AWS the write returns first: Lambda
polls the shard and invokes the function with batches, in order, one batch of a shard at a
time. This module does that on the local cloud's worker threads:

- A write to a table with a stream (`StreamDelivery.notify`, from the moto patch) wakes the
  table's mappings. One worker per mapping reads on from its checkpoint; writes made while it
  runs are read in its next batch (so a burst of writes makes few invocations, as on AWS).
- A batch is at most ``BatchSize`` records, delivered as Lambda's DynamoDB event
  (``{"Records": [...]}`` with ``eventSourceARN``).
- A function error retries the batch (``MaximumRetryAttempts``; -1: until the records are
  ``MaximumRecordAgeInSeconds`` old), splitting it in two first with
  ``BisectBatchOnFunctionError`` (a split does not count as a retry). With
  ``ReportBatchItemFailures`` the answer's ``batchItemFailures`` checkpoints the records before
  the first one named and retries from it; an answer that names no record of the batch fails
  the whole batch.
- A batch that runs out of retries is described in the ``OnFailure`` destination (SQS or SNS:
  Lambda's invocation record with ``DDBStreamBatchInfo``) and skipped.
- Retries wait on the virtual clock (1, 2, 4 ... 60 s): nothing sleeps.

What AWS refuses when the mapping is made (`mapping_refusal`): a function role that may not
read the stream (GetRecords, GetShardIterator, DescribeStream on the stream, ListStreams on
``*``), or may not send to the on-failure destination. The local cloud fails to start then, as
the deployment would.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.credentials import Credentials

from hypd_local.activity import Activity
from hypd_local.clock import VirtualClock
from hypd_local.credentials import signing_as
from hypd_local.iam.policy import Request, decide
from hypd_local.iam.principals import Directory
from hypd_local.lambdas import LambdaRuntime
from hypd_local.queues import send_to_queue
from hypd_local.template_specs import FunctionSpec, StreamMappingSpec

LOG = logging.getLogger(__name__)

STREAM_READ = (("dynamodb:DescribeStream", None), ("dynamodb:GetRecords", None),
               ("dynamodb:GetShardIterator", None), ("dynamodb:ListStreams", "*"))
"""What a mapping's role must be allowed on the stream (None: the stream's ARN)."""

_RETRY_DELAYS_SECONDS = (1, 2, 4, 8, 16, 32, 60)


def mapping_refusal(mapping: StreamMappingSpec, function: FunctionSpec,
                    directory: Directory) -> str | None:
    """Lambda's answer to CreateEventSourceMapping when the function's role cannot read the
    stream or reach the on-failure destination; None when the mapping can be made."""
    record = directory.role(function.role_arn)
    if record is None:
        return f"InvalidParameterValueException: the role {function.role_arn} does not exist"

    def allowed(action: str, resource: str) -> bool:
        return decide(list(record.policies), record.boundary,
                      Request(action, resource)).allowed

    for action, resource in STREAM_READ:
        if not allowed(action, resource or mapping.stream_arn):
            return (f"InvalidParameterValueException: Cannot access stream "
                    f"{mapping.stream_arn}. Please ensure the role can perform the "
                    "GetRecords, GetShardIterator, DescribeStream, and ListStreams Actions on "
                    "your stream in IAM.")
    if mapping.on_failure:
        service = mapping.on_failure.split(":")[2]
        action, name = {"sqs": ("sqs:SendMessage", "SendMessage on SQS"),
                        "sns": ("sns:Publish", "Publish on SNS")}.get(
                            service, ("", f"the destination {mapping.on_failure}"))
        if not action:
            return (f"InvalidParameterValueException: Unsupported destination "
                    f"{mapping.on_failure}: a stream's on-failure destination is SQS or SNS")
        if not allowed(action, mapping.on_failure):
            return ("InvalidParameterValueException: The provided execution role does not "
                    f"have permissions to call {name}")
    return None


@dataclass(frozen=True)
class StreamFailure:
    """A batch given up after its retries (sent to the on-failure destination, if any)."""

    mapping: str
    first_sequence: str
    last_sequence: str
    size: int
    attempts: int
    condition: str


class _Mapping:
    """One mapping's checkpoint and its worker's state."""

    def __init__(self, spec: StreamMappingSpec, function: FunctionSpec, start: int) -> None:
        self.spec = spec
        self.function = function
        self.position = start
        """Index in the shard's records of the first record not yet checkpointed."""
        self.running = False
        self.again = False
        self.shard_id = ""


class StreamDelivery:
    """Reads the tables' streams for their mappings and invokes the functions."""

    def __init__(
        self,
        *,
        mappings: Sequence[StreamMappingSpec],
        lambdas: LambdaRuntime,
        activity: Activity,
        executor: Executor,
        clock: VirtualClock,
        records: Callable[[str], tuple[str, list[Any]]],
        client: Callable[[str], Any],
        region: str,
    ) -> None:
        """``records(table_name)``: the id of the table's stream shard and its records so far,
        oldest first (moto's shard)."""
        self._lambdas = lambdas
        self._activity = activity
        self._executor = executor
        self._clock = clock
        self._records = records
        self._client = client
        self._region = region
        self._lock = threading.Lock()
        self._by_table: dict[str, list[_Mapping]] = {}
        self._failures: list[StreamFailure] = []
        self._invocations = 0
        for spec in mappings:
            if not spec.enabled:
                continue
            table = _table_name(spec.stream_arn)
            start = len(records(table)[1]) if spec.starting_position == "LATEST" else 0
            self._by_table.setdefault(table, []).append(
                _Mapping(spec, lambdas.find(spec.function_logical_id), start))

    @property
    def failures(self) -> list[StreamFailure]:
        with self._lock:
            return list(self._failures)

    @property
    def invocations(self) -> int:
        """How many times the mappings invoked their functions."""
        with self._lock:
            return self._invocations

    def notify(self, table_name: str) -> None:
        """A write to ``table_name``'s stream: wake its mappings (called inside the write)."""
        for mapping in self._by_table.get(table_name, ()):
            with self._lock:
                if mapping.running:
                    mapping.again = True
                    continue
                mapping.running = True
            token = self._activity.begin("stream", mapping.spec.logical_id)
            try:
                self._executor.submit(self._run, mapping, table_name, token)
            except RuntimeError:  # the cloud is stopping
                with self._lock:
                    mapping.running = False
                self._activity.end("stream", token)

    def _run(self, mapping: _Mapping, table_name: str, token: int) -> None:
        try:
            while True:
                try:
                    self._drain(mapping, table_name)
                except Exception:  # a bug here must not stop the mapping silently
                    LOG.exception("stream mapping %s failed", mapping.spec.logical_id)
                with self._lock:
                    if not mapping.again:
                        mapping.running = False
                        return
                    mapping.again = False
        finally:
            self._activity.end("stream", token)

    def _drain(self, mapping: _Mapping, table_name: str) -> None:
        while True:
            mapping.shard_id, records = self._records(table_name)
            if mapping.position >= len(records):
                return
            batch = records[mapping.position:mapping.position + mapping.spec.batch_size]
            mapping.position += self._deliver(mapping, [self._shape(r, mapping) for r in batch])

    def _deliver(self, mapping: _Mapping, batch: list[dict[str, Any]]) -> int:
        """Deliver ``batch`` to its end (retried, bisected, or given up); returns its size."""
        spec = mapping.spec
        pending = [batch]
        attempts = 0
        while pending:
            part = pending[0]
            with self._lock:
                self._invocations += 1
            result = self._lambdas.invoke(mapping.function, {"Records": part})
            done = _processed(part, result.result if not result.error else None,
                              spec.report_item_failures)
            if done == len(part):
                pending.pop(0)
                attempts = 0
                continue
            if done:  # checkpoint what the function reported processed; retry the rest
                pending[0] = part = part[done:]
            if spec.bisect_on_error and len(part) > 1:
                half = len(part) // 2
                pending[0:1] = [part[:half], part[half:]]
                continue
            attempts += 1
            condition = self._exhausted(spec, part, attempts)
            if condition is not None:
                self._give_up(mapping, part, attempts, condition)
                pending.pop(0)
                attempts = 0
                continue
            self._clock.sleep(_RETRY_DELAYS_SECONDS[min(attempts, len(_RETRY_DELAYS_SECONDS)) - 1])
        return len(batch)

    def _exhausted(self, spec: StreamMappingSpec, part: list[dict[str, Any]],
                   attempts: int) -> str | None:
        if spec.maximum_retry_attempts != -1 and attempts > spec.maximum_retry_attempts:
            return "RetryAttemptsExhausted"
        if spec.maximum_record_age_seconds != -1:
            oldest = float(part[0]["dynamodb"]["ApproximateCreationDateTime"])
            if self._clock.timestamp() - oldest > spec.maximum_record_age_seconds:
                return "RecordAgeExceeded"
        return None

    def _give_up(self, mapping: _Mapping, part: list[dict[str, Any]], attempts: int,
                 condition: str) -> None:
        spec = mapping.spec
        first, last = part[0]["dynamodb"], part[-1]["dynamodb"]
        failure = StreamFailure(spec.logical_id, first["SequenceNumber"],
                                last["SequenceNumber"], len(part), attempts, condition)
        with self._lock:
            self._failures.append(failure)
        LOG.warning("stream mapping %s gave up records %s-%s (%s)", spec.logical_id,
                    failure.first_sequence, failure.last_sequence, condition)
        if not spec.on_failure:
            return
        record = {
            "requestContext": {
                "requestId": f"{spec.logical_id}-{first['SequenceNumber']}",
                "functionArn": mapping.function.arn,
                "condition": condition,
                "approximateInvokeCount": attempts,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST",
                                "functionError": "Unhandled"},
            "version": "1.0",
            "timestamp": self._clock.now().isoformat().replace("+00:00", "Z"),
            "DDBStreamBatchInfo": {
                "shardId": mapping.shard_id,
                "startSequenceNumber": failure.first_sequence,
                "endSequenceNumber": failure.last_sequence,
                "approximateArrivalOfFirstRecord": _iso(first["ApproximateCreationDateTime"]),
                "approximateArrivalOfLastRecord": _iso(last["ApproximateCreationDateTime"]),
                "batchSize": len(part),
                "streamArn": spec.stream_arn,
            },
        }
        try:
            _send(self._client, spec.on_failure, json.dumps(record),
                  self._lambdas.credentials_of(mapping.function))
        except Exception:
            LOG.exception("cannot send the failed batch of %s to %s", spec.logical_id,
                          spec.on_failure)

    def _shape(self, record: Any, mapping: _Mapping) -> dict[str, Any]:
        """A moto stream record as Lambda hands it to the function."""
        shaped: dict[str, Any] = json.loads(json.dumps(record.to_json(), default=_default))
        shaped["awsRegion"] = self._region
        shaped["eventSourceARN"] = mapping.spec.stream_arn
        return shaped


def _processed(part: Sequence[Mapping[str, Any]], answer: Any, report: bool) -> int:
    """How many records of ``part`` (from its start) the invocation processed."""
    if answer is None:
        return 0  # a function error
    if not report or not isinstance(answer, Mapping):
        return len(part)
    failures = answer.get("batchItemFailures")
    if not failures:
        return len(part)
    sequences = [str(r["dynamodb"]["SequenceNumber"]) for r in part]
    named = [item.get("itemIdentifier") for item in failures if isinstance(item, Mapping)]
    positions = [sequences.index(str(n)) for n in named if str(n) in sequences]
    if not positions or len(positions) != len(named):
        return 0  # an identifier that is no record of the batch fails the whole batch
    return min(positions)


def _send(client: Callable[[str], Any], arn: str, body: str,
          credentials: Credentials | None) -> None:
    """To the on-failure destination, as the function's role (Lambda sends with it)."""
    if arn.split(":")[2] == "sqs":
        send_to_queue(client, arn, body, credentials=credentials)
    else:
        with signing_as(credentials):
            client("sns").publish(TopicArn=arn, Message=body)


def _table_name(stream_arn: str) -> str:
    # arn:aws:dynamodb:region:account:table/NAME/stream/LABEL
    return stream_arn.split(":", 5)[5].split("/")[1]


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        when = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return int(when.timestamp())
    raise TypeError(f"not JSON: {type(value).__name__}")


def _iso(epoch: Any) -> str:
    return datetime.fromtimestamp(float(epoch), UTC).isoformat().replace("+00:00", "Z")
