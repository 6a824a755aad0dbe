"""``hypd clusters list|get|create|discover``."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from hypd_cli import upgrades
from hypd_cli.cli import (
    EXIT_FAILED,
    EXIT_OK,
    Context,
    UsageError,
    api_command,
    body_from_flags,
    flags_given,
)
from hypd_cli.group_flags import group_keys_help, parse_group
from hypd_cli.operations import add_paging, add_wait_flag, follow_accepted, next_page_hint
from hypd_cli.output import (
    Column,
    cell_at,
    key_values,
    print_columns,
    print_json,
    print_table,
    short_time,
    time_at,
)
from hypd_cli.teardown import register_under

# The flags that describe a cluster: any of them means "create from flags, ask nothing".
REQUEST_FLAGS = ("tag", "zone", "group", "s3_bucket", "s3_prefix", "fsx_capacity",
                 "kubernetes_version", "from_file")

def register(subparsers: Any) -> None:
    clusters = subparsers.add_parser(
        "clusters", help="list, inspect, create and discover clusters",
        description="HyperPod clusters on EKS: the ones hypd created and the ones it "
        "discovered in the account.",
    )
    commands = clusters.add_subparsers(dest="clusters_command", metavar="COMMAND")

    listing = commands.add_parser("list", help="the recorded clusters (GET /clusters)")
    add_paging(listing)
    api_command(listing, "clusters list", list_clusters)

    get = commands.add_parser("get", help="one cluster (GET /clusters/{tag})")
    get.add_argument("tag", metavar="TAG")
    api_command(get, "clusters get", get_cluster)

    create = commands.add_parser(
        "create", help="create a HyperPod cluster on a new EKS cluster (POST /clusters)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Create a HyperPod cluster on EKS. With flags it asks nothing; with no flags it "
            "asks the decision-grade questions (tag, zone, instance type, count, capacity, "
            "storage), offering choices from the catalogue, then asks to confirm. The "
            "instance types come accelerated first, grouped by accelerator, each with its "
            "GPUs or Neuron devices, vCPUs, memory, EFA and the zone's training plans for it; "
            "answer a number or a type, or type part of a name or an accelerator (g6, h100, "
            "trainium, efa, cpu) to narrow the list."),
        epilog=group_keys_help() + "\n\nexample:\n"
        "  hypd clusters create --tag demo --zone us-west-2a \\\n"
        "    --group name=gpu,type=ml.g6.4xlarge,count=1,capacity=on-demand \\\n"
        "    --s3-bucket my-data --wait",
    )
    create.add_argument("--tag", help="the cluster's tag (names its resources hypd-TAG)")
    create.add_argument("--zone", help="Availability Zone of the nodes, e.g. us-west-2a "
                        "(optional with a training plan: the plan's zone)")
    create.add_argument("--group", action="append", metavar="KEY=VALUE,...",
                        help="an instance group (repeatable), e.g. "
                        "name=gpu,type=ml.g6.4xlarge,count=1,capacity=on-demand")
    storage = create.add_mutually_exclusive_group()
    storage.add_argument("--s3-bucket", metavar="BUCKET",
                         help="mount this S3 bucket (Mountpoint for Amazon S3)")
    storage.add_argument("--fsx-capacity", type=int, metavar="GIB",
                         help="create an FSx for Lustre file system of this size (1200 or a "
                         "multiple of 2400 GiB)")
    create.add_argument("--s3-prefix", metavar="PREFIX",
                        help="mount only this prefix of the bucket (ends with /)")
    create.add_argument("--kubernetes-version", metavar="X.Y",
                        help="EKS Kubernetes version (default: EKS's)")
    create.add_argument("--from-file", metavar="FILE",
                        help="the whole POST /clusters body as JSON ('-': stdin), for fields "
                        "the flags do not cover (labels, taints, deep health checks)")
    add_wait_flag(create)
    api_command(create, "clusters create", create_cluster)

    discover = commands.add_parser(
        "discover", help="find the account's EKS and HyperPod clusters and record them "
        "(POST /clusters/discover)",
    )
    discover.add_argument("--name", action="append", metavar="NAME",
                          help="only this EKS or HyperPod cluster (repeatable; default all)")
    add_wait_flag(discover)
    api_command(discover, "clusters discover", discover_clusters)
    register_under(commands)
    upgrades.register(commands)


# -- list / get --------------------------------------------------------------------------------


# `clusters list`. LAST SEEN: when hypd last read the cluster from AWS.
CLUSTER_COLUMNS = (
    Column("TAG", cell_at("tag")),
    Column("STATUS", cell_at("status")),
    Column("SOURCE", cell_at("source")),
    Column("EKS", lambda c: eks_summary(c.get("eks"))),
    Column("HYPERPOD", lambda c: hyperpod_summary(c.get("hyperpod"))),
    Column("NODES", lambda c: nodes(c.get("hyperpod"))),
    Column("UPDATED", time_at("updatedAt")),
    Column("REGION", cell_at("region"), wide=True),
    Column("VPC", cell_at("eks", "vpcId"), wide=True),
    Column("CREATED", time_at("createdAt"), wide=True),
    Column("LAST SEEN", time_at("lastSeenAt"), wide=True),
    Column("LAST OPERATION", cell_at("lastOperationId"), wide=True),
)


def list_clusters(ctx: Context) -> int:
    response = ctx.client.list_clusters(limit=ctx.args.limit, next_token=ctx.args.next_token)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    print_columns(ctx, CLUSTER_COLUMNS, response.get("clusters", []),
                  empty="No clusters: `hypd clusters create` makes one, `hypd clusters "
                  "discover` records the account's.")
    next_page_hint(ctx, response, "clusters list")
    return EXIT_OK


def get_cluster(ctx: Context) -> int:
    cluster = ctx.client.get_cluster(ctx.args.tag)
    if ctx.structured:
        print_json(ctx, cluster)
        return EXIT_OK
    eks = cluster.get("eks") or {}
    hyperpod = cluster.get("hyperpod") or {}
    rows: list[tuple[str, object]] = [
        ("Tag", cluster["tag"]),
        ("Status", cluster.get("status")),
        ("Source", cluster.get("source")),
        ("Region", cluster.get("region")),
        ("Created", short_time(cluster.get("createdAt"))),
        ("Updated", short_time(cluster.get("updatedAt"))),
        ("Last operation", cluster.get("lastOperationId")),
        ("EKS cluster", eks_summary(eks or None)),
    ]
    if eks:
        rows += [("  ARN", eks.get("arn")), ("  Endpoint", eks.get("endpoint")),
                 ("  VPC", eks.get("vpcId"))]
    rows.append(("HyperPod cluster", hyperpod_summary(hyperpod or None)))
    if hyperpod:
        rows += [
            ("  ARN", hyperpod.get("arn")),
            ("  Node recovery", hyperpod.get("nodeRecovery")),
            ("  Provisioning", hyperpod.get("nodeProvisioningMode")),
        ]
        if hyperpod.get("failureMessage"):
            rows.append(("  Failure", hyperpod["failureMessage"]))
    print(key_values(rows), file=ctx.out)
    groups = hyperpod.get("instanceGroups") or []
    if groups:
        print(file=ctx.out)
        print_table(ctx, ("INSTANCE GROUP", "INSTANCE TYPE", "NODES", "STATUS"), [
            (g["name"], g.get("instanceType"), f"{g.get('currentCount', 0)}/"
             f"{g.get('targetCount', 0)}", g.get("status") or "-")
            for g in groups
        ])
    if cluster.get("status") == "CREATING" and cluster.get("lastOperationId"):
        print(f"\nFollow it: {ctx.command_line('ops watch ' + cluster['lastOperationId'])}",
              file=ctx.out)
    return EXIT_OK


def eks_summary(eks: dict[str, Any] | None) -> str:
    if not eks:
        return "-"
    version = f" {eks['version']}" if eks.get("version") else ""
    return f"{eks['name']} ({eks.get('status')}{version})"


def hyperpod_summary(hyperpod: dict[str, Any] | None) -> str:
    if not hyperpod:
        return "-"
    return f"{hyperpod['name']} ({hyperpod.get('status')})"


def nodes(hyperpod: dict[str, Any] | None) -> str:
    groups = (hyperpod or {}).get("instanceGroups") or []
    if not groups:
        return "-"
    current = sum(g.get("currentCount") or 0 for g in groups)
    target = sum(g.get("targetCount") or 0 for g in groups)
    return f"{current}/{target}"


# -- discover ----------------------------------------------------------------------------------


def discover_clusters(ctx: Context) -> int:
    return follow_accepted(ctx, ctx.client.discover_clusters(ctx.args.name),
                           "Discovering clusters")


# -- create ------------------------------------------------------------------------------------


def create_cluster(ctx: Context) -> int:
    args = ctx.args
    body: dict[str, Any] | None
    if flags_given(args, REQUEST_FLAGS):
        body = request_from_flags(args, ctx)
    else:
        from hypd_cli.prompts import ask_create_request

        body = ask_create_request(ctx)
    if body is None:
        return EXIT_FAILED
    return follow_accepted(ctx, ctx.client.create_cluster(body),
                           f"Creating cluster {body.get('tag')}")


def request_from_flags(args: argparse.Namespace, ctx: Context) -> dict[str, Any]:
    """The POST /clusters body from the flags (or --from-file). Only the syntax is checked
    here: the API validates the request (and answers 400 naming the field)."""
    return body_from_flags(ctx, REQUEST_FLAGS, lambda: _create_body(args))


def _create_body(args: argparse.Namespace) -> dict[str, Any]:
    missing = [flag for flag, value in (("--tag", args.tag), ("--group", args.group))
               if not value]
    if args.s3_bucket is None and args.fsx_capacity is None:
        missing.append("--s3-bucket or --fsx-capacity")
    if missing:
        raise UsageError(f"missing {', '.join(missing)} (or give no flags to be asked)")
    if args.s3_prefix is not None and args.s3_bucket is None:
        raise UsageError("--s3-prefix needs --s3-bucket")
    storage: dict[str, Any]
    if args.s3_bucket is not None:
        storage = {"s3": {"bucket": args.s3_bucket}}
        if args.s3_prefix is not None:
            storage["s3"]["prefix"] = args.s3_prefix
    else:
        storage = {"fsx": {"storageCapacityGiB": args.fsx_capacity}}
    body: dict[str, Any] = {
        "tag": args.tag,
        "instanceGroups": [parse_group(spec) for spec in args.group],
        "storage": storage,
    }
    if args.zone:
        body["availabilityZone"] = args.zone
    if args.kubernetes_version:
        body["kubernetesVersion"] = args.kubernetes_version
    return body
