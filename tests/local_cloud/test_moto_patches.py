"""Patches of moto's Step Functions interpreter that are hard to reach through a whole cloud,
or whose effect (a cache) a whole cloud does not show."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker import (
    BranchWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.eval.program_state import ProgramRunning, ProgramStopped
from moto.stepfunctions.parser.asl.parse.asl_parser import (
    AmazonStateLanguageParser,
    ASLParserException,
)

from hypd_local import patches


class _Program:
    def eval(self, env: Any) -> None:
        raise RuntimeError("Could not set NextState value when in state ProgramStopped")


class _Env:
    def __init__(self, state: Any) -> None:
        self._state = state

    def program_state(self) -> Any:
        return self._state


class _Comm:
    def __init__(self) -> None:
        self.terminated: list[Any] = []

    def on_terminated(self, env: Any) -> None:
        self.terminated.append(env)


def _worker(state: Any) -> tuple[BranchWorker, _Comm]:
    comm = _Comm()
    worker = BranchWorker(comm, _Program(), _Env(state))  # type: ignore[arg-type]
    return worker, comm


def test_a_branch_stopped_before_it_began_still_reports_its_end() -> None:
    # A Parallel state waits for every branch's on_terminated; a branch whose execution was
    # stopped while it started must report, or the execution never ends.
    patches.install()
    worker, comm = _worker(ProgramStopped(datetime.now(UTC), None, None))

    worker._thread_routine()

    assert comm.terminated == [worker.env]


def test_a_branch_that_fails_while_running_still_raises() -> None:
    patches.install()
    worker, comm = _worker(ProgramRunning())  # type: ignore[no-untyped-call]

    with pytest.raises(RuntimeError):
        worker._thread_routine()
    assert comm.terminated == []


RETRYING = json.dumps({
    "StartAt": "Work",
    "States": {"Work": {"Type": "Pass", "End": True,
                        "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}]}},
})


def test_a_definition_is_parsed_once_and_each_parse_gets_its_own_components() -> None:
    # Components hold one execution's state (a retrier counts its attempts): they must be new
    # for every execution, while the syntax tree is shared.
    patches.install()
    definition = RETRYING.replace("Work", f"Work{uuid.uuid4().hex}")
    first, tree = AmazonStateLanguageParser.parse(definition)
    second, same_tree = AmazonStateLanguageParser.parse(definition)
    assert same_tree is tree
    assert second is not first
    assert type(second) is type(first)


def test_a_bad_definition_is_refused_every_time() -> None:
    patches.install()
    for _ in range(2):
        with pytest.raises(ASLParserException):
            AmazonStateLanguageParser.parse('{"StartAt": "Nowhere", "States": {')


def test_the_interpreter_keeps_one_client_per_region_service_and_port() -> None:
    patches.install()
    boto_client_for = lambda_eval_utils.boto_client_for  # type: ignore[attr-defined]
    assert boto_client_for("us-west-2", "lambda") is boto_client_for("us-west-2", "lambda")
    assert boto_client_for("us-west-2", "lambda") is not boto_client_for("us-east-1", "lambda")
    assert boto_client_for("us-west-2", "lambda") is not boto_client_for("us-west-2", "sqs")


def test_a_resources_tags_are_the_ones_moto_would_filter_out_of_the_account() -> None:
    # Given an account with tagged resources of several kinds (a backend of its own)
    from moto.ec2.models import EC2Backend

    from hypd_local.patches.ec2 import resource_tags

    backend = EC2Backend("us-west-2", "210987654321")
    vpc = backend.create_vpc("10.1.0.0/16")
    other = backend.create_vpc("10.2.0.0/16")
    table = backend.create_route_table(vpc.id)
    backend.create_tags([vpc.id, table.id], {"hypd:tag": "a", "Name": "net"})
    backend.create_tags([other.id], {"hypd:tag": "b"})

    # Then each resource's tags read from its entry are what DescribeTags filters out
    for resource in (vpc, other, table, backend.create_vpc("10.3.0.0/16")):
        assert resource_tags(backend, resource.id) == backend.describe_tags(
            filters={"resource-id": [resource.id]})
