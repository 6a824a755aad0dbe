"""POST /clusters, /operations/{id}/retry and /cancel make only the AWS calls ApiFunction's
policy in template.yaml allows (calls recorded as in test_iam_policies)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from hypd.aws.dynamodb import Table
from hypd.operations import lifecycle
from hypd.operations.models import ErrorInfo
from hypd.operations.store import OperationStore
from tests.support import create_body
from tests.unit.support import ACCOUNT, REGION, FakeLambdaContext
from tests.unit.test_api_handler import PASS_DEFINITION, api_event
from tests.unit.test_iam_policies import load_api, policy_actions, recorded

__all__ = ["recorded"]  # the fixture that records every AWS call

pytestmark = pytest.mark.usefixtures("fresh_imports", "fixed_clock")


def call(module: Any, method: str, path: str, **kwargs: Any) -> int:
    status: int = module.handler(api_event(method, path, **kwargs), FakeLambdaContext("hypd-api"))[
        "statusCode"
    ]
    return status


def action(module: Any, operation_id: str, name: str) -> int:
    return call(
        module,
        "POST",
        f"/operations/{operation_id}/{name}",
        resource=f"/operations/{{operationId}}/{name}",
        path_parameters={"operationId": operation_id},
    )


def test_create_retry_and_cancel_stay_within_the_api_functions_policy(
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    table: Table,
    recorded: set[str],
) -> None:
    # Given the API function with both state machines
    sfn = boto3.session.Session(region_name=REGION).client("stepfunctions")
    arns = [
        sfn.create_state_machine(
            name=name,
            definition=PASS_DEFINITION,
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/{name}Role",
        )["stateMachineArn"]
        for name in ("DiscoverStateMachine-iam", "CreateClusterStateMachine-iam")
    ]
    module = load_api(monkeypatch, template, arns[0], arns[1])
    # When a cluster is created, then again (409), cancelled, failed and retried
    body = json.dumps(create_body())
    assert call(module, "POST", "/clusters", body=body) == 202
    assert call(module, "POST", "/clusters", body=body) == 409
    operations = OperationStore(table)
    (operation,) = operations.list().operations
    assert action(module, operation.id, "cancel") == 202
    operations.update(operation.id, lambda op: lifecycle.fail(op, ErrorInfo(code="X", message="x")))
    assert action(module, operation.id, "retry") == 202
    # Then it stopped and started executions, and every call it made is allowed
    assert {"states:StartExecution", "states:StopExecution"} <= recorded
    assert recorded - policy_actions(template, "ApiFunction") == set()
