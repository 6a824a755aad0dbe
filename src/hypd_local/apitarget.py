"""EventBridge's API Gateway targets, delivered to the local cloud's REST API front.

What the EventBridge user guide ("Amazon API Gateway targets for rules") describes:

- the target ARN ``arn:aws:execute-api:{region}:{account}:{api}/{stage}/{METHOD}/{path}``; each
  ``*`` of the path is filled, in order, from ``HttpParameters.PathParameterValues`` (a count
  that does not match is a failed delivery); ``QueryStringParameters`` are appended and
  ``HeaderParameters`` added; a value written ``$.detail.x`` is read from the event (the guide's
  dynamic target parameters; a path that finds nothing fails the delivery);
- the body is the target's input (the event, ``Input``, ``InputPath`` or ``InputTransformer``);
- the header keys EventBridge does not permit (``X-Amz*``, ``X-Amzn*``, ``Authorization``,
  ``Connection``, ``Content-Encoding``, ``Content-Length``, ``Host``, ``Max-Forwards``, ``TE``,
  ``Transfer-Encoding``, ``Trailer``, ``Upgrade``, ``Via``, ``WWW-Authenticate``,
  ``X-Forwarded-For``) fail the delivery (the guide does not say where AWS refuses them; moto's
  PutTargets accepts them, so the local cloud refuses at delivery);
- the request is signed (SigV4, service ``execute-api``) with a session of the target's
  ``RoleArn`` that ``events.amazonaws.com`` assumes; API Gateway then authorises
  ``execute-api:Invoke`` on the concrete method ARN against the role's policies. A target
  without a RoleArn sends an unsigned request, which an ``AWS_IAM`` method refuses (403
  ``Missing Authentication Token``);
- EventBridge waits at most 5 seconds for the answer (the guide: "the maximum client execution
  timeout is 5 seconds"), whatever the integration's own timeout (29 s for hypd's function); a
  request answered later counts as a failed attempt and is sent again, although the API did
  its work (an automated command must therefore be idempotent: hypd's rules send the event's
  id as ``Idempotency-Key``). The local cloud's answer time is the front's `SlowAnswer` delay,
  on the virtual clock, so a test decides it;
- responses 429 and 5xx (and timeouts) are retried with exponential back-off, other 4xx are
  not; retries stop at the target's ``RetryPolicy`` (``MaximumRetryAttempts``, default 185;
  ``MaximumEventAgeInSeconds``, default 86400, counted from the event's time).

The request goes through `ApiFront.request`: the front's own routing, API Gateway's IAM checks
(`hypd_local.apiaccess`: ``execute-api:Invoke`` for the role, the integration's credentials),
proxy event and handler.
Back-off is the local cloud's: 1 s, doubling, at most 10 minutes, no jitter (deterministic), on
the virtual clock (the waiting thread moves it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from hypd_local.clock import VirtualClock
from hypd_local.credentials import RoleNotAssumable, Session

if TYPE_CHECKING:
    from hypd_local.apifront import ApiFront

LOG = logging.getLogger(__name__)

API_TARGET_TIMEOUT_SECONDS = 5.0
"""How long EventBridge waits for an API Gateway target's answer."""
TIMEOUT_ERROR = "Timeout"
"""The error code of an attempt answered after `API_TARGET_TIMEOUT_SECONDS` (the local
cloud's name: the guide names none)."""
DEFAULT_MAXIMUM_RETRY_ATTEMPTS = 185
DEFAULT_MAXIMUM_EVENT_AGE_SECONDS = 86400
FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 600.0
EVENTS_PRINCIPAL = "events.amazonaws.com"

_FORBIDDEN = frozenset(name.lower() for name in (
    "Authorization", "Connection", "Content-Encoding", "Content-Length", "Host",
    "Max-Forwards", "TE", "Transfer-Encoding", "Trailer", "Upgrade", "Via", "WWW-Authenticate",
    "X-Forwarded-For"))


def forbidden_header(name: str) -> bool:
    """A header key EventBridge does not permit in ``HeaderParameters``."""
    lowered = name.lower()
    return lowered in _FORBIDDEN or lowered.startswith("x-amz")


