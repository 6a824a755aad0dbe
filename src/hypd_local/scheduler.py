"""EventBridge Scheduler on the virtual clock: the schedules in moto's scheduler backend fire.

moto stores schedules (CreateSchedule, the template's ``AWS::Scheduler::Schedule``) but never
runs them. `Scheduler` does, as the Scheduler user guide describes:

- **When.** ``rate``, ``cron`` and ``at`` expressions in the schedule's
  ``ScheduleExpressionTimezone`` (`hypd_local.schedule_expr`), between ``StartDate`` and
  ``EndDate`` (both ignored by one-time schedules, as the API reference says); a rate without a
  StartDate starts when the schedule is created or updated. Only ``ENABLED`` schedules fire, and
  only occurrences from their creation (or last update) on. Whenever the clock moves (its
  listener) and whenever a schedule is created, updated or deleted, every occurrence now due
  fires once, in time order, with its own time as ``<aws.scheduler.scheduled-time>``; a ticking
  clock is also looked at about once a second of real time. A flexible time window fires at its
  start (AWS picks a time inside the window).
- **What.** The target runs as a session of the schedule's ``RoleArn`` that
  ``scheduler.amazonaws.com`` assumes, through the local cloud's AWS endpoint, so IAM is
  enforced: the EventBridge PutEvents templated target (``Arn`` = the bus ARN,
  ``EventBridgeParameters {DetailType, Source}``, ``Input`` = the event's detail) needs
  ``events:PutEvents`` on the bus; SQS (``sqs:SendMessage``, ``Input`` = the message body,
  ``SqsParameters.MessageGroupId``) and Lambda (an asynchronous Invoke, ``lambda:InvokeFunction``,
  ``Input`` = the payload). The context attributes ``<aws.scheduler.schedule-arn>``,
  ``<aws.scheduler.scheduled-time>``, ``<aws.scheduler.execution-id>`` and
  ``<aws.scheduler.attempt-number>`` in ``Input`` are replaced.
- **Failures.** A refused call (IAM denial, missing target, role Scheduler cannot assume) is a
  failed invocation, retried with exponential back-off (the local cloud's: 1 s doubling to at most
  10 minutes, on the virtual clock) within the target's ``RetryPolicy`` (``MaximumRetryAttempts``,
  default 185; ``MaximumEventAgeInSeconds``, default 86400, from the scheduled time), then sent to
  the target's ``DeadLetterConfig`` queue, as the schedule's role (which needs
  ``sqs:SendMessage``), with the dead-letter event's attributes.
- ``ActionAfterCompletion: DELETE`` deletes the schedule after its last invocation.

Each occurrence is tracked in `Activity` (kind ``schedule``) from when it is due until it is
done, so `LocalCloud.wait_for_executions` waits for it.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hypd_local.activity import Activity
from hypd_local.clock import VirtualClock
from hypd_local.credentials import RoleNotAssumable, Session, signing_as, signing_credentials
from hypd_local.queues import send_to_queue
from hypd_local.schedule_expr import At, Cron, InvalidExpression, Rate, parse, zone

LOG = logging.getLogger(__name__)

SCHEDULER_PRINCIPAL = "scheduler.amazonaws.com"
DEFAULT_MAXIMUM_RETRY_ATTEMPTS = 185
DEFAULT_MAXIMUM_EVENT_AGE_SECONDS = 86400
_FIRST_BACKOFF_SECONDS = 1.0
_MAX_BACKOFF_SECONDS = 600.0
_MAX_OCCURRENCES_PER_LOOK = 10_000
"""A safety valve: a clock moved a year under ``rate(1 minute)`` fires this many, not 525,600."""
SINCE_ATTRIBUTE = "_hypd_since"
"""Set on moto's Schedule by the patch: the virtual time it was created or last updated."""


@dataclass(frozen=True)
class Occurrence:
    schedule_arn: str
    group: str
    name: str
    time: datetime
    target: dict[str, Any]
    last: bool
    """No later occurrence: ``ActionAfterCompletion: DELETE`` applies after this one."""
    delete_after: bool


