"""``hypd nodes list|reboot|replace|delete``: a cluster's nodes, and the actions HyperPod takes
on one of them (each an operation: follow it with --wait or hypd ops watch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypd_cli.api_client import ApiClient
from hypd_cli.cli import EXIT_OK, Context, api_command
from hypd_cli.operations import add_wait_flag, follow_accepted
from hypd_cli.output import Column, cell_at, print_columns, print_json, time_at

# The node actions: command word -> (help, what the command says it does, the client's method).
ACTIONS: dict[str, tuple[str, str, Callable[[ApiClient, str, str], dict[str, Any]]]] = {
    "reboot": ("reboot a node (POST /clusters/{tag}/nodes/{nodeId}/reboot)", "Rebooting",
               ApiClient.reboot_node),
    "replace": ("replace a node with a new instance (POST /clusters/{tag}/nodes/{nodeId}/"
                "replace)", "Replacing", ApiClient.replace_node),
    "delete": ("delete a node; its group's count goes down by one "
               "(DELETE /clusters/{tag}/nodes/{nodeId})", "Deleting", ApiClient.delete_node),
}


def register(subparsers: Any) -> None:
    nodes = subparsers.add_parser(
        "nodes", help="list a cluster's nodes; reboot, replace or delete one",
        description="The nodes of a cluster as HyperPod lists them, and the node actions: "
        "reboot and replace (a node that is Running or Failure), delete (the group's count "
        "goes down by one).",
    )
    commands = nodes.add_subparsers(dest="nodes_command", metavar="COMMAND")

    listing = commands.add_parser("list", help="the nodes, oldest first "
                                  "(GET /clusters/{tag}/nodes)")
    listing.add_argument("tag", metavar="TAG")
    listing.add_argument("--group", metavar="NAME", help="only this instance group's nodes")
    api_command(listing, "nodes list", list_nodes)

    for word, (text, _verb, _method) in ACTIONS.items():
        action = commands.add_parser(word, help=text)
        action.add_argument("tag", metavar="TAG")
        action.add_argument("node_id", metavar="NODE_ID", help="the node's instance id (i-...)")
        add_wait_flag(action)
        api_command(action, f"nodes {word}", node_action)


NODE_COLUMNS = (
    Column("NODE", cell_at("nodeId")),
    Column("GROUP", cell_at("instanceGroup")),
    Column("TYPE", cell_at("instanceType")),
    Column("STATUS", cell_at("status")),
    Column("MESSAGE", cell_at("message")),
    Column("LAUNCHED", time_at("launchTime")),
    Column("PRIVATE DNS", cell_at("privateDnsHostname"), wide=True),
    Column("SOFTWARE UPDATED", time_at("lastSoftwareUpdateTime"), wide=True),
)


def list_nodes(ctx: Context) -> int:
    response = ctx.client.list_nodes(ctx.args.tag, ctx.args.group)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    print_columns(ctx, NODE_COLUMNS, response.get("nodes", []), empty="No nodes.")
    return EXIT_OK


def node_action(ctx: Context) -> int:
    args = ctx.args
    word = args.command_name.split()[1]
    _text, verb, method = ACTIONS[word]
    return follow_accepted(ctx, method(ctx.client, args.tag, args.node_id),
                           f"{verb} node {args.node_id} of cluster {args.tag}")
