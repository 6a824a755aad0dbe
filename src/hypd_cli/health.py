"""``hypd health get|node|policy|set-policy``: what the HyperPod and EKS events said about a
cluster's nodes (docs/health.md), and the policy under which hypd repairs them.

``get`` is the summary (the nodes HyperPod lists by health status, each unhealthy one with its
reason, HyperPod's recommendation and what was done about it); ``node`` one node's history,
newest first. ``set-policy`` replaces the policy (options not given take their defaults, not
their current values) and starts no operation: each repair hypd makes under it later is its own
reboot-node or replace-node operation (``hypd ops list --cluster TAG``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypd_cli.cli import EXIT_OK, Context, api_command
from hypd_cli.output import DASH, key_values, print_json, print_table, short_time

POLICY_ACTIONS = ("notify", "reboot", "replace")
DEFAULT_MAX_ACTIONS_PER_HOUR = 2
DEFAULT_COOLDOWN_MINUTES = 60
HEALTHY = "Healthy"
EVENTS_SHOWN = 5
"""The newest cluster events `get` prints (the API keeps 20: ``-o json`` has them all)."""
REPAIR_HINTS = 3
"""At most this many ``Repair by hand`` commands `get` prints."""

WHAT_HYPD_DOES = {
    "notify": "only notifies; it repairs nothing",
    "reboot": "reboots a node when HyperPod recommends a reboot it does not take; only "
    "notifies of a recommended replacement",
    "replace": "reboots or replaces a node as HyperPod recommends, when HyperPod does not "
    "repair it itself",
}


def register(subparsers: Any) -> None:
    health = subparsers.add_parser(
        "health", help="node health from HyperPod's events; the automatic repair policy",
        description="The health HyperPod and EKS reported for a cluster's nodes and add-ons, "
        "and the policy under which hypd repairs a node HyperPod recommends repairing but does "
        "not repair itself (see docs/health.md).",
    )
    commands = health.add_subparsers(dest="health_command", metavar="COMMAND")

    get = commands.add_parser(
        "get", help="the nodes by health status, unhealthy ones with their reason and what was "
        "done, recent events (GET /clusters/{tag}/health)",
    )
    get.add_argument("tag", metavar="TAG")
    api_command(get, "health get", get_health)

    node = commands.add_parser(
        "node", help="a node's health history, newest first "
        "(GET /clusters/{tag}/nodes/{nodeId}/health)",
    )
    node.add_argument("tag", metavar="TAG")
    node.add_argument("node_id", metavar="NODE_ID", help="the node's instance id (i-...)")
    api_command(node, "health node", node_health)

    policy = commands.add_parser(
        "policy", help="the health policy (GET /clusters/{tag}/health-policy)"
    )
    policy.add_argument("tag", metavar="TAG")
    api_command(policy, "health policy", get_policy)

    set_policy = commands.add_parser(
        "set-policy", help="set what hypd does when HyperPod recommends a repair it does not "
        "take (PUT /clusters/{tag}/health-policy)",
        description="Replace the cluster's health policy. --action notify (the default policy) "
        "only notifies; reboot reboots a node HyperPod recommends rebooting; replace reboots or "
        "replaces as HyperPod recommends. Repairs are bounded by --max-actions-per-hour (per "
        "cluster, in any 60 minutes) and --cooldown-minutes (between two repairs of one node). "
        "The policy is replaced whole: an option not given takes its default "
        f"({DEFAULT_MAX_ACTIONS_PER_HOUR} an hour, {DEFAULT_COOLDOWN_MINUTES} minutes), not "
        "its current value. Each repair is a reboot-node or replace-node operation of its own "
        "(hypd ops list --cluster TAG). For clusters hypd created.",
    )
    set_policy.add_argument("tag", metavar="TAG")
    set_policy.add_argument("--action", required=True, choices=POLICY_ACTIONS,
                            help="what hypd may do: notify, reboot or replace")
    set_policy.add_argument("--max-actions-per-hour", type=int, metavar="N",
                            help="at most N repairs per cluster in any 60 minutes (1-100, "
                            f"default {DEFAULT_MAX_ACTIONS_PER_HOUR})")
    set_policy.add_argument("--cooldown-minutes", type=int, metavar="M",
                            help="no second repair of one node within M minutes (1-10080, "
                            f"default {DEFAULT_COOLDOWN_MINUTES})")
    api_command(set_policy, "health set-policy", set_health_policy)


# -- get ----------------------------------------------------------------------------------------


def get_health(ctx: Context) -> int:
    response = ctx.client.get_cluster_health(ctx.args.tag)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    tag = response.get("tag") or ctx.args.tag
    ctx.say(f"Cluster {tag}: HyperPod {response.get('clusterStatus') or DASH}; "
            f"{node_count(response)}")
    unhealthy = response.get("unhealthy") or []
    if unhealthy:
        print_table(ctx, ("NODE", "GROUP", "STATUS", "TIME", "REASON", "RECOMMENDED", "TAKEN"),
                    [node_row(n) for n in unhealthy])
    else:
        ctx.say("No unhealthy node.")
    gone = response.get("gone") or []
    if gone:
        ctx.say("\nGone (HyperPod no longer lists them: replaced or deleted):")
        print_table(ctx, ("NODE", "GROUP", "LAST STATUS", "TIME", "REASON", "TAKEN"),
                    [gone_row(n) for n in gone])
    events = response.get("recentEvents") or []
    if events:
        ctx.say("\nRecent Warn/Error events:")
        print_table(ctx, ("TIME", "LEVEL", "RESOURCE", "DESCRIPTION"),
                    [(short_time(e.get("time")), e.get("level") or DASH, event_resource(e),
                      e.get("description") or DASH) for e in events[:EVENTS_SHOWN]])
        if len(events) > EVENTS_SHOWN:
            ctx.say(f"... and {len(events) - EVENTS_SHOWN} older (-o json lists them).")
    troubled = addon_issues(response.get("addons") or {})
    if troubled:
        ctx.say("\nAdd-on issues:")
        print_table(ctx, ("ADDON", "STATUS", "ISSUES", "SINCE"), troubled)
    policy = response.get("policy") or {}
    ctx.say("\n" + policy_line(policy, bool(response.get("policyIsDefault"))))
    for line in repair_hints(ctx, tag, unhealthy, policy):
        ctx.say(line)
    return EXIT_OK


def repair_hints(
    ctx: Context, tag: str, unhealthy: Sequence[Mapping[str, Any]], policy: Mapping[str, Any]
) -> list[str]:
    """The commands for the unhealthy nodes nobody repairs though HyperPod recommends it (a
    policy applies to the health events after it is set: a node decided before stays as it
    is), and, under notify, the policy that would let hypd repair such nodes from now on."""
    waiting = [
        (n["nodeId"], latest["recommended"])
        for n in unhealthy
        if (latest := n.get("latest") or {}).get("recommended") in ("reboot", "replace")
        and ((latest.get("taken") or {}).get("by") or "none") == "none"
    ]
    if not waiting:
        return []
    lines = [f"Repair by hand: {ctx.command_line(f'nodes {action} {tag} {node} --wait')}"
             for node, action in waiting[:REPAIR_HINTS]]
    if len(waiting) > REPAIR_HINTS:
        lines.append(f"... and {len(waiting) - REPAIR_HINTS} more (each node's RECOMMENDED).")
    if policy.get("action") == "notify":
        command = ctx.command_line(f"health set-policy {tag} --action replace")
        lines.append(f"Let hypd repair such nodes from now on: {command}")
    return lines


def node_count(summary: Mapping[str, Any]) -> str:
    """``2 nodes: 1 Healthy, 1 Unhealthy`` (Healthy first, then by name)."""
    total = int(summary.get("nodes") or 0)
    counts: Mapping[str, int] = summary.get("counts") or {}
    ordered = sorted(counts.items(), key=lambda kv: (kv[0] != HEALTHY, kv[0]))
    text = f"{total} node{'' if total == 1 else 's'}"
    return text + (": " + ", ".join(f"{n} {status}" for status, n in ordered) if ordered else "")


def node_row(node: Mapping[str, Any]) -> tuple[object, ...]:
    latest = node.get("latest") or {}
    return (node["nodeId"], node.get("instanceGroup") or DASH,
            node.get("status") or latest.get("status") or DASH, short_time(latest.get("time")),
            latest.get("reason") or DASH, recommended(latest), taken_text(latest.get("taken")))


def gone_row(node: Mapping[str, Any]) -> tuple[object, ...]:
    latest = node.get("latest") or {}
    return (node["nodeId"], node.get("instanceGroup") or DASH,
            node.get("status") or latest.get("status") or DASH, short_time(latest.get("time")),
            latest.get("reason") or DASH, taken_text(latest.get("taken")))


def recommended(entry: Mapping[str, Any]) -> str:
    """HyperPod's recommendation: ``reboot`` or ``replace``, else its text (or a dash)."""
    word = entry.get("recommended")
    if word and word != "none":
        return str(word)
    return str(entry.get("recommendation") or DASH)


