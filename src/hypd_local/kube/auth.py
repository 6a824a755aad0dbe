"""EKS authentication (bearer tokens) and authorisation (access entries and access policies).

Authentication follows aws-iam-authenticator, which EKS runs as its token webhook: the token is
``k8s-aws-v1.`` + unpadded URL-safe base64 of a presigned STS ``GetCallerIdentity`` URL whose
signed headers include ``x-k8s-aws-id: <cluster name>``. The server checks the URL's shape, that
it is meant for this cluster and not expired, then *calls* it: STS answers with the caller's
ARN. An assumed-role ARN is mapped to its role ARN (``arn:aws:sts::A:assumed-role/R/S`` ->
``arn:aws:iam::A:role/R``), which is what access entries name.

Expiry: aws-iam-authenticator accepts a token for 15 minutes after its ``X-Amz-Date`` whatever
the ``X-Amz-Expires`` (clients such as ``aws eks get-token`` sign with 60 s and cache the token for
14 minutes), and rejects an ``X-Amz-Expires`` above 15 minutes. Both use the injected clock.

Locally the token may also name ``sts_endpoint`` itself (scheme, host and port exactly: the
local cloud's STS, which ``aws eks get-token`` signs for when ``AWS_ENDPOINT_URL`` or
``AWS_ENDPOINT_URL_STS`` points at it); any other host is refused, as on EKS.

Locally the STS call goes to ``sts_endpoint`` (moto): the URL's scheme and host are replaced,
its path and query kept, the original host is sent as ``Host``, and the query's credential,
signed headers and signature are repeated as a SigV4 ``Authorization`` header, because moto
routes an unsigned GET to S3 rather than STS (it never checks signatures either way).
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import hmac
import http.client
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from xml.etree import ElementTree

from hypd_local.kube.store import Clock

TOKEN_PREFIX = "k8s-aws-v1."  # noqa: S105 - a prefix, not a secret
CLUSTER_ID_HEADER = "x-k8s-aws-id"
MAX_TOKEN_LIFETIME = timedelta(minutes=15)
_STS_HOST = re.compile(r"^sts(\.[a-z0-9-]+)?\.amazonaws\.com(\.cn)?$")
_ALLOWED_PARAMS = frozenset(
    {
        "action", "version", "x-amz-algorithm", "x-amz-credential", "x-amz-date",
        "x-amz-expires", "x-amz-security-token", "x-amz-signature", "x-amz-signedheaders",
        "x-amz-user-agent",
    }
)
_ASSUMED_ROLE = re.compile(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/[^/]+$")

# EKS's access policies are AWS's, one set per partition:
# arn:<partition>:eks::aws:cluster-access-policy/<name>. The authorizer reads the name.
_ACCESS_POLICY_ARN = re.compile(r"^arn:aws[a-z-]*:eks::aws:cluster-access-policy/(?P<name>[^/]+)$")
CLUSTER_ADMIN = "AmazonEKSClusterAdminPolicy"
ADMIN = "AmazonEKSAdminPolicy"
EDIT = "AmazonEKSEditPolicy"
VIEW = "AmazonEKSViewPolicy"
ADMIN_VIEW = "AmazonEKSAdminViewPolicy"
READ_VERBS = frozenset({"get", "list", "watch"})


SecretLookup = Callable[[str], str | None]


def moto_secret(access_key_id: str) -> str | None:
    """The secret of an access key the in-process moto issued (assumed-role or IAM user keys),
    or of the process's own credentials (the local cloud's fake ones)."""
    from moto.iam.models import iam_backends
    from moto.sts.models import sts_backends

    for account_id in list(sts_backends):
        for partition in list(sts_backends[account_id]):
            role = sts_backends[account_id][partition].get_assumed_role_from_access_key(
                access_key_id)
            if role is not None:
                return str(role.secret_access_key)
    for account_id in list(iam_backends):
        for partition in list(iam_backends[account_id]):
            user = iam_backends[account_id][partition].get_user_from_access_key_id(
                access_key_id)
            if user is not None:
                for key in user.access_keys:
                    if key.access_key_id == access_key_id:
                        return str(key.secret_access_key)
    if access_key_id == os.environ.get("AWS_ACCESS_KEY_ID"):
        return os.environ.get("AWS_SECRET_ACCESS_KEY")
    return None


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def expected_signature(host: str, params: Mapping[str, str], original: Sequence[tuple[str, str]],
                       cluster_name: str, secret: str) -> str:
    """SigV4 query signature of a presigned GetCallerIdentity URL, with ``x-k8s-aws-id`` set to
    ``cluster_name`` (what STS recomputes when EKS forwards the URL with its own header)."""
    quote = urllib.parse.quote
    query = "&".join(sorted(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, v in original if k.lower() != "x-amz-signature"
    ))
    header_values = {"host": host, CLUSTER_ID_HEADER: cluster_name}
    signed = params["x-amz-signedheaders"].lower().split(";")
    canonical_headers = "".join(f"{h}:{header_values.get(h, '')}\n" for h in signed)
    canonical = "\n".join(["GET", "/", query, canonical_headers, ";".join(signed),
                           hashlib.sha256(b"").hexdigest()])
    _, day, region, service, terminator = params["x-amz-credential"].split("/")
    scope = f"{day}/{region}/{service}/{terminator}"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", params["x-amz-date"], scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(("AWS4" + secret).encode(), day)
    for part in (region, service, terminator):
        key = _hmac(key, part)
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


class AuthenticationError(Exception):
    """The token is missing, malformed, for another cluster, expired, or STS rejected it."""


@dataclass(frozen=True)
class AccessPolicy:
    """An associated access policy; ``namespaces`` empty = cluster scope (wildcards allowed)."""

    policy_arn: str
    namespaces: tuple[str, ...] = ()


@dataclass(frozen=True)
class AccessDecision:
    """What the EKS emulator's access entry says about a principal."""

    username: str
    groups: tuple[str, ...] = ()
    policies: tuple[AccessPolicy, ...] = ()

    @classmethod
    def from_eks(cls, access_entry: Mapping[str, Any],
                 associated_policies: Sequence[Mapping[str, Any]] = ()) -> AccessDecision:
        """Build from EKS API shapes: ``DescribeAccessEntry['accessEntry']`` and
        ``ListAssociatedAccessPolicies['associatedAccessPolicies']``."""
        policies = tuple(
            AccessPolicy(
                str(item["policyArn"]),
                tuple((item.get("accessScope") or {}).get("namespaces") or ())
                if (item.get("accessScope") or {}).get("type") == "namespace" else (),
            )
            for item in associated_policies
        )
        return cls(
            username=str(access_entry.get("username") or access_entry["principalArn"]),
            groups=tuple(access_entry.get("kubernetesGroups") or ()),
            policies=policies,
        )


