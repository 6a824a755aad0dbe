"""Protocol round trips proven with botocore's own serializer and parser."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.parsers import create_parser
from botocore.serialize import create_serializer

from hypd_local.emulator import errors
from hypd_local.emulator.errors import AwsError, error_for
from hypd_local.emulator.protocol import (
    HttpRequest,
    HttpResponse,
    format_timestamp,
    parse_timestamp,
    protocol_for,
)
from tests.emulator import EMULATED, model

WHEN = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
TEXT = "a/b c:é+%&=?#"


def rich(shape: Any, depth: int = 0) -> Any:
    """A value exercising every member of ``shape`` (to a depth), for wire round trips."""
    kind = shape.type_name
    if kind == "structure":
        if getattr(shape, "is_document_type", False):
            return {"doc": [1, "two", {"three": None}]}
        if depth > 6:
            return {}
        names = list(shape.members)
        if shape.metadata.get("union"):
            names = names[:1]
        return {n: rich(shape.members[n], depth + 1) for n in names}
    if kind == "list":
        return [rich(shape.member, depth + 1), rich(shape.member, depth + 1)]
    if kind == "map":
        return {"k/é 1": rich(shape.value, depth + 1)}
    if kind == "string":
        return shape.metadata["enum"][0] if shape.metadata.get("enum") else TEXT
    if kind in {"integer", "long"}:
        return 2**40 if kind == "long" else 42
    if kind in {"float", "double"}:
        return 1.5
    if kind == "boolean":
        return True
    if kind == "timestamp":
        return WHEN
    if kind == "blob":
        return b"\x00\x01blob\xff"
    raise AssertionError(kind)


def to_http_request(serialized: dict[str, Any]) -> HttpRequest:
    query: list[tuple[str, str]] = []
    for key, value in (serialized["query_string"] or {}).items():
        for item in value if isinstance(value, list) else [value]:
            query.append((key, str(item)))
    body = serialized["body"]
    return HttpRequest(
        method=serialized["method"],
        path=serialized["url_path"],
        query=query,
        headers={k.lower(): str(v) for k, v in serialized["headers"].items()},
        body=body.encode() if isinstance(body, str) else bytes(body or b""),
    )


def botocore_request(service: str, operation: str, params: dict[str, Any]) -> HttpRequest:
    service_model = model(service)
    serializer = create_serializer(service_model.protocol, include_validation=False)
    return to_http_request(
        serializer.serialize_to_request(params, service_model.operation_model(operation)))


def botocore_parse(service: str, shape: Any, response: HttpResponse) -> dict[str, Any]:
    parser = create_parser(model(service).protocol)
    parsed: dict[str, Any] = parser.parse(
        {"status_code": response.status,
         "headers": {k.lower(): v for k, v in response.headers},
         "body": response.body}, shape)
    parsed.pop("ResponseMetadata", None)
    return parsed


EMULATED_CASES = [(s, o) for s, ops in EMULATED.items() for o in ops]


@pytest.mark.parametrize(("service", "operation"), EMULATED_CASES)
def test_request_round_trip(service: str, operation: str) -> None:
    shape = model(service).operation_model(operation).input_shape
    params = rich(shape)
    request = botocore_request(service, operation, params)
    protocol = protocol_for(model(service))
    assert protocol.identify(request) == operation
    assert protocol.parse(request, operation) == params


@pytest.mark.parametrize(("service", "operation"), EMULATED_CASES)
def test_response_round_trip(service: str, operation: str) -> None:
    shape = model(service).operation_model(operation).output_shape
    output = rich(shape) if shape is not None else {}
    response = protocol_for(model(service)).serialize(operation, output, "req-1")
    assert response.header("x-amzn-RequestId") == "req-1"
    assert botocore_parse(service, shape, response) == output


@pytest.mark.parametrize("service", ["sagemaker", "eks"])
def test_every_operation_of_the_service_is_routed(service: str) -> None:
    """Routing is unambiguous over the whole model, not just the emulated operations."""
    service_model = model(service)
    protocol = protocol_for(service_model)
    for operation in service_model.operation_names:
        shape = service_model.operation_model(operation).input_shape
        params = ({n: rich(shape.members[n]) for n in shape.required_members}
                  if shape is not None else {})
        assert protocol.identify(botocore_request(service, operation, params)) == operation


def test_unknown_requests_are_not_identified() -> None:
    sagemaker = protocol_for(model("sagemaker"))
    eks = protocol_for(model("eks"))
    assert sagemaker.identify(HttpRequest("POST", "/", headers={"x-amz-target": "X.Y"})) is None
    assert sagemaker.identify(
        HttpRequest("POST", "/", headers={"x-amz-target": "SageMaker.NoSuchOp"})) is None
    assert eks.identify(HttpRequest("PUT", "/clusters/x")) is None
    assert eks.identify(HttpRequest("GET", "/nothing/here")) is None


def test_rest_json_uri_labels_are_decoded() -> None:
    request = botocore_request("eks", "DisassociateAccessPolicy", {
        "clusterName": "c1", "principalArn": "arn:aws:iam::123456789012:role/a/b",
        "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"})
    assert "%2F" in request.path
    parsed = protocol_for(model("eks")).parse(request, "DisassociateAccessPolicy")
    assert parsed["principalArn"] == "arn:aws:iam::123456789012:role/a/b"


def test_wrong_types_are_left_for_validation() -> None:
    protocol = protocol_for(model("sagemaker"))
    request = HttpRequest("POST", "/", headers={"x-amz-target": "SageMaker.ListClusters"},
                          body=json.dumps({"MaxResults": "ten", "CreationTimeAfter": [1],
                                           "Bogus": 1}).encode())
    assert protocol.parse(request, "ListClusters") == {
        "MaxResults": "ten", "CreationTimeAfter": [1], "Bogus": 1}
    eks = protocol_for(model("eks"))
    parsed = eks.parse(HttpRequest("GET", "/clusters", query=[("maxResults", "x")]),
                       "ListClusters")
    assert parsed == {"maxResults": "x"}


def test_malformed_json_is_a_serialization_exception() -> None:
    protocol = protocol_for(model("sagemaker"))
    request = HttpRequest("POST", "/", headers={"x-amz-target": "SageMaker.ListClusters"},
                          body=b"{not json")
    with pytest.raises(AwsError) as caught:
        protocol.parse(request, "ListClusters")
    assert caught.value.code == "SerializationException"


@pytest.mark.parametrize("service", ["sagemaker", "eks"])
def test_declared_errors_round_trip(service: str) -> None:
    service_model = model(service)
    protocol = protocol_for(service_model)
    codes = [s.name for s in service_model.error_shapes]
    codes += ["ValidationException", "ThrottlingException", "InternalFailure"]
    for code in codes:
        error = error_for(service_model, code, f"boom {code}")
        response = protocol.serialize_error(error, "rid")
        parsed = create_parser(service_model.protocol).parse(
            {"status_code": response.status,
             "headers": {k.lower(): v for k, v in response.headers},
             "body": response.body}, None)
        assert parsed["Error"] == {"Code": code, "Message": f"boom {code}"}
        assert parsed["ResponseMetadata"]["RequestId"] == "rid"
        assert parsed["ResponseMetadata"]["HTTPStatusCode"] == error.status


def test_statuses_come_from_the_models() -> None:
    sagemaker, eks = model("sagemaker"), model("eks")
    assert error_for(sagemaker, "ResourceNotFound").status == 400
    assert error_for(sagemaker, "ConflictException").status == 400
    assert error_for(sagemaker, "ThrottlingException").status == 400
    assert error_for(sagemaker, "InternalFailure").status == 500
    assert error_for(eks, "ResourceNotFoundException").status == 404
    assert error_for(eks, "ResourceInUseException").status == 409
    assert error_for(eks, "ThrottlingException").status == 429
    assert error_for(eks, "ServiceUnavailableException").status == 503
    assert error_for(eks, "InvalidParameterException").status == 400


def test_named_errors_match_the_models() -> None:
    """Each named error class carries the status its service's model declares."""
    owners = {
        errors.ResourceNotFound: "sagemaker", errors.ConflictException: "sagemaker",
        errors.ResourceLimitExceeded: "sagemaker", errors.ResourceInUse: "sagemaker",
        errors.ResourceAlreadyExists: "sagemaker",
        errors.InvalidParameterException: "eks", errors.InvalidRequestException: "eks",
        errors.ResourceNotFoundException: "eks", errors.ResourceInUseException: "eks",
        errors.ResourceLimitExceededException: "eks", errors.ClientException: "eks",
        errors.ServerException: "eks", errors.NotFoundException: "eks",
        errors.ServiceUnavailableException: "eks", errors.EksThrottlingException: "eks",
    }
    for cls, service in owners.items():
        instance = cls("m")
        assert errors.declared_status(model(service), instance.code) == instance.status, cls
    assert errors.ValidationException("m").status == 400
    assert errors.ThrottlingException("m").status == 400
    assert errors.InternalFailure("m").status == 500
    assert errors.InternalFailure("m").sender_fault is False
    assert errors.ValidationException("m").sender_fault is True


def test_timestamps() -> None:
    precise = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    assert format_timestamp(precise, "unixtimestamp") == 1714979289.123
    assert format_timestamp(WHEN, "unixtimestamp") == 1714979289
    assert format_timestamp(precise, "iso8601") == "2024-05-06T07:08:09.123Z"
    assert format_timestamp(WHEN, "rfc822") == "Mon, 06 May 2024 07:08:09 GMT"
    for text in ("2024-05-06T07:08:09Z", "1714979289", "Mon, 06 May 2024 07:08:09 GMT"):
        assert parse_timestamp(text) == WHEN
    assert parse_timestamp("not a time") == "not a time"
    shape = model("sagemaker").operation_model("DescribeCluster").output_shape
    response = protocol_for(model("sagemaker")).serialize(
        "DescribeCluster", {"CreationTime": precise}, None)
    parsed = botocore_parse("sagemaker", shape, response)
    assert abs((parsed["CreationTime"] - precise).total_seconds()) < 0.001
