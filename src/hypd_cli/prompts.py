"""The interactive ``hypd clusters create`` and ``hypd groups add``: only the decision-grade
questions, with choices from the catalogue (GET /catalog/availability-zones,
/catalog/instance-types?availabilityZone=, /catalog/training-plans), then the request to
confirm.

Answers are read from stdin line by line (a terminal, or a pipe: ``printf 'demo\\n1\\n...' |
hypd clusters create``); questions go to stderr so stdout keeps only the result. A choice is
answered with its number or its value; an empty answer takes the default shown in brackets.
The instance type is chosen from a list grouped by accelerator that the answer may narrow
(`Prompter.choose_instance_type`, `hypd_cli.choosing`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TextIO, TypeVar

from hypd_cli.choosing import (
    InstanceType,
    covering_plans,
    describe_plan,
    describe_type,
    search,
    sections,
)
from hypd_cli.cli import Context, UsageError

T = TypeVar("T")

MAX_COUNT = 6758  # SageMaker's InstanceCount range: 0-6758


class Prompter:
    """Questions on ``out``, answers from ``answers`` one line each; ``command`` is named when
    the answers run out."""

    def __init__(self, answers: TextIO, out: TextIO, command: str = "clusters create") -> None:
        self.answers = answers
        self.out = out
        self.command = command

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def _line(self, question: str) -> str:
        self.out.write(question + " ")
        self.out.flush()
        line = self.answers.readline()
        if not line:
            self.say()
            raise UsageError(f"no answer to {question!r} (end of input); give the request as "
                             f"flags instead (hypd {self.command} --help)")
        if not self.answers.isatty():
            self.say(line.rstrip("\n"))  # echo piped answers, so the transcript reads well
        return line.strip()

    def ask(self, question: str, parse: Callable[[str], T], default: str | None = None) -> T:
        """Ask until ``parse`` accepts the answer (it raises ValueError with the reason)."""
        prompt = f"{question} [{default}]:" if default is not None else f"{question}:"
        while True:
            answer = self._line(prompt) or (default or "")
            try:
                return parse(answer)
            except ValueError as exc:
                self.say(f"  {exc}")

    def choose(
        self, question: str, options: Sequence[tuple[str, T, str]], default: int | None = None
    ) -> T:
        """One of ``options`` (name, value, label), answered by its number (1-based) or its
        name."""
        if not options:
            raise UsageError(f"nothing to choose from for {question!r}")
        self.say(f"{question}:")
        width = len(str(len(options)))
        for number, (_, _, label) in enumerate(options, start=1):
            self.say(f"  {number:>{width}}) {label}")

        def parse(answer: str) -> T:
            if answer.isdigit() and 1 <= int(answer) <= len(options):
                return options[int(answer) - 1][1]
            for name, value, _ in options:
                if answer == name:
                    return value
            raise ValueError(f"answer a number from 1 to {len(options)}, or a name")

        return self.ask(f"Choose 1-{len(options)}", parse,
                        str(default) if default is not None else None)

    def choose_instance_type(
        self, question: str, types: Sequence[InstanceType], zone: str,
        plans: Sequence[dict[str, Any]] = (),
    ) -> InstanceType:
        """One of a zone's ``types`` (GET /catalog/instance-types), each described with the
        ``plans`` that cover it there.

        The accelerated types are numbered under their accelerator, the CPU-only ones summed
        up in a line (listed when they are all there is, or asked for with ``cpu``). A number
        of the list shown, or a type's name, picks it; other words narrow the list
        (`hypd_cli.choosing.search`) and the matches are shown numbered afresh; the only match
        is picked; no match, or an empty answer, shows the whole list again.
        """
        if not types:
            raise UsageError(f"nothing to choose from for {question!r}")
        by_name = {t["instanceType"]: t for t in types}
        width = max(len(name) for name in by_name)

        def show(found: Sequence[InstanceType], whole: bool) -> list[InstanceType]:
            parts = sections(found)
            # The CPU-only types in one line, unless they are all there is.
            hidden = None
            if whole and len(parts) > 1 and parts[-1].accelerator is None:
                hidden = parts.pop()
            numbered: list[InstanceType] = []
            digits = len(str(sum(len(part.types) for part in parts)))
            for part in parts:
                self.say(f"  {part.heading}")
                for instance_type in part.types:
                    numbered.append(instance_type)
                    self.say(f"    {len(numbered):>{digits}}) {line(instance_type)}")
            if hidden:
                self.say(f"  {len(hidden.types)} CPU-only types: type cpu to list them")
            return numbered

        def line(instance_type: InstanceType) -> str:
            name = instance_type["instanceType"]
            return describe_type(instance_type, covering_plans(plans, zone, name), width)

        self.say(f"{question}:")
        shown = show(types, whole=True)
        self.say("  (a number or a type picks it; other words narrow the list: h100, g6, "
                 "trainium, efa, cpu)")
        while True:
            answer = self._line(f"Choose 1-{len(shown)}, a type, or words to narrow:")
            if answer in by_name:
                return by_name[answer]
            if answer.isdigit():
                if 1 <= int(answer) <= len(shown):
                    return shown[int(answer) - 1]
                self.say(f"  answer a number from 1 to {len(shown)}, a type, or words")
                continue
            found = search(types, answer)
            if len(found) == 1:
                self.say(f"  the only match: {line(found[0])}")
                return found[0]
            if found:
                self.say(f"{len(found)} types match {answer!r}:")
                shown = show(found, whole=False)
                continue
            if answer:
                self.say(f"  no instance type matches {answer!r}; all of them:")
            shown = show(types, whole=True)

    def confirm(self, question: str) -> bool:
        def parse(answer: str) -> bool:
            if answer.lower() in ("y", "yes"):
                return True
            if answer.lower() in ("", "n", "no"):
                return False
            raise ValueError("answer y or n")

        return self.ask(f"{question} [y/N]", parse, default=None)


# -- clusters create ----------------------------------------------------------------------------


def ask_create_request(ctx: Context) -> dict[str, Any] | None:
    """Ask for the POST /clusters body; None when the person declines to send it."""
    from hypd.clusters.create_request import TAG_MAX_LENGTH, TAG_PATTERN

    ask = Prompter(ctx.stdin, ctx.err)
    ask.say("Create a HyperPod cluster on EKS (Ctrl+C to stop; nothing is created until you "
            "confirm).")

    def tag(answer: str) -> str:
        if not answer:
            raise ValueError("a tag is needed")
        if len(answer) > TAG_MAX_LENGTH or not re.match(TAG_PATTERN, answer):
            raise ValueError(f"1-{TAG_MAX_LENGTH} letters, digits and hyphens, starting and "
                             "ending with a letter or digit")
        return answer

    cluster_tag = ask.ask("Cluster tag (its resources are named hypd-TAG)", tag)
    zone: str = ask.choose("Availability Zone", zone_options(available_zones(ctx)))
    chosen, plans = ask_instance_type(ask, ctx, zone)
    instance_type = str(chosen["instanceType"])
    instance_count = ask_count(ask)
    capacity = ask_capacity(ask, plans, zone, instance_type)

    storage_kind = ask.choose("Shared storage", [
        ("s3", "s3", "an existing S3 bucket (Mountpoint for Amazon S3)"),
        ("fsx", "fsx", "a new FSx for Lustre file system"),
    ], default=1)
    storage: dict[str, Any]
    if storage_kind == "s3":
        def bucket(answer: str) -> str:
            if not answer or " " in answer:
                raise ValueError("a bucket name")
            return answer

        storage = {"s3": {"bucket": ask.ask("S3 bucket name", bucket)}}
    else:
        def capacity_gib(answer: str) -> int:
            if not answer.isdigit() or int(answer) < 1200:
                raise ValueError("1200 or a multiple of 2400 (GiB)")
            return int(answer)

        storage = {"fsx": {"storageCapacityGiB": ask.ask(
            "FSx for Lustre capacity in GiB (1200 or a multiple of 2400)", capacity_gib,
            default="1200")}}

    body = {
        "tag": cluster_tag,
        "availabilityZone": zone,
        "instanceGroups": [{
            "name": group_name(chosen),
            "instanceType": instance_type,
            "count": instance_count,
            "capacity": capacity,
        }],
        "storage": storage,
    }
    if not confirm_request(ask, ctx, "POST /clusters", body, flags_of(body),
                           "Create this cluster?"):
        ask.say("Nothing was created.")
        return None
    return body


# -- groups add ---------------------------------------------------------------------------------


def ask_group_request(ctx: Context, tag: str) -> dict[str, Any] | None:
    """Ask for the POST /clusters/{tag}/instance-groups body (name, zone, instance type, count,
    capacity); None when the person declines to send it. The cluster's groups (GET
    /clusters/{tag}/instance-groups) say which names are taken and which zone the cluster
    uses: the zone offered first."""
    from hypd.clusters.create_request import GROUP_NAME_MAX_LENGTH, GROUP_NAME_PATTERN

    groups = ctx.client.list_instance_groups(tag).get("instanceGroups") or []
    ask = Prompter(ctx.stdin, ctx.err, "groups add")
    ask.say(f"Add an instance group to cluster {tag} (Ctrl+C to stop; nothing is added until "
            "you confirm).")
    taken = {g["name"] for g in groups}

    def name(answer: str) -> str:
        if not answer:
            raise ValueError("a name is needed")
        if len(answer) > GROUP_NAME_MAX_LENGTH or not re.match(GROUP_NAME_PATTERN, answer):
            raise ValueError(f"1-{GROUP_NAME_MAX_LENGTH} letters, digits and hyphens, starting "
                             "and ending with a letter or digit")
        if answer in taken:
            raise ValueError(f"cluster {tag} has a group {answer} already (its groups: "
                             f"{', '.join(sorted(taken))})")
        return answer

    group = ask.ask("Group name", name)
    in_zone: dict[str, list[str]] = {}
    for existing in groups:
        if existing.get("availabilityZone"):
            in_zone.setdefault(existing["availabilityZone"], []).append(existing["name"])
    options = zone_options(available_zones(ctx), in_zone)
    # The zone most of the cluster's groups are in: the cluster's, unless told otherwise.
    usual = max(in_zone, key=lambda z: len(in_zone[z]), default=None)
    names = [zone for zone, _, _ in options]
    zone: str = ask.choose("Availability Zone of the group", options,
                           default=names.index(usual) + 1 if usual in names else None)
    chosen, plans = ask_instance_type(ask, ctx, zone)
    instance_type = str(chosen["instanceType"])
    body = {
        "name": group,
        "instanceType": instance_type,
        "count": ask_count(ask),
        "capacity": ask_capacity(ask, plans, zone, instance_type),
        "availabilityZone": zone,
    }
    flags = f"groups add {tag} --group {group_spec(body)} --zone {zone}"
    if not confirm_request(ask, ctx, f"POST /clusters/{tag}/instance-groups", body, flags,
                           "Add this group?"):
        ask.say("Nothing was added.")
        return None
    return body


# -- the questions both ask ---------------------------------------------------------------------


def available_zones(ctx: Context) -> list[dict[str, Any]]:
    """The Region's zones a group can use (GET /catalog/availability-zones)."""
    return [z for z in ctx.client.list_availability_zones()["availabilityZones"]
            if z.get("state", "available") == "available"]


