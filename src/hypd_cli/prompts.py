"""The interactive ``hypd clusters create``: only the decision-grade questions, with choices
from the catalogue (GET /catalog/availability-zones, /catalog/instance-types?availabilityZone=,
/catalog/training-plans), then the request to confirm.

Answers are read from stdin line by line (a terminal, or a pipe: ``printf 'demo\\n1\\n...' |
hypd clusters create``); questions go to stderr so stdout keeps only the result. A choice is
answered with its number or its value; an empty answer takes the default shown in brackets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TextIO, TypeVar

from hypd_cli.catalog import accelerators, gib
from hypd_cli.cli import Context, UsageError
from hypd_cli.output import short_time

T = TypeVar("T")

INACTIVE_PLAN_STATUSES = {"Expired", "Failed"}


class Prompter:
    """Questions on ``out``, answers from ``answers`` one line each."""

    def __init__(self, answers: TextIO, out: TextIO) -> None:
        self.answers = answers
        self.out = out

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def _line(self, question: str) -> str:
        self.out.write(question + " ")
        self.out.flush()
        line = self.answers.readline()
        if not line:
            self.say()
            raise UsageError(f"no answer to {question!r} (end of input); give the request as "
                             "flags instead (hypd clusters create --help)")
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

    def confirm(self, question: str) -> bool:
        def parse(answer: str) -> bool:
            if answer.lower() in ("y", "yes"):
                return True
            if answer.lower() in ("", "n", "no"):
                return False
            raise ValueError("answer y or n")

        return self.ask(f"{question} [y/N]", parse, default=None)


def ask_create_request(ctx: Context) -> dict[str, Any] | None:
    """Ask for the request; None when the person declines to send it."""
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

    zones = [z for z in ctx.client.list_availability_zones()["availabilityZones"]
             if z.get("state", "available") == "available"]
    zone: str = ask.choose("Availability Zone", [
        (z["name"], z["name"], f"{z['name']} ({z.get('zoneId')})") for z in zones
    ])

    types = ctx.client.list_instance_types(zone)["instanceTypes"]
    if not types:
        raise UsageError(f"{zone} offers no HyperPod instance type")
    chosen: dict[str, Any] = ask.choose(f"Instance type (offered in {zone})", [
        (t["instanceType"], t, describe_type(t)) for t in types
    ])
    instance_type = str(chosen["instanceType"])

    def count(answer: str) -> int:
        if not answer.isdigit() or not 0 <= int(answer) <= 6758:
            raise ValueError("a whole number from 0 to 6758")
        return int(answer)

    instance_count = ask.ask("Number of instances", count, default="1")

    plans = [
        p for p in ctx.client.list_training_plans()["trainingPlans"]
        if zone in (p.get("availabilityZones") or [])
        and instance_type in (p.get("instanceTypes") or [])
        and p.get("status") not in INACTIVE_PLAN_STATUSES
    ]
    capacity_options: list[tuple[str, dict[str, Any], str]] = [
        ("on-demand", {"type": "on-demand"}, "on-demand"),
        ("spot", {"type": "spot"}, "spot (cheaper; instances may be interrupted)"),
    ]
    capacity_options += [
        (p["name"], {"type": "training-plan", "trainingPlanArn": p["arn"]}, describe_plan(p))
        for p in plans
    ]
    capacity = ask.choose("Capacity", capacity_options, default=1)

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
    ask.say()
    ask.say("POST /clusters")
    ask.say(json.dumps(body, indent=2))
    ask.say(f"(the same without questions: {ctx.command_line(flags_of(body))})")
    if not ask.confirm("Create this cluster?"):
        ask.say("Nothing was created.")
        return None
    return body


def describe_type(instance_type: dict[str, Any]) -> str:
    facts = [f"{instance_type.get('vCpus') or '?'} vCPU", gib(instance_type.get("memoryMiB"))]
    accel = accelerators(instance_type)
    if accel != "-":
        facts.append(accel)
    if instance_type.get("efaSupported"):
        facts.append("EFA")
    return f"{instance_type['instanceType']:<22} {', '.join(facts)}"


def describe_plan(plan: dict[str, Any]) -> str:
    available = plan.get("availableInstanceCount")
    total = plan.get("totalInstanceCount")
    counts = f", {available}/{total} available" if total is not None else ""
    return (f"training plan {plan['name']} ({plan.get('status')}{counts}, "
            f"{short_time(plan.get('startTime'))} to {short_time(plan.get('endTime'))})")


def group_name(instance_type: dict[str, Any]) -> str:
    if instance_type.get("gpus"):
        return "gpu"
    if instance_type.get("neuronDevices"):
        return "neuron"
    return "cpu"


def flags_of(body: dict[str, Any]) -> str:
    """The ``clusters create`` flags that send ``body`` (a body the questions built)."""
    words = ["clusters", "create", "--tag", body["tag"]]
    if body.get("availabilityZone"):
        words += ["--zone", body["availabilityZone"]]
    for group in body["instanceGroups"]:
        capacity = group["capacity"]
        spec = (f"name={group['name']},type={group['instanceType']},count={group['count']},"
                f"capacity={capacity['type']}")
        if capacity.get("trainingPlanArn"):
            spec += f",training-plan={capacity['trainingPlanArn']}"
        words += ["--group", spec]
    storage = body["storage"]
    if storage.get("s3"):
        words += ["--s3-bucket", storage["s3"]["bucket"]]
    else:
        words += ["--fsx-capacity", str(storage["fsx"]["storageCapacityGiB"])]
    return " ".join(words)
