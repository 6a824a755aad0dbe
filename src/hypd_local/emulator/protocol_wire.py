"""Values on the wire, as the model's shapes say: timestamps (epoch seconds, ISO 8601, RFC 822),
JSON members by their wire names, text (query strings, headers, URI labels) and JSON bodies."""

from __future__ import annotations

import base64
import binascii
import calendar
import email.utils
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from hypd_local.emulator.errors import AwsError


def _timestamp_format(shape: Any, default: str) -> str:
    fmt = shape.serialization.get("timestampFormat") or shape.metadata.get("timestampFormat")
    return str(fmt) if fmt else default


def parse_timestamp(value: Any) -> Any:
    """An aware UTC datetime from epoch seconds, ISO 8601 or RFC 822; else ``value`` unchanged."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return datetime.fromtimestamp(float(text), tz=UTC)
        except (OverflowError, OSError, ValueError):
            pass
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        except ValueError:
            pass
        try:
            parsed = email.utils.parsedate_to_datetime(text)
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        except (TypeError, ValueError, IndexError):
            return value
    return value


def format_timestamp(value: Any, fmt: str) -> Any:
    """``value`` (datetime, epoch number or string) written in ``fmt``."""
    when = parse_timestamp(value)
    if not isinstance(when, datetime):
        return value
    when = when.astimezone(UTC)
    if fmt == "iso8601":
        text = when.strftime("%Y-%m-%dT%H:%M:%S")
        if when.microsecond:
            text += f".{when.microsecond // 1000:03d}"
        return text + "Z"
    if fmt == "rfc822":
        return email.utils.format_datetime(when, usegmt=True)
    seconds = calendar.timegm(when.utctimetuple())
    if when.microsecond:
        return round(seconds + when.microsecond / 1_000_000, 3)
    return seconds


def _wire_name(member_shape: Any, member_name: str) -> str:
    return str(member_shape.serialization.get("name", member_name))


def _from_json(shape: Any, value: Any) -> Any:
    """A JSON value -> Python, keyed by member names; wrong types are left as they are."""
    if value is None:
        return None
    kind = shape.type_name
    if kind == "structure":
        if getattr(shape, "is_document_type", False) or not isinstance(value, dict):
            return value
        by_wire = {_wire_name(m, n): n for n, m in shape.members.items()}
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = by_wire.get(key)
            if name is None:
                out[key] = item  # unknown: kept for validation to reject
            elif item is not None:
                out[name] = _from_json(shape.members[name], item)
        return out
    if kind == "list":
        return [_from_json(shape.member, v) for v in value] if isinstance(value, list) else value
    if kind == "map":
        if not isinstance(value, dict):
            return value
        return {k: _from_json(shape.value, v) for k, v in value.items()}
    if kind == "timestamp":
        return parse_timestamp(value)
    if kind == "blob" and isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return value
    return value


def _to_json(shape: Any, value: Any) -> Any:
    """A Python value -> JSON, keyed by wire names; ``None`` members are dropped."""
    if value is None:
        return None
    kind = shape.type_name
    if kind == "structure":
        if getattr(shape, "is_document_type", False) or not isinstance(value, Mapping):
            return value
        out: dict[str, Any] = {}
        for name, item in value.items():
            member = shape.members.get(name)
            if member is None or item is None:
                continue
            if member.serialization.get("location"):
                continue  # headers / status code / uri / querystring members are not in a body
            out[_wire_name(member, name)] = _to_json(member, item)
        return out
    if kind == "list":
        return [_to_json(shape.member, v) for v in value]
    if kind == "map":
        return {str(k): _to_json(shape.value, v) for k, v in value.items()}
    if kind == "timestamp":
        return format_timestamp(value, _timestamp_format(shape, "unixtimestamp"))
    if kind == "blob":
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return base64.b64encode(raw).decode("ascii")
    if kind in {"float", "double"} and not isinstance(value, bool):
        return float(value)
    if kind in {"integer", "long"} and not isinstance(value, bool):
        return int(value)
    return value


def _from_text(shape: Any, text: str, default_ts: str = "iso8601") -> Any:
    """A URI label, query or header value -> Python; unparseable text stays a string."""
    kind = shape.type_name
    if kind in {"integer", "long"}:
        try:
            return int(text)
        except ValueError:
            return text
    if kind in {"float", "double"}:
        try:
            return float(text)
        except ValueError:
            return text
    if kind == "boolean":
        return {"true": True, "false": False}.get(text.lower(), text)
    if kind == "timestamp":
        return parse_timestamp(text)
    if kind == "blob":
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return text
    if kind == "string" and shape.serialization.get("jsonvalue"):
        try:
            return json.loads(base64.b64decode(text))
        except (binascii.Error, ValueError):
            return text
    return text


def _to_text(shape: Any, value: Any, default_ts: str) -> str:
    kind = shape.type_name
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "timestamp":
        return str(format_timestamp(value, _timestamp_format(shape, default_ts)))
    if kind == "blob":
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return base64.b64encode(raw).decode("ascii")
    if kind == "string" and shape.serialization.get("jsonvalue"):
        return base64.b64encode(json.dumps(value).encode()).decode("ascii")
    if kind == "list":
        return ",".join(_to_text(shape.member, v, default_ts) for v in value)
    return str(value)


def _load_json_body(body: bytes) -> Any:
    if not body.strip():
        return {}
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise AwsError("Start of structure or map found where not expected." if body.strip()
                       else str(exc), code="SerializationException", status=400) from exc
