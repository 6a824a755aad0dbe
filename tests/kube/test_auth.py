"""EKS bearer-token authentication and access-entry authorisation, through the official client."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any, cast

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hypd_local.clock import VirtualClock
from hypd_local.emulator.eks_catalog import access_policy_arn
from hypd_local.kube import EDIT, AccessDecision, AccessPolicy, principal_arn
from tests.kube.conftest import CLUSTER, ClientFactory, Principals, eks_token

EDIT_ARN = access_policy_arn("aws", EDIT)


def _status(exc: ApiException) -> dict[str, object]:
    body = json.loads(exc.body or "{}")
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    return dict(body)


def _list_fails(api_client: k8s.ApiClient, code: int) -> dict[str, object]:
    with pytest.raises(ApiException) as caught:
        cast(Any, cast(Any, k8s.CoreV1Api(api_client))).list_namespaced_config_map("default")
    assert caught.value.status == code
    return _status(caught.value)


def test_admin_token_is_accepted(admin: k8s.ApiClient) -> None:
    names = {ns.metadata.name for ns in cast(Any, k8s.CoreV1Api(admin)).list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


def test_token_for_another_cluster_is_401(principals: Principals,
                                         access: dict[str, AccessDecision],
                                         make_client: ClientFactory) -> None:
    arn, session = principals.role("other")
    access[arn] = AccessDecision(arn, policies=(AccessPolicy(EDIT_ARN),))
    body = _list_fails(make_client(eks_token(session, "another-cluster")), 401)
    assert body["reason"] == "Unauthorized"
    assert body["code"] == 401


def test_bad_prefix_garbage_and_missing_token_are_401(principals: Principals,
                                                      access: dict[str, AccessDecision],
                                                      make_client: ClientFactory) -> None:
    arn, session = principals.role("prefix")
    access[arn] = AccessDecision(arn, policies=(AccessPolicy(EDIT_ARN),))
    good = eks_token(session, CLUSTER)
    _list_fails(make_client("k8s-aws-v2." + good.removeprefix("k8s-aws-v1.")), 401)
    _list_fails(make_client("k8s-aws-v1.!!!not-base64"), 401)
    _list_fails(make_client(""), 401)
    plain = base64.urlsafe_b64encode(b"https://example.com/?Action=GetCallerIdentity").decode()
    _list_fails(make_client("k8s-aws-v1." + plain.rstrip("=")), 401)


def test_token_without_signed_cluster_header_is_401(principals: Principals,
                                                    access: dict[str, AccessDecision],
                                                    make_client: ClientFactory) -> None:
    arn, session = principals.role("nohdr")
    access[arn] = AccessDecision(arn, policies=(AccessPolicy(EDIT_ARN),))
    url = session.client("sts").generate_presigned_url("get_caller_identity", ExpiresIn=60)
    token = "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    _list_fails(make_client(token), 401)


def test_token_expires_15_minutes_after_signing(principals: Principals,
                                                access: dict[str, AccessDecision],
                                                make_client: ClientFactory,
                                                clock: VirtualClock) -> None:
    arn, session = principals.role("expiry")
    access[arn] = AccessDecision(arn, policies=(AccessPolicy(EDIT_ARN),))
    api_client = make_client(eks_token(session, CLUSTER))
    core: Any = k8s.CoreV1Api(api_client)
    core.list_namespaced_config_map("default")
    clock.advance(timedelta(minutes=10).total_seconds())  # beyond X-Amz-Expires=60, as on EKS
    core.list_namespaced_config_map("default")
    clock.advance(timedelta(minutes=6).total_seconds())
    _list_fails(api_client, 401)


def test_token_with_expires_over_15_minutes_is_401(principals: Principals,
                                                   access: dict[str, AccessDecision],
                                                   make_client: ClientFactory) -> None:
    arn, session = principals.role("long")
    access[arn] = AccessDecision(arn, policies=(AccessPolicy(EDIT_ARN),))
    _list_fails(make_client(eks_token(session, CLUSTER, expires=3600)), 401)


def test_principal_without_access_entry_is_401(principals: Principals,
                                               make_client: ClientFactory) -> None:
    _arn, session = principals.role("stranger")
    body = _list_fails(make_client(eks_token(session, CLUSTER)), 401)
    assert body["message"] == "Unauthorized"


def test_access_entry_resolves_assumed_role_to_role_arn(principals: Principals,
                                                        access: dict[str, AccessDecision],
                                                        make_client: ClientFactory) -> None:
    arn, session = principals.role("mapped")
    assert arn.startswith("arn:aws:iam::")
    seen: list[str] = []
    access[arn] = AccessDecision(arn, policies=(AccessPolicy(EDIT_ARN),))
    api_client = make_client(eks_token(session, CLUSTER))
    cast(Any, cast(Any, k8s.CoreV1Api(api_client))).list_namespaced_config_map("default")
    seen.extend(access)
    assert arn in seen
    assert principal_arn("arn:aws:sts::123456789012:assumed-role/r/s") == (
        "arn:aws:iam::123456789012:role/r")
    assert principal_arn("arn:aws:iam::123456789012:user/u") == "arn:aws:iam::123456789012:user/u"


def test_entry_without_policy_is_403_with_status(principals: Principals,
                                                 access: dict[str, AccessDecision],
                                                 make_client: ClientFactory) -> None:
    arn, session = principals.role("nopolicy")
    access[arn] = AccessDecision(username="someone")
    api_client = make_client(eks_token(session, CLUSTER))
    body = _list_fails(api_client, 403)
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'configmaps is forbidden: User "someone" cannot list resource "configmaps" in API group '
        '"" in the namespace "default"')
    assert body["details"] == {"kind": "configmaps"}
    # discovery is open to every authenticated principal (system:discovery)
    assert k8s.VersionApi(api_client).get_code().major == "1"


def test_view_policy_reads_but_cannot_write_or_read_secrets(viewer: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(viewer)
    core.list_namespaced_config_map("default")
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", {"metadata": {"name": "x"}})
    assert caught.value.status == 403
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_secret("default")
    assert caught.value.status == 403


def test_namespace_scoped_policy(principals: Principals, access: dict[str, AccessDecision],
                                 make_client: ClientFactory, admin: k8s.ApiClient) -> None:
    cast(Any, k8s.CoreV1Api(admin)).create_namespace({"metadata": {"name": "team-a"}})
    arn, session = principals.role("scoped")
    access[arn] = AccessDecision.from_eks(
        {"principalArn": arn, "username": "scoped", "kubernetesGroups": []},
        [{"policyArn": EDIT_ARN, "accessScope": {"type": "namespace", "namespaces": ["team-*"]}}],
    )
    core: Any = k8s.CoreV1Api(make_client(eks_token(session, CLUSTER)))
    core.create_namespaced_config_map("team-a", {"metadata": {"name": "ok"}})
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("default", {"metadata": {"name": "no"}})
    assert caught.value.status == 403
    with pytest.raises(ApiException) as caught:
        core.list_node()
    assert caught.value.status == 403


@pytest.mark.parametrize("partition", ["aws", "aws-cn", "aws-us-gov"])
def test_an_access_policy_of_any_partition_grants_its_role(partition: str) -> None:
    from hypd_local.kube.auth import policy_allows

    edit = AccessPolicy(access_policy_arn(partition, EDIT))
    assert policy_allows(edit, "create", "apps", "deployments", "ml", namespaced=True)
    assert not policy_allows(edit, "create", "rbac.authorization.k8s.io", "roles", "ml",
                             namespaced=True)


def test_an_arn_that_is_not_an_eks_access_policy_grants_nothing() -> None:
    from hypd_local.kube.auth import policy_allows

    lookalike = AccessPolicy("arn:aws:iam::aws:policy/AmazonEKSClusterAdminPolicy")
    assert not policy_allows(lookalike, "get", "", "pods", "default", namespaced=True)


def _presigned_at(session: Any, endpoint: str, cluster: str) -> str:
    """A token as ``aws eks get-token`` makes one with AWS_ENDPOINT_URL_STS=endpoint."""
    sts = session.client("sts", endpoint_url=endpoint)

    def add_header(request: Any, **_: Any) -> None:
        request.headers["x-k8s-aws-id"] = cluster

    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_header)
    url = sts.generate_presigned_url("get_caller_identity", ExpiresIn=60, HttpMethod="GET")
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def test_a_token_may_name_the_local_sts_but_no_other_host(
    principals: Principals, access: dict[str, AccessDecision], make_client: ClientFactory,
    sts_endpoint: str,
) -> None:
    arn, session = principals.role("local-sts")
    access[arn] = AccessDecision(arn, policies=(AccessPolicy(EDIT_ARN),))
    local = make_client(_presigned_at(session, sts_endpoint, CLUSTER))
    cast(Any, k8s.CoreV1Api(local)).list_namespaced_config_map("default")
    host, port = sts_endpoint.rsplit(":", 1)
    _list_fails(make_client(_presigned_at(session, f"{host}:{int(port) + 1}", CLUSTER)), 401)
    _list_fails(make_client(_presigned_at(session, "http://sts.us-west-2.amazonaws.com",
                                          CLUSTER)), 401)
    _list_fails(make_client(_presigned_at(session, sts_endpoint, "another-cluster")), 401)
