"""IAM adapter: the roles hypd makes for a cluster (the autoscaling cluster role, the feature
roles) and the cluster's OIDC provider."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from hypd.aws.errors import NETWORK_ERRORS, error_code, translate
from hypd.errors import AwsUnavailable

NO_SUCH_ENTITY = "NoSuchEntity"


@dataclass(frozen=True)
class Role:
    name: str
    arn: str
    path: str
    trust_policy: dict[str, Any]
    permissions_boundary: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


def _policy(document: Any) -> dict[str, Any]:
    """A policy document as a dict (botocore decodes IAM's URL-encoded JSON; a string is
    parsed in case a client did not)."""
    if isinstance(document, str):
        parsed: dict[str, Any] = json.loads(document)
        return parsed
    return dict(document or {})


def _call(action: str, call: Any, *, missing_ok: bool = False) -> Any:
    try:
        return call()
    except ClientError as exc:
        if missing_ok and error_code(exc) == NO_SUCH_ENTITY:
            return None
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc


def get_role(client: Any, name: str) -> Role | None:
    """The role, or None when there is none of that name."""
    answer = _call(f"reading IAM role {name}", lambda: client.get_role(RoleName=name),
                   missing_ok=True)
    if answer is None:
        return None
    raw = answer["Role"]
    return Role(
        name=raw["RoleName"],
        arn=raw["Arn"],
        path=raw.get("Path", "/"),
        trust_policy=_policy(raw.get("AssumeRolePolicyDocument")),
        permissions_boundary=(raw.get("PermissionsBoundary") or {}).get(
            "PermissionsBoundaryArn"
        ),
        tags={t["Key"]: t["Value"] for t in raw.get("Tags") or []},
    )


def create_role(
    client: Any,
    *,
    name: str,
    path: str,
    trust_policy: dict[str, Any],
    permissions_boundary: str | None,
    description: str,
    tags: dict[str, str],
) -> Role:
    """Create the role; one that exists already (a crashed earlier run) is returned as it is."""
    kwargs: dict[str, Any] = {
        "RoleName": name,
        "Path": path,
        "AssumeRolePolicyDocument": json.dumps(trust_policy),
        "Description": description,
        "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())],
    }
    if permissions_boundary:
        kwargs["PermissionsBoundary"] = permissions_boundary
    try:
        client.create_role(**kwargs)
    except ClientError as exc:
        if error_code(exc) != "EntityAlreadyExists":
            raise translate(exc, f"creating IAM role {name}") from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, f"creating IAM role {name}") from exc
    role = get_role(client, name)
    if role is None:  # IAM is eventually consistent: look again on the next attempt
        raise AwsUnavailable(
            f"creating IAM role {name}: created, but not visible to GetRole yet",
            details={"awsErrorCode": NO_SUCH_ENTITY},
        )
    return role


def update_trust_policy(client: Any, name: str, trust_policy: dict[str, Any]) -> None:
    _call(
        f"updating the trust policy of IAM role {name}",
        lambda: client.update_assume_role_policy(
            RoleName=name, PolicyDocument=json.dumps(trust_policy)
        ),
    )


def inline_policy(client: Any, role: str, policy: str) -> dict[str, Any] | None:
    """The role's inline policy document, or None when it has none of that name."""
    answer = _call(
        f"reading inline policy {policy} of IAM role {role}",
        lambda: client.get_role_policy(RoleName=role, PolicyName=policy),
        missing_ok=True,
    )
    return None if answer is None else _policy(answer.get("PolicyDocument"))


def put_inline_policy(client: Any, role: str, policy: str, document: dict[str, Any]) -> None:
    _call(
        f"writing inline policy {policy} of IAM role {role}",
        lambda: client.put_role_policy(
            RoleName=role, PolicyName=policy, PolicyDocument=json.dumps(document)
        ),
    )


def delete_role(client: Any, name: str) -> bool:
    """Delete the role and its inline policies; False when there was no such role.

    Raises AwsRequestRejected (DeleteConflict) when it still has attached managed policies or
    instance profiles: hypd's roles have neither, so that means someone changed it.
    """
    names = _call(
        f"listing inline policies of IAM role {name}",
        lambda: client.list_role_policies(RoleName=name),
        missing_ok=True,
    )
    if names is None:
        return False
    for policy_arn in attached_policies(client, name):
        detach_policy(client, name, policy_arn)
    for policy in names.get("PolicyNames") or []:
        _call(
            f"deleting inline policy {policy} of IAM role {name}",
            lambda policy=policy: client.delete_role_policy(RoleName=name, PolicyName=policy),
            missing_ok=True,
        )
    deleted = _call(
        f"deleting IAM role {name}", lambda: client.delete_role(RoleName=name), missing_ok=True
    )
    return deleted is not None


