"""``hypd catalog zones|instance-types|training-plans``: what a create can ask for."""

from __future__ import annotations

from typing import Any

from hypd_cli.choosing import accelerators
from hypd_cli.cli import EXIT_OK, Context, api_command
from hypd_cli.output import Column, cell_at, gib, print_columns, print_json, time_at


def register(subparsers: Any) -> None:
    catalog = subparsers.add_parser(
        "catalog", help="inspect before create: zones, instance types, training plans",
        description="The catalogue: the Region's Availability Zones, the HyperPod instance "
        "types each zone offers, and the account's training plans.",
    )
    commands = catalog.add_subparsers(dest="catalog_command", metavar="COMMAND")

    zones = commands.add_parser("zones", help="the Region's Availability Zones "
                                "(GET /catalog/availability-zones)")
    api_command(zones, "catalog zones", list_zones)

    types = commands.add_parser(
        "instance-types", help="HyperPod instance types with GPU, memory, network-card and "
        "EFA facts (GET /catalog/instance-types)",
    )
    types.add_argument("--zone", metavar="ZONE", help="only the types this zone offers, "
                       "e.g. us-west-2a")
    api_command(types, "catalog instance-types", list_instance_types)

    plans = commands.add_parser("training-plans", help="training plans with their zones, "
                                "types and counts (GET /catalog/training-plans)")
    api_command(plans, "catalog training-plans", list_training_plans)


def list_zones(ctx: Context) -> int:
    response = ctx.client.list_availability_zones()
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    print_columns(ctx, ZONE_COLUMNS, response["availabilityZones"],
                  empty="No Availability Zone of this Region offers HyperPod to the account.")
    return EXIT_OK


def list_instance_types(ctx: Context) -> int:
    response = ctx.client.list_instance_types(ctx.args.zone)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    print_columns(ctx, INSTANCE_TYPE_COLUMNS, response["instanceTypes"],
                  empty="No HyperPod instance type matches.")
    return EXIT_OK


def list_training_plans(ctx: Context) -> int:
    response = ctx.client.list_training_plans()
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    print_columns(ctx, TRAINING_PLAN_COLUMNS, response["trainingPlans"],
                  empty="No training plan.")
    return EXIT_OK


def efa(instance_type: dict[str, Any]) -> str:
    if not instance_type.get("efaSupported"):
        return "no"
    cards = instance_type.get("maximumNetworkCards")
    return f"yes ({cards} cards)" if cards and cards > 1 else "yes"


def plan_capacity(plan: dict[str, Any]) -> str:
    types = ", ".join(plan.get("instanceTypes") or []) or "-"
    total = plan.get("totalInstanceCount")
    available = plan.get("availableInstanceCount")
    if total is None:
        return types
    return f"{available if available is not None else '?'}/{total} {types} available"


ZONE_COLUMNS = (
    Column("ZONE", cell_at("name")),
    Column("ZONE ID", cell_at("zoneId")),
    Column("STATE", cell_at("state")),
)

INSTANCE_TYPE_COLUMNS = (
    Column("INSTANCE TYPE", cell_at("instanceType")),
    Column("VCPUS", cell_at("vCpus")),
    Column("MEMORY", lambda t: gib(t.get("memoryMiB"))),
    Column("ACCELERATORS", accelerators),
    Column("EFA", efa),
    Column("ZONES", cell_at("availabilityZones")),
    Column("GPU MEMORY", lambda t: gib(t.get("totalGpuMemoryMiB")), wide=True),
    Column("NETWORK CARDS", cell_at("maximumNetworkCards"), wide=True),
    Column("EFA INTERFACES", cell_at("maximumEfaInterfaces"), wide=True),
)

TRAINING_PLAN_COLUMNS = (
    Column("NAME", cell_at("name")),
    Column("STATUS", cell_at("status")),
    Column("CAPACITY", plan_capacity),
    Column("ZONES", cell_at("availabilityZones")),
    Column("START", time_at("startTime")),
    Column("END", time_at("endTime")),
    Column("ARN", cell_at("arn")),
    Column("IN USE", cell_at("inUseInstanceCount"), wide=True),
    Column("HOURS", cell_at("durationHours"), wide=True),
    Column("FOR", cell_at("targetResources"), wide=True),
    Column("MESSAGE", cell_at("statusMessage"), wide=True),
)
