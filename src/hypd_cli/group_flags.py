"""An instance group from the command line: ``--group KEY=VALUE,...`` (``clusters create``,
``groups add``), ``--label KEY=VALUE`` and ``--taint KEY[=VALUE]:EFFECT`` (``groups add``,
``groups update``).

Only the syntax is checked here: the API validates the group (types, zones, names, label and
taint rules) and answers 400 naming the field.
"""

from __future__ import annotations

import argparse
from typing import Any

from hypd_cli.cli import UsageError

GROUP_KEYS = {
    "name": "the group's name (required)",
    "type": "the ml.* instance type (required; also instance-type=)",
    "count": "number of instances (default 1)",
    "capacity": "on-demand (default), spot or training-plan",
    "training-plan": "a training plan's ARN (implies capacity=training-plan)",
    "efa-only": "true: EFA-only network interfaces",
    "dedicated-subnet": "true: a compute subnet of the group's own",
}
CAPACITIES = ("on-demand", "spot", "training-plan")


def group_keys_help() -> str:
    """The ``--group`` keys, one a line, for a command's epilog."""
    return "--group keys (comma-separated KEY=VALUE):\n" + "\n".join(
        f"  {key:<17} {text}" for key, text in GROUP_KEYS.items()
    )


def parse_group(spec: str) -> dict[str, Any]:
    """``name=gpu,type=ml.g6.4xlarge,count=1,capacity=on-demand`` -> an instance group."""
    values: dict[str, str] = {}
    for item in spec.split(","):
        key, sep, value = item.strip().partition("=")
        key = "type" if key == "instance-type" else key
        if not sep or not key or not value:
            raise UsageError(f"--group {spec!r}: expected KEY=VALUE pairs separated by commas")
        if key not in GROUP_KEYS:
            raise UsageError(f"--group {spec!r}: unknown key {key!r} (keys: "
                             f"{', '.join(GROUP_KEYS)})")
        if key in values:
            raise UsageError(f"--group {spec!r}: {key} given twice")
        values[key] = value
    for required in ("name", "type"):
        if required not in values:
            raise UsageError(f"--group {spec!r}: missing {required}=")
    try:
        count = int(values.get("count", "1"))
    except ValueError:
        raise UsageError(f"--group {spec!r}: count must be a whole number") from None
    plan = values.get("training-plan")
    capacity_type = values.get("capacity", "training-plan" if plan else "on-demand")
    if capacity_type not in CAPACITIES:
        raise UsageError(f"--group {spec!r}: capacity must be one of {', '.join(CAPACITIES)}")
    capacity: dict[str, Any] = {"type": capacity_type}
    if capacity_type == "training-plan":
        if not plan:
            raise UsageError(f"--group {spec!r}: capacity=training-plan needs training-plan=ARN")
        capacity["trainingPlanArn"] = plan
    elif plan:
        raise UsageError(f"--group {spec!r}: training-plan= goes with capacity=training-plan")
    group: dict[str, Any] = {
        "name": values["name"], "instanceType": values["type"], "count": count,
        "capacity": capacity,
    }
    for key, field in (("efa-only", "efaOnly"), ("dedicated-subnet", "dedicatedSubnet")):
        if key in values:
            group[field] = _boolean(values[key], f"--group {spec!r}: {key}")
    return group


def _boolean(text: str, what: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "yes", "1"):
        return True
    if lowered in ("false", "no", "0"):
        return False
    raise UsageError(f"{what} must be true or false")


# -- Kubernetes labels and taints ----------------------------------------------------------------


def add_kubernetes_flags(parser: argparse.ArgumentParser, *, replace: bool = False) -> None:
    """``--label`` and ``--taint`` (repeatable). With ``replace`` (PATCH) they give the whole
    set: the group's other labels (or taints) are removed."""
    note = (" (repeatable; the whole set: the group's other {} are removed)" if replace
            else " (repeatable)")
    parser.add_argument("--label", action="append", metavar="KEY=VALUE",
                        help="a Kubernetes label of the group's nodes" + note.format("labels"))
    parser.add_argument("--taint", action="append", metavar="KEY[=VALUE]:EFFECT",
                        help="a Kubernetes taint of the group's nodes, EFFECT NoSchedule, "
                        "PreferNoSchedule or NoExecute" + note.format("taints"))


def kubernetes_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The ``labels`` and ``taints`` of a group body, for the flags given."""
    fields: dict[str, Any] = {}
    if args.label is not None:
        fields["labels"] = dict(parse_label(text) for text in args.label)
    if args.taint is not None:
        fields["taints"] = [parse_taint(text) for text in args.taint]
    return fields


def parse_label(text: str) -> tuple[str, str]:
    """``team=ml`` -> ``("team", "ml")``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"--label {text!r}: expected KEY=VALUE")
    return key, value


def parse_taint(text: str) -> dict[str, str]:
    """``nvidia.com/gpu=true:NoSchedule`` (or ``dedicated:NoExecute``, no value) -> a taint."""
    rest, sep, effect = text.rpartition(":")
    key, _, value = rest.partition("=")
    if not sep or not key or not effect:
        raise UsageError(f"--taint {text!r}: expected KEY=VALUE:EFFECT or KEY:EFFECT")
    taint = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return taint