def taken_text(taken: Mapping[str, Any] | None) -> str:
    """What was done about an entry: HyperPod's repair, hypd's operation, or why nothing."""
    if not taken:
        return DASH
    by, action = taken.get("by"), taken.get("action")
    if by == "hyperpod":
        return f"hyperpod {action or 'repair'}"
    if by == "hypd":
        return " ".join(str(p) for p in ("hypd", action, taken.get("operationId")) if p)
    reason = taken.get("reason")
    return f"none ({reason})" if reason else "none"


def event_resource(event: Mapping[str, Any]) -> str:
    """``Instance workers/i-...``: the event's resource type, group and instance."""
    where = "/".join(str(p) for p in (event.get("instanceGroup"), event.get("instanceId")) if p)
    text = " ".join(str(p) for p in (event.get("resourceType"), where) if p)
    return text or DASH


def addon_issues(addons: Mapping[str, Mapping[str, Any]]) -> list[tuple[object, ...]]:
    """The add-ons that have issues or are not ACTIVE."""
    rows: list[tuple[object, ...]] = []
    for name, addon in sorted(addons.items()):
        issues: Sequence[Mapping[str, Any]] = addon.get("issues") or []
        if not issues and addon.get("status") in ("ACTIVE", None):
            continue
        text = "; ".join(
            ": ".join(str(p) for p in (i.get("code"), i.get("message")) if p) or DASH
            for i in issues
        )
        rows.append((name, addon.get("status") or DASH, text or DASH,
                     short_time(addon.get("time"))))
    return rows


