"""``hypd ops list|get|watch|retry|cancel``: the operations behind every long-running action."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from hypd_cli.api_client import started
from hypd_cli.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Context, api_command
from hypd_cli.durations import EXAMPLES, positive_duration
from hypd_cli.output import (
    DASH,
    Column,
    Item,
    cell_at,
    current_stage,
    format_duration,
    operation_elapsed,
    operation_title,
    outcome_lines,
    print_columns,
    print_json,
    short_time,
    stage_table,
    stages_done,
    time_at,
    timeline_table,
)
from hypd_cli.watch import DEFAULT_INTERVAL, watch_operation

STATUSES = ["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]


def register(subparsers: Any) -> None:
    ops = subparsers.add_parser(
        "ops", aliases=["operations"], help="list, watch, retry and cancel operations",
        description="Operations: every long-running action (create, discover) is one, with "
        "ordered stages. Watch one to its end, retry a failed one where it stopped, cancel a "
        "running one.",
    )
    commands = ops.add_subparsers(dest="ops_command", metavar="COMMAND")

    listing = commands.add_parser("list", help="operations, newest first (GET /operations)")
    listing.add_argument("--cluster", metavar="TAG", help="only this cluster's operations")
    listing.add_argument("--status", choices=STATUSES, help="only operations with this status")
    add_paging(listing)
    api_command(listing, "ops list", list_operations)

    get = commands.add_parser("get", help="an operation and its stages "
                              "(GET /operations/{id})")
    get.add_argument("operation_id", metavar="ID")
    api_command(get, "ops get", get_operation)

    watch = commands.add_parser(
        "watch", help="follow an operation until it ends; exit 0 only if it SUCCEEDED",
        description="Poll GET /operations/{id} and show each stage's status, attempts and "
        "elapsed time until the operation ends. Exit 0 when it SUCCEEDED; 1 when it FAILED "
        "(the failing stage, its error and the retry command are printed) or was CANCELLED; "
        "4 when --timeout runs out first.",
    )
    watch.add_argument("operation_id", metavar="ID",
                       help="the operation's id, or - to read it from stdin: an id, or the "
                       "JSON a request answered (curl ... | hypd ops watch -)")
    add_wait_options(watch)
    api_command(watch, "ops watch", watch_command)

    retry = commands.add_parser(
        "retry", help="resume a FAILED or CANCELLED operation at the stage that did not "
        "succeed (POST /operations/{id}/retry)",
    )
    retry.add_argument("operation_id", metavar="ID")
    add_wait_flag(retry)
    api_command(retry, "ops retry", retry_operation)

    cancel = commands.add_parser(
        "cancel", help="stop a running operation; completed stages stay "
        "(POST /operations/{id}/cancel)",
    )
    cancel.add_argument("operation_id", metavar="ID")
    api_command(cancel, "ops cancel", cancel_operation)


def add_paging(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, help="at most this many items (1-100; API "
                        "default 50)")
    parser.add_argument("--next-token", metavar="TOKEN",
                        help="the page after the one that returned this nextToken")


def add_wait_flag(parser: argparse.ArgumentParser) -> None:
    """``--wait`` (with ``--interval`` and ``--timeout``) for a command that starts an
    operation."""
    parser.add_argument("--wait", action="store_true", help="then watch the operation to its "
                        "end (exit 0 only if it SUCCEEDED)")
    add_wait_options(parser)


def add_wait_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--interval", type=positive_duration, default=DEFAULT_INTERVAL,
                        metavar="DURATION", help=f"time between polls ({EXAMPLES}; default "
                        f"{DEFAULT_INTERVAL:g}s)")
    parser.add_argument("--timeout", type=positive_duration, default=None, metavar="DURATION",
                        help="give up watching after this long (exit 4; the operation goes on)")


def next_page_hint(ctx: Context, response: dict[str, Any], command: str) -> None:
    """On stderr: the command that lists the next page (same filters and --limit)."""
    token = response.get("nextToken")
    if token:
        limit = getattr(ctx.args, "limit", None)
        command += f" --limit {limit}" if limit else ""
        print(f"More: {ctx.command_line(command + ' --next-token ' + token)}",
              file=ctx.err, flush=True)


def error_code(operation: Item) -> str:
    """What ended a failed operation, in a word: its error's code."""
    return str((operation.get("error") or {}).get("code") or DASH)


OPERATION_COLUMNS = (
    Column("OPERATION", cell_at("id")),
    Column("KIND", cell_at("kind")),
    Column("CLUSTER", cell_at("clusterTag")),
    Column("STATUS", cell_at("status")),
    Column("DONE", stages_done),
    Column("STAGE", current_stage),
    Column("CREATED", time_at("createdAt")),
    Column("UPDATED", time_at("updatedAt")),
    Column("ELAPSED", lambda op: format_duration(operation_elapsed(op)) or DASH, wide=True),
    Column("RETRIES", lambda op: len(op.get("retries") or []), wide=True),
    Column("ERROR", error_code, wide=True),
)


def list_operations(ctx: Context) -> int:
    args = ctx.args
    response = ctx.client.list_operations(
        cluster_tag=args.cluster, status=args.status, limit=args.limit,
        next_token=args.next_token,
    )
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    filters = " ".join(
        f"--{flag} {value}" for flag, value in (("cluster", args.cluster), ("status", args.status))
        if value
    )
    print_columns(ctx, OPERATION_COLUMNS, response.get("operations", []),
                  empty=f"No operations match {filters}." if filters else "No operations.")
    next_page_hint(ctx, response, f"ops list {filters}".rstrip())
    return EXIT_OK


