"""SageMaker endpoints that HyperPod's inference operator registers (``spec.sageMakerEndpoint``
of a JumpStartModel, ``spec.endpointName`` of an InferenceEndpointConfig), and the SageMaker
Runtime that invokes them.

The emulated operator (`hypd_local.emulation_endpoints`) calls `register` (``Creating``),
`set_in_service` and `deregister`; clients see them through SageMaker's ``DescribeEndpoint``
and ``ListEndpoints`` and SageMaker Runtime's ``InvokeEndpoint`` (shapes from botocore's
models). An endpoint's ARN is ``arn:<partition>:sagemaker:<region>:<account>:endpoint/<name in
lower case>``, as SageMaker writes it. Errors as AWS answers them: ``DescribeEndpoint`` of an
unknown name is ``ValidationException`` ``Could not find endpoint "<arn>".``; ``InvokeEndpoint``
of an unknown (or not InService) one is ``ValidationError`` ``Endpoint <name> of account
<account> not found.``; a model that fails answers ``ModelError`` (424) with
``OriginalStatusCode`` and ``OriginalMessage``.

An invocation answers what a test set (`hypd_local.emulation_behave.Workloads.behave`:
``response=`` or ``model_error=``), else a JSON echo (the emulator's own):
``{"model": <model id or name>, "endpoint": <name>, "input": <the body, parsed when JSON>}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from hypd_local.emulator.errors import AwsError, ValidationException
from hypd_local.emulator.hyperpod_core import PAGES
from hypd_local.emulator.service import Clock, ServiceEmulator, operation


@dataclass(frozen=True)
class Endpoint:
    name: str
    arn: str
    model: str
    """The model id (JumpStart) or name (custom) behind it."""
    owner: tuple[str, str, str]
    """The EKS cluster, namespace and name of the operator's object."""
    status: str
    created: datetime
    modified: datetime


@dataclass(frozen=True)
class Answer:
    """What an invocation gets: a body, or the model's error (its status and message)."""

    body: bytes | None = None
    error: tuple[int, str] | None = None


Answers = Callable[[Endpoint], Answer]


def _echo(endpoint: Endpoint, body: bytes) -> bytes:
    try:
        given: Any = json.loads(body)
    except ValueError:
        given = body.decode("utf-8", errors="replace")
    return json.dumps({"model": endpoint.model, "endpoint": endpoint.name,
                       "input": given}).encode()


class SageMakerEndpoints(ServiceEmulator):
    """The endpoints the inference operator registered, one account and Region."""

    service = "sagemaker"

    def __init__(self, clock: Clock, account_id: str, region: str,
                 answers: Answers | None = None) -> None:
        super().__init__(clock, account_id, region)
        self._endpoints: dict[str, Endpoint] = {}
        self._answers = answers or (lambda _endpoint: Answer())

    # ------------------------------------------------------------------ the operator's side
    def arn_of(self, name: str) -> str:
        return self._arn(f"endpoint/{name.lower()}")

    def register(self, name: str, model: str, owner: tuple[str, str, str]) -> Endpoint:
        """The operator creates the endpoint (``Creating``; idempotent for the same owner)."""
        with self._lock:
            current = self._endpoints.get(name)
            if current is not None and current.owner == owner:
                return current
            now = self._clock.now()
            endpoint = Endpoint(name, self.arn_of(name), model, owner, "Creating", now, now)
            self._endpoints[name] = endpoint
            return endpoint

    def set_in_service(self, name: str) -> None:
        with self._lock:
            current = self._endpoints.get(name)
            if current is not None and current.status != "InService":
                self._endpoints[name] = replace(current, status="InService",
                                                modified=self._clock.now())

    def deregister(self, name: str, owner: tuple[str, str, str]) -> None:
        """The operator deletes the endpoint it registered for ``owner``."""
        with self._lock:
            current = self._endpoints.get(name)
            if current is not None and current.owner == owner:
                del self._endpoints[name]

    def find(self, name: str) -> Endpoint | None:
        with self._lock:
            return self._endpoints.get(name)

    # ------------------------------------------------------------------ SageMaker
    @operation
    def describe_endpoint(self, params: dict[str, Any]) -> dict[str, Any]:
        endpoint = self._endpoints.get(str(params["EndpointName"]))
        if endpoint is None:
            arn = self.arn_of(str(params["EndpointName"]))
            raise ValidationException(f'Could not find endpoint "{arn}".')
        return {"EndpointName": endpoint.name, "EndpointArn": endpoint.arn,
                "EndpointConfigName": endpoint.name,
                "ProductionVariants": [{"VariantName": "AllTraffic"}],
                "EndpointStatus": endpoint.status, "CreationTime": endpoint.created,
                "LastModifiedTime": endpoint.modified}

    @operation
    def list_endpoints(self, params: dict[str, Any]) -> dict[str, Any]:
        found = [e for e in self._endpoints.values()
                 if str(params.get("NameContains") or "") in e.name
                 and params.get("StatusEquals") in (None, e.status)]
        key = params.get("SortBy", "CreationTime")
        found.sort(key=lambda e: (e.name if key == "Name" else e.status if key == "Status"
                                  else e.created.isoformat(), e.name),
                   reverse=params.get("SortOrder", "Descending") == "Descending")
        summaries = [{"EndpointName": e.name, "EndpointArn": e.arn, "CreationTime": e.created,
                      "LastModifiedTime": e.modified, "EndpointStatus": e.status}
                     for e in found]
        return PAGES.listing("Endpoints", summaries, params)

    # ------------------------------------------------------------------ SageMaker Runtime
    @operation
    def invoke_endpoint(self, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params["EndpointName"])
        endpoint = self._endpoints.get(name)
        if endpoint is None or endpoint.status != "InService":
            raise AwsError(f"Endpoint {name} of account {self.account_id} not found.",
                           code="ValidationError", status=400)
        answer = self._answers(endpoint)
        if answer.error is not None:
            status, message = answer.error
            group = f"/aws/sagemaker/Endpoints/{name}"
            side = "client" if status < 500 else "server"
            raise AwsError(
                f'Received {side} error ({status}) from primary with message "{message}". '
                f"See https://{self.region}.console.aws.amazon.com/cloudwatch/home?region="
                f"{self.region}#logEventViewer:group={group} in account {self.account_id} "
                "for more information.", code="ModelError", status=424,
                fields={"OriginalStatusCode": status, "OriginalMessage": message,
                        "LogStreamArn": f"arn:{self.partition}:logs:{self.region}:"
                                        f"{self.account_id}:log-group:{group}"})
        body = answer.body if answer.body is not None else _echo(
            endpoint, bytes(params.get("Body") or b""))
        return {"Body": body, "ContentType": "application/json",
                "InvokedProductionVariant": "AllTraffic"}


class SageMakerRuntime:
    """SageMaker Runtime's operations of the endpoints (its own service to the middleware)."""

    def __init__(self, endpoints: SageMakerEndpoints) -> None:
        self.invoke_endpoint = endpoints.invoke_endpoint
