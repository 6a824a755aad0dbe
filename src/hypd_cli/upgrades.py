"""``hypd clusters upgrades|upgrade``: day-two upgrades (docs/upgrades.md).

``upgrades`` reads the versions now, what is available and what blocks
(GET /clusters/{tag}/upgrades). ``upgrade`` sends a target (POST /clusters/{tag}/upgrades):
``--dry-run`` prints the plan, every step with its estimate; otherwise it starts an
upgrade-cluster operation (follow it with --wait or hypd ops watch).
"""

from __future__ import annotations

from typing import Any

from hypd_cli.cli import EXIT_OK, Context, UsageError, api_command
from hypd_cli.operations import add_wait_flag, follow_change
from hypd_cli.output import DASH, print_json, print_table


def register(commands: Any) -> None:
    """The two commands, under ``hypd clusters``."""
    view = commands.add_parser(
        "upgrades", help="versions now, what is available, what blocks an upgrade "
        "(GET /clusters/{tag}/upgrades)")
    view.add_argument("tag", metavar="TAG")
    api_command(view, "clusters upgrades", get_upgrades)

    upgrade = commands.add_parser(
        "upgrade", help="upgrade Kubernetes, add-ons, the chart and the nodes, in that order "
        "(POST /clusters/{tag}/upgrades)",
        epilog="examples:\n"
        "  hypd clusters upgrade demo --kubernetes 1.34 --addons compatible --chart "
        "--dry-run\n"
        "  hypd clusters upgrade demo --kubernetes 1.34 --addons compatible --chart --wait\n"
        "  hypd clusters upgrade demo --nodes --batch 50%% --rollback-alarm gpu-errors --wait",
    )
    upgrade.add_argument("tag", metavar="TAG")
    upgrade.add_argument("--kubernetes", metavar="VERSION",
                         help="the Kubernetes version (two minors ahead is two steps)")
    upgrade.add_argument("--addons", action="append", metavar="compatible|NAME=VERSION",
                         help="compatible: every add-on to the newest compatible version; or "
                         "one add-on's version (repeatable)")
    upgrade.add_argument("--chart", action="store_true",
                         help="apply the HyperPod dependencies chart this hypd ships")
    upgrade.add_argument("--nodes", action="store_true",
                         help="roll the nodes onto the newest HyperPod software")
    upgrade.add_argument("--group", action="append", metavar="NAME",
                         help="only this instance group's nodes (repeatable; implies --nodes)")
    upgrade.add_argument("--batch", metavar="N|N%",
                         help="nodes updated at a time: a count or a percentage")
    upgrade.add_argument("--wait-between", type=int, metavar="SECONDS",
                         help="wait between batches (0-3600)")
    upgrade.add_argument("--rollback-alarm", action="append", metavar="ALARM",
                         help="a CloudWatch alarm whose ALARM rolls the nodes back (repeatable)")
    upgrade.add_argument("--force", action="store_true",
                         help="upgrade although an EKS upgrade insight reports ERROR")
    upgrade.add_argument("--dry-run", action="store_true",
                         help="print the plan; change nothing")
    add_wait_flag(upgrade)
    api_command(upgrade, "clusters upgrade", upgrade_cluster)


def _support(view: dict[str, Any] | None) -> str:
    if not view:
        return DASH
    return (f"{view['version']} ({view['status'].lower().replace('_', ' ')}, standard "
            f"until {view.get('endOfStandardSupport') or DASH})")


