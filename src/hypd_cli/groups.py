"""``hypd groups list|add|scale|update|delete|fields``: a cluster's instance groups.

A group's name, instance type, capacity type, zone, subnet and network are fixed when it is
added (``hypd groups fields`` says which fields a PATCH may change, and why not the others);
its count, minimum count, labels and taints change with ``scale`` and ``update``.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Mapping
from typing import Any

from hypd_cli.cli import (
    EXIT_FAILED,
    EXIT_OK,
    Context,
    UsageError,
    api_command,
    body_from_flags,
    flags_given,
)
from hypd_cli.group_flags import (
    add_kubernetes_flags,
    group_keys_help,
    kubernetes_fields,
    parse_group,
)
from hypd_cli.operations import add_wait_flag, follow_accepted, follow_change
from hypd_cli.output import DASH, Column, cell_at, print_columns, print_json, print_table

ADD_FLAGS = ("group", "zone", "label", "taint", "deep_health_check", "from_file")
UPDATE_FLAGS = ("count", "min_count", "label", "taint", "from_file")
DEEP_HEALTH_CHECKS = ("InstanceStress", "InstanceConnectivity", "MultiNodeTrainingValidation")


def register(subparsers: Any) -> None:
    groups = subparsers.add_parser(
        "groups", help="list, add, scale, update and delete a cluster's instance groups",
        description="Instance groups of a cluster hypd created: each change is an operation "
        "(follow it with --wait or hypd ops watch).",
    )
    commands = groups.add_subparsers(dest="groups_command", metavar="COMMAND")

    listing = commands.add_parser(
        "list", help="the groups as HyperPod describes them (GET /clusters/{tag}/instance-groups)"
    )
    listing.add_argument("tag", metavar="TAG")
    api_command(listing, "groups list", list_groups)

    add = commands.add_parser(
        "add", help="add an instance group (POST /clusters/{tag}/instance-groups)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Add an instance group. Its name, type, capacity type (on-demand, spot or a "
            "training plan), zone, subnet and EFA networking are fixed for its life. Without "
            "--zone a training-plan group takes the plan's zone, any other the cluster's.")
        + "\n\n" + textwrap.fill(
            "With no flags but the tag it asks: the group's name, its zone (default: the "
            "zone of the cluster's groups), the instance type (accelerated types first, by "
            "accelerator; type part of a name or an accelerator, e.g. h100, g6, trainium, to "
            "narrow the list), the count and the capacity (on-demand, spot, or a training "
            "plan of that zone and type); then shows the request and the same command with "
            "flags, and asks to confirm."),
        epilog=group_keys_help() + "\n\nexamples:\n  hypd groups add demo \\\n"
        "    --group name=spot,type=ml.g6.4xlarge,count=2,capacity=spot \\\n"
        "    --label team=ml --taint dedicated=ml:NoSchedule --wait\n"
        "  hypd groups add demo --wait        # asks",
    )
    add.add_argument("tag", metavar="TAG")
    add.add_argument("--group", metavar="KEY=VALUE,...",
                     help="the group, e.g. name=spot,type=ml.g6.4xlarge,count=2,capacity=spot "
                     "(with no group flag at all, the command asks)")
    add.add_argument("--zone", help="the group's Availability Zone (default: a training plan's "
                     "zone, else the cluster's)")
    add_kubernetes_flags(add)
    add.add_argument("--deep-health-check", action="append", choices=DEEP_HEALTH_CHECKS,
                     metavar="CHECK", help="a deep health check run when instances start "
                     f"(repeatable: {', '.join(DEEP_HEALTH_CHECKS)}); none with --taint")
    add.add_argument("--from-file", metavar="FILE",
                     help="the whole request body as JSON ('-': stdin); no other group flag "
                     "with it")
    add_wait_flag(add)
    api_command(add, "groups add", add_group)

    scale = commands.add_parser(
        "scale", help="set a group's instance count "
        "(PATCH /clusters/{tag}/instance-groups/{name} {count})",
    )
    scale.add_argument("tag", metavar="TAG")
    scale.add_argument("name", metavar="NAME")
    scale.add_argument("count", metavar="COUNT", type=int)
    add_wait_flag(scale)
    api_command(scale, "groups scale", scale_group)

    update = commands.add_parser(
        "update", help="change a group's count, minimum count, labels or taints "
        "(PATCH /clusters/{tag}/instance-groups/{name})",
        description="Change what a group's PATCH may change: its count, minimum count, labels "
        "and taints (only the flags given are sent). Anything else is fixed at creation: add a "
        "new group instead (see hypd groups fields). A request that matches the group changes "
        "nothing (no change, exit 0).",
    )
    update.add_argument("tag", metavar="TAG")
    update.add_argument("name", metavar="NAME")
    update.add_argument("--count", type=int, metavar="N", help="the instance count")
    update.add_argument("--min-count", type=int, metavar="N",
                        help="the fewest instances for the group to be InService")
    add_kubernetes_flags(update, replace=True)
    update.add_argument("--from-file", metavar="FILE",
                        help="the whole PATCH body as JSON ('-': stdin), e.g. "
                        '{"taints": []} to remove every taint')
    add_wait_flag(update)
    api_command(update, "groups update", update_group)

    delete = commands.add_parser(
        "delete", help="delete an instance group and its nodes "
        "(DELETE /clusters/{tag}/instance-groups/{name})",
    )
    delete.add_argument("tag", metavar="TAG")
    delete.add_argument("name", metavar="NAME")
    add_wait_flag(delete)
    api_command(delete, "groups delete", delete_group)

    fields = commands.add_parser(
        "fields", help="which group fields a PATCH may change, and why not the others "
        "(GET /catalog/instance-group-fields)",
    )
    api_command(fields, "groups fields", list_fields)


# -- list ---------------------------------------------------------------------------------------


def list_groups(ctx: Context) -> int:
    response = ctx.client.list_instance_groups(ctx.args.tag)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    ctx.say(f"Instance groups of cluster {response['tag']} "
            f"(HyperPod cluster {response.get('clusterStatus') or DASH}):")
    print_columns(ctx, GROUP_COLUMNS, response.get("instanceGroups", []),
                  empty=f"Cluster {ctx.args.tag} has no instance group.")
    return EXIT_OK


def labels_text(group: Mapping[str, Any]) -> str:
    """The group's labels as ``--label`` takes them: ``team=a, tier=gpu``."""
    labels: Mapping[str, str] = group.get("labels") or {}
    return ", ".join(f"{key}={value}" for key, value in labels.items()) or DASH


