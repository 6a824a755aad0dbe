"""What hypd published on the local cloud's bus, checked against what its records say.

`check_published_events(cloud)` reads every hypd event the bus received (the local cloud's
event log) and the operations and clusters as the REST API gives them, and asserts:

- each event validates against its registered schema (the files under events/schemas/, which
  tests/build checks are the template's `AWS::EventSchemas::Schema` contents);
- no event was published twice (`eventId` is unique);
- each operation's and cluster's events are a chain of its status changes: the first has no
  previousStatus (or, for a cluster, the status it was created with), each next one's
  previousStatus is the last one's status, and the last one's status is the record's status
  now. A missing transition, a repeated one or one out of order breaks the chain.

The `cloud` fixture runs it after every integration and end-to-end test, so every operation
kind those tests drive is checked, through its successes, failures, retries and cancels.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator  # type: ignore[import-untyped,unused-ignore]

from hypd.events.model import (
    CLUSTER_STATE_CHANGE,
    NODE_HEALTH_CHANGE,
    OPERATION_STATE_CHANGE,
    SCHEMA_FILES,
    SOURCE,
)

SCHEMAS = Path(__file__).resolve().parents[1] / "events" / "schemas"


@cache
def _validator(detail_type: str) -> Draft4Validator:
    return Draft4Validator(json.loads((SCHEMAS / SCHEMA_FILES[detail_type]).read_text()))


def published(cloud: Any, detail_type: str | None = None) -> list[dict[str, Any]]:
    """hypd's events the bus received, oldest first."""
    return list(cloud.event_log.events(source=SOURCE, detail_type=detail_type))


def chains(events: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        by[str(event["detail"][key])].append(event["detail"])
    return by


def check_published_events(cloud: Any, api: Any) -> None:
    events = published(cloud)
    for event in events:
        errors = sorted(_validator(event["detail-type"]).iter_errors(event), key=str)
        assert not errors, f"{event['detail-type']} does not match its schema: {errors[0]}"
    ids = [event["detail"]["eventId"] for event in events]
    doubled = sorted({i for i in ids if ids.count(i) > 1})
    assert not doubled, f"published twice: {doubled}"

    operations = chains([e for e in events if e["detail-type"] == OPERATION_STATE_CHANGE],
                        "operationId")
    for operation_id, chain in operations.items():
        record = api.get(f"/operations/{operation_id}")
        _check_chain(f"operation {operation_id} ({record['kind']})", chain, record["status"])
    coverage = os.environ.get("HYPD_EVENTS_COVERAGE")
    if coverage:  # which kinds and transitions the suite checked (docs/automation.md)
        with open(coverage, "a", encoding="utf-8") as out:
            for chain in operations.values():
                out.write(" ".join([chain[0]["kind"]] + [d["status"] for d in chain]) + "\n")

    clusters = chains([e for e in events if e["detail-type"] == CLUSTER_STATE_CHANGE], "tag")
    for tag, chain in clusters.items():
        _check_chain(f"cluster {tag}", chain, _cluster_status(api, tag))

    for event in published(cloud, NODE_HEALTH_CHANGE):
        detail = event["detail"]
        assert detail["health"] != detail["previousHealth"] or detail["repair"], detail


def _check_chain(what: str, chain: list[dict[str, Any]], now: str | None) -> None:
    """A record's events: each begins where the last ended. A cluster's record may be made
    again after it was forgotten (a new chain from no status); an operation's never is."""
    statuses = [(d.get("previousStatus"), d["status"]) for d in chain]
    assert statuses[0][0] is None, f"{what}: its first event {statuses[0]} is not its creation"
    for (_, before), (previous, _) in pairwise(statuses):
        new_record = previous is None and what.startswith("cluster")
        assert previous == before or new_record, (
            f"{what}: events {statuses} skip or repeat a transition")
    if now is not None:
        assert statuses[-1][1] == now, f"{what}: events {statuses} end before its status {now}"


def _cluster_status(api: Any, tag: str) -> str | None:
    from hypd_cli.api_client import ApiError

    try:
        status: str | None = api.get(f"/clusters/{tag}").get("status")
    except ApiError as error:
        if error.status == 404:  # forgotten: its record (and its last status) is gone
            return None
        raise
    return status
