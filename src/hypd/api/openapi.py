"""Generate docs/openapi.json from the code: `python -m hypd.api.openapi [PATH]`.

tests/unit/test_openapi.py fails when the committed document is stale.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from hypd import __version__
from hypd.api.absent_clusters import guarded
from hypd.api.app import HypdApp, build_app
from hypd.api.errors import ERROR_RESPONSES
from hypd.api.idempotency import (
    HEADER,
    KEY_PATTERN,
    MAX_KEY_LENGTH,
    MUTATING_METHODS,
    REPLAYED_HEADER,
)
from hypd.api.models import (
    AutoscalingUnchanged,
    ErrorBody,
    InstanceGroupUnchanged,
    OperationAccepted,
)

TITLE = "hypd"
DESCRIPTION = (
    "A serverless control plane for Amazon SageMaker HyperPod on EKS. Every route needs "
    "AWS_IAM (SigV4) authorization. Long-running actions answer 202 with an operation id."
)
_PATH_PARAMETER = re.compile(r"\{(\w+)\}")


def openapi_document(app: HypdApp) -> dict[str, Any]:
    """The OpenAPI document of every route (all the app's routers included), with the shared
    schemas every error response refers to."""
    app.include_all_routes()
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
    for path, path_item in document.get("paths", {}).items():
        rule = _PATH_PARAMETER.sub(r"<\1>", path)
        for method, operation in path_item.items():
            for parameter in operation.get("parameters", []):
                parameter["schema"] = _present_value(parameter["schema"])
            responses = operation.setdefault("responses", {})
            # Validation errors are answered with 400 and ErrorBody, never Powertools' 422.
            responses.pop("422", None)
            responses.setdefault("500", dict(ERROR_RESPONSES[500]))
            if guarded(method, rule):  # ClusterDeleted, ClusterNotActive (absent_clusters)
                responses.setdefault("409", dict(ERROR_RESPONSES[409]))
            if method.upper() in MUTATING_METHODS:
                _document_idempotency(operation)
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


IDEMPOTENCY_KEY_PARAMETER: dict[str, Any] = {
    "name": HEADER,
    "in": "header",
    "required": False,
    "description": (
        "Any unique text of your choosing (a UUID, or an event's id): a repeat of this request "
        "with the same key within 24 hours runs nothing and gets the first answer again, marked "
        f"`{REPLAYED_HEADER}: true`. The same key for another method, path, query or body is "
        "422; while the first is still being served, 429 with Retry-After. A 5xx answer is not "
        "kept (a repeat runs again). Keys are the caller's own, per route (docs/api.md)."
    ),
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_KEY_LENGTH,
        "pattern": KEY_PATTERN,
    },
}

_REPLAYED = {
    "description": "`true` when this is the answer to an earlier request with the same "
    "Idempotency-Key, sent again; absent on a first answer.",
    "schema": {"type": "string", "enum": ["true"]},
}
_RETRY_AFTER = {
    "description": "Seconds to wait before asking again.",
    "schema": {"type": "integer", "minimum": 1},
}


def _document_idempotency(operation: dict[str, Any]) -> None:
    """A mutating route's `Idempotency-Key` (hypd.api.idempotency): the header, the replay's
    mark on its answers, and the 422 and 429 it may answer."""
    operation.setdefault("parameters", []).append(dict(IDEMPOTENCY_KEY_PARAMETER))
    responses = operation["responses"]
    for status, response in responses.items():
        if status.startswith(("2", "4")):
            response.setdefault("headers", {})[REPLAYED_HEADER] = dict(_REPLAYED)
    responses["422"] = dict(ERROR_RESPONSES[422])
    responses["429"] = {**ERROR_RESPONSES[429], "headers": {"Retry-After": dict(_RETRY_AFTER)}}


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


def _no_services() -> Any:
    raise AssertionError("the OpenAPI generator must not serve a request")


def render() -> str:
    document = openapi_document(build_app(_no_services))
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else Path("docs/openapi.json")
    target.write_text(render())
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
