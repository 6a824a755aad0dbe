"""Entry point of the ``hypd`` console script.

Each command group lives in its own module with a ``register(subparsers)`` function that adds
its parsers and sets ``handler`` (or ``func``), a function ``(argparse.Namespace) -> int``, as a
default. To add a group, write the module and list it in `COMMAND_MODULES`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Sequence

COMMAND_MODULES: tuple[str, ...] = (
    "hypd_cli.local",
    "hypd_cli.clusters",
    "hypd_cli.groups",
    "hypd_cli.nodes",
    "hypd_cli.autoscaling",
    "hypd_cli.health",
    "hypd_cli.features",
    "hypd_cli.teams",
    "hypd_cli.jobs",
    "hypd_cli.endpoints",
    "hypd_cli.operations",
    "hypd_cli.events",
    "hypd_cli.catalog",
    "hypd_cli.mcp_command",
    "hypd_cli.console",
    "hypd_cli.config_command",
    "hypd_cli.completion",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hypd",
        description="hypd: a serverless control plane for SageMaker HyperPod on EKS.",
        epilog=(
            "The connection and output options (--endpoint, --region, --profile, "
            "--no-sign-request, -o/--output) go before or after the command."
        ),
    )
    parser.add_argument("--version", action="version", version=version_line(),
                        help="print hypd's version (and Python's, botocore's) and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    _conventions(parser)
    return parser


def _conventions(parser: argparse.ArgumentParser) -> None:
    """What every command gets, wherever it is defined: its choices in any case (``-o JSON``,
    ``--status failed``), and its own usage on a flag it does not know (each parser records
    itself as the one to report with, the innermost last)."""
    parser.set_defaults(_usage_parser=parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                _conventions(sub)
        elif action.choices is not None and action.type is None and all(
                isinstance(c, str) for c in action.choices):
            action.type = _any_case(tuple(action.choices))


def _any_case(choices: tuple[str, ...]) -> Callable[[str], str]:
    """A value's canonical spelling among `choices`, matched without regard to case (argparse
    then checks it is one of them, and names them when it is not)."""
    canonical = {c.lower(): c for c in choices}

    def convert(value: str) -> str:
        return canonical.get(value.lower(), value)

    return convert


def version_line() -> str:
    """``hypd 0.1.0 (Python 3.11.2, botocore 1.44.0)``: the installed distribution's version,
    as the aws CLI names itself and what it runs on."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    def of(distribution: str) -> str:
        try:
            return version(distribution)
        except PackageNotFoundError:
            return "not installed"

    return (f"hypd {of('hypd')} (Python {platform.python_version()}, "
            f"botocore {of('botocore')})")


GLOBAL_VALUE_OPTIONS = ("--endpoint", "--region", "--profile", "--stack-name", "--context", "-o",
                        "--output", "--query")
GLOBAL_FLAGS = ("--no-sign-request",)


def hoist_global_options(argv: Sequence[str]) -> list[str]:
    """`hypd --endpoint URL clusters list` -> `hypd clusters list --endpoint URL`.

    The connection and output options belong to each command (as in the AWS CLI they may also
    come first): options before the command are moved after it, where the command parses them.
    """
    leading: list[str] = []
    rest = list(argv)
    while rest and rest[0].startswith("-") and rest[0] not in ("-h", "--help"):
        option = rest.pop(0)
        name = option.split("=", 1)[0]
        if name in GLOBAL_VALUE_OPTIONS and "=" not in option and rest:
            leading += [option, rest.pop(0)]
        elif name in GLOBAL_VALUE_OPTIONS or name in GLOBAL_FLAGS:
            leading.append(option)
        else:
            return list(argv)  # not ours: let argparse report it
    return rest + leading


def parse_command(argv: Sequence[str],
                  parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """The command line as `hypd` reads it, without running it: a usage error exits 2 with
    the usage of the command it was given to (the executed-docs test checks the docs'
    commands with this)."""
    parser = parser or build_parser()
    args, unknown = parser.parse_known_args(hoist_global_options(argv))
    if unknown:  # the usage of the command that was given them, not hypd's
        getattr(args, "_usage_parser", parser).error(
            f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = hoist_global_options(sys.argv[1:] if argv is None else argv)
    args = parse_command(argv, parser)
    handler = getattr(args, "handler", None) or getattr(args, "func", None)
    if handler is None:
        # A group given without its subcommand (e.g. "hypd nodes"): its help, and a usage
        # error's exit, as argparse exits (--help alone would exit 0).
        with contextlib.suppress(SystemExit):
            parser.parse_args([*argv, "--help"])
        raise SystemExit(2)
    result: int = handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
