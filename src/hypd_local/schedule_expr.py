"""EventBridge Scheduler's schedule expressions: parsing and the times they name (pure).

The three types of the Scheduler user guide ("Schedule types in EventBridge Scheduler"):

- ``rate(value unit)``: a positive integer and ``minute(s)``, ``hour(s)`` or ``day(s)``. A fixed
  duration (a day is 24 hours, whatever daylight saving time does), counted from the schedule's
  ``StartDate``, or from when it was created or last updated when it has none (a rate schedule
  without a StartDate "starts invoking the target immediately").
- ``cron(minutes hours day-of-month month day-of-week year)``: the six fields of the cron
  reference (minutes 0-59, hours 0-23, day-of-month 1-31, month 1-12 or JAN-DEC, day-of-week 1-7
  or SUN-SAT with 1 = Sunday, year 1970-2199), wildcards ``, - * /``, ``?`` in exactly one of the
  two day fields, ``L`` (last day of the month or week), ``W`` (nearest weekday) and ``#`` (the
  n-th given weekday of the month). Evaluated in the schedule's time zone: a wall time the
  spring change skips does not fire, one the autumn change repeats fires once.
- ``at(yyyy-mm-ddThh:mm:ss)``: one time, in the schedule's time zone.

`parse` raises `InvalidExpression` for anything else (Scheduler answers ValidationException).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_YEAR = 2199


class InvalidExpression(ValueError):
    """The expression or time zone is not one Scheduler accepts."""


_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\(([^()]*)\)$")
_AT = re.compile(r"^at\((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\)$")
_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
_MONTHS = {name: i + 1 for i, name in enumerate(
    ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"))}
_DAYS = {name: i + 1 for i, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))}


def zone(name: str | None) -> ZoneInfo:
    """The IANA time zone of ``ScheduleExpressionTimezone`` (default UTC)."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidExpression(f"Invalid time zone: {name}") from exc