@dataclass(frozen=True)
class ScheduledInvocation:
    """One occurrence's invocation, as it ended."""

    schedule_arn: str
    scheduled_time: datetime
    target_arn: str
    attempts: int
    error_code: str | None = None
    error_message: str = ""
    exhausted: str | None = None
    payload: Any = None

    @property
    def ok(self) -> bool:
        return self.error_code is None


class InvocationFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _Cursor:
    since: datetime
    next_from: datetime
    done: bool = False
    fired: list[datetime] = field(default_factory=list)


class Scheduler:
    """Fires the schedules of moto's scheduler backend on the virtual clock."""

    def __init__(self, *, clock: VirtualClock, activity: Activity, account_id: str, region: str,
                 client: Callable[[str], Any], session: Callable[[str, str], Session]) -> None:
        """``session(role_arn, session_name)``: scheduler.amazonaws.com's session in the role
        (raises RoleNotAssumable)."""
        self._clock = clock
        self._activity = activity
        self._account_id = account_id
        self._region = region
        self._client = client
        self._session = session
        self._lock = threading.Lock()
        self._cursors: dict[str, _Cursor] = {}
        self._queue: queue.Queue[tuple[int, Occurrence] | None] = queue.Queue()
        self._invocations: list[ScheduledInvocation] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        self._unsubscribe = self._clock.subscribe(lambda _now: self.look())
        self._thread = threading.Thread(target=self._work, name="scheduler", daemon=True)
        self._thread.start()
        self.look()

    def stop(self) -> None:
        self._stopping = True
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout=10)
        while True:  # occurrences not fired: the cloud is stopping
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self._activity.end("schedule", item[0])

    @property
    def invocations(self) -> list[ScheduledInvocation]:
        """Every occurrence's invocation, successful or not, in the order they ended."""
        with self._lock:
            return list(self._invocations)

    @property
    def failures(self) -> list[ScheduledInvocation]:
        return [i for i in self.invocations if not i.ok]

    # ------------------------------------------------------------------ when
    def look(self) -> None:
        """Queue every occurrence due by now that has not been queued yet, in time order."""
        if self._stopping:
            return
        now = self._clock.now()
        due: list[Occurrence] = []
        with self._lock:
            seen: set[str] = set()
            for schedule in _schedules(self._account_id, self._region):
                seen.add(schedule.arn)
                due.extend(self._due(schedule, now))
            for arn in set(self._cursors) - seen:
                del self._cursors[arn]
            due.sort(key=lambda o: (o.time, o.schedule_arn))
            for occurrence in due:
                token = self._activity.begin(
                    "schedule", f"{occurrence.name} at {occurrence.time.isoformat()}")
                self._queue.put((token, occurrence))

    def _due(self, schedule: Any, now: datetime) -> Iterator[Occurrence]:
        since = getattr(schedule, SINCE_ATTRIBUTE, None) or _epoch(schedule.creation_date)
        cursor = self._cursors.get(schedule.arn)
        if cursor is None or cursor.since != since:
            cursor = self._cursors[schedule.arn] = _Cursor(since, since)
        if schedule.state != "ENABLED" or cursor.done:
            return
        try:
            expression = parse(schedule.schedule_expression)
            tz = zone(schedule.schedule_expression_timezone)
        except InvalidExpression as exc:
            LOG.warning("schedule %s never fires: %s", schedule.arn, exc)
            cursor.done = True
            return
        delete = str(getattr(schedule, "action_after_completion", None) or "NONE") == "DELETE"
        count = 0
        while True:
            when = _next(expression, tz, schedule, cursor.since, cursor.next_from)
            if when is None:
                cursor.done = True
                return
            if when > now:
                return
            count += 1
            if count > _MAX_OCCURRENCES_PER_LOOK:
                LOG.warning("schedule %s: more than %d occurrences due at once; the rest are "
                            "skipped", schedule.arn, _MAX_OCCURRENCES_PER_LOOK)
                cursor.next_from = now + timedelta(microseconds=1)
                return
            cursor.next_from = when + timedelta(microseconds=1)
            last = _next(expression, tz, schedule, cursor.since, cursor.next_from) is None
            yield Occurrence(schedule.arn, schedule.group_name, schedule.name, when,
                             json.loads(json.dumps(schedule.target)), last, delete)

    # ------------------------------------------------------------------ firing
    def _work(self) -> None:
        while True:
            timeout = 1.0 if self._clock.ticking else None
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                self.look()  # a ticking clock moves without telling anyone
                continue
            if item is None:
                return
            token, occurrence = item
            try:
                self._fire(occurrence)
            except Exception:  # a bug here must not stop every later schedule
                LOG.exception("schedule %s failed unexpectedly", occurrence.schedule_arn)
            finally:
                self._activity.end("schedule", token)

    def _fire(self, occurrence: Occurrence) -> None:
        target = occurrence.target
        policy = target.get("RetryPolicy") or {}
        max_retries = int(policy.get("MaximumRetryAttempts", DEFAULT_MAXIMUM_RETRY_ATTEMPTS))
        max_age = float(policy.get("MaximumEventAgeInSeconds", DEFAULT_MAXIMUM_EVENT_AGE_SECONDS))
        execution_id = uuid.uuid4().hex[:16]
        attempts = 0
        backoff = _FIRST_BACKOFF_SECONDS
        exhausted = None
        while True:
            attempts += 1
            payload = _with_context(target.get("Input"), occurrence, execution_id, attempts)
            try:
                self._invoke(occurrence, payload)
            except InvocationFailed as failed:
                error: InvocationFailed | None = failed
            else:
                error = None
            if error is None:
                self._record(ScheduledInvocation(occurrence.schedule_arn, occurrence.time,
                                                 str(target.get("Arn")), attempts,
                                                 payload=payload))
                break
            LOG.info("schedule %s: %s (%s)", occurrence.schedule_arn, error.code, error)
            age = (self._clock.now() - occurrence.time).total_seconds()
            if attempts > max_retries:
                exhausted = "MaximumRetryAttempts"
            elif age + backoff > max_age:
                exhausted = "MaximumEventAgeInSeconds"
            if exhausted is not None or self._stopping:
                failure = ScheduledInvocation(
                    occurrence.schedule_arn, occurrence.time, str(target.get("Arn")), attempts,
                    error.code, str(error), exhausted, payload)
                self._record(failure)
                self._dead_letter(occurrence, failure, execution_id)
                break
            self._clock.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF_SECONDS)
        if occurrence.last and occurrence.delete_after:
            self._delete(occurrence)

    def _record(self, invocation: ScheduledInvocation) -> None:
        with self._lock:
            self._invocations.append(invocation)

    def _role(self, occurrence: Occurrence) -> Session:
        role_arn = str(occurrence.target.get("RoleArn") or "")
        try:
            return self._session(role_arn, f"scheduler-{occurrence.name}"[:64])
        except RoleNotAssumable as exc:
            raise InvocationFailed("AccessDeniedException", str(exc)) from exc

    def _invoke(self, occurrence: Occurrence, payload: str | None) -> None:
        """Call the target as the schedule's role; InvocationFailed when the call is refused."""
        target = occurrence.target
        arn = str(target.get("Arn") or "")
        parts = arn.split(":", 5)
        service = parts[2] if len(parts) == 6 else ""
        session = self._role(occurrence)
        try:
            with signing_as(session.credentials):
                if service == "events" and parts[5].startswith("event-bus/"):
                    self._put_event(arn, target, payload)
                elif service == "sqs":
                    self._send_message(parts, target, payload)
                elif service == "lambda":
                    self._client("lambda").invoke(FunctionName=arn, InvocationType="Event",
                                                  Payload=(payload or "{}").encode())
                else:
                    raise InvocationFailed("ValidationException", f"the target {arn} is not one "
                                           "the local cloud's Scheduler emulates")
        except InvocationFailed:
            raise
        except Exception as exc:
            error = getattr(exc, "response", {}).get("Error", {})
            raise InvocationFailed(str(error.get("Code") or type(exc).__name__),
                                   str(error.get("Message") or exc)) from exc

    def _put_event(self, bus_arn: str, target: dict[str, Any], payload: str | None) -> None:
        params = target.get("EventBridgeParameters") or {}
        answer = self._client("events").put_events(Entries=[{
            "Source": params.get("Source"),
            "DetailType": params.get("DetailType"),
            "Detail": payload or "{}",
            "EventBusName": bus_arn,
        }])
        for entry in answer.get("Entries", []):
            if entry.get("ErrorCode"):
                raise InvocationFailed(str(entry["ErrorCode"]), str(entry.get("ErrorMessage")))

    def _send_message(self, parts: list[str], target: dict[str, Any],
                      payload: str | None) -> None:
        # signed as the schedule's role: the caller (_invoke) signs with it
        send_to_queue(self._client, ":".join(parts), payload or "",
                      group=(target.get("SqsParameters") or {}).get("MessageGroupId"),
                      credentials=signing_credentials())

    def _dead_letter(self, occurrence: Occurrence, failure: ScheduledInvocation,
                     execution_id: str) -> None:
        dlq_arn = (occurrence.target.get("DeadLetterConfig") or {}).get("Arn")
        if not dlq_arn:
            return
        attributes = {
            "ERROR_CODE": failure.error_code or "-",
            "ERROR_MESSAGE": failure.error_message[:256] or "-",
            "EXECUTION_ID": execution_id,
            "IS_PAYLOAD_TRUNCATED": "false",
            "RETRY_ATTEMPTS": str(max(failure.attempts - 1, 0)),
            "SCHEDULED_TIME": _iso(occurrence.time),
            "SCHEDULE_ARN": occurrence.schedule_arn,
            "TARGET_ARN": failure.target_arn,
        }
        if failure.exhausted:
            attributes["EXHAUSTED_RETRY_CONDITION"] = failure.exhausted
        try:
            send_to_queue(self._client, str(dlq_arn), failure.payload or "{}",
                          attributes=attributes,
                          credentials=self._role(occurrence).credentials)
        except Exception:
            LOG.exception("schedule %s: cannot send the dead-letter event to %s",
                          occurrence.schedule_arn, dlq_arn)

    def _delete(self, occurrence: Occurrence) -> None:
        from moto.scheduler.models import scheduler_backends

        try:
            scheduler_backends[self._account_id][self._region].delete_schedule(
                occurrence.group, occurrence.name)
        except Exception as exc:  # deleted meanwhile
            LOG.debug("schedule %s not deleted after completion: %s", occurrence.name, exc)