@dataclass(frozen=True)
class ApiArn:
    """An ``execute-api`` target ARN, its path possibly holding ``*`` wildcards."""

    partition: str
    region: str
    account: str
    api_id: str
    stage: str
    method: str
    path: str
    """Without the leading slash (``clusters/*/instance-groups/*``)."""

    @classmethod
    def parse(cls, arn: str) -> ApiArn | None:
        parts = arn.split(":", 5)
        if len(parts) != 6 or parts[2] != "execute-api":
            return None
        pieces = parts[5].split("/", 3)
        if len(pieces) < 3:
            return None
        return cls(parts[1], parts[3], parts[4], pieces[0], pieces[1], pieces[2],
                   pieces[3] if len(pieces) > 3 else "")

    def filled(self, values: list[str]) -> str:
        """The path with each ``*`` replaced in order; ValueError on a count mismatch."""
        segments = self.path.split("*")
        if len(segments) - 1 != len(values):
            raise ValueError(f"the path {self.path!r} has {len(segments) - 1} wildcard(s) but "
                             f"PathParameterValues has {len(values)} value(s)")
        out = segments[0]
        for value, rest in zip(values, segments[1:], strict=True):
            out += quote(value, safe="") + rest
        return out

    def method_arn(self, path: str) -> str:
        return (f"arn:{self.partition}:execute-api:{self.region}:{self.account}:{self.api_id}/"
                f"{self.stage}/{self.method}/{path}")


class DeliveryRefused(Exception):
    """A delivery that cannot be made at all (not retried)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ApiOutcome:
    """The last response (or the refusal before any request) and how many attempts it took."""

    status: int | None
    body: str
    attempts: int
    error_code: str | None = None
    """None when the target accepted the request (status < 400)."""
    exhausted: str | None = None
    """``MaximumRetryAttempts`` / ``MaximumEventAgeInSeconds`` when retries ran out."""

    @property
    def ok(self) -> bool:
        return self.error_code is None


def _dynamic(value: Any, event: Mapping[str, Any]) -> str:
    """A parameter value, or the event's value at a ``$.`` JSON path."""
    text = str(value)
    if not text.startswith("$."):
        return text
    from jsonpath_ng.ext import parse  # type: ignore[attr-defined]

    matches = parse(text).find(dict(event))
    if not matches:
        raise DeliveryRefused("InvalidParameter", f"the JSON path {text} finds nothing in the "
                                                  "event")
    found = matches[0].value
    return found if isinstance(found, str) else json.dumps(found)


@dataclass(frozen=True)
class _Request:
    arn: ApiArn
    method: str
    path: str
    method_arn: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


def _build(arn: ApiArn, target: Mapping[str, Any], event: Mapping[str, Any],
           payload: Any) -> _Request:
    params = target.get("HttpParameters") or {}
    for name in params.get("HeaderParameters") or {}:
        if forbidden_header(str(name)):
            raise DeliveryRefused("InvalidHeaderParameter", f"the header {name} is not "
                                  "permitted in HeaderParameters")
    values = [_dynamic(v, event) for v in params.get("PathParameterValues") or []]
    try:
        path = arn.filled(values)
    except ValueError as exc:
        raise DeliveryRefused("InvalidPathParameters", str(exc)) from exc
    method = "POST" if arn.method in ("*", "ANY") else arn.method.upper()
    headers = {str(k): _dynamic(v, event) for k, v in
               (params.get("HeaderParameters") or {}).items()}
    body = payload if isinstance(payload, str) else json.dumps(payload)
    headers.setdefault("Content-Type", "application/json; charset=utf-8")
    return _Request(arn, method, path, arn.method_arn(path),
                    {str(k): _dynamic(v, event) for k, v in
                     (params.get("QueryStringParameters") or {}).items()},
                    headers, body.encode())


