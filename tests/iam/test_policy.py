"""IAM policy evaluation: statements, wildcards, conditions, boundaries, trust policies."""

from __future__ import annotations

from typing import Any

import pytest

from hypd_local.iam.policy import Outcome, Request, condition_holds, decide, evaluate, trusts

ROLE = "arn:aws:iam::123456789012:role/r"


def allow(action: Any, resource: Any = "*", **extra: Any) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": action, "Resource": resource, **extra}]}


def test_an_action_is_allowed_only_by_a_statement_that_names_it() -> None:
    policy = allow(["ec2:Describe*", "sagemaker:DescribeCluster"])
    assert evaluate([policy], Request("ec2:DescribeSubnets")) is Outcome.ALLOW
    assert evaluate([policy], Request("EC2:describesubnets")) is Outcome.ALLOW  # case-blind
    assert evaluate([policy], Request("ec2:CreateSubnet")) is Outcome.NONE


def test_a_grant_on_an_arn_does_not_grant_an_action_authorised_against_star() -> None:
    # Given eks:CreateCluster granted on cluster ARNs (it has no resource type)
    policy = allow("eks:CreateCluster", "arn:aws:eks:us-west-2:123456789012:cluster/hypd-*")
    # Then the request (authorised against "*") is not allowed; a grant on "*" is
    assert evaluate([policy], Request("eks:CreateCluster", "*")) is Outcome.NONE
    assert evaluate([allow("eks:CreateCluster")], Request("eks:CreateCluster")) is Outcome.ALLOW


def test_resources_match_case_sensitively_with_wildcards() -> None:
    policy = allow("s3:GetObject", "arn:aws:s3:::data-?/*")
    assert evaluate([policy], Request("s3:GetObject", "arn:aws:s3:::data-1/a/b")) is Outcome.ALLOW
    assert evaluate([policy], Request("s3:GetObject", "arn:aws:s3:::DATA-1/a")) is Outcome.NONE


def test_an_explicit_deny_wins_over_any_allow() -> None:
    deny = {"Statement": [{"Effect": "Deny", "Action": "*", "Resource": "*"}]}
    assert evaluate([allow("*"), deny], Request("sts:AssumeRole")) is Outcome.DENY


def test_not_action_and_not_resource_apply_to_everything_else() -> None:
    policy = {"Statement": [{"Effect": "Allow", "NotAction": "iam:*",
                             "NotResource": "arn:aws:s3:::secret"}]}
    assert evaluate([policy], Request("s3:GetObject", "arn:aws:s3:::open")) is Outcome.ALLOW
    assert evaluate([policy], Request("iam:GetRole", ROLE)) is Outcome.NONE
    assert evaluate([policy], Request("s3:GetObject", "arn:aws:s3:::secret")) is Outcome.NONE


@pytest.mark.parametrize(("operator", "policy_value", "context", "holds"), [
    ("StringEquals", "a", {"k": ["a"]}, True),
    ("StringEquals", ["x", "a"], {"k": ["a"]}, True),
    ("StringEquals", "a", {}, False),  # absent: a positive operator fails
    ("StringNotEquals", "a", {}, True),  # absent: a negated one holds
    ("StringNotEquals", "a", {"k": ["b"]}, True),
    ("StringNotEquals", ["a", "b"], {"k": ["b"]}, False),
    ("StringLike", "?*", {"k": ["v"]}, True),
    ("StringLike", "?*", {"k": [""]}, False),
    ("StringEqualsIfExists", "a", {}, True),
    ("StringEqualsIgnoreCase", "ABC", {"k": ["abc"]}, True),
    ("ForAnyValue:StringEquals", ["a", "b"], {"k": ["c", "b"]}, True),
    ("ForAnyValue:StringEquals", ["a"], {}, False),
    ("ForAllValues:StringEquals", ["a", "b"], {"k": ["a", "b"]}, True),
    ("ForAllValues:StringEquals", ["a"], {"k": ["a", "z"]}, False),
    ("ForAllValues:StringEquals", ["a"], {}, True),
    ("Bool", "true", {"k": ["true"]}, True),
    ("Bool", False, {"k": ["false"]}, True),
    ("Null", "true", {}, True),
    ("Null", "false", {"k": ["x"]}, True),
    ("NumericLessThan", "10", {"k": ["9"]}, True),
    ("NumericGreaterThanEquals", 10, {"k": ["9"]}, False),
    ("DateGreaterThan", "2026-01-01T00:00:00Z", {"k": ["2026-06-01T00:00:00Z"]}, True),
    ("ArnLike", "arn:aws:iam::*:role/hypd/*", {"k": ["arn:aws:iam::1:role/hypd/x"]}, True),
    ("ArnNotLike", "arn:aws:iam::*:role/hypd/*", {"k": ["arn:aws:iam::1:role/y"]}, True),
    ("IpAddress", "10.0.0.0/8", {"k": ["10.1.2.3"]}, True),
])
def test_condition_operators_follow_the_iam_reference(
    operator: str, policy_value: Any, context: dict[str, list[str]], holds: bool
) -> None:
    assert condition_holds(operator, "K", policy_value, context) is holds


