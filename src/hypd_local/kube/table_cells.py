"""What a Table's cells are made of: ages as kubectl prints them (`human_duration`), the parts
of an object the printers read, selectors, and the `Column` and `Printer` of a kind."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

NONE = "<none>"

UNKNOWN = "<unknown>"

Obj = Mapping[str, Any]

Cells = Callable[[Obj, datetime], list[Any]]


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _two(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}{minor}{minor_unit}" if minor else f"{major}{major_unit}"


def human_duration(seconds: float) -> str:
    """How the API server and kubectl say an age: 45s, 3m20s, 42m, 5h10m, 20h, 3d4h, 120d,
    2y30d, 9y."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes, hours, days = whole // 60, whole // 3600, whole // 86400
    if minutes < 10:
        return _two(minutes, "m", whole % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return _two(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _two(days, "d", hours % 24, "h")
    if days < 365 * 2:
        return f"{days}d"
    if days < 365 * 8:
        return _two(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"


def age(value: Any, now: datetime) -> str:
    moment = _parse_time(value)
    if moment is None:
        return UNKNOWN
    return human_duration((now - moment).total_seconds())


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _created(obj: Obj, now: datetime) -> str:
    return age(_meta(obj).get("creationTimestamp"), now)


def _or_none(value: Any) -> Any:
    return value if value not in (None, "", []) else NONE


def _selector(labels: Mapping[str, Any] | None) -> str:
    if not labels:
        return NONE
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _label_selector(selector: Mapping[str, Any] | None) -> str:
    """A LabelSelector as kubectl writes one (matchLabels, then the expressions)."""
    if not selector:
        return NONE
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(expression.get("values") or [])
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                      "Exists": key, "DoesNotExist": f"!{key}"}.get(operator, key))
    return ",".join(parts) or NONE

_ACCESS_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
                 "ReadWriteOncePod": "RWOP"}


def _access_modes(modes: Sequence[str] | None) -> str:
    return ",".join(_ACCESS_MODES.get(m, m) for m in modes or [])


def _containers(template: Mapping[str, Any] | None) -> tuple[str, str]:
    containers = (((template or {}).get("spec") or {}).get("containers")) or []
    return (",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers))


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "string"
    description: str = ""
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}

NAME = Column("Name", format="name", description="Name must be unique within a namespace.")

AGE = Column("Age", description="CreationTimestamp is a timestamp representing the server time "
             "when this object was created.")

CREATED_AT = Column("Created At", type="date",
                    description="CreationTimestamp is a timestamp representing the server time "
                    "when this object was created.")


def _wide(name: str, description: str = "", type_: str = "string") -> Column:
    return Column(name, type=type_, description=description, priority=1)


@dataclass(frozen=True)
class Printer:
    columns: tuple[Column, ...]
    cells: Cells