class ApiTargets:
    """Delivers to API Gateway targets of the REST API the local cloud serves."""

    def __init__(self, *, front: ApiFront, clock: VirtualClock,
                 session: Callable[[str, str], Session]) -> None:
        """``session(role_arn, session_name)``: events.amazonaws.com's session in the role
        (raises RoleNotAssumable)."""
        self._front = front
        self._clock = clock
        self._session = session

    @staticmethod
    def handles(target_arn: str) -> bool:
        return ApiArn.parse(target_arn) is not None

    def deliver(self, target: Mapping[str, Any], event: Mapping[str, Any],
                payload: Any) -> ApiOutcome:
        """Send the request, retrying 429 and 5xx as the target's RetryPolicy allows."""
        arn = ApiArn.parse(str(target["Arn"]))
        assert arn is not None
        try:
            request = _build(arn, target, event, payload)
            session = self._role_session(target)
        except DeliveryRefused as refused:
            return ApiOutcome(None, str(refused), 0, refused.code)
        if arn.api_id != self._front.api.api_id:
            return ApiOutcome(None, f"the API {arn.api_id} is not the one the local cloud "
                              f"serves ({self._front.api.api_id})", 0, "ResourceNotFoundException")
        policy = target.get("RetryPolicy") or {}
        max_retries = int(policy.get("MaximumRetryAttempts", DEFAULT_MAXIMUM_RETRY_ATTEMPTS))
        max_age = float(policy.get("MaximumEventAgeInSeconds", DEFAULT_MAXIMUM_EVENT_AGE_SECONDS))
        born = _event_time(event) or self._clock.now()
        attempts = 0
        backoff = FIRST_BACKOFF_SECONDS
        while True:
            attempts += 1
            status, body, latency = self._send(request, session)
            timed_out = latency > API_TARGET_TIMEOUT_SECONDS
            if timed_out:
                LOG.info("%s answered %s after %s s (virtual): over EventBridge's %s s",
                         request.method_arn, status, latency, API_TARGET_TIMEOUT_SECONDS)
                code = TIMEOUT_ERROR
            elif status < 400:
                return ApiOutcome(status, body, attempts)
            else:
                code = f"HTTP {status}"
            if not timed_out and status != 429 and status < 500:
                return ApiOutcome(status, body, attempts, code)
            if attempts > max_retries:
                return ApiOutcome(status, body, attempts, code, "MaximumRetryAttempts")
            age = (self._clock.now() - born).total_seconds()
            if age + backoff > max_age:
                return ApiOutcome(status, body, attempts, code, "MaximumEventAgeInSeconds")
            LOG.info("%s answered %s; retrying in %s s (virtual)", request.method_arn, status,
                     backoff)
            self._clock.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)

    def _role_session(self, target: Mapping[str, Any]) -> Session | None:
        role_arn = target.get("RoleArn")
        if not role_arn:
            return None
        try:
            return self._session(str(role_arn), f"events-{target.get('Id')}"[:64])
        except RoleNotAssumable as exc:
            raise DeliveryRefused("AccessDeniedException", str(exc)) from exc

    def _send(self, request: _Request, session: Session | None) -> tuple[int, str, float]:
        """(status, body, seconds the answer took beyond the handler)."""
        headers = dict(request.headers)
        if session is not None:
            headers.update(self._signature(request, session))
        response = self._front.request(
            request.method, f"/{request.arn.stage}/{request.path}", query=request.query,
            headers=headers, body=request.body)
        return response.status_code, response.get_data(as_text=True), response.latency_seconds

    def _signature(self, request: _Request, session: Session) -> dict[str, str]:
        url = f"{self._front.base_url}/{request.arn.stage}/{request.path}"
        signed = AWSRequest(method=request.method, url=url, data=request.body,
                            params=request.query, headers=dict(request.headers))
        SigV4Auth(session.credentials, "execute-api", request.arn.region).add_auth(signed)
        return {name: str(value) for name, value in signed.headers.items()
                if name.lower() in ("authorization", "x-amz-date", "x-amz-security-token")}


def _event_time(event: Mapping[str, Any]) -> datetime | None:
    when = event.get("time")
    if isinstance(when, str):
        try:
            return datetime.fromisoformat(when.replace("Z", "+00:00"))
        except ValueError:
            return None
    if isinstance(when, int | float):
        return datetime.fromtimestamp(when, UTC)
    return None