def get_operation(ctx: Context) -> int:
    operation = ctx.client.get_operation(ctx.args.operation_id)
    if ctx.structured:
        print_json(ctx, operation)
        return EXIT_OK
    ctx.say(describe_operation(ctx, operation))
    return EXIT_OK


def describe_operation(ctx: Context, operation: dict[str, Any]) -> str:
    lines = [operation_title(operation), stage_table(operation)]
    if operation.get("timeline"):
        lines += ["", "Timeline (UTC):", timeline_table(operation)]
    retries = operation.get("retries") or []
    if retries:
        lines.append("")
        lines.append("Retries: " + "; ".join(
            f"#{r['number']} at {short_time(r.get('requestedAt'))} resumed "
            f"{r.get('resumeFrom') or '-'} after {r.get('previousStatus')}"
            for r in retries
        ))
    outcome = outcome_lines(ctx, operation)
    if outcome:
        lines.append("")
        lines.extend(outcome)
    elif operation["status"] not in ("SUCCEEDED",):
        lines.append("")
        lines.append(f"Follow it: {ctx.command_line('ops watch ' + operation['id'])}")
    return "\n".join(lines)


def watch_command(ctx: Context) -> int:
    operation_id = ctx.args.operation_id
    if operation_id == "-":
        read = operation_from_stdin(sys.stdin.read(), ctx.err)
        if isinstance(read, int):
            return read
        operation_id = read
    return watch_operation(ctx, operation_id, interval=ctx.args.interval,
                           timeout=ctx.args.timeout)


def operation_from_stdin(text: str, err: TextIO) -> str | int:
    """The operation `hypd ops watch -` follows: a bare id, or the JSON body a request answered
    (a 202's ``operationId``, an operation's ``id``). A 200 ``changed: false`` has none: exit 0
    (nothing started); an error body is printed: exit 1; anything else is a usage error."""
    text = text.strip()
    try:
        body = json.loads(text)
    except ValueError:
        body = text
    if isinstance(body, str) and body.startswith("op-") and body.split() == [body]:
        return body
    if isinstance(body, dict):
        found = body.get("operationId") or (body.get("id") if "stages" in body else None)
        if isinstance(found, str):
            return found
        if body.get("changed") is False:
            print("No change: nothing was started.", file=err)
            return EXIT_OK
        if "code" in body and "message" in body:
            print(f"{body['code']}: {body['message']}", file=err)
            return EXIT_FAILED
    print("hypd ops watch -: stdin holds no operation (an op-... id, or a response with "
          f"operationId); it holds: {text[:200]!r}", file=err)
    return EXIT_USAGE


def retry_operation(ctx: Context) -> int:
    operation = ctx.client.retry_operation(ctx.args.operation_id)
    if ctx.structured and not ctx.args.wait:
        print_json(ctx, operation)
        return EXIT_OK
    retries = operation.get("retries") or []
    resume = retries[-1].get("resumeFrom") if retries else None
    ctx.say(f"Retrying operation {operation['id']}"
            + (f" (retry {retries[-1]['number']})" if retries else "")
            + (f": resumes at stage {resume}." if resume else "."))
    return follow_or_hint(ctx, operation["id"])


def cancel_operation(ctx: Context) -> int:
    operation = ctx.client.cancel_operation(ctx.args.operation_id)
    if ctx.structured:
        print_json(ctx, operation)
        return EXIT_OK
    ctx.say(f"Cancel requested for operation {operation['id']} ({operation['status']}); "
            "completed stages stay.")
    ctx.say(f"Follow it: {ctx.command_line('ops watch ' + operation['id'])}")
    return EXIT_OK


def follow_accepted(ctx: Context, accepted: dict[str, Any], doing: str) -> int:
    """The answer of a command that started an operation (202 ``{operationId, status, kind}``):
    with ``-o json`` and no ``--wait`` printed as it came; else said (``doing: operation ID``)
    and, with ``--wait``, followed to its end."""
    if ctx.structured and not getattr(ctx.args, "wait", False):
        print_json(ctx, accepted)
        return EXIT_OK
    ctx.say(f"{doing}: operation {accepted['operationId']} ({accepted['status']})")
    return follow_or_hint(ctx, accepted["operationId"])


def follow_change(
    ctx: Context,
    response: dict[str, Any],
    doing: str,
    unchanged: Callable[[dict[str, Any]], str],
) -> int:
    """The answer of a change the API may find already made: 202 as `follow_accepted`, or 200
    ``{"changed": false, ...}``: nothing started, nothing to wait for (``-o json``: printed as
    it came; else ``no change:`` and what ``unchanged`` says of the response)."""
    if started(response):
        return follow_accepted(ctx, response, doing)
    if ctx.structured:
        print_json(ctx, response)
    else:
        ctx.say(f"no change: {unchanged(response)}; nothing was started.")
    return EXIT_OK


def follow_or_hint(ctx: Context, operation_id: str) -> int:
    """Watch the operation with ``--wait``, else say how to."""
    if getattr(ctx.args, "wait", False):
        return watch_operation(ctx, operation_id, interval=ctx.args.interval,
                               timeout=ctx.args.timeout)
    ctx.say(f"Follow it: {ctx.command_line('ops watch ' + operation_id)}")
    return EXIT_OK

