"""``hypd jobs submit|list|get|logs|delete``: training jobs (HyperPodPyTorchJob) on a cluster.

``submit`` is ``POST /clusters/{tag}/training-jobs``: the API checks everything first (the
training operator is on, the instance type is one of the cluster's groups and the node count
fits, the claims exist, the name is free, the team and priority exist) and answers a 4xx naming
the field, or starts a submit-training-job operation (``--wait`` follows it). ``get`` shows the
job's phase, restarts, pods and the nodes it ran on with the faults recorded on them while it
ran. ``logs`` reads one pod's logs (rank 0 by default).
"""

from __future__ import annotations

import argparse
import shlex
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from hypd_cli.api_client import ApiError
from hypd_cli.cli import EXIT_OK, Context, api_command, body_from_flags, feature_off
from hypd_cli.durations import EXAMPLES, since_seconds
from hypd_cli.operations import add_wait_flag, follow_accepted
from hypd_cli.output import (
    DASH,
    Column,
    cell_at,
    key_values,
    print_columns,
    print_json,
    short_time,
    time_at,
)
from hypd_cli.tables import render_table

SUBMIT_FLAGS = ("image", "instance_type", "nodes", "command", "arg", "env", "volume",
                "processes_per_node", "max_retries", "team", "priority", "from_file")
LOG_TAIL_DEFAULT = 200


def register(subparsers: Any) -> None:
    jobs = subparsers.add_parser(
        "jobs", help="training jobs: submit, list, get, logs, delete",
        description="Training jobs (HyperPodPyTorchJob) on a cluster's nodes. The training "
        "operator must be on (hypd features set TAG --enable trainingOperator).",
    )
    commands = jobs.add_subparsers(dest="jobs_command", metavar="COMMAND")

    submit = commands.add_parser(
        "submit", help="submit a training job (POST /clusters/{tag}/training-jobs)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Submit a HyperPodPyTorchJob: one pod per node of the instance type. Checked "
            "before anything is submitted: the training operator is on, the type is one of "
            "the cluster's groups and --nodes fits them (or autoscaling is on), each "
            "--volume claim exists, the name is free, --team and --priority exist."),
        epilog="example:\n  hypd jobs submit demo llama-fsdp --image REPO/fsdp:latest \\\n"
        "    --instance-type ml.g5.8xlarge --nodes 2 --command 'hyperpodrun train.py' \\\n"
        "    --volume hypd-shared:/shared --max-retries 3 --wait",
    )
    submit.add_argument("tag", metavar="TAG")
    submit.add_argument("name", metavar="NAME", help="the job's name (a DNS-1123 label, at "
                        "most 50 characters)")
    submit.add_argument("--image", help="the container image")
    submit.add_argument("--instance-type", metavar="TYPE", help="one of the cluster's groups' "
                        "instance types")
    submit.add_argument("--nodes", type=int, metavar="N", help="nodes (one pod each; "
                        "default 1)")
    submit.add_argument("--command", metavar="COMMAND", help="the container's command, split "
                        "as a shell would ('hyperpodrun --nnodes=2 train.py')")
    submit.add_argument("--arg", action="append", metavar="ARG", help="an argument after the "
                        "command (repeatable)")
    submit.add_argument("--env", action="append", type=key_value, metavar="NAME=VALUE",
                        help="an environment variable (repeatable)")
    submit.add_argument("--volume", action="append", type=volume, metavar="CLAIM:PATH[:ro]",
                        help="mount a PersistentVolumeClaim of the job's namespace, e.g. "
                        "hypd-shared:/shared (repeatable)")
    submit.add_argument("--processes-per-node", metavar="N|auto|gpu|cpu",
                        help="processes per node (the operator's nprocPerNode; default auto)")
    submit.add_argument("--max-retries", type=int, metavar="N", help="restarts of the whole "
                        "job before it fails")
    submit.add_argument("--team", help="task governance's team (the job is queued in its "
                        "namespace)")
    submit.add_argument("--priority", help="a priority class of task governance (needs "
                        "--team)")
    submit.add_argument("--from-file", metavar="FILE",
                        help="the whole POST body as JSON ('-': stdin); NAME is ignored, no "
                        "other job flag with it")
    add_wait_flag(submit)
    api_command(submit, "jobs submit", submit_job)

    listing = commands.add_parser("list", help="the cluster's training jobs "
                                  "(GET /clusters/{tag}/training-jobs)")
    listing.add_argument("tag", metavar="TAG")
    api_command(listing, "jobs list", list_jobs)

    get = commands.add_parser("get", help="a job's phase, restarts, pods, nodes and their "
                              "faults (GET /clusters/{tag}/training-jobs/{name})")
    _target_arguments(get)
    api_command(get, "jobs get", get_job)

    logs = commands.add_parser("logs", help="a job pod's logs "
                               "(GET /clusters/{tag}/training-jobs/{name}/logs)")
    _target_arguments(logs)
    logs.add_argument("--pod", help="one of the job's pods (default: the first, rank 0)")
    logs.add_argument("--container", help="the pod's container (default: its only one)")
    logs.add_argument("--tail", type=int, default=LOG_TAIL_DEFAULT, metavar="LINES",
                      help=f"the last lines (default {LOG_TAIL_DEFAULT}, at most 10000)")
    logs.add_argument("--since", type=since_seconds, metavar="TIME",
                      help=f"only lines this recent: a duration ({EXAMPLES}) or since an ISO "
                      "time")
    api_command(logs, "jobs logs", job_logs)

    delete = commands.add_parser("delete", help="delete a job and its pods "
                                 "(DELETE /clusters/{tag}/training-jobs/{name})")
    _target_arguments(delete)
    add_wait_flag(delete)
    api_command(delete, "jobs delete", delete_job)