@dataclass(frozen=True)
class Rate:
    seconds: int

    def after(self, anchor: datetime, cursor: datetime) -> datetime:
        """The first occurrence at or after ``cursor`` (``anchor`` + k periods, k >= 0)."""
        if cursor <= anchor:
            return anchor
        periods = -(-(cursor - anchor) // timedelta(seconds=self.seconds))
        return anchor + timedelta(seconds=self.seconds * periods)


@dataclass(frozen=True)
class At:
    when: datetime
    """Naive: a wall time in the schedule's time zone."""

    def instant(self, tz: ZoneInfo) -> datetime:
        return _instant(self.when, tz) or self.when.replace(tzinfo=tz).astimezone(UTC)


@dataclass(frozen=True)
class _Field:
    values: frozenset[int]
    any: bool = False
    last: bool = False
    """``L``: the last day of the month (day-of-month), ``nL``: the last weekday n (day-of-week)."""
    weekday_near: int | None = None
    """``nW`` (day-of-month): the weekday nearest day n; 0 for ``LW``."""
    nth: tuple[int, int] | None = None
    """``d#n`` (day-of-week): the n-th weekday d of the month."""


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    dom: _Field
    months: frozenset[int]
    dow: _Field
    years: frozenset[int]

    def after(self, cursor: datetime, tz: ZoneInfo) -> datetime | None:
        """The first occurrence at or after ``cursor`` (aware), or None before 2200."""
        local = cursor.astimezone(tz)
        day = local.date()
        while day.year <= MAX_YEAR:
            if day.year not in self.years:
                day = date(day.year + 1, 1, 1)
                continue
            if day.month not in self.months:
                day = _next_month(day)
                continue
            if self._day_matches(day):
                for instant in self._times(day, tz):
                    if instant >= cursor:
                        return instant
            day += timedelta(days=1)
        return None

    def _times(self, day: date, tz: ZoneInfo) -> Iterator[datetime]:
        for hour in sorted(self.hours):
            for minute in sorted(self.minutes):
                found = _instant(datetime(day.year, day.month, day.day, hour, minute), tz)
                if found is not None:  # a wall time the spring change skips never fires
                    yield found

    def _day_matches(self, day: date) -> bool:
        if self.dom.any:
            return _dow_matches(self.dow, day)
        return _dom_matches(self.dom, day)


def _instant(wall: datetime, tz: ZoneInfo) -> datetime | None:
    """The UTC instant of a wall time in ``tz`` (the first one when it repeats), or None when
    the wall time does not exist there."""
    first = wall.replace(tzinfo=tz, fold=0)
    instant = first.astimezone(UTC)
    if instant.astimezone(tz).replace(tzinfo=None) != wall:
        return None
    return instant


def _next_month(day: date) -> date:
    return date(day.year + 1, 1, 1) if day.month == 12 else date(day.year, day.month + 1, 1)


def _dom_matches(field: _Field, day: date) -> bool:
    last = calendar.monthrange(day.year, day.month)[1]
    if field.last:
        return day.day == last
    if field.weekday_near is not None:
        target = last if field.weekday_near == 0 else min(field.weekday_near, last)
        return day.day == _nearest_weekday(day.year, day.month, target, last)
    return day.day in field.values


def _nearest_weekday(year: int, month: int, target: int, last: int) -> int:
    weekday = date(year, month, target).weekday()  # Monday 0 .. Sunday 6
    if weekday == 5:  # Saturday: the Friday before, unless that leaves the month
        return target - 1 if target > 1 else target + 2
    if weekday == 6:  # Sunday: the Monday after, unless that leaves the month
        return target + 1 if target < last else target - 2
    return target


def _cron_weekday(day: date) -> int:
    return (day.weekday() + 1) % 7 + 1  # Sunday 1 .. Saturday 7


def _dow_matches(field: _Field, day: date) -> bool:
    weekday = _cron_weekday(day)
    if field.nth is not None:
        wanted, n = field.nth
        return weekday == wanted and (day.day - 1) // 7 + 1 == n
    if field.last:
        last = calendar.monthrange(day.year, day.month)[1]
        return weekday in field.values and day.day + 7 > last
    return weekday in field.values


def _number(text: str, names: dict[str, int] | None, low: int, high: int, what: str) -> int:
    value = names.get(text.upper()) if names else None
    if value is None:
        if not text.isdigit():
            raise InvalidExpression(f"{what}: {text!r} is not a value")
        value = int(text)
    if not low <= value <= high:
        raise InvalidExpression(f"{what}: {value} is outside {low}-{high}")
    return value


def _values(text: str, low: int, high: int, what: str,
            names: dict[str, int] | None = None) -> frozenset[int]:
    """``, - * /`` of one field."""
    found: set[int] = set()
    for part in text.split(","):
        base, slash, step_text = part.partition("/")
        step = _number(step_text, None, 1, high, what) if slash else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, _, second = base.partition("-")
            start = _number(first, names, low, high, what)
            end = _number(second, names, low, high, what)
            if end < start:
                raise InvalidExpression(f"{what}: the range {base} runs backwards")
        else:
            start = _number(base, names, low, high, what)
            end = high if slash else start
        found.update(range(start, end + 1, step))
    return frozenset(found)


def _dom(text: str) -> _Field:
    if text == "?":
        return _Field(frozenset(), any=True)
    if text == "L":
        return _Field(frozenset(), last=True)
    if text == "LW":
        return _Field(frozenset(), weekday_near=0)
    if text.endswith("W"):
        return _Field(frozenset(), weekday_near=_number(text[:-1], None, 1, 31, "day-of-month"))
    return _Field(_values(text, 1, 31, "day-of-month"))


def _dow(text: str) -> _Field:
    if text == "?":
        return _Field(frozenset(), any=True)
    if "#" in text:
        day, _, n = text.partition("#")
        return _Field(frozenset(), nth=(_number(day, _DAYS, 1, 7, "day-of-week"),
                                        _number(n, None, 1, 5, "day-of-week")))
    if text == "L":
        return _Field(frozenset({7}))
    if text.endswith("L"):
        return _Field(frozenset({_number(text[:-1], _DAYS, 1, 7, "day-of-week")}), last=True)
    return _Field(_values(text, 1, 7, "day-of-week", _DAYS))


Expression = Rate | Cron | At


def parse(expression: str) -> Expression:
    """The expression, or `InvalidExpression`."""
    text = expression.strip()
    rate = _RATE.match(text)
    if rate:
        value = int(rate.group(1))
        if value < 1:
            raise InvalidExpression("a rate needs a positive value")
        return Rate(value * _UNITS[rate.group(2).rstrip("s")])
    at = _AT.match(text)
    if at:
        try:
            year, month, day, hour, minute, second = (int(g) for g in at.groups())
            return At(datetime(year, month, day, hour, minute, second))
        except ValueError as exc:
            raise InvalidExpression(f"{text}: {exc}") from exc
    cron = _CRON.match(text)
    if cron:
        return _cron(cron.group(1))
    raise InvalidExpression(f"Invalid Schedule Expression {expression}.")


def _cron(body: str) -> Cron:
    fields = body.split()
    if len(fields) != 6:
        raise InvalidExpression("a cron expression has six fields: minutes hours day-of-month "
                                "month day-of-week year")
    minutes, hours, dom, month, dow, year = fields
    if (dom == "?") == (dow == "?"):
        raise InvalidExpression("use ? in exactly one of day-of-month and day-of-week")
    return Cron(
        minutes=_values(minutes, 0, 59, "minutes"),
        hours=_values(hours, 0, 23, "hours"),
        dom=_dom(dom),
        months=_values(month, 1, 12, "month", _MONTHS),
        dow=_dow(dow),
        years=_values(year, 1970, MAX_YEAR, "year"),
    )
