"""DefinitionSubstitutions match the placeholders of their ASL files exactly.

cfn-lint does not look inside DefinitionUri files: a misspelt `${...}` would reach Step Functions
as a literal string (and fail only when the state runs), and an unused substitution hides a typo
on the other side."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hypd_local.template import read_template, resources_of_type
from statemachines import generate
from tests.build.support import ROOT, STATE_MACHINE_TYPE, TEMPLATE

pytestmark = pytest.mark.build

PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")

STATE_MACHINES = resources_of_type(read_template(TEMPLATE), STATE_MACHINE_TYPE)


def test_template_has_state_machines() -> None:
    assert STATE_MACHINES


@pytest.mark.parametrize("logical_id", sorted(STATE_MACHINES))
def test_definition_substitutions_match_placeholders(logical_id: str) -> None:
    props: dict[str, Any] = STATE_MACHINES[logical_id]["Properties"]
    definition_uri = props.get("DefinitionUri")
    if not isinstance(definition_uri, str):
        pytest.skip(f"{logical_id} has an inline or S3 definition")
    path = ROOT / definition_uri
    assert path.is_file(), f"{logical_id}: DefinitionUri {definition_uri} does not exist"
    text = path.read_text(encoding="utf-8")
    json.loads(text)  # the file is JSON (a parse error here beats one at deploy time)

    placeholders = set(PLACEHOLDER.findall(text))
    substitutions = set(props.get("DefinitionSubstitutions", {}))
    assert placeholders - substitutions == set(), (
        f"{definition_uri} uses placeholders that {logical_id}'s DefinitionSubstitutions lacks"
    )
    assert substitutions - placeholders == set(), (
        f"{logical_id}'s DefinitionSubstitutions has keys that {definition_uri} never uses"
    )


def test_every_definition_is_generated() -> None:
    # statemachines/generate.py is the source of every state machine: none is written by hand.
    on_disk = {path.name for path in (ROOT / "statemachines").glob("*.asl.json")}
    assert on_disk == {generate.target(machine).name for machine in generate.MACHINES}


@pytest.mark.parametrize("machine", sorted(generate.MACHINES))
def test_definition_is_what_the_generator_writes(machine: str) -> None:
    path = generate.target(machine)
    written = path.read_text(encoding="utf-8")
    assert written == generate.render(machine), (
        f"statemachines/{path.name} is stale: run .venv/bin/python statemachines/generate.py"
    )


def test_create_cluster_stages_match_the_operation_model() -> None:
    from hypd.operations.kinds import spec_of
    from hypd.operations.models import OperationKind

    assert spec_of(OperationKind.CREATE_CLUSTER).stages == generate.STAGES


def test_the_recorded_fallback_look_is_the_token_waits_timeout() -> None:
    # An attempt parked on a HyperPod cluster records its next look at the wait's timeout.
    from hypd.operations.waiters import TOKEN_WAIT_SECONDS

    assert TOKEN_WAIT_SECONDS == generate.HYPERPOD_WAIT_SECONDS
    assert generate.CAPACITY_HYPERPOD_WAIT_SECONDS == generate.HYPERPOD_WAIT_SECONDS
