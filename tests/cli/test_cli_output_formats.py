"""The output conventions of the aws CLI: ``-o json|yaml|table`` (any case), ``--query`` with
JMESPath applied before the response is printed, and its refusals."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import yaml  # type: ignore[import-untyped]

from hypd_cli.cli import EXIT_OK, EXIT_USAGE
from hypd_cli.main import main
from tests.cli.conftest import CannedApi, RunCli

CLUSTERS = {"clusters": [
    {"tag": "demo", "status": "ACTIVE", "source": "CREATED", "eksName": "hypd-demo"},
    {"tag": "lab", "status": "FAILED", "source": "CREATED", "eksName": "hypd-lab"},
]}


def test_yaml_output_is_the_whole_response_as_one_document(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    canned(CLUSTERS)

    run = run_cli("clusters", "list", "-o", "YAML")

    assert run.code == EXIT_OK, run.text
    assert run.out.startswith("---\n")
    assert yaml.safe_load(run.out) == CLUSTERS


def test_query_selects_from_the_response_and_defaults_to_json(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    canned(CLUSTERS, CLUSTERS)

    tags = run_cli("clusters", "list", "--query", "clusters[?status=='ACTIVE'].tag")
    as_yaml = run_cli("clusters", "list", "--query", "clusters[].eksName", "-o", "yaml")

    assert tags.code == EXIT_OK, tags.text
    assert json.loads(tags.out) == ["demo"]
    assert yaml.safe_load(as_yaml.out) == ["hypd-demo", "hypd-lab"]


def test_a_bad_query_or_a_table_with_a_query_is_a_usage_error_naming_the_flag(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    canned(CLUSTERS, CLUSTERS)

    bad = run_cli("clusters", "list", "--query", "clusters[?")
    table = run_cli("clusters", "list", "--query", "clusters", "-o", "table")

    assert bad.code == EXIT_USAGE
    assert "--query: not a JMESPath expression" in bad.err
    assert table.code == EXIT_USAGE
    assert "--query needs -o json, -o yaml or -o text" in table.err


@pytest.mark.parametrize(("endpoint", "message"), [
    ("localhost:8080", "--endpoint: 'localhost:8080' is not a URL (expected "
                       "http://127.0.0.1:8080/v1"),
    ("http://127.0.0.1:8080", "--endpoint: http://127.0.0.1:8080 has no stage: the API's base "
                              "URL ends with its stage (try http://127.0.0.1:8080/v1)"),
    ("http://127.0.0.1:8080/", "(try http://127.0.0.1:8080/v1)"),
])
def test_an_endpoint_that_is_not_the_apis_base_url_is_named_as_such(
        run_cli: RunCli, endpoint: str, message: str) -> None:
    run = run_cli("clusters", "list", endpoint=endpoint)

    assert run.code == EXIT_USAGE
    assert message in run.err
    assert run.calls == []


@pytest.mark.parametrize(("argv", "answer", "sentence"), [
    (["clusters", "list"], {"clusters": []}, "No clusters: `hypd clusters create` makes one"),
    (["nodes", "list", "demo"], {"tag": "demo", "nodes": []}, "No nodes."),
    (["ops", "list"], {"operations": []}, "No operations."),
    (["ops", "list", "--status", "FAILED"], {"operations": []},
     "No operations match --status FAILED."),
    (["catalog", "training-plans"], {"trainingPlans": []}, "No training plan."),
])
def test_an_empty_list_says_so_instead_of_a_table_of_headers(
        run_cli: RunCli, canned: Callable[..., CannedApi], argv: list[str],
        answer: dict[str, object], sentence: str) -> None:
    canned(answer)

    run = run_cli(*argv)

    assert run.code == EXIT_OK, run.text
    assert sentence in run.out
    assert "----" not in run.out


def test_a_flag_the_command_does_not_know_shows_that_commands_usage(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["clusters", "list", "--bogus"])

    assert exited.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("usage: hypd clusters list ")
    assert "hypd clusters list: error: unrecognized arguments: --bogus" in err


def test_choices_are_taken_in_any_case_and_named_when_wrong(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    client = canned({"operations": []})

    lower = run_cli("ops", "list", "--status", "failed")
    wrong = run_cli("ops", "list", "--status", "broken")

    assert lower.code == EXIT_OK, lower.text
    assert client.sent[0][2].get("status") == "FAILED"
    assert wrong.code == EXIT_USAGE
    assert "invalid choice: 'broken' (choose from 'PENDING'" in wrong.err
