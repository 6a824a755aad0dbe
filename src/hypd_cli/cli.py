"""What every API command shares: the connection and output options, the command table
(command -> the one REST operation it runs), exit codes and error reporting.

Options go after the command, as with the AWS CLI and kubectl (``hypd clusters list --output
json --endpoint URL``); ``HYPD_ENDPOINT`` saves repeating the endpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from hypd_cli import config
from hypd_cli.api_client import (
    API_URL_OUTPUT,
    DEFAULT_STACK_NAME,
    ApiClient,
    ApiConfigError,
    ApiError,
    ApiUnreachable,
    endpoint_from_stack,
)

ENDPOINT_ENV = "HYPD_ENDPOINT"
STACK_ENV = "HYPD_STACK_NAME"

# Exit codes scripts can rely on (docs/cli.md).
EXIT_OK = 0
EXIT_FAILED = 1  # the API answered 4xx/5xx, or the operation ended FAILED/CANCELLED
EXIT_USAGE = 2  # bad arguments or configuration (argparse's own code)
EXIT_UNREACHABLE = 3  # no answer from the endpoint
EXIT_TIMEOUT = 4  # ops watch --timeout ran out while the operation was still running
EXIT_INTERRUPTED = 130  # Ctrl+C (128 + SIGINT)

# Every API command and the one REST operation (operationId in docs/openapi.json) it runs.
# `ops watch` repeats getOperation and `events tail --follow` listEvents; `--wait` (every
# command that starts an operation) follows the accepted operation with getOperation; the
# interactive create offers choices from the catalogue. Several commands may run one
# operation (`groups scale` and `groups update` both PATCH the group; `autoscaling enable` and
# `disable` both PUT the autoscaling).
COMMANDS: dict[str, str] = {
    "clusters list": "listClusters",
    "clusters get": "getCluster",
    "clusters create": "createCluster",
    "clusters discover": "discoverClusters",
    "clusters plan": "getTeardownPlan",
    "clusters delete": "deleteCluster",
    "clusters protect": "setProtection",
    "clusters upgrades": "getUpgrades",
    "clusters upgrade": "upgradeCluster",
    "groups list": "listInstanceGroups",
    "groups add": "addInstanceGroup",
    "groups scale": "updateInstanceGroup",
    "groups update": "updateInstanceGroup",
    "groups delete": "deleteInstanceGroup",
    "groups fields": "listInstanceGroupFields",
    "nodes list": "listNodes",
    "nodes reboot": "rebootNode",
    "nodes replace": "replaceNode",
    "nodes delete": "deleteNode",
    "autoscaling get": "getAutoscaling",
    "autoscaling enable": "setAutoscaling",
    "autoscaling disable": "setAutoscaling",
    "health get": "getClusterHealth",
    "health node": "getNodeHealth",
    "health policy": "getHealthPolicy",
    "health set-policy": "setHealthPolicy",
    "features get": "getFeatures",
    "features set": "setFeatures",
    "teams list": "listTeams",
    "teams get": "getTeam",
    "teams set": "setTeam",
    "teams delete": "deleteTeam",
    "jobs submit": "submitTrainingJob",
    "jobs list": "listTrainingJobs",
    "jobs get": "getTrainingJob",
    "jobs logs": "getTrainingJobLogs",
    "jobs delete": "deleteTrainingJob",
    "endpoints deploy": "deployInferenceEndpoint",
    "endpoints list": "listInferenceEndpoints",
    "endpoints get": "getInferenceEndpoint",
    "endpoints invoke": "invokeInferenceEndpoint",
    "endpoints delete": "deleteInferenceEndpoint",
    "ops list": "listOperations",
    "ops get": "getOperation",
    "ops watch": "getOperation",
    "ops retry": "retryOperation",
    "ops cancel": "cancelOperation",
    "events tail": "listEvents",
    "catalog zones": "listAvailabilityZones",
    "catalog instance-types": "listInstanceTypes",
    "catalog training-plans": "listTrainingPlans",
}


TABLES = ("table", "wide")
"""The outputs for people: ``wide`` is the table with the columns ``table`` leaves out for width."""
OUTPUTS = (*TABLES, "json", "yaml", "text")


class UsageError(Exception):
    """Bad arguments or answers: exit 2 with the message."""


def add_api_options(parser: argparse.ArgumentParser, *, output: bool = True) -> None:
    """The connection options (and ``--output``) of a command that calls the API."""
    group = parser.add_argument_group("connection and output options")
    if output:
        group.add_argument(
            "-o", "--output", choices=OUTPUTS, default=None,
            help="table (default; json with --query), wide (the table with more columns), "
            "json or yaml: exactly the API's response; text: its values, tab-separated, as "
            "the aws CLI prints them (for $(...) in scripts)",
        )
        group.add_argument(
            "--query", metavar="JMESPATH", default=None,
            help="a JMESPath expression applied to the response before it is printed, as "
            "with the aws CLI (json or yaml output)",
        )
    group.add_argument(
        "--endpoint", metavar="URL", default=None,
        help=f"the API's base URL: the stack's ApiUrl output, or http://127.0.0.1:PORT/v1 "
        f"for `hypd local up` (default: ${ENDPOINT_ENV})",
    )
    group.add_argument("--region", default=None,
                       help="AWS Region for signing (default: the endpoint's, else the profile's)")
    group.add_argument("--profile", default=None,
                       help="AWS profile whose credentials sign the requests (default: the "
                       "standard chain)")
    group.add_argument(
        "--no-sign-request", action="store_true",
        help="send unsigned requests (the default for a loopback endpoint: the local cloud)",
    )
    group.add_argument(
        "--context", metavar="NAME", default=None,
        help="the named connection to use (hypd config; default: $HYPD_CONTEXT, else the "
        "current one)",
    )
    group.add_argument(
        "--stack-name", default=None,
        help=f"without an endpoint: take the ApiUrl output of this deployed stack (default: "
        f"${STACK_ENV}, else {DEFAULT_STACK_NAME})",
    )


def client_from_args(args: argparse.Namespace) -> ApiClient:
    """The API client the options describe: each of them from its flag, else the environment
    (HYPD_ENDPOINT, HYPD_STACK_NAME), else the context (`hypd_cli.config`). Without an
    endpoint it is the deployed stack's ApiUrl output (`--stack-name`), and requests are
    signed."""
    try:
        context_name, context = config.active(getattr(args, "context", None))
    except config.ConfigError as exc:
        raise ApiConfigError(f"--context: {exc}") from None
    profile = getattr(args, "profile", None) or context.get("profile")
    region = getattr(args, "region", None) or context.get("region")
    given = getattr(args, "endpoint", None)
    from_env = os.environ.get(ENDPOINT_ENV)
    endpoint = given or from_env or context.get("endpoint")
    if endpoint:
        source = ("--endpoint" if given else ENDPOINT_ENV if from_env
                  else f"context {context_name}")
    else:
        stack_name = (getattr(args, "stack_name", None) or os.environ.get(STACK_ENV)
                      or context.get("stackName") or DEFAULT_STACK_NAME)
        endpoint = endpoint_from_stack(stack_name, profile=profile, region=region)
        source = f"stack {stack_name}'s {API_URL_OUTPUT} output"
    # Signed unless the endpoint is loopback (the local cloud) or --no-sign-request.
    unsigned = getattr(args, "no_sign_request", False) or context.get("noSignRequest")
    return ApiClient.connect(endpoint, region=region, profile=profile,
                             sign=False if unsigned else None, source=source)


@dataclass
class Context:
    """One command run: its arguments, streams and (lazily) its API client."""

    args: argparse.Namespace
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    _client: ApiClient | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    @property
    def output(self) -> str:
        """``table``, ``wide``, ``json``, ``yaml`` or ``text``: ``-o`` as given, else json with
        ``--query``, else table. Raises `UsageError` for a table with ``--query``."""
        given = getattr(self.args, "output", None)
        query = getattr(self.args, "query", None)
        if given in TABLES and query:
            raise UsageError("--query needs -o json, -o yaml or -o text (a table shows the "
                             "whole response)")
        return str(given or ("json" if query else "table"))

    @property
    def structured(self) -> bool:
        """The response as data (json, yaml or text), not a table for people."""
        return self.output not in TABLES

    @property
    def wide(self) -> bool:
        """Tables with their wide-only columns too (``-o wide``)."""
        return self.output == "wide"

    @property
    def client(self) -> ApiClient:
        if self._client is None:
            self._client = client_from_args(self.args)
        return self._client

    def say(self, *parts: object) -> None:
        """Human-readable text: stdout for tables, stderr when stdout carries JSON."""
        print(*parts, file=self.err if self.structured else self.out, flush=True)

    def command_line(self, command: str) -> str:
        """``hypd COMMAND`` with the connection flags this run was given, to copy and paste."""
        words = ["hypd", *command.split()]
        for flag in ("endpoint", "region", "profile"):
            value = getattr(self.args, flag, None)
            if value:
                words += [f"--{flag}", value]
        if getattr(self.args, "no_sign_request", False):
            words.append("--no-sign-request")
        return " ".join(shlex.quote(w) for w in words)


Command = Callable[[Context], int]


def flags_given(args: argparse.Namespace, flags: Sequence[str]) -> list[str]:
    """The ``--flag`` spellings of those of ``flags`` (argparse dests) the command was given."""
    return [f"--{flag.replace('_', '-')}" for flag in flags
            if getattr(args, flag) not in (None, False)]


def body_from_flags(
    ctx: Context, flags: Sequence[str], build: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """A request body: the JSON of ``--from-file`` (which gives the whole body, so no other of
    the request ``flags`` may come with it), else what ``build`` makes of the flags."""
    args = ctx.args
    if args.from_file is None:
        return build()
    others = flags_given(args, [flag for flag in flags if flag != "from_file"])
    if others:
        raise UsageError(f"--from-file gives the whole request; drop {', '.join(others)}")
    return read_json_body(args.from_file, ctx)


def read_json_body(source: str, ctx: Context) -> dict[str, Any]:
    """A JSON object from the file ``source`` (``-``: stdin)."""
    try:
        text = ctx.stdin.read() if source == "-" else Path(source).read_text()
    except OSError as exc:
        raise UsageError(f"--from-file: {exc}") from None
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--from-file: not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise UsageError("--from-file: the request must be a JSON object")
    return body


def api_command(parser: argparse.ArgumentParser, name: str, run: Command) -> None:
    """Make ``parser`` the command ``name`` (a key of `COMMANDS`) running ``run``."""
    add_api_options(parser)
    parser.set_defaults(handler=_handler(name, run), command_name=name,
                        operation_id=COMMANDS[name])


def _handler(name: str, run: Command) -> Callable[[argparse.Namespace], int]:
    def handle(args: argparse.Namespace) -> int:
        ctx = Context(args)
        return run_command(ctx, name, run)

    return handle


def run_command(ctx: Context, name: str, run: Command) -> int:
    """Run ``run``, turning every way it can fail into a message and an exit code."""
    try:
        return run(ctx)
    except UsageError as exc:
        _error(ctx, f"hypd {name}: error: {exc}")
        return EXIT_USAGE
    except ApiConfigError as exc:
        _error(ctx, f"hypd {name}: error: {exc}")
        return EXIT_USAGE
    except ApiUnreachable as exc:
        _error(ctx, f"hypd {name}: error: {exc}\n(is the endpoint right? For the local "
                    "cloud, start it with `hypd local up`.)")
        return EXIT_UNREACHABLE
    except ApiError as exc:
        _error(ctx, describe_api_error(exc))
        # A 409 naming an operation still going (one at a time per cluster): follow that one.
        running = exc.details.get("operationId") if exc.status == 409 else None
        if running and exc.details.get("status") in (None, "PENDING", "RUNNING"):
            _error(ctx, f"Follow it: {ctx.command_line(f'ops watch {running}')}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _error(ctx, "\nInterrupted.")
        return EXIT_INTERRUPTED


def describe_api_error(exc: ApiError) -> str:
    """The AWS CLI's wording: ``An error occurred (Code) when calling the op operation: ...``."""
    where = f" when calling the {exc.operation_id} operation" if exc.operation_id else ""
    return f"An error occurred ({exc.code}){where} (HTTP {exc.status}): {exc.message}"


