"""API Gateway's seams on the local cloud, as a real account judges them (docs/emulator.md):
a caller needs ``execute-api:Invoke`` and nothing else, because the template's integrations
invoke the function as API Gateway itself (``InvokeRole: NONE``, authorised by the Lambda
permissions SAM adds), never with the caller's credentials."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.credentials import Credentials

from hypd_cli.api_client import ApiClient, ApiError, SigV4Signer
from hypd_cli.local import local_parameters
from hypd_local import LocalCloud
from tests.conftest import ROOT

TEMPLATE = ROOT / "template.yaml"
VALUES = {"tag": "nope", "name": "nope", "nodeId": "i-0123456789abcdef0",
          "operationId": "op-nope"}


def every_route() -> list[tuple[str, str]]:
    """(METHOD, path) of every operation of docs/openapi.json, path parameters filled."""
    document = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))
    routes = []
    for path, item in document["paths"].items():
        concrete = re.sub(r"\{(\w+)\}", lambda m: VALUES.get(m.group(1), "x"), path)
        routes += [(method.upper(), concrete) for method in item
                   if method in ("get", "post", "put", "patch", "delete")]
    return routes


def invoker(cloud: LocalCloud, *statements: dict[str, Any]) -> ApiClient:
    """An API client signing as a new IAM user whose only policy has ``statements``."""
    iam = cloud.client("iam")
    name = f"caller-{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName="api", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": list(statements)}))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    credentials = Credentials(key["AccessKeyId"], key["SecretAccessKey"])
    return ApiClient(cloud.api_url, signer=SigV4Signer(credentials, cloud.region))


def invoke_only(cloud: LocalCloud) -> dict[str, Any]:
    api_id = cloud.api_front.api.api_id
    return {"Effect": "Allow", "Action": "execute-api:Invoke",
            "Resource": f"arn:aws:execute-api:{cloud.region}:{cloud.account_id}:{api_id}/v1/*"}


def status_of(api: ApiClient, method: str, path: str) -> int:
    body: dict[str, Any] | None = {} if method in ("POST", "PUT", "PATCH") else None
    try:
        api.request(method, path, body=body)
    except ApiError as exc:
        return exc.status
    return 200


@pytest.fixture
def caller_credentials() -> Iterator[LocalCloud]:
    """The template as it was: SAM's default integration credentials (the caller's)."""

    def edit(template: dict[str, Any]) -> None:
        del template["Resources"]["HypdApi"]["Properties"]["Auth"]["InvokeRole"]

    with LocalCloud(TEMPLATE, parameters=local_parameters(TEMPLATE), template_edit=edit) as cloud:
        yield cloud


def test_a_caller_with_only_execute_api_invoke_reaches_every_route(cloud: LocalCloud) -> None:
    api = invoker(cloud, invoke_only(cloud))
    routes = every_route()
    assert len(routes) >= 46

    answers = {(method, path): status_of(api, method, path) for method, path in routes}
    cloud.wait_for_executions(timeout=60)

    # Every request reached the handler: its own answers (404 for the unknown cluster, 400 for
    # an empty body...), never API Gateway's refusal of the caller or of the integration
    assert cloud.api_front.refusals == []
    assert {key: status for key, status in answers.items() if status in (403, 500, 502)} == {}


def test_a_caller_without_execute_api_invoke_is_refused_by_api_gateway(cloud: LocalCloud) -> None:
    api = invoker(cloud, {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": "*"})

    with pytest.raises(ApiError) as refused:
        api.get("/clusters")

    assert refused.value.status == 403
    assert "is not authorized to perform: execute-api:Invoke" in refused.value.message


def test_with_the_callers_credentials_a_caller_without_lambda_invoke_gets_a_500(
        caller_credentials: LocalCloud) -> None:
    cloud = caller_credentials
    api = invoker(cloud, invoke_only(cloud))

    with pytest.raises(ApiError) as refused:
        api.get("/clusters")

    # API Gateway's answer to an integration it may not invoke, and its execution log
    assert refused.value.status == 500
    (refusal,) = cloud.api_front.refusals
    assert refusal.log.startswith("Execution failed due to configuration error: Invalid "
                                  "permissions on Lambda function")
    assert "lambda:InvokeFunction" in refusal.log
    assert "hypd-ApiFunction:live" in refusal.log
