"""The inference operator's load balancer controller gets its documented policy, and
FeatureRoleBoundary lets every grant of it through.

The policy is kubernetes-sigs/aws-load-balancer-controller's ``docs/install/iam_policy.json``,
vendored unchanged (``src/hypd/features/policies``, release v3.5.0, commit 11eb202c). Each
(action, resource) of each of its statements is evaluated as IAM does (hypd_local.iam.policy)
with a request context that meets the statement's conditions: the policy allows it, and with
the deployment's FeatureRoleBoundary (template.yaml, resolved for a Region of each partition)
it is still allowed. Sizes are measured as IAM counts them, without whitespace, against the
quotas of https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import pytest

from hypd.features import load_balancer_controller
from hypd.features.catalog import FEATURES, FeatureRole
from hypd.features.roles import RoleContext, inline_policy
from hypd_cli.local import local_parameters
from hypd_local.iam.policy import Request, decide, statements
from hypd_local.template import Stack
from tests.build.support import TEMPLATE

# Recorded when the file was fetched from the controller's repository (v3.5.0, commit
# 11eb202c97e4ae2ee45e0658c4cde9a4b59f33d4, 2026-08-03; the same blob at main 225f445).
FETCHED_SHA256 = "16f232c9d9f79366fe949c4550ad517a202380058a9e48d45a4e215044a20a6a"
FETCHED_GIT_BLOB = "761d0e733c41089c91ea009dd29faf71918085e5"

# IAM and AWS STS quotas (reference_iam-quotas.html), in characters without whitespace.
MANAGED_POLICY_QUOTA = 6_144
ROLE_INLINE_POLICIES_QUOTA = 10_240
"""For the aggregate of all inline policies of one role."""

REGIONS = {"aws": "us-west-2", "aws-cn": "cn-north-1", "aws-us-gov": "us-gov-west-1"}


def boundary(region: str) -> Mapping[str, Any]:
    stack = Stack(TEMPLATE, region=region, parameters=local_parameters(TEMPLATE))
    return stack.managed_policies["FeatureRoleBoundary"].document


def iam_size(document: Any) -> int:
    """A policy's size as IAM counts it against its quotas: whitespace is not counted."""
    return len(re.sub(r"\s", "", json.dumps(document)))


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def meeting(condition: Mapping[str, Mapping[str, Any]] | None) -> dict[str, list[str]]:
    """A request context in which every condition of a statement holds."""
    context: dict[str, list[str]] = {}
    for operator, keys in (condition or {}).items():
        for key, value in keys.items():
            if operator == "StringEquals":
                context[key.lower()] = [str(_listed(value)[0])]
            elif operator == "Null":
                if str(value).lower() == "false":  # the key is present
                    context[key.lower()] = ["hypd-train"]
            else:  # a newer policy uses another operator: teach this helper
                raise AssertionError(f"no context for condition operator {operator}")
    return context


def grants(document: Mapping[str, Any]) -> list[Request]:
    """Every (action, resource) a policy's statements allow, each in a context that meets
    its statement's conditions."""
    found = []
    for statement in statements(document):
        assert statement["Effect"] == "Allow"
        context = meeting(statement.get("Condition"))
        for action in _listed(statement["Action"]):
            for resource in _listed(statement["Resource"]):
                found.append(Request(action, resource, context))
    return found


def refused(policy: Mapping[str, Any], limit: Mapping[str, Any]) -> list[str]:
    """The grants of ``policy`` that ``limit`` as a boundary refuses, with IAM's reason."""
    out = []
    for request in grants(policy):
        assert decide([policy], None, request).allowed, request  # the policy grants it
        decision = decide([policy], limit, request)
        if not decision.allowed:
            out.append(f"{request.action} on {request.resource}: {decision.reason}")
    return out


# ---------------------------------------------------------------------------- the document
def test_the_vendored_policy_is_the_file_fetched_from_the_controllers_release() -> None:
    published = load_balancer_controller.published_bytes()
    assert hashlib.sha256(published).hexdigest() == FETCHED_SHA256
    blob = hashlib.sha1(b"blob %d\0" % len(published) + published).hexdigest()  # noqa: S324
    assert blob == FETCHED_GIT_BLOB  # git's id of the file: that of v3.5.0's
    assert (load_balancer_controller.SHA256, load_balancer_controller.GIT_BLOB) == (
        FETCHED_SHA256, FETCHED_GIT_BLOB)
    # hypd writes it unchanged in the partition it was published for
    assert load_balancer_controller.policy("aws") == json.loads(published)


@pytest.mark.parametrize("partition", ["aws-cn", "aws-us-gov"])
def test_in_another_partition_only_the_arns_partition_changes(partition: str) -> None:
    document = load_balancer_controller.policy(partition)
    text = json.dumps(document)
    assert "arn:aws:" not in text
    assert text.count(f"arn:{partition}:") == 13
    back = json.loads(text.replace(f"arn:{partition}:", "arn:aws:"))
    assert back == load_balancer_controller.policy("aws")


