"""Protocol round trips proven with botocore's own serializer and parser."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

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
    """What arrives over HTTP for botocore's serialised request (the ``?static`` part of a
    request URI goes to the query string; a query protocol's dict body is form-encoded)."""
    path, _, static = serialized["url_path"].partition("?")
    query: list[tuple[str, str]] = parse_qsl(static, keep_blank_values=True)
    for key, value in (serialized["query_string"] or {}).items():
        for item in value if isinstance(value, list) else [value]:
            query.append((key, str(item)))
    body = serialized["body"]
    headers = {k.lower(): str(v) for k, v in serialized["headers"].items()}
    if isinstance(body, dict):
        body = urlencode(body)
        headers.setdefault("content-type", "application/x-www-form-urlencoded; charset=utf-8")
    return HttpRequest(
        method=serialized["method"],
        path=path,
        query=query,
        headers=headers,
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


# --- query, ec2 and rest-xml: operations identified, errors answered (injected faults) --------

XML_SERVICES = ("cloudformation", "sts", "iam", "ec2", "s3")
# S3 operations that share a method, URI and required members with another: a deprecated alias
# (the current operation wins) or another endpoint's operation (S3 Express directory buckets).
S3_ALIASES = {
    "GetBucketLifecycle": "GetBucketLifecycleConfiguration",
    "PutBucketLifecycle": "PutBucketLifecycleConfiguration",
    "GetBucketNotification": "GetBucketNotificationConfiguration",
    "PutBucketNotification": "PutBucketNotificationConfiguration",
    "ListDirectoryBuckets": "ListBuckets",
}


def required_only(shape: Any, depth: int = 0) -> Any:
    """The smallest value of ``shape`` botocore serialises (required members, plain values)."""
    kind = shape.type_name
    if kind == "structure":
        return ({n: required_only(shape.members[n], depth + 1) for n in shape.required_members}
                if depth < 8 else {})
    if kind == "list":
        return [required_only(shape.member, depth + 1)]
    if kind == "map":
        return {"k": required_only(shape.value, depth + 1)}
    if kind == "string":
        return shape.metadata["enum"][0] if shape.metadata.get("enum") else "value1"
    if kind == "boolean":
        return True
    if kind == "timestamp":
        return WHEN
    if kind == "blob":
        return b"x"
    return 1


@pytest.mark.parametrize("service", XML_SERVICES)
def test_every_operation_of_the_xml_services_is_identified(service: str) -> None:
    service_model = model(service)
    protocol = protocol_for(service_model)
    assert not protocol.dispatchable
    for operation in service_model.operation_names:
        shape = service_model.operation_model(operation).input_shape
        params = required_only(shape) if shape is not None else {}
        expected = S3_ALIASES.get(operation, operation) if service == "s3" else operation
        assert protocol.identify(botocore_request(service, operation, params)) == expected


def test_query_action_from_the_query_string_or_the_form_body() -> None:
    cloudformation = protocol_for(model("cloudformation"))
    form = {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}
    assert cloudformation.identify(HttpRequest(
        "POST", "/", headers=form, body=b"Version=2010-05-15&Action=CreateStack&StackName=s"
    )) == "CreateStack"
    assert cloudformation.identify(HttpRequest(
        "GET", "/", query=[("Action", "DescribeStacks"), ("Version", "2010-05-15")]
    )) == "DescribeStacks"
    assert cloudformation.identify(HttpRequest(
        "POST", "/", headers=form, body=b"Action=NoSuchAction")) is None
    assert cloudformation.identify(HttpRequest(  # a JSON body is not a form
        "POST", "/", headers={"content-type": "application/json"},
        body=b'{"Action": "CreateStack"}')) is None
    assert cloudformation.identify(HttpRequest(  # "XAction=" is another parameter
        "POST", "/", headers=form, body=b"XAction=CreateStack")) is None


def test_s3_path_and_virtual_host_style() -> None:
    s3 = protocol_for(model("s3"))
    cases = [
        ("HEAD", "/b1", [], {}, "HeadBucket"),
        ("PUT", "/b1", [], {}, "CreateBucket"),
        ("GET", "/b1", [("list-type", "2"), ("prefix", "a/")], {}, "ListObjectsV2"),
        ("GET", "/b1", [], {}, "ListObjects"),
        ("GET", "/b1/dir/a%20b.txt", [], {}, "GetObject"),
        ("PUT", "/b1/dir/a%20b.txt", [], {}, "PutObject"),
        ("PUT", "/b1/k", [], {"x-amz-copy-source": "b0/k"}, "CopyObject"),
        ("PUT", "/b1/k", [("partNumber", "1"), ("uploadId", "u")], {}, "UploadPart"),
        ("GET", "/b1/k", [("uploadId", "u")], {}, "ListParts"),
        ("GET", "/b1", [("tagging", "")], {}, "GetBucketTagging"),
        ("GET", "/", [], {}, "ListBuckets"),
    ]
    for method, path, query, headers, expected in cases:
        assert s3.identify(HttpRequest(method, path, query, headers)) == expected, expected
    for host in ("b1.s3.us-west-2.amazonaws.com", "b1.s3.amazonaws.com", "b1.localhost:5000",
                 "my.dotted.b1.s3-us-west-2.amazonaws.com"):
        assert s3.identify(HttpRequest("HEAD", "/", headers={"host": host})) == "HeadBucket"
        assert s3.identify(HttpRequest("GET", "/k/x", headers={"host": host})) == "GetObject"
    assert s3.identify(HttpRequest("GET", "/", headers={"host": "s3.us-west-2.amazonaws.com"})
                       ) == "ListBuckets"
    assert s3.identify(HttpRequest("GET", "/b1/k", headers={"host": "127.0.0.1:5000"})
                       ) == "GetObject"


def test_s3_reads_the_xml_payload_iam_authorises() -> None:
    s3 = protocol_for(model("s3"))
    deletes = botocore_request("s3", "DeleteObjects", {"Bucket": "b1", "Delete": {
        "Objects": [{"Key": "certs/a.pem"}, {"Key": "certs/b.pem", "VersionId": "v1"}],
        "Quiet": True}})
    assert s3.identify(deletes) == "DeleteObjects"
    assert s3.parse(deletes, "DeleteObjects") == {"Bucket": "b1", "Delete": {
        "Objects": [{"Key": "certs/a.pem"}, {"Key": "certs/b.pem", "VersionId": "v1"}],
        "Quiet": True}}
    tagging = botocore_request("s3", "PutBucketTagging", {"Bucket": "b1", "Tagging": {
        "TagSet": [{"Key": "hypd:tag", "Value": "t"}]}})
    assert s3.parse(tagging, "PutBucketTagging")["Tagging"] == {
        "TagSet": [{"Key": "hypd:tag", "Value": "t"}]}
    malformed = replace(deletes, body=b"<Delete><Object>")
    assert s3.parse(malformed, "DeleteObjects") == {"Bucket": "b1"}  # moto answers MalformedXML


def parse_error(service: str, response: HttpResponse) -> dict[str, Any]:
    parsed: dict[str, Any] = create_parser(model(service).protocol).parse(
        {"status_code": response.status,
         "headers": {k.lower(): v for k, v in response.headers},
         "body": response.body}, None)
    return parsed


@pytest.mark.parametrize(("service", "code", "status", "kind"), [
    ("cloudformation", "ValidationError", 400, "Sender"),
    ("cloudformation", "StackNotFoundException", 404, "Sender"),  # declared
    ("cloudformation", "Throttling", 400, "Sender"),
    ("cloudformation", "InternalFailure", 500, "Receiver"),
    ("sts", "ExpiredToken", 400, "Sender"),
    ("sts", "ExpiredTokenException", 400, "Sender"),  # declared
    ("sts", "AccessDenied", 403, "Sender"),
    ("iam", "NoSuchEntity", 404, "Sender"),  # declared by its code, not its shape name
    ("ec2", "RequestLimitExceeded", 503, None),
    ("ec2", "UnauthorizedOperation", 403, None),
    ("ec2", "InvalidVpcID.NotFound", 400, None),
    ("ec2", "ServiceUnavailable", 503, None),
    ("s3", "AccessDenied", 403, None),  # declared
    ("s3", "NoSuchBucket", 404, None),  # declared
    ("s3", "SlowDown", 503, None),
    ("s3", "InternalError", 500, None),
    ("s3", "InvalidBucketName", 400, None),
])
def test_xml_errors_round_trip(service: str, code: str, status: int, kind: str | None) -> None:
    service_model = model(service)
    error = error_for(service_model, code, f"boom <{code}> & more")
    assert error.status == status
    parsed = parse_error(service, protocol_for(service_model).serialize_error(error, "rid-1"))
    expected = {"Code": code, "Message": f"boom <{code}> & more"}
    if kind is not None:
        expected["Type"] = kind
    assert parsed["Error"] == expected
    assert parsed["ResponseMetadata"]["RequestId"] == "rid-1"
    assert parsed["ResponseMetadata"]["HTTPStatusCode"] == status


def test_s3_head_error_without_a_body_is_coded_by_its_status() -> None:
    response = protocol_for(model("s3")).serialize_error(error_for(model("s3"), "AccessDenied"))
    response.body = b""  # what the middleware answers to HEAD
    parsed = parse_error("s3", response)
    assert parsed["Error"] == {"Code": "403", "Message": "Forbidden"}
    assert parsed["ResponseMetadata"]["RequestId"] == response.header("x-amz-request-id")


def test_json_services_keep_their_statuses() -> None:
    sagemaker = model("sagemaker")
    assert error_for(sagemaker, "AccessDeniedException").status == 400  # AWS's common error
    assert error_for(sagemaker, "RequestLimitExceeded").status == 400  # 503 on EC2 only
    assert error_for(sagemaker, "SlowDown").status == 400  # 503 on S3 only
    assert error_for(sagemaker, "KMS.AccessDenied").status == 403
    assert error_for(sagemaker, "ServiceUnavailableError").status == 503