def attached_policies(client: Any, role: str) -> list[str]:
    """The ARNs of the managed policies attached to the role (none when there is no role)."""
    answer = _call(
        f"listing the managed policies of IAM role {role}",
        lambda: client.list_attached_role_policies(RoleName=role),
        missing_ok=True,
    )
    return sorted(p["PolicyArn"] for p in (answer or {}).get("AttachedPolicies") or [])


def attach_policy(client: Any, role: str, policy_arn: str) -> None:
    _call(
        f"attaching {policy_arn} to IAM role {role}",
        lambda: client.attach_role_policy(RoleName=role, PolicyArn=policy_arn),
    )


def detach_policy(client: Any, role: str, policy_arn: str) -> None:
    _call(
        f"detaching {policy_arn} from IAM role {role}",
        lambda: client.detach_role_policy(RoleName=role, PolicyArn=policy_arn),
        missing_ok=True,
    )


def delete_inline_policy(client: Any, role: str, policy: str) -> None:
    _call(
        f"deleting inline policy {policy} of IAM role {role}",
        lambda: client.delete_role_policy(RoleName=role, PolicyName=policy),
        missing_ok=True,
    )


# ---------------------------------------------------------------------------- OIDC providers
@dataclass(frozen=True)
class OidcProvider:
    arn: str
    url: str
    """Without the scheme, as IAM keeps it (``oidc.eks.us-west-2.amazonaws.com/id/ABC``)."""
    tags: dict[str, str] = field(default_factory=dict)


def oidc_provider_arn(partition: str, account: str, issuer: str) -> str:
    """The ARN IAM gives the provider of `issuer` (an EKS cluster's ``identity.oidc.issuer``)."""
    return f"arn:{partition}:iam::{account}:oidc-provider/{issuer.removeprefix('https://')}"


def get_oidc_provider(client: Any, arn: str) -> OidcProvider | None:
    answer = _call(
        f"reading IAM OIDC provider {arn}",
        lambda: client.get_open_id_connect_provider(OpenIDConnectProviderArn=arn),
        missing_ok=True,
    )
    if answer is None:
        return None
    return OidcProvider(
        arn=arn,
        url=str(answer.get("Url") or arn.split(":oidc-provider/", 1)[-1]),
        tags={t["Key"]: t["Value"] for t in answer.get("Tags") or []},
    )


def list_oidc_providers(client: Any) -> list[OidcProvider]:
    """Every OIDC provider of the account, with its tags."""
    providers = _call("listing IAM OIDC providers",
                      lambda: client.list_open_id_connect_providers())
    found = []
    for provider in providers.get("OpenIDConnectProviderList") or []:
        described = get_oidc_provider(client, str(provider["Arn"]))
        if described is not None:
            found.append(described)
    return found


def create_oidc_provider(client: Any, issuer: str, tags: dict[str, str]) -> str:
    """The provider's ARN; one that exists already is kept (EntityAlreadyExists)."""
    action = f"creating the IAM OIDC provider of {issuer}"
    try:
        answer = client.create_open_id_connect_provider(
            Url=issuer,
            ClientIDList=["sts.amazonaws.com"],
            Tags=[{"Key": k, "Value": v} for k, v in sorted(tags.items())],
        )
        return str(answer["OpenIDConnectProviderArn"])
    except ClientError as exc:
        if error_code(exc) != "EntityAlreadyExists":
            raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc
    providers = _call(
        "listing IAM OIDC providers", lambda: client.list_open_id_connect_providers()
    )
    host = issuer.removeprefix("https://")
    for provider in providers.get("OpenIDConnectProviderList") or []:
        if str(provider["Arn"]).endswith(f":oidc-provider/{host}"):
            return str(provider["Arn"])
    raise AwsUnavailable(f"{action}: it exists, but IAM does not list it yet")


def delete_oidc_provider(client: Any, arn: str) -> None:
    _call(
        f"deleting IAM OIDC provider {arn}",
        lambda: client.delete_open_id_connect_provider(OpenIDConnectProviderArn=arn),
        missing_ok=True,
    )
