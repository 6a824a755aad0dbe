"""Lambda functions run in-process: configuration at import, errors named like on AWS."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from hypd_local import FunctionError, LocalCloud
from hypd_local.lambdas import LambdaRuntime
from hypd_local.template import FunctionSpec


def test_handlers_read_their_configuration_at_import(cloud: LocalCloud) -> None:
    # When the worker reports the configuration it read at import time
    config = cloud.invoke("WorkerFunction", {"action": "config"})

    # Then it saw its own environment (template values, Globals, Lambda's variables)
    assert config["table"] == cloud.resources["FixtureTable"]
    assert config["greeting"] == "hello"
    assert config["waitMachineArn"] == cloud.resources["WaitMachine"]
    assert config["functionName"] == cloud.resources["WorkerFunction"]
    # and its sibling module, imported from its CodeUri
    assert config["helper"] == "worker-helpers"
    # and a Lambda-like context
    assert config["contextName"] == cloud.resources["WorkerFunction"]
    assert 0 < config["remainingMs"] <= 10_000
    # and the function's variables did not leak into the process environment
    assert "GREETING" not in os.environ
    # and the module has a name of its own
    assert "hypd_fn_WorkerFunction" in sys.modules


def test_a_handler_exception_is_raised_by_invoke(cloud: LocalCloud) -> None:
    with pytest.raises(Exception, match="can never succeed") as raised:
        cloud.invoke("WorkerFunction", {"action": "fail"})

    assert type(raised.value).__name__ == "PermanentError"


def test_an_unserialisable_result_is_a_marshal_error(cloud: LocalCloud) -> None:
    with pytest.raises(FunctionError) as raised:
        cloud.invoke("WorkerFunction", {"action": "unserialisable"})

    assert raised.value.error_type == "Runtime.MarshalError"


def test_boto3_invoke_reports_the_error_as_lambda_does(cloud: LocalCloud) -> None:
    # When the function is invoked through the Lambda API (as Step Functions does)
    response = cloud.client("lambda").invoke(
        FunctionName=cloud.resources["WorkerFunction"],
        Payload=json.dumps({"action": "fail"}).encode(),
    )

    # Then the error is "Unhandled" with the exception class as errorType
    assert response["FunctionError"] == "Unhandled"
    payload = json.loads(response["Payload"].read())
    assert payload["errorType"] == "PermanentError"
    assert payload["errorMessage"] == "this step can never succeed"
    assert payload["stackTrace"]
    assert "app.py" in payload["stackTrace"][0]


def test_boto3_invoke_returns_the_result(cloud: LocalCloud) -> None:
    response = cloud.client("lambda").invoke(
        FunctionName=cloud.resources["WorkerFunction"],
        Payload=json.dumps({"action": "echo", "n": 1}).encode(),
    )

    assert "FunctionError" not in response
    assert json.loads(response["Payload"].read()) == {"echo": {"action": "echo", "n": 1}}


def test_an_asynchronous_invoke_runs_in_the_background(idle_cloud: LocalCloud) -> None:
    # When the listener is invoked with InvocationType=Event
    response = idle_cloud.client("lambda").invoke(
        FunctionName=idle_cloud.resources["ListenerFunction"],
        InvocationType="Event",
        Payload=json.dumps({"detail-type": "AsyncPing"}).encode(),
    )
    idle_cloud.wait_for_executions(timeout=30)

    # Then the call returned at once and the handler ran
    assert response["StatusCode"] == 202
    items = idle_cloud.client("dynamodb").query(
        TableName=idle_cloud.resources["FixtureTable"],
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "EVENT"}},
    )["Items"]
    assert "AsyncPing" in [item["detailType"]["S"] for item in items]


def test_the_layer_and_functions_exist_in_moto(cloud: LocalCloud) -> None:
    function = cloud.client("lambda").get_function(FunctionName=cloud.resources["WorkerFunction"])

    config = function["Configuration"]
    assert [layer["Arn"] for layer in config["Layers"]] == [cloud.resources["FixtureLayer"]]
    assert config["Environment"]["Variables"]["GREETING"] == "hello"


GATED_HANDLER = '''
import threading

entered = threading.Event()
gate = threading.Event()
active = 0
most = 0
lock = threading.Lock()


def handler(event, context):
    global active, most
    if event.get("warm"):
        return event
    with lock:
        active += 1
        most = max(most, active)
    entered.set()
    gate.wait(timeout=30)
    with lock:
        active -= 1
    return event
'''


def test_a_function_runs_one_invocation_at_a_time(tmp_path: Path) -> None:
    # Given a function whose handler holds its invocation until a gate opens
    (tmp_path / "gated.py").write_text(GATED_HANDLER)
    spec = FunctionSpec(
        logical_id="Gated", name="gated",
        arn="arn:aws:lambda:us-west-2:123456789012:function:gated", code_dir=tmp_path,
        handler="gated.handler", runtime="python3.12", memory_size=128, timeout=30,
        environment={}, layers=(), role_arn="arn:aws:iam::123456789012:role/r",
    )
    runtime = LambdaRuntime({"Gated": spec})
    try:
        assert runtime.invoke(spec, {"warm": True}).result == {"warm": True}
        module = sys.modules["hypd_fn_Gated"]
        first = threading.Thread(target=runtime.invoke, args=(spec, {"n": 1}))
        first.start()
        assert module.entered.wait(timeout=30)

        # When a second invocation arrives while the first runs
        second = threading.Thread(target=runtime.invoke, args=(spec, {"n": 2}))
        second.start()

        # Then the function's only execution environment is busy, and the second waits for it
        slot = runtime._slots["Gated"]
        assert slot is not None
        assert not slot.acquire(blocking=False)
        module.gate.set()
        first.join(timeout=30)
        second.join(timeout=30)
        assert module.most == 1
    finally:
        runtime.close()