def policy_line(policy: Mapping[str, Any], default: bool) -> str:
    """``Policy: notify (the default); at most 2 repairs an hour, 60 min between ...``."""
    action = policy.get("action") or DASH
    return (f"Policy: {action}{' (the default)' if default else ''}; at most "
            f"{policy.get('maxActionsPerHour')} repairs an hour, "
            f"{policy.get('nodeCooldownMinutes')} min between repairs of a node")


# -- node ---------------------------------------------------------------------------------------


def node_health(ctx: Context) -> int:
    response = ctx.client.get_node_health(ctx.args.tag, ctx.args.node_id)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    latest = response.get("latest") or {}
    group = response.get("instanceGroup")
    ctx.say(f"Node {response.get('nodeId')} of cluster {response.get('tag')}"
            f"{f' (group {group})' if group else ''}: {latest.get('status') or DASH}")
    rows = [
        (short_time(e.get("time")), e.get("status") or DASH, e.get("reason") or DASH,
         recommended(e), taken_text(e.get("taken")))
        for e in response.get("history") or []
    ]
    print_table(ctx, ("TIME", "STATUS", "REASON", "RECOMMENDED", "TAKEN"), rows)
    operation = (latest.get("taken") or {}).get("operationId")
    if operation:
        ctx.say(f"hypd's repair: {ctx.command_line(f'ops get {operation}')}")
    return EXIT_OK


# -- policy -------------------------------------------------------------------------------------


def get_policy(ctx: Context) -> int:
    response = ctx.client.get_health_policy(ctx.args.tag)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    ctx.say(describe_policy(response))
    return EXIT_OK


def set_health_policy(ctx: Context) -> int:
    args = ctx.args
    body: dict[str, Any] = {"action": args.action}
    for field, value in (("maxActionsPerHour", args.max_actions_per_hour),
                         ("nodeCooldownMinutes", args.cooldown_minutes)):
        if value is not None:
            body[field] = value
    response = ctx.client.set_health_policy(args.tag, body)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    ctx.say(f"Health policy of cluster {response.get('tag') or args.tag} set:")
    ctx.say(describe_policy(response))
    return EXIT_OK


def describe_policy(view: Mapping[str, Any]) -> str:
    """The policy view as a key/value block."""
    policy: Mapping[str, Any] = view.get("policy") or {}
    action = str(policy.get("action") or DASH)
    return key_values([
        ("Cluster", view.get("tag")),
        ("Action", f"{action} (the default: no policy was set)" if view.get("default")
         else action),
        ("hypd", WHAT_HYPD_DOES.get(action)),
        ("Max actions per hour", policy.get("maxActionsPerHour")),
        ("Node cool-down", f"{policy.get('nodeCooldownMinutes')} minutes"),
    ])
