"""The REST API application: routers, validation, error mapping, OpenAPI."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd import __version__
from hypd.api import (
    capacity,
    catalog,
    clusters,
    features,
    health,
    operations,
    teams,
    teardown,
    workloads,
)
from hypd.api.context import Scope, serving
from hypd.api.errors import ERROR_RESPONSES, register_error_handlers
from hypd.api.models import (
    AutoscalingUnchanged,
    ErrorBody,
    InstanceGroupUnchanged,
    OperationAccepted,
)
from hypd.api.resolver import ApiResolver
from hypd.api.services import ApiServices

TITLE = "hypd"
DESCRIPTION = (
    "A serverless control plane for Amazon SageMaker HyperPod on EKS. Every route needs "
    "AWS_IAM (SigV4) authorization. Long-running actions answer 202 with an operation id."
)


class HypdApp(ApiResolver):
    """The resolver of one function instance: every request runs with its services."""

    def __init__(self, services: ApiServices) -> None:
        super().__init__()
        self.scope = Scope(services, Logger(child=True), Metrics())

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        with serving(self.scope):
            return super().resolve(event, context)


def build_app(services: ApiServices) -> HypdApp:
    app = HypdApp(services)
    app.include_router(clusters.router)
    app.include_router(operations.router)
    app.include_router(catalog.router)
    app.include_router(capacity.router)
    app.include_router(health.router)
    app.include_router(features.router)
    app.include_router(teams.router)
    app.include_router(workloads.router)
    app.include_router(teardown.router)
    register_error_handlers(app)
    return app


def openapi_document(app: APIGatewayRestResolver) -> dict[str, Any]:
    """The OpenAPI document, with the shared schemas every error response refers to."""
    document: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(title=TITLE, version=__version__, description=DESCRIPTION)
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for model in (ErrorBody, OperationAccepted, InstanceGroupUnchanged, AutoscalingUnchanged):
        schema = model.model_json_schema(
            by_alias=True, ref_template="#/components/schemas/{model}", mode="serialization"
        )
        for name, nested in schema.pop("$defs", {}).items():
            schemas.setdefault(name, nested)
        schemas.setdefault(model.__name__, schema)
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []):
                parameter["schema"] = _present_value(parameter["schema"])
            responses = operation.setdefault("responses", {})
            # Validation errors are answered with 400 and ErrorBody, never Powertools' 422.
            responses.pop("422", None)
            responses.setdefault("500", dict(ERROR_RESPONSES[500]))
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(unused, None)
    document["security"] = [{"sigv4": []}]
    document["components"].setdefault("securitySchemes", {})["sigv4"] = {
        "type": "apiKey",
        "name": "Authorization",
        "in": "header",
        "x-amazon-apigateway-authtype": "awsSigv4",
    }
    return document


def _present_value(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's schema without the `null` of an optional one: a query parameter is sent
    as text or not at all (Powertools renders `str | None` as `anyOf [string, null]`)."""
    options = schema.get("anyOf")
    if not isinstance(options, list):
        return schema
    present = [option for option in options if option != {"type": "null"}]
    if len(options) != 2 or len(present) != 1:
        return schema
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    return {**present[0], **rest}
