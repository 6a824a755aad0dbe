"""EventBridge Scheduler: what CreateSchedule / UpdateSchedule refuse, virtual times, and the
local cloud's `Scheduler` told of every change.

moto stores any schedule. The local cloud refuses, with Scheduler's ValidationException, what
the API reference and user guide say Scheduler does not accept:

- a schedule expression that is not ``rate``, ``cron`` or ``at`` as the guide writes them, or a
  ``ScheduleExpressionTimezone`` that is not an IANA time zone (`hypd_local.schedule_expr`);
- a ``FlexibleTimeWindow`` whose Mode is ``FLEXIBLE`` without ``MaximumWindowInMinutes`` (1-1440);
- an EventBridge PutEvents target (``Arn`` an event bus) without ``EventBridgeParameters``, or
  whose ``Source`` starts with ``aws.`` (the pattern of ``EventBridgeParameters.Source``);
- a ``RetryPolicy`` outside its ranges (``MaximumRetryAttempts`` 0-185,
  ``MaximumEventAgeInSeconds`` 60-86400).

A schedule's creation and modification dates, and moto's check that a StartDate is not more than
5 minutes in the past, use the virtual clock; the schedule remembers the virtual time it was
created or updated (`hypd_local.scheduler.SINCE_ATTRIBUTE`), from which it fires.
"""

from __future__ import annotations

import datetime
from typing import Any

from hypd_local.patches.engine import active, replace
from hypd_local.schedule_expr import InvalidExpression, parse, zone
from hypd_local.scheduler import SINCE_ATTRIBUTE


def _check(expression: Any, timezone: Any, window: Any, target: Any) -> None:
    from moto.scheduler.exceptions import ValidationException

    try:
        parse(str(expression or ""))
        zone(timezone)
    except InvalidExpression as exc:
        raise ValidationException(str(exc)) from exc
    window = window or {}
    if window.get("Mode") == "FLEXIBLE" and not 1 <= int(
            window.get("MaximumWindowInMinutes") or 0) <= 1440:
        raise ValidationException("MaximumWindowInMinutes (1-1440) is required when the "
                                  "FlexibleTimeWindow Mode is FLEXIBLE.")
    target = target or {}
    arn = str(target.get("Arn") or "")
    if ":events:" in arn and ":event-bus/" in arn:
        params = target.get("EventBridgeParameters")
        if not params or not params.get("Source") or not params.get("DetailType"):
            raise ValidationException("EventBridgeParameters (DetailType and Source) are "
                                      "required for an EventBridge PutEvents target.")
        if str(params["Source"]).startswith("aws."):
            raise ValidationException("EventBridgeParameters.Source must not start with aws.")
    policy = target.get("RetryPolicy") or {}
    attempts = policy.get("MaximumRetryAttempts")
    age = policy.get("MaximumEventAgeInSeconds")
    if attempts is not None and not 0 <= int(attempts) <= 185:
        raise ValidationException("RetryPolicy.MaximumRetryAttempts must be 0-185.")
    if age is not None and not 60 <= int(age) <= 86400:
        raise ValidationException("RetryPolicy.MaximumEventAgeInSeconds must be 60-86400.")


def _stamp(schedule: Any, *, created: bool) -> None:
    engine = active()
    if engine is None:
        return
    now = engine.clock.now()
    setattr(schedule, SINCE_ATTRIBUTE, now)
    schedule.last_modified_date = now.timestamp()
    if created:
        schedule.creation_date = now.timestamp()


def patch_scheduler() -> None:
    from moto.scheduler import models

    backend = models.EventBridgeSchedulerBackend
    original_create: Any = backend.create_schedule
    original_update: Any = backend.update_schedule
    original_delete: Any = backend.delete_schedule
    original_delete_group: Any = backend.delete_schedule_group
    original_validate_start: Any = models.Schedule._validate_start_date

    def create_schedule(self: Any, **kwargs: Any) -> Any:
        if active() is not None:
            _check(kwargs.get("schedule_expression"), kwargs.get("schedule_expression_timezone"),
                   kwargs.get("flexible_time_window"), kwargs.get("target"))
        schedule = original_create(self, **kwargs)
        _stamp(schedule, created=True)
        _changed()
        return schedule

    def update_schedule(self: Any, **kwargs: Any) -> Any:
        if active() is not None:
            _check(kwargs.get("schedule_expression"), kwargs.get("schedule_expression_timezone"),
                   kwargs.get("flexible_time_window"), kwargs.get("target"))
        schedule = original_update(self, **kwargs)
        _stamp(schedule, created=False)
        _changed()
        return schedule

    def delete_schedule(self: Any, group_name: str | None, name: str) -> None:
        original_delete(self, group_name, name)
        _changed()

    def delete_schedule_group(self: Any, name: str | None) -> None:
        original_delete_group(self, name)
        _changed()

    def validate_start_date(self: Any, start_date: Any) -> Any:
        engine = active()
        if engine is None or start_date is None or not self.schedule_expression.count("*"):
            return original_validate_start(self, start_date)
        from moto.scheduler.exceptions import ValidationException

        start = datetime.datetime.fromtimestamp(float(start_date), datetime.UTC)
        if start < engine.clock.now() - datetime.timedelta(minutes=5):
            raise ValidationException(
                message="The StartDate you specify cannot be earlier than 5 minutes ago.")
        return start_date

    replace(backend, "create_schedule", create_schedule)
    replace(backend, "update_schedule", update_schedule)
    replace(backend, "delete_schedule", delete_schedule)
    replace(backend, "delete_schedule_group", delete_schedule_group)
    replace(models.Schedule, "_validate_start_date", validate_start_date)


def _changed() -> None:
    engine = active()
    if engine is not None:
        engine.schedules_changed()
