"""Who is calling: the IAM principal behind an access key, with its policies, read from moto.

The local cloud issues credentials the way AWS does (STS AssumeRole for each function's role,
for each state machine's role, for CloudFormation's stack role...). A request signed with such
a key is made by that role's session and is authorised against the role's policies; so is one
signed with an IAM user's access key. A key the local cloud did not issue stands for the
account's administrator (the developer's own credentials, which nothing here can check): its
requests are not authorised, as before.

Policies are read from moto's IAM on every request, so a change (``PutRolePolicy``) applies
at once, as IAM's eventual consistency at its fastest.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hypd_local.iam.policy import parse
from hypd_local.threadvalue import set_for_block


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller."""

    caller_arn: str
    """What STS GetCallerIdentity says (``arn:aws:sts::A:assumed-role/Role/session``)."""
    arn: str
    """The IAM identity: the role's ARN (with its path) or the user's."""
    account: str
    kind: str
    """``AssumedRole`` or ``User`` (aws:PrincipalType)."""
    user_id: str
    identity_policies: tuple[Any, ...] = ()
    boundary: Any | None = None
    session_policy: Any | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.arn.rsplit("/", 1)[-1]

    def context(self) -> dict[str, list[str]]:
        """The principal's global condition keys."""
        keys: dict[str, list[str]] = {
            "aws:principalarn": [self.arn],
            "aws:principalaccount": [self.account],
            "aws:principaltype": [self.kind],
            "aws:userid": [self.user_id],
            "aws:principalisawsservice": ["false"],
        }
        if self.kind == "User":
            keys["aws:username"] = [self.name]
        for key, value in self.tags.items():
            keys[f"aws:principaltag/{key.lower()}"] = [value]
        return keys


_CALLER = threading.local()


def current_caller() -> Principal | None:
    """The principal whose request the emulators are serving on this thread (None: the
    account's administrator, or no request)."""
    return getattr(_CALLER, "principal", None)


@contextmanager
def acting_as(principal: Principal | None) -> Iterator[None]:
    """``principal`` is `current_caller` on the calling thread until the block ends."""
    with set_for_block(_CALLER, "principal", principal):
        yield


def _tag_map(tags: Any) -> dict[str, str]:
    if isinstance(tags, dict):
        if "Key" in tags and "Value" in tags:
            return {str(tags["Key"]): str(tags["Value"])}
        return {str(k): str(v) for k, v in tags.items()}
    out: dict[str, str] = {}
    for tag in tags or []:
        if isinstance(tag, dict) and "Key" in tag:
            out[str(tag["Key"])] = str(tag.get("Value", ""))
    return out


def _default_document(policy: Any) -> Any:
    for version in getattr(policy, "versions", []):
        if version.is_default:
            return version.document
    return getattr(policy, "document", None) or {"Statement": []}


@dataclass(frozen=True)
class RoleRecord:
    """A role as IAM holds it."""

    arn: str
    name: str
    path: str
    trust_policy: Any
    policies: tuple[Any, ...]
    boundary: Any | None
    boundary_arn: str | None
    tags: Mapping[str, str]
    linked_service: str | None


