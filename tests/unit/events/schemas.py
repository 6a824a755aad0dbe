"""The checked-in event schemas (events/schemas/), for the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator  # type: ignore[import-untyped,unused-ignore]

from hypd.events.model import SCHEMA_FILES, Event

EVENTS = Path(__file__).resolve().parents[3] / "events"


def schema_file(detail_type: str) -> Path:
    return EVENTS / "schemas" / SCHEMA_FILES[detail_type]


def validator(detail_type: str) -> Draft4Validator:
    return Draft4Validator(json.loads(schema_file(detail_type).read_text()))


def envelope(event: Event) -> dict[str, Any]:
    """The event as EventBridge delivers it."""
    return {"version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1f8c",
            "detail-type": event.detail_type, "source": "hypd", "account": "123456789012",
            "time": "2026-12-03T10:00:00Z", "region": "us-west-2",
            "resources": event.resources, "detail": event.detail}