def get_upgrades(ctx: Context) -> int:
    view = ctx.client.call("getUpgrades", tag=ctx.args.tag)
    if ctx.structured:
        print_json(ctx, view)
        return EXIT_OK
    kubernetes = view["kubernetes"]
    ctx.say(f"Cluster {view['tag']}: Kubernetes {_support(kubernetes.get('support'))}")
    ctx.say(f"Next: {_support(kubernetes.get('next'))}; available: "
            f"{', '.join(kubernetes.get('available') or []) or DASH}")
    print_table(ctx, ("ADD-ON", "VERSION", "STATUS", "NEWEST COMPATIBLE", "OK FOR NEXT"), [
        (a["name"], a["version"], a["status"], a.get("newestCompatible") or DASH,
         DASH if a.get("compatibleWithNext") is None else
         ("yes" if a["compatibleWithNext"] else "no")) for a in view["addons"]])
    chart = view.get("chart")
    if chart:
        ctx.say(f"Chart: {chart.get('installed') or 'not recorded'} (Kubernetes "
                f"{chart.get('renderedFor') or DASH}); bundled {chart['bundled']}"
                + ("" if chart["upToDate"] else ": upgrade with --chart"))
    if view["nodes"]:
        print_table(ctx, ("GROUP", "NODES", "RELEASE", "IMAGE", "UPDATE"), [
            (g["instanceGroup"], str(g["nodes"]), g.get("imageRelease") or DASH,
             g.get("imageStatus") or DASH, g.get("softwareUpdateStatus") or DASH)
            for g in view["nodes"]])
    for insight in view["insights"]:
        if insight["status"] != "PASSING":
            ctx.say(f"Insight {insight['status']}: {insight['name']}: {insight['reason']}")
    for blocker in view["blockers"]:
        ctx.say(f"Blocked: {blocker['message']} ({blocker['action']})")
    for warning in view["warnings"]:
        ctx.say(f"Note: {warning}")
    return EXIT_OK


def upgrade_body(args: Any) -> dict[str, Any]:
    """The POST body from the flags (what is not given is not sent)."""
    body: dict[str, Any] = {}
    if args.kubernetes:
        body["kubernetesVersion"] = args.kubernetes
    if args.addons:
        if args.addons == ["compatible"]:
            body["addons"] = "compatible"
        else:
            pairs = [a.partition("=") for a in args.addons]
            if any(not name or not sep or not version for name, sep, version in pairs):
                raise UsageError("--addons takes compatible, or NAME=VERSION (repeatable)")
            body["addons"] = {name: version for name, _sep, version in pairs}
    if args.chart:
        body["chart"] = "bundled"
    if args.nodes or args.group or args.batch or args.rollback_alarm or (
            args.wait_between is not None):
        nodes: dict[str, Any] = {}
        if args.group:
            nodes["instanceGroups"] = args.group
        if args.batch:
            percent = args.batch.endswith("%")
            digits = args.batch.rstrip("%")
            if not digits.isdigit():
                raise UsageError("--batch takes a count (2) or a percentage (25%)")
            nodes["batch"] = {"type": "percentage" if percent else "count",
                              "value": int(digits)}
        if args.wait_between is not None:
            nodes["waitSeconds"] = args.wait_between
        if args.rollback_alarm:
            nodes["rollbackAlarms"] = args.rollback_alarm
        body["nodes"] = nodes
    if args.force:
        body["force"] = True
    if not body or body == {"force": True}:
        raise UsageError("name a target: --kubernetes, --addons, --chart or --nodes")
    return body


def upgrade_cluster(ctx: Context) -> int:
    tag = ctx.args.tag
    body = upgrade_body(ctx.args)
    if ctx.args.dry_run:
        plan = ctx.client.call("upgradeCluster", tag=tag, dryRun="true", body=body)
        if ctx.structured:
            print_json(ctx, plan)
            return EXIT_OK
        print_table(ctx, ("STAGE", "STEP", "ESTIMATE"), [
            (s["stage"], s["description"], f"{s['estimateSeconds'] // 60} min")
            for s in plan["steps"]])
        ctx.say(f"Estimated: {plan['estimateSeconds'] // 60} min")
        for blocker in plan["blockers"]:
            ctx.say(f"Blocked: {blocker['message']} ({blocker['action']})")
        for warning in plan["warnings"]:
            ctx.say(f"Note: {warning}")
        return EXIT_OK
    response = ctx.client.call("upgradeCluster", tag=tag, body=body)
    return follow_change(ctx, response, f"Upgrading cluster {tag}",
                         lambda _unchanged: f"cluster {tag} is already at the target")
