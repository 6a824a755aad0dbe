"""``hypd local ...``: run hypd on this machine, with no AWS account.

``hypd local up`` is defined here. Other ``hypd local`` subcommands live in their own modules,
listed in `LOCAL_COMMAND_MODULES`, each with an ``add_parser(local_subparsers)`` function that
sets ``func`` (or ``handler``), a function ``(argparse.Namespace) -> int``, as a default.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import logging
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from hypd_cli.api_client import ApiClient
from hypd_cli.console import DEFAULT_PORT as DEFAULT_CONSOLE_PORT
from hypd_cli.console import ConsoleServer
from hypd_cli.local_output import function_output, new_log_file, operation_lines

# Modules that add subcommands to "hypd local" (imported only when present).
LOCAL_COMMAND_MODULES: tuple[str, ...] = ("hypd_cli.demo", "hypd_cli.kubeconfig")

# What the local cloud (hypd_local) imports beyond hypd's own dependencies, by import name: the
# `local` extra of pyproject.toml installs them (tests/build/test_packaging.py keeps the two in
# step with what src/hypd_local imports).
LOCAL_EXTRA_MODULES: tuple[str, ...] = (
    "moto", "cfnlint", "cryptography", "jsonpath_ng", "kubernetes", "policy_sentry", "werkzeug",
    "urllib3",
)
LOCAL_EXTRA_HINT = "pip install 'hypd[local]'"


def missing_local_modules() -> list[str]:
    """The modules of `LOCAL_EXTRA_MODULES` this Python cannot import (none are imported)."""
    return [name for name in LOCAL_EXTRA_MODULES if importlib.util.find_spec(name) is None]


def local_extra_missing(command: str) -> bool:
    """True, after saying what to install, when the local cloud's modules are not all there:
    ``hypd local up|demo`` then exit 2 instead of failing in an import."""
    missing = missing_local_modules()
    if not missing:
        return False
    print(
        f"hypd {command}: the local cloud needs modules that are not installed here "
        f"({', '.join(missing)}): install hypd[local] ({LOCAL_EXTRA_HINT})",
        file=sys.stderr,
    )
    return True


def register(subparsers: Any) -> None:
    local = subparsers.add_parser(
        "local", help="run hypd locally (local cloud: moto, in-process Lambda, virtual clock)"
    )
    local_subparsers = local.add_subparsers(dest="local_command", metavar="COMMAND")
    _register_up(local_subparsers)
    for name in LOCAL_COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.add_parser(local_subparsers)


def _register_up(local_subparsers: Any) -> None:
    up = local_subparsers.add_parser(
        "up",
        help="start the local cloud and serve the REST API until Ctrl+C",
        description="Start the local cloud on template.yaml and serve the REST API on "
        "127.0.0.1 until SIGINT or SIGTERM.",
    )
    up.add_argument("--port", type=int, default=8080,
                    help="port of the REST API (default 8080; 0 picks a free port)")
    up.add_argument("--aws-port", type=int, default=0,
                    help="port of the AWS endpoint (moto; default: a free port)")
    up.add_argument("--region", default="us-west-2", help="AWS Region (default us-west-2)")
    up.add_argument("--template", type=Path, default=None,
                    help="SAM template (default: ./template.yaml, else the project's)")
    up.add_argument("--stack-name", default="hypd", help="stack name used in resource names")
    up.add_argument("--parameter", action="append", default=[], metavar="KEY=VALUE",
                    help="template parameter override (repeatable)")
    up.add_argument("--seed", action="append", default=[], metavar="NAME",
                    help="create an EKS cluster and a linked HyperPod cluster NAME (repeatable)")
    up.add_argument("--seed-default", action="store_true",
                    help="create the default clusters: two HyperPod clusters on EKS and one EKS "
                    "cluster alone")
    up.add_argument("--bucket", action="append", default=[], metavar="NAME", type=_bucket_name,
                    help="create this S3 bucket in the local account, for a create to mount "
                    "(repeatable)")
    up.add_argument("--console-port", type=int, default=DEFAULT_CONSOLE_PORT,
                    help=f"port of the web console on 127.0.0.1 (default {DEFAULT_CONSOLE_PORT}; "
                    "0 picks a free port)")
    up.add_argument("--no-console", action="store_true",
                    help="do not serve the web console")
    up.add_argument("--log-level", default="WARNING",
                    choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log level")
    up.add_argument("--verbose", action="store_true",
                    help="stream the functions' logs and the local cloud's to the terminal "
                    "(default: to the log file the banner names)")
    up.add_argument("--log-file", type=Path, default=None,
                    help="where the logs go without --verbose (default: a new "
                    "hypd-local-*.log in the temporary directory)")
    up.set_defaults(handler=run_up)


def default_template(cwd: Path | None = None) -> Path:
    """./template.yaml if there is one, else the project's own template."""
    from hypd_local.template import find_template

    return find_template(cwd)