def zone_options(
    zones: Sequence[dict[str, Any]], groups: dict[str, list[str]] | None = None
) -> list[tuple[str, str, str]]:
    """The zones as choices: ``us-west-2a (usw2-az2)``, with the groups already there."""
    options = []
    for zone in zones:
        here = (groups or {}).get(zone["name"])
        where = f": groups {', '.join(here)}" if here else ""
        options.append((zone["name"], zone["name"], f"{zone['name']} ({zone.get('zoneId')})"
                        f"{where}"))
    return options


def ask_instance_type(
    ask: Prompter, ctx: Context, zone: str
) -> tuple[InstanceType, list[dict[str, Any]]]:
    """The instance type, from the zone's (GET /catalog/instance-types?availabilityZone=),
    each shown with the training plans (GET /catalog/training-plans) that cover it there;
    and those plans, for the capacity question."""
    types = ctx.client.list_instance_types(zone)["instanceTypes"]
    if not types:
        raise UsageError(f"{zone} offers no HyperPod instance type")
    plans = ctx.client.list_training_plans()["trainingPlans"]
    chosen = ask.choose_instance_type(f"Instance type (offered in {zone})", types, zone, plans)
    return chosen, plans


def ask_count(ask: Prompter) -> int:
    def count(answer: str) -> int:
        if not answer.isdigit() or not 0 <= int(answer) <= MAX_COUNT:
            raise ValueError(f"a whole number from 0 to {MAX_COUNT}")
        return int(answer)

    return ask.ask("Number of instances", count, default="1")


