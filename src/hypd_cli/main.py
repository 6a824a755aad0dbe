"""Entry point of the ``hypd`` console script.

Each command group lives in its own module with a ``register(subparsers)`` function that adds
its parsers and sets ``handler`` (or ``func``), a function ``(argparse.Namespace) -> int``, as a
default. To add a group, write the module and list it in `COMMAND_MODULES`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMAND_MODULES: tuple[str, ...] = ("hypd_cli.local",)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hypd",
        description="hypd: a serverless control plane for SageMaker HyperPod on EKS.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None) or getattr(args, "func", None)
    if handler is None:
        # A group given without its subcommand (e.g. "hypd local").
        parser.parse_args([*(argv if argv is not None else sys.argv[1:]), "--help"])
        return 2
    result: int = handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
