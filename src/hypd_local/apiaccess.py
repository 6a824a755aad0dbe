"""API Gateway's IAM checks of a REST API's methods: who may call a method, and with which
identity its Lambda proxy integration invokes the function.

1. **The caller** (an ``AWS_IAM`` method): ``execute-api:Invoke`` on the method ARN
   ``arn:aws:execute-api:{region}:{account}:{api}/{stage}/{METHOD}/{path}``, evaluated against the
   signer's policies. A refusal is 403 ``AccessDeniedException`` (API Gateway's message).
2. **The integration's credentials**, as the SAM transform writes them
   (``x-amazon-apigateway-integration.credentials``; SAM's ``Auth.InvokeRole``, whose default for
   ``AWS_IAM`` is ``CALLER_CREDENTIALS``):

   - ``CALLER_CREDENTIALS`` (``arn:aws:iam::*:user/*``): API Gateway calls Lambda as the caller,
     who then also needs ``lambda:InvokeFunction`` on the function (its alias);
   - a role ARN: API Gateway assumes the role (it must trust ``apigateway.amazonaws.com``), whose
     policies need ``lambda:InvokeFunction``;
   - ``NONE``: API Gateway calls as itself, which only the function's resource-based policy can
     allow (the Lambda permission SAM adds for each ``Api`` event, with ``aws:SourceArn`` the
     method's ARN in this stage).

   A refusal is what API Gateway answers for an integration it may not invoke: 500
   ``{"message": "Internal server error"}``, and the execution log's "Execution failed due to
   configuration error: Invalid permissions on Lambda function".

Requests the local cloud cannot attribute (unsigned, or signed with a key it did not issue, such
as the administrator's ``testing`` keys of the CLI and the tests) are the account
administrator's: allowed, their integration checked only when it needs no caller identity.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hypd_local.credentials import RoleNotAssumable, Session
from hypd_local.iam.checks import Check, Target
from hypd_local.iam.principals import Principal
from hypd_local.iam.resource_policies import ResourcePolicies, ServiceRequest
from hypd_local.template_specs import CALLER_CREDENTIALS, ApiSpec, RouteSpec

if TYPE_CHECKING:
    from hypd_local.iam.enforce import Enforcer

LOG = logging.getLogger(__name__)

APIGATEWAY_PRINCIPAL = "apigateway.amazonaws.com"


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    error_type: str
    log: str
    """What API Gateway's execution log says."""


class ApiAccess:
    """The checks of one REST API stage."""

    def __init__(self, api: ApiSpec, *, enforcer: Enforcer, policies: ResourcePolicies,
                 role_session: Callable[[str, str], Session], partition: str, region: str,
                 account_id: str) -> None:
        """``role_session(role_arn, session_name)``: apigateway.amazonaws.com's session in the
        role (raises RoleNotAssumable)."""
        self.api = api
        self._enforcer = enforcer
        self._policies = policies
        self._role_session = role_session
        self._partition = partition
        self._region = region
        self._account_id = account_id

    def method_arn(self, method: str, path: str) -> str:
        """The ARN of a request's method: this API and stage, its verb and concrete path."""
        return (f"arn:{self._partition}:execute-api:{self._region}:{self._account_id}:"
                f"{self.api.api_id}/{self.api.stage}/{method.upper()}/{path.lstrip('/')}")

    def principal(self, access_key: str | None) -> Principal | None:
        return self._enforcer.directory.principal(access_key) if access_key else None

    def invoke_denial(self, principal: Principal, method_arn: str) -> str | None:
        """API Gateway's message refusing ``execute-api:Invoke`` to the principal, or None."""
        denial = self._enforcer.decide(principal, [Check(
            "execute-api:Invoke", (Target(method_arn, "execute-api-general"),))])
        if denial is None:
            return None
        explicit = " with an explicit deny" if "explicit deny" in denial.reason else ""
        return (f"User: {principal.caller_arn} is not authorized to perform: execute-api:Invoke "
                f"on resource: {method_arn}{explicit}")

    def credentials(self, route: RouteSpec, auth: str | None) -> str | None:
        """The integration's credentials after the SAM transform: CALLER_CREDENTIALS, a role
        ARN, or None (API Gateway as itself). SAM sets them for AWS_IAM methods only."""
        if auth != "AWS_IAM":
            return None
        role = route.invoke_role or self.api.invoke_role or CALLER_CREDENTIALS
        return None if role == "NONE" else role

    def integration_refusal(self, route: RouteSpec, auth: str | None, function_arn: str,
                            method_arn: str, caller: Principal | None) -> Refusal | None:
        """Why API Gateway may not invoke ``function_arn`` for this request, or None."""
        credentials = self.credentials(route, auth)
        why: str | None
        if credentials is None:
            why = self._policies.refusal(ServiceRequest(
                APIGATEWAY_PRINCIPAL, "lambda:InvokeFunction", function_arn, method_arn,
                self._account_id))
        elif credentials == CALLER_CREDENTIALS:
            why = self._lambda_denial(caller, function_arn) if caller is not None else None
        else:
            try:
                session = self._role_session(credentials, "apigateway-integration")
            except RoleNotAssumable as exc:
                why = str(exc)
            else:
                key = session.credentials.get_frozen_credentials().access_key
                why = self._lambda_denial(self.principal(key), function_arn)
        if why is None:
            return None
        LOG.warning("%s: Execution failed due to configuration error: Invalid permissions on "
                    "Lambda function (%s)", method_arn, why)
        return Refusal(500, "Internal server error", "InternalServerErrorException",
                       f"Execution failed due to configuration error: Invalid permissions on "
                       f"Lambda function: {why}")

    def _lambda_denial(self, principal: Principal | None, function_arn: str) -> str | None:
        if principal is None:
            return "the integration's credentials name no principal the local cloud knows"
        checks = self._enforcer.checks("lambda", "lambda", "Invoke",
                                       {"FunctionName": function_arn})
        denial = self._enforcer.decide(principal, checks)
        return denial.message if denial is not None else None