def ask_capacity(
    ask: Prompter, plans: Sequence[dict[str, Any]], zone: str, instance_type: str
) -> dict[str, Any]:
    """On-demand (the default), spot, or a training plan covering the type in the zone (an
    expired or failed plan is not offered)."""
    options: list[tuple[str, dict[str, Any], str]] = [
        ("on-demand", {"type": "on-demand"}, "on-demand"),
        ("spot", {"type": "spot"}, "spot (cheaper; instances may be interrupted)"),
    ]
    options += [
        (p["name"], {"type": "training-plan", "trainingPlanArn": p["arn"]}, describe_plan(p))
        for p in covering_plans(plans, zone, instance_type)
    ]
    return ask.choose("Capacity", options, default=1)


def confirm_request(
    ask: Prompter, ctx: Context, request: str, body: dict[str, Any], flags: str, question: str
) -> bool:
    """Show the request and the same command with flags, and ask to send it."""
    ask.say()
    ask.say(request)
    ask.say(json.dumps(body, indent=2))
    ask.say(f"(the same without questions: {ctx.command_line(flags)})")
    return ask.confirm(question)


def group_name(instance_type: InstanceType) -> str:
    if instance_type.get("gpus"):
        return "gpu"
    if instance_type.get("neuronDevices"):
        return "neuron"
    return "cpu"


def group_spec(group: dict[str, Any]) -> str:
    """The ``--group`` value of a group the questions built."""
    capacity = group["capacity"]
    spec = (f"name={group['name']},type={group['instanceType']},count={group['count']},"
            f"capacity={capacity['type']}")
    if capacity.get("trainingPlanArn"):
        spec += f",training-plan={capacity['trainingPlanArn']}"
    return spec


def flags_of(body: dict[str, Any]) -> str:
    """The ``clusters create`` flags that send ``body`` (a body the questions built)."""
    words = ["clusters", "create", "--tag", body["tag"]]
    if body.get("availabilityZone"):
        words += ["--zone", body["availabilityZone"]]
    for group in body["instanceGroups"]:
        words += ["--group", group_spec(group)]
    storage = body["storage"]
    if storage.get("s3"):
        words += ["--s3-bucket", storage["s3"]["bucket"]]
    else:
        words += ["--fsx-capacity", str(storage["fsx"]["storageCapacityGiB"])]
    return " ".join(words)
