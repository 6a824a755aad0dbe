"""The credentials each function and service of the local cloud acts with, issued as AWS does.

On AWS a Lambda function runs with its execution role's credentials (Lambda assumes the role
and puts the session's keys in ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_SESSION_TOKEN``), a state machine calls Lambda as its role, CloudFormation acts as a
stack's service role. The local cloud does the same with moto's STS (``AssumeRole`` by the
account's administrator, after checking that the role's trust policy lets the service assume
it), so every request they sign carries that role's session and is authorised against the
role's policies (``hypd_local.iam``).

Functions share one process, and the boto3 clients the ``hypd`` package keeps are shared by
every function: a client made while one function ran would sign another's calls with the first
one's keys. So, besides the keys in the function's environment at import (for clients made
then), an invocation *signs as* its function: ``signing_as(credentials)`` makes every request
botocore signs on that thread (presigned URLs, such as EKS tokens, included) use them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore.credentials import Credentials
from botocore.signers import RequestSigner

from hypd_local.iam.policy import trusts
from hypd_local.iam.principals import Directory
from hypd_local.threadvalue import set_for_block

_SIGNING = threading.local()
_ORIGINAL = RequestSigner.get_auth_instance
_INSTALLED = False
_INSTALL_LOCK = threading.Lock()


def _get_auth_instance(self: Any, *args: Any, request_credentials: Any = None,
                       **kwargs: Any) -> Any:
    override = getattr(_SIGNING, "credentials", None)
    if request_credentials is None and override is not None:
        request_credentials = override
    return _ORIGINAL(self, *args, request_credentials=request_credentials, **kwargs)


def install() -> None:
    """Patch botocore's signer once per process (harmless with no override set)."""
    global _INSTALLED
    with _INSTALL_LOCK:
        if not _INSTALLED:
            RequestSigner.get_auth_instance = _get_auth_instance
            RequestSigner.get_auth = _get_auth_instance
            _INSTALLED = True


@contextmanager
def signing_as(credentials: Credentials | None) -> Iterator[None]:
    """Sign every AWS request made on this thread with ``credentials`` (None: as usual)."""
    with set_for_block(_SIGNING, "credentials", credentials):
        yield


def signing_credentials() -> Credentials | None:
    """The credentials this thread signs with, if ``signing_as`` set them."""
    return getattr(_SIGNING, "credentials", None)


class RoleNotAssumable(Exception):
    """The role does not exist or its trust policy does not let the service assume it."""


@dataclass(frozen=True)
class Session:
    role_arn: str
    session_name: str
    credentials: Credentials

    def environment(self) -> dict[str, str]:
        """The variables Lambda sets for a function's execution role."""
        frozen = self.credentials.get_frozen_credentials()
        return {
            "AWS_ACCESS_KEY_ID": frozen.access_key,
            "AWS_SECRET_ACCESS_KEY": frozen.secret_key,
            "AWS_SESSION_TOKEN": frozen.token or "",
        }


class Identities:
    """Role sessions of the local cloud's services, one per (role, session name), made on
    first use. ``sts`` returns an administrator's STS client of the local cloud."""

    def __init__(self, sts: Callable[[], Any], directory: Directory) -> None:
        self._sts = sts
        self._directory = directory
        self._sessions: dict[tuple[str, str], Session] = {}
        self._lock = threading.Lock()

    def session(self, role_arn: str, session_name: str, service: str,
                source_account: str | None = None) -> Session:
        """The session of ``service`` (``lambda.amazonaws.com``) in ``role_arn``.

        ``source_account``: the account of the resource the service acts for (a rule, a
        schedule), in the request's ``aws:SourceAccount`` as those services send it, so a
        trust policy's confused-deputy condition can be met.

        Raises RoleNotAssumable when the role does not exist or does not trust the service
        (Lambda then refuses the function, Step Functions fails the task).
        """
        key = (role_arn, session_name)
        with self._lock:
            found = self._sessions.get(key)
            if found is not None:
                return found
        role = self._directory.role(role_arn)
        if role is None:
            raise RoleNotAssumable(f"the role {role_arn} does not exist")
        context = {"aws:sourceaccount": [source_account]} if source_account else None
        if not trusts(role.trust_policy, service, context=context):
            raise RoleNotAssumable(f"the trust policy of {role_arn} does not let {service} "
                                   "assume it (sts:AssumeRole)")
        answer = self._sts().assume_role(RoleArn=role_arn, RoleSessionName=session_name[:64],
                                         DurationSeconds=3600)["Credentials"]
        session = Session(role_arn, session_name, Credentials(
            answer["AccessKeyId"], answer["SecretAccessKey"], answer["SessionToken"]))
        with self._lock:
            return self._sessions.setdefault(key, session)
