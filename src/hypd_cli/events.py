"""``hypd events tail``: hypd's recent events (GET /events), one line each, newest last, and
with ``--follow`` the ones that come after, until Ctrl+C.

The events are the ones hypd published to EventBridge (docs/automation.md): the same on the
local cloud and on a deployment, read through the REST API like everything else.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from hypd_cli.cli import EXIT_OK, Context, api_command
from hypd_cli.durations import EXAMPLES, positive_duration, since_iso
from hypd_cli.output import DASH, render_data, short_time
from hypd_cli.watch import DEFAULT_INTERVAL, ride_out

DETAIL_TYPES = {
    "operation": "hypd Operation State Change",
    "cluster": "hypd Cluster State Change",
    "node": "hypd Node Health Change",
}
"""--type's words and the detail types they stand for."""

SHORT_NAMES = {detail_type: word for word, detail_type in DETAIL_TYPES.items()}
DEFAULT_LIMIT = 50
MAX_LIMIT = 200


def register(subparsers: Any) -> None:
    events = subparsers.add_parser(
        "events", help="hypd's recent events: operations, clusters, node health",
        description="The events hypd published to EventBridge in the last 14 days (operation "
        "and cluster state changes, node health changes), read through the REST API.",
    )
    commands = events.add_subparsers(dest="events_command", metavar="COMMAND")
    tail = commands.add_parser(
        "tail", help="the last events, one line each, newest last; --follow for new ones "
        "(GET /events)",
        description="Print the last events (time, type, cluster, and what changed), newest "
        "last. With --follow, keep polling GET /events for the ones recorded after them "
        "until Ctrl+C (exit 130). With --json (or -o json), each event is one line of JSON, "
        "as EventBridge delivers it.",
    )
    tail.add_argument("--cluster", metavar="TAG", help="only this cluster's events")
    tail.add_argument("--type", choices=sorted(DETAIL_TYPES), dest="detail_type",
                      help="only this type of event")
    tail.add_argument("--since", metavar="TIME", type=since_iso,
                      help=f"only events recorded after this time: a duration ago ({EXAMPLES}) "
                      "or an ISO time (2026-01-15T10:00:00Z)")
    tail.add_argument("--limit", type=int, default=None,
                      help=f"at most this many events at first (1-{MAX_LIMIT}; default "
                      f"{DEFAULT_LIMIT})")
    tail.add_argument("-f", "--follow", action="store_true",
                      help="keep printing new events until Ctrl+C")
    tail.add_argument("--interval", type=positive_duration, default=DEFAULT_INTERVAL,
                      metavar="DURATION",
                      help=f"with --follow: time between polls ({EXAMPLES}; default "
                      f"{DEFAULT_INTERVAL:g}s)")
    tail.add_argument("--json", action="store_const", const="json", dest="output",
                      default="table", help="one JSON event per line (the same as -o json)")
    api_command(tail, "events tail", tail_events)


def tail_events(ctx: Context) -> int:
    args = ctx.args
    detail_type = DETAIL_TYPES[args.detail_type] if args.detail_type else None
    since: str | None = args.since
    limit = args.limit
    while True:
        page = ride_out(ctx, functools.partial(
            ctx.client.list_events, cluster=args.cluster, since=since,
            detail_type=detail_type, limit=limit), args.interval, ctx.sleep)
        for event in page.get("events") or []:
            print(render_data(ctx, event, compact=True) if ctx.structured
                  else event_line(event), file=ctx.out, flush=True)
        if not args.follow:
            return EXIT_OK
        since = page.get("next") or since
        # Following: read everything recorded since, a page at a time, then wait.
        limit = MAX_LIMIT
        if len(page.get("events") or []) < MAX_LIMIT:
            ctx.sleep(args.interval)


def event_line(event: dict[str, Any]) -> str:
    """``TIME  TYPE  CLUSTER  what changed``."""
    detail: dict[str, Any] = event.get("detail") or {}
    kind = SHORT_NAMES.get(str(event.get("detail-type")), str(event.get("detail-type")))
    tag = detail.get("clusterTag") or detail.get("tag") or DASH
    return f"{short_time(event.get('time'))}  {kind:<9}  {tag}  {essentials(kind, detail)}"


def essentials(kind: str, detail: dict[str, Any]) -> str:
    """What an event says, in a few words."""
    if kind == "operation":
        parts = [str(detail.get("operationId")), str(detail.get("kind")),
                 _change(detail.get("previousStatus"), detail.get("status"))]
        if detail.get("stage"):
            parts.append(f"stage {detail['stage']}")
        error = detail.get("error")
        if error:
            parts.append(f"{error.get('code')}: {error.get('message')}")
        return "  ".join(parts)
    if kind == "cluster":
        change = _change(detail.get("previousStatus"), detail.get("status"))
        by = detail.get("operationId")
        return change + (f"  by {by}" if by else "")
    if kind == "node":
        node = str(detail.get("nodeId"))
        if detail.get("instanceGroup"):
            node += f" ({detail['instanceGroup']})"
        parts = [node, _change(detail.get("previousHealth"), detail.get("health"))]
        if detail.get("reason"):
            parts.append(str(detail["reason"]))
        repair = detail.get("repair")
        if repair:
            parts.append("repair: " + " ".join(
                str(v) for v in (repair.get("by"), repair.get("action"),
                                 repair.get("operationId")) if v))
        return "  ".join(parts)
    return json.dumps(detail, separators=(",", ":"))


def _change(before: object, after: object) -> str:
    return f"{before or 'new'} -> {after}"
