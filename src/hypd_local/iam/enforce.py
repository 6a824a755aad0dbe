"""Authorising every request of a principal the local cloud issued, and what services do with
the roles and accounts a request involves.

For each request the middleware in front of moto and the emulators sees (``hypd_local.
emulator.middleware``):

1. ``principal_of``: the access key of its SigV4 signature names the caller
   (``hypd_local.iam.principals``); a key the local cloud did not issue is the account's
   administrator, and is not authorised.
2. ``authorize``: the request's checks (``hypd_local.iam.resolvers``) against the caller's
   policies (``hypd_local.iam.checks``); a denial is answered as the service answers it:
   ``AccessDeniedException`` (JSON and REST-JSON services), ``AccessDenied`` (IAM, STS,
   CloudFormation, S3, SQS), ``AuthorizationError`` (SNS), ``UnauthorizedOperation`` (EC2), with
   AWS's message ``User: ... is not authorized to perform: ACTION on resource: ARN because ...``.
3. ``before``: what the service itself checks and does before it acts, whoever calls:

   - a role handed to a service must exist and trust that service (EKS's cluster role,
     HyperPod's execution roles, CloudFormation's stack role, pod identity roles);
   - a service's first use in a fresh account creates its service-linked role, which its
     caller must be allowed to create (``iam:CreateServiceLinkedRole`` with
     ``iam:AWSServiceName``): EKS (``AWSServiceRoleForAmazonEKS``), FSx
     (``AWSServiceRoleForAmazonFSx``), HyperPod (``AWSServiceRoleForSageMakerHyperPod``,
     ``hyperpod.sagemaker.amazonaws.com``).

``acting(principal)`` makes the caller known to the emulators while they serve the request
(``current_caller``): the EKS emulator names it as the creator of a cluster.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hypd_local.emulator.errors import AwsError
from hypd_local.emulator.protocol import HttpRequest
from hypd_local.iam.checks import Check, Denial, UnknownAction, authorize
from hypd_local.iam.policy import trusts
from hypd_local.iam.principals import Directory, Principal, acting_as, current_caller
from hypd_local.iam.resolvers import (
    HYPERPOD_SERVICE_LINKED_ROLE,
    Unresolvable,
    resolve,
    service_linked_role_check,
)
from hypd_local.iam.world import World

LOG = logging.getLogger("hypd_local.iam")

_CREDENTIAL = ("Credential=", "X-Amz-Credential")


def access_key_of(request: HttpRequest) -> str | None:
    """The access key id of a SigV4-signed request (header or presigned query)."""
    authorization = request.headers.get("authorization", "")
    marker = authorization.find("Credential=")
    if marker >= 0:
        return authorization[marker + len("Credential="):].split("/", 1)[0] or None
    for key, value in request.query:
        if key == "X-Amz-Credential":
            return value.split("/", 1)[0] or None
    return None


# (code, status) of a denial by service (botocore name) or protocol
_DENIAL_BY_SERVICE = {
    "ec2": ("UnauthorizedOperation", 403),
    "sns": ("AuthorizationError", 403),
    "sqs": ("AccessDenied", 403),
}
_DENIAL_BY_PROTOCOL = {
    "json": ("AccessDeniedException", 400),
    "rest-json": ("AccessDeniedException", 403),
    "query": ("AccessDenied", 403),
    "ec2": ("UnauthorizedOperation", 403),
    "rest-xml": ("AccessDenied", 403),
}


def denial_error(service: str, protocol: str, denial: Denial) -> AwsError:
    code, status = _DENIAL_BY_SERVICE.get(service) or _DENIAL_BY_PROTOCOL[protocol]
    message = denial.message
    if service == "ec2":
        message = f"You are not authorized to perform this operation. {message}"
    return AwsError(message, code=code, status=status)


@dataclass(frozen=True)
class PassedRole:
    """A role a request hands to a service, which the service assumes later."""

    arn: str
    service: str
    what: str


@dataclass(frozen=True)
class LinkedRole:
    service: str
    role_name: str
    policy_arn: str


_EKS_SLR = LinkedRole("eks.amazonaws.com", "AWSServiceRoleForAmazonEKS",
                      "arn:aws:iam::aws:policy/aws-service-role/AmazonEKSServiceRolePolicy")
_FSX_SLR = LinkedRole("fsx.amazonaws.com", "AWSServiceRoleForAmazonFSx",
                      "arn:aws:iam::aws:policy/aws-service-role/AmazonFSxServiceRolePolicy")
_HYPERPOD_SLR = LinkedRole(
    HYPERPOD_SERVICE_LINKED_ROLE[0], HYPERPOD_SERVICE_LINKED_ROLE[1],
    "arn:aws:iam::aws:policy/aws-service-role/AmazonSageMakerHyperPodServiceRolePolicy")


def _passed_roles(service: str, operation: str, params: Mapping[str, Any]) -> list[PassedRole]:
    if service == "eks" and operation == "CreateCluster" and params.get("roleArn"):
        return [PassedRole(str(params["roleArn"]), "eks.amazonaws.com", "clusterRole")]
    if service == "eks" and operation in ("CreateAddon", "UpdateAddon"):
        return [PassedRole(str(a["roleArn"]), "pods.eks.amazonaws.com", "pod identity role")
                for a in params.get("podIdentityAssociations") or [] if a.get("roleArn")]
    if service == "eks" and operation in ("CreatePodIdentityAssociation",
                                          "UpdatePodIdentityAssociation") and params.get(
                                              "roleArn"):
        return [PassedRole(str(params["roleArn"]), "pods.eks.amazonaws.com",
                           "pod identity role")]
    if service == "sagemaker" and operation in ("CreateCluster", "UpdateCluster"):
        return [PassedRole(str(g["ExecutionRole"]), "sagemaker.amazonaws.com",
                           f"the execution role of instance group {g.get('InstanceGroupName')}")
                for g in params.get("InstanceGroups") or [] if g.get("ExecutionRole")]
    if service == "cloudformation" and operation in ("CreateStack", "UpdateStack",
                                                     "DeleteStack") and params.get("RoleARN"):
        return [PassedRole(str(params["RoleARN"]), "cloudformation.amazonaws.com", "RoleARN")]
    return []


def _untrusted(service: str, role: PassedRole, exists: bool) -> AwsError:
    """The error each service gives for a role it cannot assume."""
    if service == "eks":
        if not exists:
            return AwsError(f"Role with arn: {role.arn}, could not be assumed because it does "
                            "not exist or the trusted entity is not correct",
                            code="InvalidParameterException", status=400)
        return AwsError(f"Following required service principals [{role.service}] were not "
                        f"found in the trust relationships of {role.what} {role.arn}",
                        code="InvalidParameterException", status=400)
    if service == "cloudformation":
        return AwsError(f"Role {role.arn} is invalid or cannot be assumed",
                        code="ValidationError", status=400)
    return AwsError(f"The role {role.arn} ({role.what}) does not exist or does not trust "
                    f"{role.service}.", code="ValidationException", status=400)


def _linked_role(service: str, operation: str) -> LinkedRole | None:
    if service == "eks" and operation == "CreateCluster":
        return _EKS_SLR
    if service == "fsx" and operation == "CreateFileSystem":
        return _FSX_SLR
    if service == "sagemaker" and operation == "CreateCluster":
        return _HYPERPOD_SLR
    return None


def _slr_denied(service: str, linked: LinkedRole, denial: Denial) -> AwsError:
    if service == "eks":
        # EKS's words for a missing service-linked role permission (seen for node groups).
        return AwsError(f"Failed to create service linked role: {linked.role_name} due to "
                        "missing permissions for 'iam:CreateServiceLinkedRole'. "
                        f"{denial.message}", code="InvalidRequestException", status=400)
    code = "AccessDeniedException"
    return AwsError(denial.message, code=code, status=400)


@dataclass(frozen=True)
class Authorization:
    """One authorised (or denied) request, as an observer sees it."""

    principal: Principal
    operation: str
    """The API call, ``<IAM prefix>:<Operation>`` (``dynamodb:TransactWriteItems``)."""
    checks: tuple[Check, ...]
    denial: Denial | None


class Enforcer:
    """Authorisation and the services' own role checks for one local cloud's account."""

    def __init__(self, *, account_id: str, region: str, directory: Directory, world: World,
                 now: Callable[[], datetime]) -> None:
        self.account_id = account_id
        self.region = region
        self.directory = directory
        self.world = world
        self.now = now
        self._observers: list[Callable[[Authorization], None]] = []
        self._observers_lock = threading.Lock()

    @contextmanager
    def watch(self, observer: Callable[[Authorization], None]) -> Iterator[None]:
        """Call ``observer`` after every authorisation of an issued principal's request."""
        with self._observers_lock:
            self._observers.append(observer)
        try:
            yield
        finally:
            with self._observers_lock:
                self._observers.remove(observer)

    # ------------------------------------------------------------------ who
    def principal_of(self, request: HttpRequest) -> Principal | None:
        key = access_key_of(request)
        return self.directory.principal(key) if key else None

    def base_context(self) -> dict[str, list[str]]:
        now = self.now()
        return {
            "aws:requestedregion": [self.region],
            "aws:currenttime": [now.strftime("%Y-%m-%dT%H:%M:%SZ")],
            "aws:epochtime": [str(int(now.timestamp()))],
            "aws:securetransport": ["true"],  # AWS's endpoints are HTTPS
            "aws:viaawsservice": ["false"],
            "aws:resourceaccount": [self.account_id],
        }

    # ------------------------------------------------------------------ authorisation
    def checks(self, service: str, prefix: str, operation: str,
               params: dict[str, Any]) -> list[Check]:
        return resolve(service, prefix, operation, params, self.world)

    def authorize(self, principal: Principal, service: str, prefix: str, operation: str,
                  params: dict[str, Any]) -> Denial | None:
        """The denial of this request, or None when every check is allowed.

        Raises Unresolvable / UnknownAction for a request the local cloud cannot authorise.
        """
        checks = self.checks(service, prefix, operation, params)
        denial = self.decide(principal, checks)
        with self._observers_lock:
            observers = list(self._observers)
        for observer in observers:
            observer(Authorization(principal, f"{prefix}:{operation}", tuple(checks), denial))
        return denial

    def decide(self, principal: Principal, checks: Sequence[Check]) -> Denial | None:
        return authorize(principal, checks, self.base_context())

    # ------------------------------------------------------------------ the services' own checks
    def before(self, service: str, operation: str, params: Mapping[str, Any],
               principal: Principal | None) -> None:
        """Raise the service's error when it would refuse the request for a role it cannot
        assume or a service-linked role its caller may not create; create that role else.

        AWS managed policies exist in every account; moto knows them only once loaded: an IAM
        request naming one (AttachRolePolicy, GetPolicy...) loads it from moto's copy first."""
        policy_arn = str(params.get("PolicyArn") or "")
        if service == "iam" and ":iam::aws:policy/" in policy_arn:
            self.directory.ensure_aws_managed_policy(policy_arn)
        for role in _passed_roles(service, operation, params):
            record = self.directory.role(role.arn)
            if record is None or not trusts(record.trust_policy, role.service,
                                            context=self._assume_context(role, params)):
                raise _untrusted(service, role, record is not None)
        linked = _linked_role(service, operation)
        if linked is None or self.directory.service_linked_role(linked.service) is not None:
            return
        if principal is not None:
            denial = self.decide(principal, [service_linked_role_check(
                self.world, linked.service, linked.role_name)])
            if denial is not None:
                raise _slr_denied(service, linked, denial)
        LOG.info("first use of %s in account %s: creating %s", linked.service, self.account_id,
                 linked.role_name)
        self.directory.create_service_linked_role(
            linked.service, linked.role_name,
            linked.policy_arn.replace("arn:aws:", f"arn:{self.world.partition}:", 1))

    def _assume_context(self, role: PassedRole, params: Mapping[str, Any]) -> dict[str, list[str]]:
        """What the service puts in the request context when it assumes the role: EKS Pod
        Identity names the account and the cluster (aws:SourceAccount, aws:SourceArn), which
        AWS's documented trust policies for pod identity roles may condition on."""
        if role.service != "pods.eks.amazonaws.com" or not params.get("clusterName"):
            return {}
        cluster = self.world.arn("eks", f"cluster/{params['clusterName']}")
        # (The evaluator matches context keys in lower case, as IAM compares them.)
        return {"aws:sourceaccount": [self.account_id], "aws:sourcearn": [cluster]}

    def acting(self, principal: Principal | None) -> AbstractContextManager[None]:
        return acting_as(principal)


__all__ = [
    "Authorization",
    "Enforcer",
    "UnknownAction",
    "Unresolvable",
    "access_key_of",
    "acting_as",
    "current_caller",
    "denial_error",
]