def refused_with_hint(ctx: Context, exc: ApiError, hint: str) -> int:
    """An API error as `run_command` reports it, then what to do about it (exit 1)."""
    _error(ctx, describe_api_error(exc))
    _error(ctx, hint)
    return EXIT_FAILED


def feature_off(ctx: Context, exc: ApiError) -> int:
    """The API's 409 for a request that needs a managed feature which is off (details name
    the feature), with the command that turns it on; any other error goes to the usual
    reporting."""
    feature = exc.details.get("feature")
    if exc.status != 409 or not feature:
        raise exc
    command = ctx.command_line(f"features set {ctx.args.tag} --enable {feature} --wait")
    title = re.sub(r"(?<!^)([A-Z])", r" \1", str(feature)).lower()
    return refused_with_hint(ctx, exc, f"Turn {title} on first: {command}")


def _error(ctx: Context, message: str) -> None:
    print(message, file=ctx.err, flush=True)


def leaf_commands(parser: argparse.ArgumentParser) -> dict[str, dict[str, Any]]:
    """Every runnable command of ``parser`` ("clusters list" -> its defaults), aliases
    excluded: what the command-table test walks."""
    found: dict[str, dict[str, Any]] = {}

    def walk(node: argparse.ArgumentParser, words: list[str]) -> None:
        subactions = [a for a in node._actions if isinstance(a, argparse._SubParsersAction)]
        if not subactions:
            found[" ".join(words)] = {
                key: node.get_default(key) for key in ("command_name", "operation_id")
            }
            return
        for action in subactions:
            seen: set[int] = set()
            for word, child in action.choices.items():
                if id(child) in seen:
                    continue
                seen.add(id(child))
                walk(child, [*words, word])

    walk(parser, [])
    return found
