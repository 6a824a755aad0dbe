"""docs/deploy.md gives a reason for every wildcard resource of template.yaml's policies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypd_local.template import read_template
from tests.build.support import ROOT, TEMPLATE


def star_statements(template: dict[str, Any]) -> Iterator[str]:
    """``Owner / Sid`` of every statement granting on ``"*"`` (a state machine's:
    ``<StateMachine>Role / Sid``, the form the doc uses for all six)."""
    for logical_id, resource in template["Resources"].items():
        props = resource.get("Properties") or {}
        documents: list[tuple[str, Any]] = []
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            documents.append((logical_id, props["PolicyDocument"]))
        for policy in props.get("Policies") or []:
            if isinstance(policy, dict) and "Statement" in policy:
                owner = ("<StateMachine>Role" if resource["Type"] ==
                         "AWS::Serverless::StateMachine" else logical_id)
                documents.append((owner, policy))
            elif isinstance(policy, dict) and "PolicyDocument" in policy:
                documents.append((logical_id, policy["PolicyDocument"]))
        for owner, document in documents:
            for statement in document["Statement"]:
                resources = statement.get("Resource")
                if resources == "*" or (isinstance(resources, list) and "*" in resources):
                    yield f"{owner} / {statement['Sid']}"


def test_every_star_grant_has_its_reason_in_the_deploy_doc() -> None:
    doc = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    found = sorted(set(star_statements(read_template(TEMPLATE))))
    assert found, "the template grants some actions on *"
    missing = [where for where in found if f"`{where}`" not in doc]
    assert missing == []