class Directory:
    """moto's IAM and STS of one account, read as IAM would."""

    def __init__(self, account_id: str, region: str) -> None:
        self.account_id = account_id
        self.region = region
        self.partition = partition_of(region)
        self._by_key: dict[str, str] = {}
        self._lock = threading.Lock()

    def _iam(self) -> Any:
        from moto.iam.models import iam_backends

        return iam_backends[self.account_id][self.partition]

    def _sts(self) -> Any:
        from moto.sts.models import sts_backends

        return sts_backends[self.account_id][self.partition]

    # ------------------------------------------------------------------ roles
    def role(self, arn_or_name: str) -> RoleRecord | None:
        iam = self._iam()
        role = None
        for candidate in list(iam.roles.values()):
            if arn_or_name in (candidate.arn, candidate.name):
                role = candidate
                break
        if role is None:
            return None
        policies: list[Any] = [parse(doc) for doc in role.policies.values()]
        policies += [parse(_default_document(p)) for p in role.managed_policies.values()]
        boundary_arn = role.permissions_boundary_arn or None
        boundary = None
        if boundary_arn:
            managed = iam.managed_policies.get(boundary_arn)
            # A boundary that does not exist allows nothing.
            boundary = parse(_default_document(managed)) if managed else {"Statement": []}
        return RoleRecord(
            arn=role.arn, name=role.name, path=role.path,
            trust_policy=parse(role.assume_role_policy_document),
            policies=tuple(policies), boundary=boundary, boundary_arn=boundary_arn,
            tags=_tag_map(role.tags), linked_service=getattr(role, "_linked_service", None),
        )

    def role_arn(self, name: str) -> str | None:
        record = self.role(name)
        return record.arn if record else None

    # ------------------------------------------------------------------ callers
    def principal(self, access_key_id: str) -> Principal | None:
        """The principal of a key the local cloud issued; None for any other key."""
        sts = self._sts()
        assumed = sts.get_assumed_role_from_access_key(access_key_id)
        if assumed is not None:
            record = self.role(assumed.role_arn)
            if record is None:  # the role was deleted: its sessions can do nothing
                return Principal(assumed.arn, assumed.role_arn, self.account_id, "AssumedRole",
                                 f"AROA:{assumed.session_name}")
            return Principal(
                caller_arn=assumed.arn, arn=record.arn, account=self.account_id,
                kind="AssumedRole", user_id=assumed.user_id,
                identity_policies=record.policies, boundary=record.boundary,
                session_policy=parse(assumed.policy) if assumed.policy else None,
                tags=record.tags,
            )
        iam = self._iam()
        user = iam.get_user_from_access_key_id(access_key_id)
        if user is None:
            return None
        policies: list[Any] = [parse(doc) for doc in user.policies.values()]
        policies += [parse(_default_document(p)) for p in user.managed_policies.values()]
        for group in iam.get_groups_for_user(user.name):
            policies += [parse(doc) for doc in group.policies.values()]
            policies += [parse(_default_document(p)) for p in group.managed_policies.values()]
        boundary = None
        boundary_arn = getattr(user, "permissions_boundary", None)
        if isinstance(boundary_arn, dict):
            boundary_arn = boundary_arn.get("PermissionsBoundaryArn")
        if boundary_arn:
            managed = iam.managed_policies.get(boundary_arn)
            boundary = parse(_default_document(managed)) if managed else {"Statement": []}
        return Principal(
            caller_arn=user.arn, arn=user.arn, account=self.account_id, kind="User",
            user_id=user.id, identity_policies=tuple(policies), boundary=boundary,
            tags=_tag_map(getattr(user, "tags", {})),
        )

    # ------------------------------------------------------------------ AWS managed policies
    def ensure_aws_managed_policy(self, arn: str) -> bool:
        """Make an AWS managed policy (``arn:aws:iam::aws:policy/...``) known to moto's IAM,
        from moto's own copy of AWS's documents; False when moto does not have it."""
        iam = self._iam()
        if arn in iam.managed_policies:
            return True
        name = arn.rsplit("/", 1)[-1]
        data = _aws_managed_policies().get(name)
        if data is None:
            return False
        from moto.iam.models import AWSManagedPolicy

        policy = AWSManagedPolicy.from_data(name, self.account_id, self.region, data)
        if policy.arn != arn:  # a path that moto's copy does not have
            return False
        iam.managed_policies[policy.arn] = policy
        return True

    # ------------------------------------------------------------------ service-linked roles
    def service_linked_role(self, service: str) -> RoleRecord | None:
        for role in list(self._iam().roles.values()):
            if getattr(role, "_linked_service", None) == service:
                return self.role(role.arn)
        return None

    def create_service_linked_role(self, service: str, role_name: str,
                                   policy_arn: str | None) -> RoleRecord:
        """What a service does on its first use in an account (its caller allowed it)."""
        iam = self._iam()
        trust = {"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"Service": [service]}, "Action": ["sts:AssumeRole"],
        }]}
        with self._lock:
            if self.service_linked_role(service) is None:
                iam.create_role(role_name, json.dumps(trust), f"/aws-service-role/{service}/",
                                permissions_boundary=None, description=f"{service} SLR",
                                tags=[], max_session_duration="3600", linked_service=service)
                if policy_arn and self.ensure_aws_managed_policy(policy_arn):
                    iam.attach_role_policy(policy_arn, role_name)
        record = self.service_linked_role(service)
        assert record is not None
        return record

    def service_linked_role_arn(self, service: str, role_name: str) -> str:
        return (f"arn:{self.partition}:iam::{self.account_id}:role/aws-service-role/"
                f"{service}/{role_name}")


@functools.cache
def _aws_managed_policies() -> dict[str, Any]:
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    data: dict[str, Any] = json.loads(aws_managed_policies_data)
    return data
