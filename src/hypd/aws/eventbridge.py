"""EventBridge adapter: putting hypd's own events on a bus."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypd.aws.errors import translated

MAX_ENTRIES = 10
"""PutEvents takes at most 10 entries per request."""


@dataclass(frozen=True)
class Entry:
    source: str
    detail_type: str
    detail: dict[str, Any]
    resources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refused:
    """An entry PutEvents did not take (``FailedEntryCount``), with EventBridge's reason."""

    entry: Entry
    code: str
    message: str


def put_events(client: Any, bus: str, entries: Sequence[Entry]) -> list[Refused]:
    """Put ``entries`` on ``bus`` in requests of 10; returns the entries EventBridge refused
    one by one (a request that fails as a whole raises, translated)."""
    refused: list[Refused] = []
    for start in range(0, len(entries), MAX_ENTRIES):
        batch = list(entries[start:start + MAX_ENTRIES])
        requests = [_request(e, bus) for e in batch]
        answer: dict[str, Any] = translated(
            lambda: client.put_events(Entries=requests),  # noqa: B023 - called at once
            f"putting {len(batch)} event(s) on bus {bus}")
        if not answer.get("FailedEntryCount"):
            continue
        for entry, result in zip(batch, answer.get("Entries") or [], strict=False):
            if result.get("ErrorCode"):
                refused.append(Refused(entry, str(result["ErrorCode"]),
                                       str(result.get("ErrorMessage", ""))))
    return refused


def _request(entry: Entry, bus: str) -> dict[str, Any]:
    request: dict[str, Any] = {
        "Source": entry.source,
        "DetailType": entry.detail_type,
        "Detail": json.dumps(entry.detail, separators=(",", ":"), sort_keys=True),
        "EventBusName": bus,
    }
    if entry.resources:
        request["Resources"] = list(entry.resources)
    return request