def test_the_load_balancer_controllers_role_has_that_policy_and_no_other() -> None:
    (role,) = (r for f in FEATURES.values() for r in f.roles if r.key == "inference-alb")
    assert role.inline == load_balancer_controller.POLICY_NAME
    assert role.managed_policies == ()
    assert role.service_accounts == ("hyperpod-inference-system:aws-load-balancer-controller",)
    ctx = RoleContext(tag="train", partition="aws-us-gov", region="us-gov-west-1",
                      account="123456789012", eks_arn="arn", boundary_arn=None)
    assert inline_policy(role, ctx) == load_balancer_controller.policy("aws-us-gov")


# ---------------------------------------------------------------------------- the boundary
@pytest.mark.parametrize("partition", sorted(REGIONS))
def test_the_feature_role_boundary_allows_every_grant_of_the_controllers_policy(
    partition: str,
) -> None:
    policy = load_balancer_controller.policy(partition)
    assert len(grants(policy)) > 80  # every statement, action and resource
    assert refused(policy, boundary(REGIONS[partition])) == []


def test_a_boundary_without_the_controllers_grants_refuses_them() -> None:
    # The boundary as it was (elasticloadbalancing:DescribeLoadBalancers only): refused.
    policy = load_balancer_controller.policy("aws")
    before = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["elasticloadbalancing:DescribeLoadBalancers"],
         "Resource": "*"}]}
    assert len(refused(policy, before)) == len(grants(policy)) - 1
    # One action less in the boundary: exactly its grants are named.
    limit = json.loads(json.dumps(boundary("us-west-2")))
    for statement in limit["Statement"]:
        if "elasticloadbalancing:ModifyIpPools" in statement["Action"]:
            statement["Action"].remove("elasticloadbalancing:ModifyIpPools")
    assert refused(policy, limit) == [
        "elasticloadbalancing:ModifyIpPools on *: because no permissions boundary allows the "
        "elasticloadbalancing:ModifyIpPools action"]


@pytest.mark.parametrize(("request_", "why"), [
    (Request("elasticloadbalancing:DeleteLoadBalancer",
             "arn:aws:elasticloadbalancing:us-west-2:123456789012:loadbalancer/app/other/1"),
     "a load balancer without the controller's tag"),
    (Request("ec2:DeleteSecurityGroup",
             "arn:aws:ec2:us-west-2:123456789012:security-group/sg-1"),
     "a security group without the controller's tag"),
    (Request("elasticloadbalancing:CreateLoadBalancer"), "an untagged create"),
    (Request("iam:CreateServiceLinkedRole", "*",
             {"iam:awsservicename": ["eks.amazonaws.com"]}), "another service's role"),
    (Request("elasticloadbalancing:CreateTrustStore"), "an action the controller never uses"),
    (Request("ec2:DescribeInstanceAttribute"), "an EC2 read the controller never uses"),
])
def test_the_boundary_keeps_the_controller_to_what_it_tagged(request_: Request, why: str) -> None:
    everything = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    assert not decide([everything], boundary("us-west-2"), request_).allowed, why


# ---------------------------------------------------------------------------- sizes
@pytest.mark.parametrize("partition", sorted(REGIONS))
def test_the_boundary_fits_the_managed_policy_quota(partition: str) -> None:
    size = iam_size(boundary(REGIONS[partition]))
    assert size <= MANAGED_POLICY_QUOTA, size


def _all_roles() -> list[FeatureRole]:
    return [r for f in FEATURES.values() for r in f.roles]


@pytest.mark.parametrize("partition", sorted(REGIONS))
def test_every_feature_roles_inline_policies_fit_the_role_quota(partition: str) -> None:
    region = REGIONS[partition]
    ctx = RoleContext(
        tag="a" * 20, partition=partition, region=region, account="123456789012",
        eks_arn=f"arn:{partition}:eks:{region}:123456789012:cluster/hypd-{'a' * 20}",
        boundary_arn=None,
        workspace_arn=f"arn:{partition}:aps:{region}:123456789012:workspace/ws-{'0' * 36}",
        tls_bucket="hyperpod-tls-" + "b" * 50,
    )
    sizes = {role.key: iam_size(inline_policy(role, ctx) or {}) for role in _all_roles()}
    assert max(sizes.values()) <= ROLE_INLINE_POLICIES_QUOTA, sizes
    # The controller's is the largest, a role's only inline policy: about half the quota.
    assert sizes["inference-alb"] == max(sizes.values())
    assert 5_196 <= sizes["inference-alb"] <= 5_196 + 13 * len("-us-gov")
