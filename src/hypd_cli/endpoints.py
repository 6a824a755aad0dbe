"""``hypd endpoints deploy|list|get|invoke|delete``: inference endpoints on a cluster.

``deploy`` is ``POST /clusters/{tag}/inference-endpoints``: a JumpStart model (``--jumpstart
MODEL_ID``) or a custom one (``--image`` with ``--s3`` or ``--fsx``). The API checks first (the
inference operator is on, the instance type is one of the cluster's groups and the replicas fit,
the name is free) and answers a 4xx naming the field, or starts a deploy-endpoint operation that
waits until the deployment is complete and, with ``--sagemaker-endpoint``, registered with
SageMaker (``--wait`` follows it). ``invoke`` sends a request to a registered endpoint.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypd_cli.api_client import ApiError
from hypd_cli.cli import (
    EXIT_OK,
    Context,
    UsageError,
    api_command,
    body_from_flags,
    feature_off,
)
from hypd_cli.jobs import key_value
from hypd_cli.operations import add_wait_flag, follow_accepted
from hypd_cli.output import (
    DASH,
    Column,
    cell_at,
    key_values,
    print_columns,
    print_json,
    time_at,
)

DEPLOY_FLAGS = ("instance_type", "replicas", "jumpstart", "model_version", "accept_eula",
                "image", "port", "s3", "fsx", "resource", "env", "invocation_path",
                "sagemaker_endpoint", "team", "from_file")
CUSTOM_FLAGS = ("image", "port", "s3", "fsx", "resource", "env", "invocation_path")


def register(subparsers: Any) -> None:
    endpoints = subparsers.add_parser(
        "endpoints", help="inference endpoints: deploy, list, get, invoke, delete",
        description="Inference endpoints (JumpStartModel, InferenceEndpointConfig) served on a "
        "cluster's nodes. The inference operator must be on (hypd features set TAG --enable "
        "inferenceOperator --wait).",
    )
    commands = endpoints.add_subparsers(dest="endpoints_command", metavar="COMMAND")

    deploy = commands.add_parser(
        "deploy", help="deploy a model (POST /clusters/{tag}/inference-endpoints)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Deploy a JumpStart model (--jumpstart) or a custom model (--image, --port and "
            "--s3 or --fsx) as an endpoint. With --sagemaker-endpoint the operator also "
            "registers it with SageMaker, so that hypd endpoints invoke can reach it."),
        epilog="examples:\n"
        "  hypd endpoints deploy demo llama-ep --instance-type ml.g5.8xlarge \\\n"
        "    --jumpstart meta-textgeneration-llama-3-1-8b --accept-eula "
        "--sagemaker-endpoint llama-ep --wait\n"
        "  hypd endpoints deploy demo my-model --instance-type ml.g5.8xlarge --replicas 2 \\\n"
        "    --image REPO/djl-inference:0.32.0 --port 8080 --s3 my-models/llama/ "
        "--resource nvidia.com/gpu=1",
    )
    deploy.add_argument("tag", metavar="TAG")
    deploy.add_argument("name", metavar="NAME", help="the endpoint's name (a DNS-1123 label)")
    deploy.add_argument("--instance-type", metavar="TYPE", help="one of the cluster's groups' "
                        "instance types")
    deploy.add_argument("--replicas", type=int, metavar="N", help="model servers (default 1)")
    deploy.add_argument("--jumpstart", metavar="MODEL_ID", help="a JumpStart model id")
    deploy.add_argument("--model-version", metavar="X.Y.Z", help="the JumpStart model's "
                        "version (default: the latest)")
    deploy.add_argument("--accept-eula", action="store_true",
                        help="accept the model's end-user license (gated models need it)")
    deploy.add_argument("--image", help="a custom model's server image")
    deploy.add_argument("--port", type=int, help="the port the custom model server listens on")
    deploy.add_argument("--s3", metavar="BUCKET[/PREFIX]", help="the custom model's weights "
                        "in S3")
    deploy.add_argument("--fsx", metavar="FS_ID[:PATH]", help="the custom model's weights on "
                        "an FSx for Lustre file system")
    deploy.add_argument("--resource", action="append", type=key_value, metavar="NAME=QUANTITY",
                        help="a resource each model server requests and is limited to, e.g. "
                        "nvidia.com/gpu=1 (repeatable)")
    deploy.add_argument("--env", action="append", type=key_value, metavar="NAME=VALUE",
                        help="an environment variable of the model server (repeatable)")
    deploy.add_argument("--invocation-path", metavar="PATH",
                        help="the model server's invocation path (default invocations)")
    deploy.add_argument("--sagemaker-endpoint", metavar="NAME",
                        help="register the endpoint with SageMaker under this name")
    deploy.add_argument("--team", help="task governance's team (its namespace)")
    deploy.add_argument("--from-file", metavar="FILE",
                        help="the whole POST body as JSON ('-': stdin); NAME is ignored, no "
                        "other deploy flag with it")
    add_wait_flag(deploy)
    api_command(deploy, "endpoints deploy", deploy_endpoint)

    listing = commands.add_parser("list", help="the cluster's endpoints "
                                  "(GET /clusters/{tag}/inference-endpoints)")
    listing.add_argument("tag", metavar="TAG")
    api_command(listing, "endpoints list", list_endpoints)

    get = commands.add_parser("get", help="an endpoint's state, replicas and SageMaker "
                              "endpoint (GET /clusters/{tag}/inference-endpoints/{name})")
    _target_arguments(get)
    api_command(get, "endpoints get", get_endpoint)

    invoke = commands.add_parser(
        "invoke", help="send a request to an endpoint registered with SageMaker "
        "(POST /clusters/{tag}/inference-endpoints/{name}/invoke)")
    _target_arguments(invoke)
    invoke.add_argument("--body", required=True, metavar="JSON|TEXT|@FILE",
                        help="the request: JSON is sent as JSON, anything else as text; "
                        "@FILE reads it from a file ('@-': stdin)")
    invoke.add_argument("--content-type", default="application/json",
                        help="the request's content type (default application/json)")
    invoke.add_argument("--accept", help="the answer's content type to ask for")
    api_command(invoke, "endpoints invoke", invoke_endpoint)

    delete = commands.add_parser("delete", help="delete an endpoint "
                                 "(DELETE /clusters/{tag}/inference-endpoints/{name})")
    _target_arguments(delete)
    add_wait_flag(delete)
    api_command(delete, "endpoints delete", delete_endpoint)


def _target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tag", metavar="TAG")
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--namespace", "-n", help="the endpoint's namespace (default: any)")


def _source(args: argparse.Namespace) -> dict[str, Any]:
    if args.s3 and args.fsx:
        raise UsageError("give one of --s3 and --fsx")
    if args.s3:
        bucket, _, prefix = args.s3.removeprefix("s3://").partition("/")
        return {"s3": {"bucket": bucket, **({"prefix": prefix} if prefix else {})}}
    if args.fsx:
        system, _, path = args.fsx.partition(":")
        return {"fsx": {"fileSystemId": system, **({"path": path} if path else {})}}
    raise UsageError("a custom model needs its weights: --s3 BUCKET[/PREFIX] or --fsx FS_ID")


def endpoint_body(args: argparse.Namespace) -> dict[str, Any]:
    """The POST body from the flags (the API checks it and defaults the rest)."""
    body: dict[str, Any] = {"name": args.name}
    for flag, field in (("instance_type", "instanceType"), ("replicas", "replicas"),
                        ("sagemaker_endpoint", "sageMakerEndpointName"), ("team", "team")):
        value = getattr(args, flag)
        if value is not None:
            body[field] = value
    custom = [f"--{f.replace('_', '-')}" for f in CUSTOM_FLAGS if getattr(args, f)]
    if args.jumpstart:
        if custom:
            raise UsageError(f"--jumpstart deploys a JumpStart model: drop {', '.join(custom)}")
        body["jumpStart"] = {"modelId": args.jumpstart, "acceptEula": args.accept_eula,
                             **({"modelVersion": args.model_version}
                                if args.model_version else {})}
        return body
    if not custom:
        raise UsageError("give --jumpstart MODEL_ID, or a custom model (--image, --port and "
                         "--s3 or --fsx)")
    if args.model_version or args.accept_eula:
        raise UsageError("--model-version and --accept-eula are for --jumpstart models")
    model: dict[str, Any] = {"source": _source(args)}
    if args.image is not None:
        model["image"] = args.image
    if args.port is not None:
        model["port"] = args.port
    if args.resource:
        amounts = dict(args.resource)
        model["resources"] = {"requests": amounts, "limits": dict(amounts)}
    if args.env:
        model["env"] = dict(args.env)
    if args.invocation_path:
        model["invocationPath"] = args.invocation_path
    body["model"] = model
    return body


def deploy_endpoint(ctx: Context) -> int:
    tag = ctx.args.tag
    body = body_from_flags(ctx, DEPLOY_FLAGS, lambda: endpoint_body(ctx.args))
    name = body.get("name") or ctx.args.name
    try:
        accepted = ctx.client.deploy_inference_endpoint(tag, body)
    except ApiError as exc:
        return feature_off(ctx, exc)
    return follow_accepted(ctx, accepted, f"Deploying endpoint {name} on cluster {tag}")


def list_endpoints(ctx: Context) -> int:
    response = ctx.client.list_inference_endpoints(ctx.args.tag)
    if ctx.structured:
        print_json(ctx, response)
        return EXIT_OK
    print_columns(ctx, ENDPOINT_COLUMNS, response.get("endpoints") or [], empty=(
        f"Cluster {response.get('tag') or ctx.args.tag} has no inference endpoint."))
    return EXIT_OK


def _sagemaker_text(endpoint: Mapping[str, Any]) -> str:
    sagemaker = endpoint.get("sageMaker") or {}
    if not sagemaker:
        return DASH
    return f"{sagemaker.get('endpointName')} ({sagemaker.get('state') or 'not created'})"


def model_text(endpoint: Mapping[str, Any]) -> str:
    """What the endpoint serves: the JumpStart model's id, or the custom model's image."""
    model = endpoint.get("jumpStart") or endpoint.get("model") or {}
    return str(model.get("modelId") or model.get("image") or DASH)


ENDPOINT_COLUMNS = (
    Column("NAME", cell_at("name")),
    Column("NAMESPACE", cell_at("namespace")),
    Column("TYPE", cell_at("type")),
    Column("STATE", cell_at("state")),
    Column("READY", lambda e: f"{e.get('readyReplicas', 0)}/{e.get('replicas', 0)}"),
    Column("INSTANCE TYPE", cell_at("instanceType")),
    Column("SAGEMAKER ENDPOINT", _sagemaker_text),
    Column("CREATED", time_at("createdAt")),
    Column("AVAILABLE", lambda e: e.get("availableReplicas", 0), wide=True),
    Column("MODEL", model_text, wide=True),
    Column("BY HYPD", cell_at("managedByHypd"), wide=True),
    Column("MESSAGE", cell_at("message"), wide=True),
)


def get_endpoint(ctx: Context) -> int:
    endpoint = ctx.client.get_inference_endpoint(ctx.args.tag, ctx.args.name,
                                                 ctx.args.namespace)
    if ctx.structured:
        print_json(ctx, endpoint)
        return EXIT_OK
    ctx.say(describe_endpoint(ctx, endpoint))
    return EXIT_OK


def describe_endpoint(ctx: Context, endpoint: Mapping[str, Any]) -> str:
    rows: list[tuple[str, object]] = [
        ("Endpoint", f"{endpoint.get('namespace')}/{endpoint.get('name')}"),
        ("Type", endpoint.get("type")),
        ("Model", model_text(endpoint)),
        ("State", endpoint.get("state")),
        ("Ready", "yes" if endpoint.get("ready") else "no"),
        ("Replicas", f"{endpoint.get('readyReplicas', 0)} ready of "
                     f"{endpoint.get('replicas', 0)}"),
        ("Instance type", endpoint.get("instanceType")),
        ("SageMaker endpoint", _sagemaker_text(endpoint)),
        ("Created", endpoint.get("createdAt")),
    ]
    if endpoint.get("message"):
        rows.append(("Message", endpoint["message"]))
    text = key_values(rows)
    if endpoint.get("invoke"):
        command = ctx.command_line(f"endpoints invoke {ctx.args.tag} {endpoint.get('name')}")
        text += f"\n\nInvoke it: {command} --body '{{\"inputs\": \"...\"}}'"
    return text


def invoke_body(ctx: Context) -> dict[str, Any]:
    args = ctx.args
    raw: str = args.body
    if raw.startswith("@"):
        source = raw[1:]
        try:
            raw = ctx.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--body: {exc}") from None
    content: Any = raw
    if args.content_type.startswith("application/json"):
        try:
            content = json.loads(raw)
        except ValueError:
            raise UsageError("--body: the content type is application/json but the body is "
                             "not JSON (give --content-type text/plain to send text)") from None
    body: dict[str, Any] = {"body": content, "contentType": args.content_type}
    if args.accept:
        body["accept"] = args.accept
    return body


def invoke_endpoint(ctx: Context) -> int:
    args = ctx.args
    answer = ctx.client.invoke_inference_endpoint(args.tag, args.name, invoke_body(ctx),
                                                  args.namespace)
    if ctx.structured:
        print_json(ctx, answer)
        return EXIT_OK
    body = answer.get("body")
    ctx.out.write((body if isinstance(body, str) else json.dumps(body, indent=2)) + "\n")
    ctx.out.flush()
    return EXIT_OK


def delete_endpoint(ctx: Context) -> int:
    args = ctx.args
    accepted = ctx.client.delete_inference_endpoint(args.tag, args.name, args.namespace)
    return follow_accepted(ctx, accepted, f"Deleting endpoint {args.name} of cluster "
                           f"{args.tag}")
