"""The local cloud makes the roles SAM generates exactly as the SAM transform does.

The local cloud runs the untransformed template (hypd_local.sam_roles makes the generated
roles); here the SAM CLI's translator transforms template.yaml and every role it generates for
a function or a state machine must equal the local cloud's: trust policy, managed policies,
inline policies by name with their documents (intrinsics resolved the same way). The SAM
policy templates the local cloud knows must equal SAM's own definitions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hypd_cli.local import local_parameters
from hypd_local import sam_roles
from hypd_local.template import Stack
from tests.build.conftest import require_tool, run
from tests.build.support import SAM_VENV, TEMPLATE


@pytest.fixture(scope="module")
def stack() -> Stack:
    return Stack(TEMPLATE, region="us-west-2", parameters=local_parameters(TEMPLATE))


def _normal(document: Any) -> Any:
    """A policy document compared by content (statement keys and action lists in order)."""
    return json.loads(json.dumps(document, sort_keys=True))


def test_every_generated_role_is_the_one_sam_makes(transformed: Path, stack: Stack) -> None:
    resources = json.loads(transformed.read_text(encoding="utf-8"))["Resources"]
    generated = {logical_id for logical_id, res in stack.resources.items()
                 if res.type == "AWS::IAM::Role" and res.generated_by}
    assert generated, "the template has functions and state machines"
    for logical_id in sorted(generated):
        sam = resources[logical_id]["Properties"]
        ours = stack.roles[logical_id]
        where = f"Resources.{logical_id}"
        assert _normal(stack.resolve(sam["AssumeRolePolicyDocument"], where)) == _normal(
            ours.assume_role_policy), logical_id
        assert [stack.resolve(a, where) for a in sam.get("ManagedPolicyArns", [])] == list(
            ours.managed_policy_arns), logical_id
        sam_inline = {p["PolicyName"]: _normal(stack.resolve(p["PolicyDocument"], where))
                      for p in sam.get("Policies", [])}
        assert sam_inline == {name: _normal(doc) for name, doc in ours.policies}, logical_id
        assert stack.resolve(sam.get("PermissionsBoundary"), where) == (
            ours.permissions_boundary), logical_id


def test_the_policy_templates_the_local_cloud_knows_are_sams() -> None:
    python = require_tool(SAM_VENV / "bin" / "python")
    result = run([str(python), "-c", (
        "import json, pathlib, samtranslator; print(pathlib.Path(samtranslator.__file__)"
        ".parent.joinpath('policy_templates_data', 'policy_templates.json').read_text())")])
    assert result.returncode == 0, result.stderr
    templates = json.loads(result.stdout)["Templates"]
    for name, (parameters, build) in sam_roles.TEMPLATES.items():
        # SAM's definition refers to each parameter with {"Ref": "<Parameter>"}
        ours = {"Statement": build(**{p: {"Ref": p} for p in parameters})}
        assert _normal(ours) == _normal(templates[name]["Definition"]), name
        assert sorted(parameters) == sorted(templates[name]["Parameters"]), name