def run_up(
    args: argparse.Namespace,
    *,
    stop: threading.Event | None = None,
    on_ready: Callable[[Any], None] | None = None,
    out: TextIO | None = None,
) -> int:
    """Run the local cloud until ``stop`` is set (SIGINT/SIGTERM set it from the main thread)."""
    if local_extra_missing("local up"):
        return 2
    from botocore.exceptions import ClientError

    from hypd_cli.demo import create_bucket
    from hypd_cli.helm import ensure_helm
    from hypd_local import LocalCloud, TemplateError
    from hypd_local.seed import seed_clusters

    out = out or sys.stdout
    log_path = None if args.verbose else (args.log_file or new_log_file("hypd-local-"))
    quiet_known_gaps()
    try:
        template = (args.template or default_template()).resolve()
    except TemplateError as exc:
        print(f"hypd local up: {exc}", file=sys.stderr)
        return 1
    no_helm = ensure_helm()
    if no_helm:  # the cloud serves; a create fails at its dependencies stage, saying so
        print(f"hypd local up: warning: {no_helm}", file=sys.stderr)
    try:
        parameters = {
            **local_parameters(template),
            **dict(_parameter(item) for item in args.parameter),
        }
    except ValueError as exc:
        print(f"hypd local up: {exc}", file=sys.stderr)
        return 2
    stop = stop or threading.Event()
    restore = _on_signals(stop)
    try:
        with function_output(log_path, args.log_level), LocalCloud(
                template, region=args.region, api_port=args.port, aws_port=args.aws_port,
                stack_name=args.stack_name, parameters=parameters) as cloud:
            seeded = []
            if args.seed_default:
                seeded.extend(seed_clusters(cloud))
            if args.seed:
                seeded.extend(seed_clusters(cloud, args.seed))
            buckets = list(dict.fromkeys(args.bucket))  # a name given twice is one bucket
            for bucket in buckets:
                create_bucket(cloud, bucket)
            with _console(cloud, args) as console, operation_lines(cloud, out):
                _print_banner(cloud, template, [s.name for s in seeded], out, console,
                              log_path, buckets)
                if on_ready is not None:
                    on_ready(cloud)
                stop.wait()
                print("\nStopping the local cloud...", file=out, flush=True)
    except (TemplateError, OSError) as exc:
        print(f"hypd local up: {exc}", file=sys.stderr)
        return 1
    except ClientError as exc:  # a --bucket S3 refuses despite the name check
        print(f"hypd local up: --bucket: {exc.response['Error'].get('Message', exc)}",
              file=sys.stderr)
        return 2
    finally:
        restore()
    print("Stopped.", file=out, flush=True)
    return 0


LOCAL_DEPENDENCY_CHART = "charts/hyperpod-dependencies"