def taints_text(group: Mapping[str, Any]) -> str:
    """The group's taints as ``--taint`` takes them: ``nvidia.com/gpu=true:NoSchedule``."""
    return ", ".join(
        taint["key"] + (f"={taint['value']}" if taint.get("value") else "")
        + f":{taint['effect']}"
        for taint in group.get("taints") or []
    ) or DASH


def capacity(group: dict[str, Any]) -> str:
    """``on-demand``, ``spot``, or ``training-plan PLAN`` (the plan's name, from its ARN)."""
    found = group.get("capacity") or {}
    kind = str(found.get("type") or DASH)
    plan = found.get("trainingPlanArn")
    return f"{kind} {plan.rsplit('/', 1)[-1]}" if plan else kind


def flags(group: dict[str, Any]) -> str:
    """What sets the group apart, in a few words: ``efa-only, dedicated-subnet, autoscaled,
    min 1, checks InstanceStress, 2 labels, 1 taint``."""
    words = [word for key, word in (("efaOnly", "efa-only"),
                                    ("dedicatedSubnet", "dedicated-subnet"),
                                    ("autoscaled", "autoscaled")) if group.get(key)]
    if group.get("minCount") is not None:
        words.append(f"min {group['minCount']}")
    if group.get("deepHealthChecks"):
        words.append("checks " + "+".join(group["deepHealthChecks"]))
    for key, one in (("labels", "label"), ("taints", "taint")):
        count = len(group.get(key) or [])
        if count:
            words.append(f"{count} {one}{'s' if count > 1 else ''}")
    return ", ".join(words) or DASH


