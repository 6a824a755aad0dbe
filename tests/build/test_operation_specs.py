"""The template's repeated parts against the operation specs (hypd.operations.kinds): each kind's
state machine exists, the API function is told every one, may start every one, and the rule that
sees executions end watches every one. A kind added to the specs without its template parts, or
a state machine left in the template without a kind, fails here, not at deploy time."""

from __future__ import annotations

from typing import Any

import pytest

from hypd.config import STATE_MACHINE_SETTINGS
from hypd.operations.kinds import SPECS, state_machine_variable
from hypd.operations.models import OperationKind
from hypd_local.template import read_template, resources_of_type
from tests.build.support import STATE_MACHINE_TYPE, TEMPLATE

pytestmark = pytest.mark.build

TEMPLATE_DATA = read_template(TEMPLATE)
MACHINES = {spec.state_machine for spec in SPECS.values()}


def _refs(values: Any) -> set[str]:
    return {value["Ref"] for value in values if isinstance(value, dict) and "Ref" in value}


def _api() -> dict[str, Any]:
    api: dict[str, Any] = TEMPLATE_DATA["Resources"]["ApiFunction"]["Properties"]
    return api


def test_every_kind_has_a_spec() -> None:
    assert set(SPECS) == set(OperationKind)


def test_the_templates_state_machines_are_the_specs() -> None:
    assert set(resources_of_type(TEMPLATE_DATA, STATE_MACHINE_TYPE)) == MACHINES


def test_the_api_is_told_every_state_machine() -> None:
    variables = _api()["Environment"]["Variables"]
    for machine in MACHINES:
        assert variables[state_machine_variable(machine)] == {"Ref": machine}
    assert set(STATE_MACHINE_SETTINGS.values()) == {
        name for name in variables if name.endswith("_STATE_MACHINE_ARN")
    }


def test_the_api_may_start_every_state_machine() -> None:
    # In ApiOperationsPolicy, attached to the API's role (see template.yaml).
    policy = TEMPLATE_DATA["Resources"]["ApiOperationsPolicy"]["Properties"]
    assert policy["Roles"] == [{"Ref": "ApiFunctionRole"}]
    (statement,) = [
        s for s in policy["PolicyDocument"]["Statement"] if s.get("Sid") == "StartOperations"
    ]
    assert statement["Action"] == ["states:StartExecution"]
    assert _refs(statement["Resource"]) == MACHINES


def test_every_state_machines_end_is_seen() -> None:
    (rule,) = [
        events["OperationExecutionEnded"]["Properties"]["Pattern"]
        for resource in TEMPLATE_DATA["Resources"].values()
        if "OperationExecutionEnded" in (events := resource.get("Properties", {}).get("Events")
                                         or {})
    ]
    assert _refs(rule["detail"]["stateMachineArn"]) == MACHINES


def test_the_variable_names_follow_the_logical_ids() -> None:
    assert state_machine_variable("InstanceGroupStateMachine") == (
        "INSTANCE_GROUP_STATE_MACHINE_ARN")
    assert state_machine_variable("DiscoverStateMachine") == "DISCOVER_STATE_MACHINE_ARN"


def _stages_generated(stem: str) -> set[str]:
    """The stages the generator's states of `stem`.asl.json belong to."""
    from statemachines import generate

    states = generate.States()
    builder = {
        "create_cluster": generate._definition,
        "instance_group": generate.instance_group_definition,
        "node_action": generate.node_action_definition,
        "enable_autoscaling": generate.enable_autoscaling_definition,
        "disable_autoscaling": generate.disable_autoscaling_definition,
        "discover": generate.discover_definition,
        "set_features": generate.set_features_definition,
        "upgrade_cluster": generate.upgrade_cluster_definition,
        "team": generate.team_definition,
        "workload": generate.workload_definition,
        "delete_cluster": generate.delete_cluster_definition,
    }[stem]
    builder(states)
    return set(states.stage_of.values())


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_each_generated_machine_has_exactly_the_stages_of_its_kinds(machine: str) -> None:
    # The state machine's file, as the template names it
    uri = TEMPLATE_DATA["Resources"][machine]["Properties"]["DefinitionUri"]
    stem = uri.removeprefix("statemachines/").removesuffix(".asl.json")
    # Its states belong to exactly the stages its kinds' specs declare (a machine may serve
    # several kinds: the instance-group machine's add starts at network, update at hyperpod)
    declared = {
        stage for spec in SPECS.values() if spec.state_machine == machine for stage in spec.stages
    }
    assert _stages_generated(stem) == declared