@contextlib.contextmanager
def _console(cloud: Any, args: argparse.Namespace) -> Iterator[ConsoleServer | None]:
    """The web console on the cloud's API (plain requests: a loopback endpoint), unless
    --no-console."""
    if args.no_console:
        yield None
        return
    with ConsoleServer(ApiClient(cloud.api_url), args.console_port) as console:
        yield console


def quiet_known_gaps() -> None:
    """Silence moto's warning about the one network-stack resource it skips
    (AWS::EC2::SecurityGroupEgress, a documented gap of the local cloud: docs/network.md)."""
    warnings.filterwarnings(
        "ignore", message="Tried to parse AWS::EC2::SecurityGroupEgress", category=UserWarning
    )
    moto_logger = logging.getLogger("moto")
    if not any(isinstance(f, _SkippedEgressFilter) for f in moto_logger.filters):
        moto_logger.addFilter(_SkippedEgressFilter())


class _SkippedEgressFilter(logging.Filter):
    """Drops moto's "No Moto CloudFormation support for AWS::EC2::SecurityGroupEgress"."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "AWS::EC2::SecurityGroupEgress" not in record.getMessage()


def local_parameters(template: Path) -> dict[str, str]:
    """Template parameters for the local cloud: the dependency chart is the project's own chart
    (charts/hyperpod-dependencies, next to the template) instead of the pinned release that a
    deployment fetches from GitHub."""
    chart = template.resolve().parent / LOCAL_DEPENDENCY_CHART
    return {"DependencyChart": str(chart)} if chart.is_dir() else {}


def _bucket_name(text: str) -> str:
    """A `--bucket` name, checked by S3's rules before the cloud starts."""
    from hypd.clusters.create_request import check_bucket_name

    try:
        return check_bucket_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parameter(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise ValueError(f"--parameter expects KEY=VALUE, got {item!r}")
    return key, value


def _print_banner(cloud: Any, template: Path, seeds: list[str], out: TextIO,
                  console: ConsoleServer | None = None, log_path: Path | None = None,
                  buckets: Sequence[str] = ()) -> None:
    lines = [
        f"hypd local cloud is running ({template})",
        f"  REST API       {cloud.api_url}",
        f"  web console    {console.url if console else '- (--no-console)'}",
        f"  AWS endpoint   {cloud.aws_endpoint}",
        f"  virtual clock  {cloud.local_url}/_local/clock  "
        f"(POST /_local/clock/advance {{\"seconds\": N}})",
        f"  logs           {log_path if log_path else '- (--verbose: on this terminal)'}",
    ]
    if seeds:
        lines.append(f"  seeded         {', '.join(seeds)}")
    if buckets:
        lines.append(f"  S3 buckets     {', '.join(buckets)}")
    lines.append("")
    lines.append("Use it from another shell:")
    environment = cloud.environment()
    lines.extend(f"  export {key}={shlex.quote(value)}" for key, value in environment.items())
    lines.append("")
    lines.append("kubectl on a cluster's EKS cluster (its emulated Kubernetes API):")
    lines.append("  hypd local kubeconfig TAG --output kubeconfig   (a token valid 15 minutes)")
    lines.append("  export KUBECONFIG=kubeconfig")
    lines.append("The aws CLI's exec plugin (aws eks update-kubeconfig --name EKS_NAME, or "
                 "hypd local kubeconfig --exec)")
    lines.append("runs aws eks get-token, which needs the credentials and Region above and "
                 "the local STS:")
    lines.append(f"  export AWS_ENDPOINT_URL_STS={shlex.quote(cloud.aws_endpoint)}   "
                 "(AWS_ENDPOINT_URL above covers it too)")
    lines.append("")
    lines.append("A line per operation follows (virtual time, UTC). Press Ctrl+C to stop.")
    print("\n".join(lines), file=out, flush=True)


def _on_signals(stop: threading.Event) -> Callable[[], None]:
    """Let SIGINT/SIGTERM set ``stop`` (only possible from the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
