"""moto's ASL interpreter runs the fixture state machines: retries, catches, waits, aborts."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from hypd_local import LocalCloud


def run(cloud: LocalCloud, machine: str, payload: dict[str, Any]) -> dict[str, Any]:
    arn = cloud.client("stepfunctions").start_execution(
        stateMachineArn=cloud.resources[machine], name=str(uuid.uuid4()),
        input=json.dumps(payload),
    )["executionArn"]
    return cloud.wait_for_execution(arn, timeout=30)


def history(cloud: LocalCloud, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = cloud.client("stepfunctions").get_execution_history(
        executionArn=execution_arn
    )["events"]
    return events


def test_a_named_error_is_retried_with_backoff_then_caught_by_name(idle_cloud: LocalCloud) -> None:
    # Given a task that fails twice with TransientError and a next task raising PermanentError
    before = idle_cloud.clock.now()

    # When the retry machine runs
    result = run(idle_cloud, "RetryMachine", {"key": str(uuid.uuid4()), "failures": 2})

    # Then the flaky step succeeded on its third attempt
    assert result["status"] == "SUCCEEDED"
    output = json.loads(result["output"])
    assert output["flaky"] == {"attempts": 3}
    # and the doomed step's error was caught under the exception's class name
    assert output["error"]["Error"] == "PermanentError"
    assert json.loads(output["error"]["Cause"])["errorMessage"] == "this step can never succeed"
    # and the back-off (10 s, then 20 s) passed on the virtual clock, not the real one
    assert idle_cloud.clock.now() - before >= timedelta(seconds=30)
    failures = [e for e in history(idle_cloud, result["executionArn"])
                if e["type"] == "LambdaFunctionFailed"]
    assert [e["lambdaFunctionFailedEventDetails"]["error"] for e in failures] == [
        "TransientError", "TransientError", "PermanentError"]


def test_retries_exhausted_fail_the_execution_with_the_error_name(idle_cloud: LocalCloud) -> None:
    result = run(idle_cloud, "RetryMachine", {"key": str(uuid.uuid4()), "failures": 10})

    assert result["status"] == "FAILED"
    assert result["error"] == "TransientError"


def test_waits_of_hours_finish_at_once_and_advance_the_clock(idle_cloud: LocalCloud) -> None:
    # Given a machine that waits 3 h, then until a timestamp 5 h from now
    before = idle_cloud.clock.now()
    started = time.monotonic()
    until = (before + timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%SZ")

    # When it runs
    result = run(idle_cloud, "WaitMachine", {"until": until})

    # Then it succeeded and virtual time moved by the waited amount (5 h in total), besides
    # the real time the run took (the clock ticks; however slow this machine is)
    assert result["status"] == "SUCCEEDED"
    elapsed = idle_cloud.clock.now() - before
    real = timedelta(seconds=time.monotonic() - started)
    assert timedelta(hours=5) - timedelta(seconds=1) <= elapsed <= timedelta(hours=5) + real + \
        timedelta(seconds=1)
    # and the execution's dates are virtual too: it ended at the timestamp it waited for (waits
    # are whole seconds). Its start is some real time after `before`, so its span is not
    # compared with 5 h: that made this test fail on a loaded machine.
    assert result["startDate"] >= before - timedelta(seconds=1)
    assert result["stopDate"] >= datetime.fromisoformat(until) - timedelta(seconds=1)


def test_many_executions_run_at_once(idle_cloud: LocalCloud) -> None:
    sfn = idle_cloud.client("stepfunctions")
    arns = [
        sfn.start_execution(
            stateMachineArn=idle_cloud.resources["RetryMachine"],
            input=json.dumps({"key": str(uuid.uuid4()), "failures": 1}),
        )["executionArn"]  # no name: one is generated, as on AWS
        for _ in range(8)
    ]
    idle_cloud.wait_for_executions(timeout=60)

    statuses = {sfn.describe_execution(executionArn=arn)["status"] for arn in arns}
    assert statuses == {"SUCCEEDED"}
    assert len(set(arns)) == 8


def test_stop_execution_aborts(idle_cloud: LocalCloud) -> None:
    sfn = idle_cloud.client("stepfunctions")
    # A machine that waits forever in virtual time is needed; a token wait never resolves.
    definition = {
        "StartAt": "Wait for a token",
        "States": {"Wait for a token": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {"FunctionName": idle_cloud.resources["WorkerFunction"],
                           "Payload": {"action": "echo", "token.$": "$$.Task.Token"}},
            "End": True,
        }},
    }
    machine = sfn.create_state_machine(
        name="token-waiter", definition=json.dumps(definition),
        roleArn=idle_cloud.stack.roles["RetryMachineRole"].arn,
    )["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]

    sfn.stop_execution(executionArn=arn)
    result = idle_cloud.wait_for_execution(arn, timeout=30)

    assert result["status"] == "ABORTED"


def test_a_task_token_timeout_passes_in_virtual_time(idle_cloud: LocalCloud) -> None:
    sfn = idle_cloud.client("stepfunctions")
    definition = {
        "StartAt": "Wait for a token",
        "States": {"Wait for a token": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {"FunctionName": idle_cloud.resources["WorkerFunction"],
                           "Payload": {"action": "echo", "token.$": "$$.Task.Token"}},
            "TimeoutSeconds": 3600,
            "End": True,
        }},
    }
    machine = sfn.create_state_machine(
        name="token-timeout", definition=json.dumps(definition),
        roleArn=idle_cloud.stack.roles["RetryMachineRole"].arn,
    )["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]

    # When an hour passes on the virtual clock once the task waits (nothing sends the token)
    idle_cloud.clock.wait_for_waiters(1)
    idle_cloud.clock.advance(3600)
    result = idle_cloud.wait_for_execution(arn, timeout=30)

    # Then the task timed out
    assert result["status"] == "FAILED"
    assert result["error"] == "States.Timeout"
