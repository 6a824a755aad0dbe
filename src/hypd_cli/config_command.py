"""``hypd config set-context|use-context|get-contexts|current-context|delete-context``: the
named connections of `hypd_cli.config`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hypd_cli import config
from hypd_cli.api_client import ApiConfigError, check_endpoint
from hypd_cli.tables import render_table


def register(subparsers: Any) -> None:
    group = subparsers.add_parser(
        "config", help="named connections (contexts): endpoint, profile, Region, stack",
        description=f"Keep connections under names, one of them current, as kubectl does "
        f"(the file: ${config.CONFIG_ENV}, else ~/.config/hypd/config.json). A command's "
        "flags win, then HYPD_ENDPOINT / HYPD_STACK_NAME, then the context.")
    commands = group.add_subparsers(dest="config_command", metavar="COMMAND")
    set_context = commands.add_parser("set-context", help="create or change a context")
    set_context.add_argument("name")
    set_context.add_argument("--endpoint", metavar="URL", help="the API's base URL")
    set_context.add_argument("--profile", help="the AWS profile that signs")
    set_context.add_argument("--region", help="the Region to sign for")
    set_context.add_argument("--stack-name", help="without an endpoint: the deployed stack")
    set_context.add_argument("--no-sign-request", action="store_true", default=None,
                             help="send unsigned requests")
    set_context.add_argument("--use", action="store_true", help="make it the current context")
    set_context.set_defaults(handler=run_set)
    use = commands.add_parser("use-context", help="make a context the current one")
    use.add_argument("name")
    use.set_defaults(handler=run_use)
    listing = commands.add_parser("get-contexts", help="the contexts (* marks the current)")
    listing.set_defaults(handler=run_list)
    current = commands.add_parser("current-context", help="the current context's name")
    current.set_defaults(handler=run_current)
    delete = commands.add_parser("delete-context", help="forget a context")
    delete.add_argument("name")
    delete.set_defaults(handler=run_delete)


def _failed(exc: Exception) -> int:
    print(f"hypd config: error: {exc}", file=sys.stderr)
    return 2


def run_set(args: argparse.Namespace) -> int:
    try:
        data = config.load()
        context = dict(data["contexts"].get(args.name) or {})
        if args.endpoint:
            context["endpoint"] = check_endpoint(args.endpoint)
        for key, value in (("profile", args.profile), ("region", args.region),
                           ("stackName", args.stack_name),
                           ("noSignRequest", args.no_sign_request)):
            if value is not None:
                context[key] = value
        data["contexts"][args.name] = context
        if args.use or not data.get("currentContext"):
            data["currentContext"] = args.name
        path = config.save(data)
    except (config.ConfigError, ApiConfigError, OSError) as exc:
        return _failed(exc)
    current = " (current)" if data["currentContext"] == args.name else ""
    print(f"Context {args.name}{current} saved in {path}")
    return 0


def run_use(args: argparse.Namespace) -> int:
    try:
        data = config.load()
        if args.name not in data["contexts"]:
            known = ", ".join(sorted(data["contexts"])) or "none yet"
            raise config.ConfigError(f"context {args.name!r} does not exist (known: {known})")
        data["currentContext"] = args.name
        config.save(data)
    except (config.ConfigError, OSError) as exc:
        return _failed(exc)
    print(f"Switched to context {args.name}.")
    return 0


def run_list(args: argparse.Namespace) -> int:
    try:
        data = config.load()
    except config.ConfigError as exc:
        return _failed(exc)
    contexts = data["contexts"]
    if not contexts:
        print("No contexts: hypd config set-context NAME --endpoint URL makes one.")
        return 0
    rows = [("*" if name == data.get("currentContext") else "", name,
             c.get("endpoint") or (f"stack {c['stackName']}" if c.get("stackName") else ""),
             c.get("profile") or "", c.get("region") or "")
            for name, c in sorted(contexts.items())]
    print(render_table(("CURRENT", "NAME", "ENDPOINT", "PROFILE", "REGION"), rows))
    return 0


def run_current(args: argparse.Namespace) -> int:
    try:
        name, _context = config.active()
    except config.ConfigError as exc:
        return _failed(exc)
    if name is None:
        print("No current context: hypd config use-context NAME", file=sys.stderr)
        return 1
    print(name)
    return 0


def run_delete(args: argparse.Namespace) -> int:
    try:
        data = config.load()
        if data["contexts"].pop(args.name, None) is None:
            raise config.ConfigError(f"context {args.name!r} does not exist")
        if data.get("currentContext") == args.name:
            data["currentContext"] = None
        config.save(data)
    except (config.ConfigError, OSError) as exc:
        return _failed(exc)
    print(f"Deleted context {args.name}.")
    return 0