def _schedules(account_id: str, region: str) -> list[Any]:
    from moto.scheduler.models import scheduler_backends

    backend = scheduler_backends[account_id][region]
    return [schedule for group in list(backend.schedule_groups.values())
            for schedule in list(group.schedules.values())]


def _next(expression: Rate | Cron | At, tz: Any, schedule: Any, since: datetime,
          cursor: datetime) -> datetime | None:
    """The schedule's first occurrence at or after ``cursor``, or None."""
    if isinstance(expression, At):
        when = expression.instant(tz)
        return when if when >= cursor and when >= since else None
    start = _epoch(schedule.start_date) if schedule.start_date is not None else None
    end = _epoch(schedule.end_date) if schedule.end_date is not None else None
    if start is not None:
        cursor = max(cursor, start)
    if isinstance(expression, Rate):
        found: datetime | None = expression.after(start or since, cursor)
    else:
        found = expression.after(cursor, tz)
    if found is None or (end is not None and found >= end):
        return None
    return found


def _epoch(value: Any) -> datetime:
    """A moto timestamp (epoch seconds, or ISO 8601 text) as an aware datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    text = str(value)
    try:
        return datetime.fromtimestamp(float(text), UTC)
    except ValueError:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _with_context(text: Any, occurrence: Occurrence, execution_id: str,
                  attempt: int) -> str | None:
    if text is None:
        return None
    return (str(text)
            .replace("<aws.scheduler.schedule-arn>", occurrence.schedule_arn)
            .replace("<aws.scheduler.scheduled-time>", _iso(occurrence.time))
            .replace("<aws.scheduler.execution-id>", execution_id)
            .replace("<aws.scheduler.attempt-number>", str(attempt)))
