"""``hypd teams list|get|set|delete``: task governance's teams, one SageMaker compute quota each.

A team needs task governance on (``hypd features set TAG --enable taskGovernance``; the API
answers 409 otherwise). ``set`` is ``PUT /clusters/{tag}/teams/{team}``: the whole quota, so an
option not given takes its default, not its current value. A PUT that matches the quota changes
nothing (``no change``, exit 0); any other, and a delete, is an operation (follow it with
--wait or hypd ops watch). A team's jobs name its queue (``kueue.x-k8s.io/queue-name``).
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Mapping
from typing import Any

from hypd_cli.api_client import ApiError
from hypd_cli.cli import (
    EXIT_OK,
    Context,
    UsageError,
    api_command,
    body_from_flags,
    feature_off,
)
from hypd_cli.operations import add_wait_flag, follow_accepted, follow_change
from hypd_cli.output import DASH, Column, cell_at, key_values, print_columns, print_json

STRATEGIES = ("Lend", "DontLend", "LendAndBorrow")
PREEMPTIONS = ("Never", "LowerPriority")
SET_FLAGS = ("resource", "fair_share_weight", "strategy", "borrow_limit", "preempt",
             "inactive", "from_file")


def register(subparsers: Any) -> None:
    teams = subparsers.add_parser(
        "teams", help="task governance's teams (compute quotas): list, get, set, delete",
        description="Task governance's teams: each a SageMaker compute quota (instances per "
        "type, fair-share weight, lending and borrowing, preemption) with its namespace and "
        "queue. Task governance must be on (hypd features set TAG --enable taskGovernance).",
    )
    commands = teams.add_subparsers(dest="teams_command", metavar="COMMAND")

    listing = commands.add_parser("list", help="the teams and their quotas "
                                  "(GET /clusters/{tag}/teams)")
    listing.add_argument("tag", metavar="TAG")
    api_command(listing, "teams list", list_teams)

    get = commands.add_parser("get", help="one team's quota (GET /clusters/{tag}/teams/{team})")
    get.add_argument("tag", metavar="TAG")
    get.add_argument("team", metavar="TEAM")
    api_command(get, "teams get", get_team)

    put = commands.add_parser(
        "set", help="create or replace a team's quota (PUT /clusters/{tag}/teams/{team})",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Create a team, or replace its whole quota: an option not given takes its default "
            "(sharing LendAndBorrow, preempt LowerPriority, active), not its current value. "
            "Each --resource names an instance type of the cluster's groups."),
        epilog="example:\n  hypd teams set demo ml --resource ml.g6.4xlarge=2 "
        "--fair-share-weight 50 \\\n    --strategy LendAndBorrow --borrow-limit 50 --wait",
    )
    put.add_argument("tag", metavar="TAG")
    put.add_argument("team", metavar="TEAM")
    put.add_argument("--resource", action="append", type=resource, metavar="TYPE=COUNT",
                     help="instances of a type the team is guaranteed, e.g. ml.g6.4xlarge=2 "
                     "(repeatable; at least one)")
    put.add_argument("--fair-share-weight", type=int, metavar="N",
                     help="the team's weight in fair sharing (0-100)")
    put.add_argument("--strategy", choices=STRATEGIES,
                     help="what the team does with idle quota (default LendAndBorrow)")
    put.add_argument("--borrow-limit", type=int, metavar="PERCENT",
                     help="how much of its quota the team may borrow (LendAndBorrow)")
    put.add_argument("--preempt", choices=PREEMPTIONS,
                     help="whether the team's tasks preempt its own lower-priority tasks "
                     "(default LowerPriority)")
    put.add_argument("--inactive", action="store_true",
                     help="keep the quota but disable it (ActivationState Disabled)")
    put.add_argument("--from-file", metavar="FILE",
                     help="the whole PUT body as JSON ('-': stdin); no other quota flag with it")
    add_wait_flag(put)
    api_command(put, "teams set", set_team)

    delete = commands.add_parser("delete", help="delete a team's quota "
                                 "(DELETE /clusters/{tag}/teams/{team})")
    delete.add_argument("tag", metavar="TAG")
    delete.add_argument("team", metavar="TEAM")
    add_wait_flag(delete)
    api_command(delete, "teams delete", delete_team)


# -- list / get ---------------------------------------------------------------------------------


def list_teams(ctx: Context) -> int:
    response = ctx.client.list_teams(ctx.args.tag)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    print_columns(ctx, TEAM_COLUMNS, response.get("teams") or [],
                  empty=f"Cluster {response.get('tag') or ctx.args.tag} has no team.")
    return EXIT_OK


def get_team(ctx: Context) -> int:
    response = ctx.client.get_team(ctx.args.tag, ctx.args.team)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    ctx.say(describe_team(response))
    return EXIT_OK


def describe_team(team: Mapping[str, Any]) -> str:
    rows: list[tuple[str, object]] = [
        ("Team", team.get("name")),
        ("Status", team.get("status")),
        ("Resources", resources_text(team)),
        ("Fair-share weight", team.get("fairShareWeight")),
        ("Sharing", sharing_text(team)),
        ("Preempt team tasks", team.get("preemptTeamTasks")),
        ("Active", "yes" if team.get("active") else "no"),
        ("Namespace", team.get("namespace")),
        ("Queue", team.get("queue")),
        ("Quota", team.get("quotaArn") or team.get("quotaId")),
    ]
    if team.get("failureReason"):
        rows.append(("Failure", team["failureReason"]))
    text = key_values(rows)
    if team.get("queue"):
        text += (f"\n\nThe team's jobs name its queue: label kueue.x-k8s.io/queue-name: "
                 f"{team['queue']} (namespace {team.get('namespace')}).")
    return text


def resources_text(team: Mapping[str, Any]) -> str:
    """``ml.g6.4xlarge x2, ml.c5.2xlarge x1``."""
    return ", ".join(f"{r.get('instanceType')} x{r.get('count')}"
                     for r in team.get("resources") or []) or DASH


def sharing_text(team: Mapping[str, Any]) -> str:
    """``LendAndBorrow (borrow up to 50%)``."""
    sharing = team.get("sharing") or {}
    limit = sharing.get("borrowLimit")
    return str(sharing.get("strategy") or DASH) + (
        f" (borrow up to {limit}%)" if limit is not None else "")


TEAM_COLUMNS = (
    Column("TEAM", cell_at("name")),
    Column("STATUS", cell_at("status")),
    Column("RESOURCES", resources_text),
    Column("WEIGHT", cell_at("fairShareWeight")),
    Column("SHARING", sharing_text),
    Column("PREEMPT", cell_at("preemptTeamTasks")),
    Column("ACTIVE", cell_at("active")),
    Column("QUEUE", cell_at("queue")),
    Column("NAMESPACE", cell_at("namespace"), wide=True),
    Column("QUOTA", cell_at("quotaId"), wide=True),
    Column("FAILURE", cell_at("failureReason"), wide=True),
)


# -- set / delete -------------------------------------------------------------------------------


def resource(text: str) -> dict[str, Any]:
    """``ml.g6.4xlarge=2`` -> ``{"instanceType": "ml.g6.4xlarge", "count": 2}``."""
    kind, equals, count = text.partition("=")
    if not equals or not kind or not count.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected TYPE=COUNT, e.g. ml.g6.4xlarge=2")
    return {"instanceType": kind, "count": int(count)}


def team_body(args: argparse.Namespace) -> dict[str, Any]:
    """The PUT body from the flags: the options given (the API defaults the others)."""
    if not args.resource:
        raise UsageError("give at least one --resource TYPE=COUNT (or --from-file)")
    body: dict[str, Any] = {"resources": args.resource}
    if args.fair_share_weight is not None:
        body["fairShareWeight"] = args.fair_share_weight
    sharing = {field: value for field, value in (("strategy", args.strategy),
                                                 ("borrowLimit", args.borrow_limit))
               if value is not None}
    if sharing:
        body["sharing"] = sharing
    if args.preempt:
        body["preemptTeamTasks"] = args.preempt
    if args.inactive:
        body["active"] = False
    return body


def set_team(ctx: Context) -> int:
    tag, team = ctx.args.tag, ctx.args.team
    body = body_from_flags(ctx, SET_FLAGS, lambda: team_body(ctx.args))
    try:
        response = ctx.client.set_team(tag, team, body)
    except ApiError as exc:
        return feature_off(ctx, exc)
    return follow_change(
        ctx, response, f"Setting team {team} of cluster {tag}",
        lambda unchanged: f"team {team} of cluster {tag} already has this quota ("
        f"{resources_text(unchanged.get('team') or {})})",
    )


def delete_team(ctx: Context) -> int:
    tag, team = ctx.args.tag, ctx.args.team
    try:
        accepted = ctx.client.delete_team(tag, team)
    except ApiError as exc:
        return feature_off(ctx, exc)
    return follow_accepted(ctx, accepted, f"Deleting team {team} of cluster {tag}")
