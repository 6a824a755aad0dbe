"""The REST API after the SAM transform (the translator the SAM CLI ships): how API Gateway
invokes the function, and the Lambda permissions that let it, compared with what the local
cloud derives from the untransformed template (`hypd_local.template_policies`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypd_local.template import Stack
from tests.build.support import TEMPLATE

CALLER = "arn:aws:iam::*:user/*"


def resources(transformed: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(transformed.read_text(encoding="utf-8"))["Resources"]
    return result


def integrations(transformed: Path) -> dict[str, dict[str, Any]]:
    (api,) = [r for r in resources(transformed).values()
              if r["Type"] == "AWS::ApiGateway::RestApi"]
    return {f"{method.upper()} {path}": operation["x-amazon-apigateway-integration"]
            for path, item in api["Properties"]["Body"]["paths"].items()
            for method, operation in item.items()}


def test_no_method_invokes_the_function_with_the_callers_credentials(transformed: Path) -> None:
    found = integrations(transformed)
    assert len(found) >= 46
    assert {name: i["credentials"] for name, i in found.items() if "credentials" in i} == {}


def _source_arn(value: Any, api_id: str) -> str:
    """A permission's SourceArn as the transform writes it (Fn::Sub over the API and stage)."""
    text, variables = value["Fn::Sub"]
    for name, ref in variables.items():
        text = text.replace(f"${{{name}}}", api_id if ref == {"Ref": "HypdApi"} else str(ref))
    return re.sub(r"\$\{AWS::(\w+)\}", lambda m: {"Region": "us-east-1",
                                                 "AccountId": "123456789012"}[m.group(1)], text)


def test_the_local_cloud_grants_api_gateway_what_the_transform_grants(transformed: Path) -> None:
    stack = Stack(TEMPLATE, region="us-east-1", aws_endpoint=None)
    api_id = stack.apis["HypdApi"].api_id
    alias_arn = stack.functions["ApiFunction"].invoked_arn
    sam = {
        (_source_arn(r["Properties"]["SourceArn"], api_id), r["Properties"]["Principal"])
        for r in resources(transformed).values()
        if r["Type"] == "AWS::Lambda::Permission"
        and r["Properties"]["Principal"] == "apigateway.amazonaws.com"
        and r["Properties"]["FunctionName"] == {"Ref": "ApiFunctionAliaslive"}
    }
    local = {
        (statement["Condition"]["ArnLike"]["AWS:SourceArn"], statement["Principal"]["Service"])
        for spec in stack.resource_policies.values() if spec.resources == (alias_arn,)
        for statement in spec.document["Statement"]
    }
    assert len(sam) >= 46
    assert local == sam