GROUP_COLUMNS = (
    Column("NAME", cell_at("name")),
    Column("TYPE", lambda g: g.get("instanceType") or cell_at("instanceTypes")(g)),
    Column("COUNT", lambda g: f"{g.get('currentCount', 0)}/{g.get('count', 0)}"),
    Column("CAPACITY", capacity),
    Column("ZONE", cell_at("availabilityZone")),
    Column("SUBNET", cell_at("subnetIds")),
    Column("STATUS", cell_at("status")),
    Column("FLAGS", flags),
    Column("LABELS", labels_text, wide=True),
    Column("TAINTS", taints_text, wide=True),
    Column("EXECUTION ROLE", cell_at("executionRole"), wide=True),
)


# -- add ----------------------------------------------------------------------------------------


def add_group(ctx: Context) -> int:
    body: dict[str, Any] | None
    if flags_given(ctx.args, ADD_FLAGS):
        body = body_from_flags(ctx, ADD_FLAGS, lambda: _add_body(ctx.args))
    else:
        from hypd_cli.prompts import ask_group_request

        body = ask_group_request(ctx, ctx.args.tag)
    if body is None:
        return EXIT_FAILED
    accepted = ctx.client.add_instance_group(ctx.args.tag, body)
    return follow_accepted(
        ctx, accepted, f"Adding instance group {body.get('name')} to cluster {ctx.args.tag}"
    )


def _add_body(args: argparse.Namespace) -> dict[str, Any]:
    """The POST /clusters/{tag}/instance-groups body from the flags."""
    if not args.group:
        raise UsageError("missing --group (or --from-file; or give no flags to be asked)")
    body = {**parse_group(args.group), **kubernetes_fields(args)}
    if args.deep_health_check:
        body["deepHealthChecks"] = args.deep_health_check
    if args.zone:
        body["availabilityZone"] = args.zone
    return body


# -- scale / update -----------------------------------------------------------------------------


def scale_group(ctx: Context) -> int:
    return _patch(ctx, {"count": ctx.args.count}, "Scaling", f" to {ctx.args.count}")


def update_group(ctx: Context) -> int:
    return _patch(ctx, body_from_flags(ctx, UPDATE_FLAGS, lambda: _update_body(ctx.args)),
                  "Updating")


def _update_body(args: argparse.Namespace) -> dict[str, Any]:
    """The PATCH body from the flags: only the fields given."""
    body: dict[str, Any] = {
        field: value for field, value in (("count", args.count), ("minCount", args.min_count))
        if value is not None
    }
    body.update(kubernetes_fields(args))
    if not body:
        raise UsageError("give at least one of --count, --min-count, --label, --taint "
                         "(or --from-file)")
    return body


def _patch(ctx: Context, body: dict[str, Any], verb: str, to: str = "") -> int:
    tag, name = ctx.args.tag, ctx.args.name
    response = ctx.client.update_instance_group(tag, name, body)
    return follow_change(
        ctx, response, f"{verb} instance group {name} of cluster {tag}{to}",
        lambda unchanged: f"instance group {name} of cluster {tag} already matches the request "
        f"({_counts(unchanged.get('instanceGroup') or {})})",
    )


def _counts(group: dict[str, Any]) -> str:
    return f"count {group.get('count')}, {group.get('currentCount')} up"


# -- delete -------------------------------------------------------------------------------------


def delete_group(ctx: Context) -> int:
    tag, name = ctx.args.tag, ctx.args.name
    accepted = ctx.client.delete_instance_group(tag, name)
    return follow_accepted(ctx, accepted, f"Deleting instance group {name} of cluster {tag}")


# -- fields -------------------------------------------------------------------------------------


def list_fields(ctx: Context) -> int:
    response = ctx.client.list_instance_group_fields()
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    fields = response.get("fields", [])
    rows = [
        (
            f["name"], "yes" if f.get("mutable") else "no (create-time)",
            ", ".join(f.get("sageMakerMembers") or []),
            f.get("description") if f.get("mutable") else f.get("reason") or DASH,
        )
        for f in fields
    ]
    print_table(ctx, ("FIELD", "PATCH MAY CHANGE", "SAGEMAKER", "NOTE"), rows)
    instead = dict.fromkeys(f["instead"] for f in fields if f.get("instead"))
    for text in instead:
        ctx.say(f"\nTo change a create-time field: {text}.")
    return EXIT_OK