Authorizer = Callable[[str], AccessDecision | None]


@dataclass(frozen=True)
class Caller:
    principal_arn: str  # the ARN access entries name (role ARN for an assumed role)
    caller_arn: str  # what STS returned
    account: str
    user_id: str


def principal_arn(caller_arn: str) -> str:
    """EKS's mapping of an STS caller ARN to the principal an access entry names."""
    if m := _ASSUMED_ROLE.match(caller_arn):
        return f"arn:{m.group(1)}:iam::{m.group(2)}:role/{m.group(3)}"
    return caller_arn


def _decode(token: str) -> str:
    if not token.startswith(TOKEN_PREFIX):
        raise AuthenticationError("token is missing expected \"k8s-aws-v1.\" prefix")
    payload = token[len(TOKEN_PREFIX):]
    try:
        return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise AuthenticationError("token is not valid base64") from exc


class TokenVerifier:
    def __init__(self, cluster_name: str, clock: Clock, sts_endpoint: str | None,
                 secret_lookup: SecretLookup | None = moto_secret) -> None:
        self.cluster_name = cluster_name
        self.clock = clock
        self.sts_endpoint = sts_endpoint
        self.secret_lookup = secret_lookup

    def verify(self, authorization: str | None) -> Caller:
        if not authorization or not authorization.startswith("Bearer "):
            raise AuthenticationError("no bearer token")
        url = _decode(authorization[len("Bearer "):].strip())
        parts = urllib.parse.urlsplit(url)
        if not self._local_sts(parts):
            if parts.scheme != "https":
                raise AuthenticationError(f"unexpected scheme {parts.scheme!r}")
            if not _STS_HOST.match(parts.hostname or ""):
                raise AuthenticationError(f"unexpected hostname {parts.hostname!r}")
        if parts.path not in ("", "/"):
            raise AuthenticationError(f"unexpected path {parts.path!r}")
        pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        params: dict[str, str] = {}
        for key, value in pairs:
            lower = key.lower()
            if lower not in _ALLOWED_PARAMS:
                raise AuthenticationError(f"non-whitelisted query parameter {key!r}")
            if lower in params:
                raise AuthenticationError(f"query parameter {key!r} repeated")
            params[lower] = value
        if params.get("action") != "GetCallerIdentity":
            raise AuthenticationError("unexpected action parameter")
        signed = params.get("x-amz-signedheaders", "").lower().split(";")
        if CLUSTER_ID_HEADER not in signed:
            raise AuthenticationError(f"client did not sign the {CLUSTER_ID_HEADER} header")
        for required in ("x-amz-credential", "x-amz-signature", "x-amz-date", "x-amz-expires"):
            if not params.get(required):
                raise AuthenticationError(f"missing {required} parameter")
        try:
            signed_at = datetime.strptime(params["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(
                tzinfo=UTC
            )
            expires = int(params["x-amz-expires"])
        except ValueError as exc:
            raise AuthenticationError("malformed X-Amz-Date or X-Amz-Expires") from exc
        if not 0 < expires <= MAX_TOKEN_LIFETIME.total_seconds():
            raise AuthenticationError("X-Amz-Expires must be between 1 and 900 seconds")
        if self.clock.now() > signed_at + MAX_TOKEN_LIFETIME:
            raise AuthenticationError("X-Amz-Date parameter is expired (15 minute expiration)")
        if self.sts_endpoint and self.secret_lookup is not None:
            self._check_signature(parts, params, pairs)
        return self._call_sts(parts, params)

    def _local_sts(self, parts: urllib.parse.SplitResult) -> bool:
        """Whether the token names the local cloud's own STS endpoint (what ``aws eks
        get-token`` presigns for with ``AWS_ENDPOINT_URL(_STS)`` pointing at it): the STS this
        verifier calls anyway, so as trustworthy as an AWS STS host is to EKS."""
        if not self.sts_endpoint:
            return False
        local = urllib.parse.urlsplit(self.sts_endpoint)
        return (parts.scheme, parts.netloc) == (local.scheme, local.netloc)

    def _check_signature(self, parts: urllib.parse.SplitResult, params: Mapping[str, str],
                         pairs: Sequence[tuple[str, str]]) -> None:
        """What STS does on AWS (moto does not): the signature must match with this cluster's
        name in ``x-k8s-aws-id``, so a token for another cluster is rejected."""
        assert self.secret_lookup is not None
        try:
            access_key = params["x-amz-credential"].split("/")[0]
            secret = self.secret_lookup(access_key)
            if secret is None:
                raise AuthenticationError("STS: InvalidClientTokenId")
            wanted = expected_signature(parts.netloc, params, pairs, self.cluster_name, secret)
        except (ValueError, KeyError) as exc:
            raise AuthenticationError("malformed X-Amz-Credential") from exc
        if not hmac.compare_digest(wanted, params["x-amz-signature"]):
            raise AuthenticationError("STS: SignatureDoesNotMatch (token for another cluster?)")

    def _call_sts(self, parts: urllib.parse.SplitResult, params: Mapping[str, str]) -> Caller:
        headers = {"Host": parts.netloc, CLUSTER_ID_HEADER: self.cluster_name,
                   "Accept": "application/xml"}
        target = urllib.parse.urlsplit(self.sts_endpoint or f"https://{parts.netloc}")
        if self.sts_endpoint:
            headers["Authorization"] = (
                f"AWS4-HMAC-SHA256 Credential={params['x-amz-credential']}, "
                f"SignedHeaders={params['x-amz-signedheaders']}, "
                f"Signature={params['x-amz-signature']}"
            )
        connection_type = (http.client.HTTPSConnection if target.scheme == "https"
                           else http.client.HTTPConnection)
        connection = connection_type(target.hostname or "127.0.0.1", target.port, timeout=10)
        try:
            connection.request("GET", f"/?{parts.query}", headers=headers)
            response = connection.getresponse()
            body = response.read()
        except OSError as exc:
            raise AuthenticationError(f"STS unreachable: {exc}") from exc
        finally:
            connection.close()
        if response.status != 200:
            raise AuthenticationError(f"STS answered {response.status}")
        try:
            root = ElementTree.fromstring(body)  # noqa: S314 - the local STS's own answer
        except ElementTree.ParseError as exc:
            raise AuthenticationError("STS answer is not XML") from exc
        values = {el.tag.rsplit("}", 1)[-1]: (el.text or "") for el in root.iter()}
        arn = values.get("Arn")
        if not arn:
            raise AuthenticationError("STS answer has no Arn")
        return Caller(principal_arn(arn), arn, values.get("Account", ""), values.get("UserId", ""))


def _in_scope(policy: AccessPolicy, namespace: str | None) -> bool:
    if not policy.namespaces:
        return True
    return namespace is not None and any(
        fnmatch.fnmatchcase(namespace, pattern) for pattern in policy.namespaces
    )


def policy_allows(policy: AccessPolicy, verb: str, group: str, resource: str,
                  namespace: str | None, namespaced: bool) -> bool:
    """An approximation of the Kubernetes roles behind EKS's access policies.

    ClusterAdmin = cluster-admin; Admin = admin (namespaced resources; reads of namespaces);
    Edit = edit (no RBAC writes); View = view (no secrets); AdminView = reads of everything.
    A namespace-scoped association applies only to namespaced requests in its namespaces.
    """
    match = _ACCESS_POLICY_ARN.match(policy.policy_arn)
    name = match.group("name") if match else None
    if name == CLUSTER_ADMIN:
        return _in_scope(policy, namespace) if policy.namespaces else True
    if namespaced and not _in_scope(policy, namespace):
        return False
    if not namespaced:
        if policy.namespaces:
            return False
        reads_namespaces = verb in READ_VERBS and not group and resource == "namespaces"
        if name == ADMIN_VIEW:
            return verb in READ_VERBS
        return name in (ADMIN, EDIT, VIEW) and reads_namespaces
    if name == ADMIN:
        return True
    if name == EDIT:
        return group != "rbac.authorization.k8s.io" or verb in READ_VERBS
    if name == VIEW:
        return verb in READ_VERBS and not (not group and resource == "secrets")
    if name == ADMIN_VIEW:
        return verb in READ_VERBS
    return False


def allows(decision: AccessDecision, verb: str, group: str, resource: str,
           namespace: str | None, namespaced: bool) -> bool:
    if "system:masters" in decision.groups:
        return True
    return any(policy_allows(p, verb, group, resource, namespace, namespaced)
               for p in decision.policies)
