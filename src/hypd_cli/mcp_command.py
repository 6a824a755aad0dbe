"""``hypd mcp serve``: the hypd MCP server for AI agents, over stdio.

An MCP client (an agent's host) starts it as a subprocess and talks JSON-RPC over its stdin and
stdout; nothing else is written to stdout. Every tool calls one operation of the REST API at
``--endpoint`` through the CLI's API client, with the CLI's connection options: requests are
SigV4-signed (``--region``, ``--profile``, the standard credential chain) unless the endpoint
is loopback (the local cloud) or ``--no-sign-request`` is given. It serves only the tools that
read unless started with ``--allow-write``. See `hypd_cli.mcp_server` and the README's section
on registering the server with an MCP client.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any


def register(subparsers: Any) -> None:
    from hypd_cli.cli import add_api_options

    mcp = subparsers.add_parser(
        "mcp", help="the MCP server for AI agents (one tool per REST operation)"
    )
    mcp_subparsers = mcp.add_subparsers(dest="mcp_command", metavar="COMMAND")
    serve = mcp_subparsers.add_parser(
        "serve",
        help="serve the hypd tools to an MCP client over stdio",
        description="Serve the hypd MCP tools over stdio (an MCP client starts this). Each "
        "tool calls one operation of the hypd REST API at --endpoint. Only the tools that read "
        "are served unless --allow-write is given.",
    )
    add_api_options(serve, output=False)
    serve.add_argument(
        "--allow-write",
        action="store_true",
        help="serve the tools that create, change and delete too (default: only the tools "
        "that read); the destructive ones still need a confirm naming their target",
    )
    serve.add_argument(
        "--poll-seconds",
        type=float,
        default=None,
        help="how often operation_get_status reads an operation it waits on (default 2)",
    )
    serve.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="level of the server's log, written to stderr",
    )
    serve.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from hypd_cli.api_client import ApiConfigError
    from hypd_cli.cli import EXIT_USAGE, client_from_args

    # stdout carries the protocol: logs go to stderr.
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.poll_seconds is not None and args.poll_seconds <= 0:
        print("hypd mcp serve: error: --poll-seconds must be positive", file=sys.stderr)
        return EXIT_USAGE
    try:
        client = client_from_args(args)
    except ApiConfigError as exc:
        print(f"hypd mcp serve: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    from hypd_cli.mcp_server import POLL_SECONDS, serve

    serve(client, allow_write=args.allow_write, poll_seconds=args.poll_seconds or POLL_SECONDS)
    return 0
