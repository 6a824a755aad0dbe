"""``-o text`` (the aws CLI's: values for ``$(...)`` in scripts) and ``hypd ops watch -`` (the
operation a piped response names), the two conventions the executed docs' scripts use."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest

from hypd_cli.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from hypd_cli.operations import operation_from_stdin
from hypd_cli.output import text_lines
from tests.cli.conftest import CannedApi, RunCli

CLUSTERS = {"clusters": [
    {"tag": "demo", "status": "ACTIVE"},
    {"tag": "lab", "status": "FAILED"},
]}


@pytest.mark.parametrize(("data", "printed"), [
    ("arn:aws:sagemaker:us-west-2:1:training-plan/p5", "arn:aws:sagemaker:us-west-2:1:"
     "training-plan/p5"),
    (None, "None"),
    (3, "3"),
    (["demo", "lab"], "demo\tlab"),
    ([{"tag": "demo", "status": "ACTIVE"}, {"tag": "lab", "status": "FAILED"}],
     "demo\tACTIVE\nlab\tFAILED"),
    ({"tag": "demo", "labels": {"a": "b"}}, 'demo\t{"a":"b"}'),
])
def test_text_output_prints_values_as_the_aws_cli_does(data: object, printed: str) -> None:
    assert text_lines(data) == printed


def test_text_output_with_a_query_gives_a_value_a_script_can_use(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    canned(CLUSTERS, CLUSTERS)

    first = run_cli("clusters", "list", "--query", "clusters[0].tag", "-o", "TEXT")
    rows = run_cli("clusters", "list", "-o", "text", "--query", "clusters[].[tag, status]")

    assert (first.code, first.out) == (EXIT_OK, "demo\n"), first.text
    assert rows.out == "demo\tACTIVE\nlab\tFAILED\n", rows.text


@pytest.mark.parametrize(("stdin", "expected"), [
    ("op-0123\n", "op-0123"),
    ('{"operationId": "op-9", "status": "PENDING", "kind": "scale"}', "op-9"),
    ('{"id": "op-7", "status": "RUNNING", "stages": []}', "op-7"),
    ('{"changed": false, "instanceGroup": {}}', EXIT_OK),
    ('{"code": "ClusterBusy", "message": "operation op-1 is running", "details": {}}',
     EXIT_FAILED),
    ("", EXIT_USAGE),
    ("hello world", EXIT_USAGE),
])
def test_ops_watch_dash_reads_the_operation_from_what_was_piped(
        stdin: str, expected: object) -> None:
    err = io.StringIO()

    assert operation_from_stdin(stdin, err) == expected
    if expected == EXIT_FAILED:
        assert err.getvalue() == "ClusterBusy: operation op-1 is running\n"
    if expected == EXIT_USAGE:
        assert "no operation" in err.getvalue()


def test_ops_watch_dash_follows_the_piped_operation(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    done = {"id": "op-9", "kind": "scale-instance-group", "clusterTag": "demo",
            "status": "SUCCEEDED", "stages": [{"name": "hyperpod", "status": "SUCCEEDED",
                                               "attempts": 1}]}
    api = canned(done)

    run = run_cli("ops", "watch", "-", stdin='{"operationId": "op-9", "status": "PENDING"}')

    assert run.code == EXIT_OK, run.text
    assert "op-9" in run.out
    assert [(method, path) for method, path, _, _ in api.sent] == [("GET", "/operations/op-9")]