def _target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tag", metavar="TAG")
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--namespace", "-n", help="the job's namespace (default: any)")


def key_value(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=VALUE")
    return name, value


def volume(text: str) -> dict[str, Any]:
    """``claim:/path[:ro]`` -> ``{"claim", "mountPath", "readOnly"?}``."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not parts[1] or (
            len(parts) == 3 and parts[2] not in ("ro", "rw")):
        raise argparse.ArgumentTypeError(f"{text!r}: expected CLAIM:PATH or CLAIM:PATH:ro")
    mount: dict[str, Any] = {"claim": parts[0], "mountPath": parts[1]}
    if len(parts) == 3 and parts[2] == "ro":
        mount["readOnly"] = True
    return mount


def job_body(args: argparse.Namespace) -> dict[str, Any]:
    """The POST body from the flags: what was given (the API checks it and defaults the rest).
    A missing --image or --instance-type is the API's 400 naming the field."""
    body: dict[str, Any] = {"name": args.name}
    for flag, field in (("image", "image"), ("instance_type", "instanceType"),
                        ("nodes", "nodeCount"), ("max_retries", "maxRetries"),
                        ("team", "team"), ("priority", "priority")):
        value = getattr(args, flag)
        if value is not None:
            body[field] = value
    if args.command:
        body["command"] = shlex.split(args.command)
    if args.arg:
        body["args"] = list(args.arg)
    if args.env:
        body["env"] = dict(args.env)
    if args.volume:
        body["volumes"] = list(args.volume)
    if args.processes_per_node is not None:
        text = args.processes_per_node
        body["processesPerNode"] = int(text) if text.isdigit() else text
    return body


def submit_job(ctx: Context) -> int:
    tag = ctx.args.tag
    body = body_from_flags(ctx, SUBMIT_FLAGS, lambda: job_body(ctx.args))
    name = body.get("name") or ctx.args.name
    try:
        accepted = ctx.client.submit_training_job(tag, body)
    except ApiError as exc:
        return feature_off(ctx, exc)
    return follow_accepted(ctx, accepted, f"Submitting training job {name} to cluster {tag}")


JOB_COLUMNS = (
    Column("NAME", cell_at("name")),
    Column("NAMESPACE", cell_at("namespace")),
    Column("PHASE", cell_at("phase")),
    Column("TYPE", cell_at("instanceType")),
    Column("NODES", cell_at("nodeCount")),
    Column("RESTARTS", lambda job: job.get("restarts", 0)),
    Column("QUEUE", cell_at("queue")),
    Column("CREATED", time_at("createdAt")),
    Column("PRIORITY", cell_at("priority"), wide=True),
    Column("MAX RETRIES", cell_at("maxRetries"), wide=True),
    Column("STARTED", time_at("startTime"), wide=True),
    Column("COMPLETED", time_at("completionTime"), wide=True),
    Column("BY HYPD", cell_at("managedByHypd"), wide=True),
    Column("IMAGE", cell_at("image"), wide=True),
)


def list_jobs(ctx: Context) -> int:
    response = ctx.client.list_training_jobs(ctx.args.tag)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    print_columns(ctx, JOB_COLUMNS, response.get("jobs") or [],
                  empty=f"Cluster {response.get('tag') or ctx.args.tag} has no training job.")
    return EXIT_OK


def get_job(ctx: Context) -> int:
    job = ctx.client.get_training_job(ctx.args.tag, ctx.args.name, ctx.args.namespace)
    if ctx.structured:
        print_json(ctx, job)
        return EXIT_OK
    ctx.say(describe_job(job))
    return EXIT_OK


def describe_job(job: Mapping[str, Any]) -> str:
    retries = job.get("maxRetries")
    rows: list[tuple[str, object]] = [
        ("Job", f"{job.get('namespace')}/{job.get('name')}"),
        ("Phase", job.get("phase")),
        ("Restarts", f"{job.get('restarts', 0)}"
         + (f" (at most {retries})" if retries is not None else "")),
        ("Instance type", job.get("instanceType")),
        ("Nodes", job.get("nodeCount")),
        ("Image", job.get("image")),
        ("Queue", job.get("queue")),
        ("Priority", job.get("priority")),
        ("Created", job.get("createdAt")),
        ("Started", job.get("startTime")),
        ("Completed", job.get("completionTime")),
    ]
    parts = [key_values(rows)]
    pods = job.get("pods") or []
    if pods:
        parts.append("Pods:\n" + _indent(render_table(
            ("POD", "PHASE", "READY", "RESTARTS", "NODE"),
            [(p.get("name"), p.get("phase"), "yes" if p.get("ready") else "no",
              p.get("restarts", 0), p.get("node") or p.get("message") or DASH) for p in pods])))
    nodes = job.get("nodes") or []
    if nodes:
        parts.append("Nodes it ran on:\n" + _indent("\n".join(_node_lines(nodes))))
    events = job.get("events") or []
    if events:
        parts.append("Events:\n" + _indent("\n".join(
            f"{short_time(e.get('time'))}  {e.get('type') or ''} {e.get('reason')}: "
            f"{e.get('message') or ''}".rstrip() for e in events[-15:])))
    return "\n\n".join(parts)


def _node_lines(nodes: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = []
    for node in nodes:
        health = (node.get("health") or {}).get("status") or "no health record"
        where = "now" if node.get("current") else "earlier"
        group = f", group {node['instanceGroup']}" if node.get("instanceGroup") else ""
        lines.append(f"{node.get('node')} ({where}{group}): {health}")
        for fault in node.get("faults") or []:
            taken = fault.get("taken") or {}
            action = fault.get("repairAction") or taken.get("action")
            lines.append(f"  fault {short_time(fault.get('time'))}: {fault.get('status')}"
                         + (f" ({fault['reason']})" if fault.get("reason") else "")
                         + (f", repair {action}" if action else ""))
    return lines


def _indent(text: str) -> str:
    return textwrap.indent(text, "  ")


def job_logs(ctx: Context) -> int:
    args = ctx.args
    response = ctx.client.get_training_job_logs(
        args.tag, args.name, namespace=args.namespace, pod=args.pod, container=args.container,
        tail=args.tail, since_seconds=args.since)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    text = str(response.get("logs") or "")
    ctx.out.write(text if text.endswith("\n") or not text else text + "\n")
    ctx.out.flush()
    return EXIT_OK


def delete_job(ctx: Context) -> int:
    args = ctx.args
    accepted = ctx.client.delete_training_job(args.tag, args.name, args.namespace)
    return follow_accepted(ctx, accepted, f"Deleting training job {args.name} of cluster "
                           f"{args.tag}")
