"""Every CLI command maps to exactly one REST operation of docs/openapi.json, every REST
operation is reachable from the CLI, and the client's route table is the document's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hypd_cli.api_client import ROUTES
from hypd_cli.cli import COMMANDS, leaf_commands
from hypd_cli.main import build_parser

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
HTTP_METHODS = {"get", "put", "post", "delete", "patch"}
API_GROUPS = {"clusters", "groups", "nodes", "autoscaling", "health", "features", "teams", "jobs",
              "endpoints", "ops", "events", "catalog"}


def document_operations() -> dict[str, dict[str, Any]]:
    """operationId -> {method, path, query, body} from the OpenAPI document."""
    document = json.loads(OPENAPI.read_text())
    found: dict[str, dict[str, Any]] = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            parameters = operation.get("parameters") or []
            found[operation["operationId"]] = {
                "method": method.upper(),
                "path": path,
                "query": {p["name"] for p in parameters if p["in"] == "query"},
                "path_params": {p["name"] for p in parameters if p["in"] == "path"},
                "body": "requestBody" in operation,
                "starts": "202" in operation["responses"],
            }
    return found


def test_every_command_maps_to_one_operation_of_the_document() -> None:
    operations = document_operations()

    for command, operation_id in COMMANDS.items():
        assert operation_id in operations, f"hypd {command}: {operation_id} is not in the API"


def test_every_rest_operation_is_reachable_from_the_cli() -> None:
    assert set(document_operations()) - set(COMMANDS.values()) == set()


def test_the_parsers_commands_are_the_table() -> None:
    leaves = leaf_commands(build_parser())
    api_leaves = {name: leaf for name, leaf in leaves.items() if name.split()[0] in API_GROUPS}

    assert set(api_leaves) == set(COMMANDS)
    for name, leaf in api_leaves.items():
        assert leaf == {"command_name": name, "operation_id": COMMANDS[name]}
    # Commands outside the API groups call no REST operation of their own (the console's
    # page calls the API through the console's proxy, which forwards only ROUTES; config and
    # completion work on this machine alone).
    assert {name.split()[0] for name in leaves} - API_GROUPS <= {
        "local", "mcp", "console", "config", "completion"}


def test_the_clients_routes_are_the_documents() -> None:
    operations = document_operations()

    assert set(ROUTES) == set(operations)
    for operation_id, route in ROUTES.items():
        documented = operations[operation_id]
        assert (route.method, route.path) == (documented["method"], documented["path"])
        assert set(route.query) == documented["query"], operation_id
        assert set(route.path_params) == documented["path_params"], operation_id
        assert route.has_body == documented["body"], operation_id


def test_every_command_that_starts_an_operation_can_wait_for_it() -> None:
    operations = document_operations()
    parser = build_parser()

    for command, operation_id in COMMANDS.items():
        # ops cancel answers 202 too, but stops an operation rather than starting one.
        if operations[operation_id]["starts"] and command != "ops cancel":
            options = {a.dest for a in leaf_parser(parser, command)._actions}
            assert {"wait", "interval", "timeout"} <= options, f"hypd {command}: no --wait"


def leaf_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of ``command`` (e.g. "groups add")."""
    for word in command.split():
        (subparsers,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = subparsers.choices[word]
    return parser