def test_an_unknown_operator_is_an_error_not_a_silent_match() -> None:
    with pytest.raises(ValueError, match="StringSorta"):
        condition_holds("StringSorta", "k", "v", {"k": ["v"]})


def test_all_operators_and_keys_of_a_condition_must_hold() -> None:
    policy = allow("eks:CreateCluster", Condition={
        "StringLike": {"aws:RequestTag/hypd:tag": "?*"},
        "StringEquals": {"eks:authenticationMode": "API"},
    })
    both = {"aws:requesttag/hypd:tag": ["demo"], "eks:authenticationmode": ["API"]}
    assert evaluate([policy], Request("eks:CreateCluster", context=both)) is Outcome.ALLOW
    one = {"aws:requesttag/hypd:tag": ["demo"], "eks:authenticationmode": ["CONFIG_MAP"]}
    assert evaluate([policy], Request("eks:CreateCluster", context=one)) is Outcome.NONE


def test_policy_variables_resolve_from_the_context() -> None:
    policy = allow("eks:DescribeCluster", Condition={
        "StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}})
    same = {"aws:resourceaccount": ["1"], "aws:principalaccount": ["1"]}
    other = {"aws:resourceaccount": ["2"], "aws:principalaccount": ["1"]}
    assert evaluate([policy], Request("eks:DescribeCluster", context=same)) is Outcome.ALLOW
    assert evaluate([policy], Request("eks:DescribeCluster", context=other)) is Outcome.NONE
    # an unresolvable variable matches nothing
    assert evaluate([policy], Request("eks:DescribeCluster", context={
        "aws:resourceaccount": ["1"]})) is Outcome.NONE


def test_a_boundary_limits_what_identity_policies_allow() -> None:
    identity = [allow(["iam:CreateRole", "sagemaker:BatchAddClusterNodes"])]
    boundary = allow("sagemaker:BatchAddClusterNodes")
    assert decide(identity, boundary, Request("sagemaker:BatchAddClusterNodes")).allowed
    refused = decide(identity, boundary, Request("iam:CreateRole"))
    assert not refused.allowed
    assert refused.reason == "because no permissions boundary allows the iam:CreateRole action"
    assert decide([], boundary, Request("sagemaker:BatchAddClusterNodes")).reason == (
        "because no identity-based policy allows the sagemaker:BatchAddClusterNodes action")


def test_a_trust_policy_names_the_services_that_may_assume_the_role() -> None:
    trust = {"Statement": [{"Effect": "Allow", "Principal": {"Service": ["lambda.amazonaws.com"]},
                            "Action": ["sts:AssumeRole"]}]}
    assert trusts(trust, "lambda.amazonaws.com")
    assert not trusts(trust, "states.amazonaws.com")
    assert not trusts({"Statement": []}, "lambda.amazonaws.com")
