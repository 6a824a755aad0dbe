"""``hypd autoscaling get|enable|disable``: managed Karpenter autoscaling of a cluster.

``enable`` and ``disable`` are the one idempotent toggle ``PUT /clusters/{tag}/autoscaling``:
a request that matches the cluster changes nothing (``no change``, exit 0); any other is an
operation (follow it with --wait or hypd ops watch).
"""

from __future__ import annotations

from typing import Any

from hypd_cli.cli import EXIT_OK, Context, api_command
from hypd_cli.operations import add_wait_flag, follow_change
from hypd_cli.output import DASH, key_values, print_json

CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")


def register(subparsers: Any) -> None:
    autoscaling = subparsers.add_parser(
        "autoscaling", help="managed Karpenter autoscaling: get, enable, disable",
        description="Managed Karpenter autoscaling: Karpenter scales the named instance groups "
        "with the pods' demand, toward zero when they are idle.",
    )
    commands = autoscaling.add_subparsers(dest="autoscaling_command", metavar="COMMAND")

    get = commands.add_parser("get", help="HyperPod's autoscaling and what hypd made "
                              "(GET /clusters/{tag}/autoscaling)")
    get.add_argument("tag", metavar="TAG")
    api_command(get, "autoscaling get", get_autoscaling)

    enable = commands.add_parser(
        "enable", help="turn managed Karpenter on, or change its groups and consolidation "
        "(PUT /clusters/{tag}/autoscaling {enabled: true})",
        description="Turn managed Karpenter on for these instance groups (1-10, on-demand or "
        "spot, no deep health checks, one zone), or change its settings: the options not "
        "given keep their current value (first time: consolidate after 5m, "
        "WhenEmptyOrUnderutilized). The cluster needs continuous provisioning and automatic "
        "node recovery.",
    )
    enable.add_argument("tag", metavar="TAG")
    enable.add_argument("--group", action="append", metavar="NAME",
                        help="an instance group Karpenter scales (repeatable; required the "
                        "first time)")
    enable.add_argument("--consolidate-after", metavar="DURATION",
                        help="how long a node stays idle before Karpenter removes it, e.g. "
                        "30s, 5m, 1h30m or Never")
    enable.add_argument("--consolidation-policy", choices=CONSOLIDATION_POLICIES,
                        help="which nodes Karpenter consolidates")
    add_wait_flag(enable)
    api_command(enable, "autoscaling enable", enable_autoscaling)

    disable = commands.add_parser(
        "disable", help="turn managed Karpenter off, removing what enabling made "
        "(PUT /clusters/{tag}/autoscaling {enabled: false})",
    )
    disable.add_argument("tag", metavar="TAG")
    add_wait_flag(disable)
    api_command(disable, "autoscaling disable", disable_autoscaling)


def get_autoscaling(ctx: Context) -> int:
    response = ctx.client.get_autoscaling(ctx.args.tag)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    ctx.say(describe(response))
    return EXIT_OK


def describe(view: dict[str, Any]) -> str:
    """The autoscaling view as a key/value block."""
    hyperpod = ", ".join(str(v) for v in (view.get("mode"), view.get("status")) if v)
    rows: list[tuple[str, object]] = [
        ("Cluster", view.get("tag")),
        ("Autoscaling", "on" if view.get("enabled") else "off"),
        ("HyperPod", hyperpod or DASH),
    ]
    if view.get("failureMessage"):
        rows.append(("  Failure", view["failureMessage"]))
    rows += [
        ("Instance groups", ", ".join(view.get("instanceGroups") or [])),
        ("Consolidate after", view.get("consolidateAfter")),
        ("Consolidation policy", view.get("consolidationPolicy")),
        ("Role", view.get("roleArn")),
        ("Cluster role", view.get("clusterRole")),
        ("Node class", view.get("nodeClass")),
        ("Node pool", view.get("nodePool")),
        ("Last operation", view.get("lastOperationId")),
    ]
    return key_values(rows)


def enable_autoscaling(ctx: Context) -> int:
    args = ctx.args
    body: dict[str, Any] = {"enabled": True}
    for field, value in (("instanceGroups", args.group),
                         ("consolidateAfter", args.consolidate_after),
                         ("consolidationPolicy", args.consolidation_policy)):
        if value is not None:
            body[field] = value
    return _put(ctx, body, "Enabling")


def disable_autoscaling(ctx: Context) -> int:
    return _put(ctx, {"enabled": False}, "Disabling")


def _put(ctx: Context, body: dict[str, Any], verb: str) -> int:
    tag = ctx.args.tag
    return follow_change(
        ctx, ctx.client.set_autoscaling(tag, body), f"{verb} autoscaling of cluster {tag}",
        lambda unchanged: f"autoscaling of cluster {tag} is already "
        + _state(unchanged.get("autoscaling") or {}),
    )


def _state(view: dict[str, Any]) -> str:
    if not view.get("enabled"):
        return "off"
    return (f"on (instance groups {', '.join(view.get('instanceGroups') or [])}; consolidate "
            f"after {view.get('consolidateAfter')}, {view.get('consolidationPolicy')})")
