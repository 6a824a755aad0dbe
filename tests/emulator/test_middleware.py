"""The middleware with real boto3 clients through a werkzeug server in front of moto's app."""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import WSGIRequestHandler, make_server

from hypd_local.emulator import EmulatorMiddleware, Faults
from hypd_local.emulator.errors import ConflictException, ResourceNotFoundException
from hypd_local.emulator.protocol import HttpRequest

REGION = "us-west-2"
ACCOUNT = "123456789012"
WHEN = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
ROLE = "arn:aws:iam::123456789012:role/hyperpod"


class FakeEks:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def create_addon(self, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("CreateAddon", params))
        return {"addon": {"addonName": params["addonName"], "clusterName": params["clusterName"],
                          "status": "CREATING", "createdAt": WHEN,
                          "tags": params.get("tags", {})}}

    def describe_addon(self, params: dict[str, Any]) -> dict[str, Any]:
        raise ResourceNotFoundException(
            f"No addon: {params['addonName']} found in cluster: {params['clusterName']}",
            fields={"clusterName": params["clusterName"], "addonName": params["addonName"]})

    def list_addons(self, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("ListAddons", params))
        return {"addons": ["vpc-cni"], "nextToken": "t2"}

    def disassociate_access_policy(self, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("DisassociateAccessPolicy", params))
        return {}


class FakeSageMaker:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def describe_cluster(self, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("DescribeCluster", params))
        if params["ClusterName"] == "boom":
            raise RuntimeError("emulator bug")
        return {
            "ClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdefabcdef",
            "ClusterName": params["ClusterName"], "ClusterStatus": "Creating",
            "CreationTime": WHEN, "InstanceGroups": [],
        }

    def update_cluster(self, params: dict[str, Any]) -> dict[str, Any]:
        raise ConflictException("Cluster is not InService")

    def create_cluster(self, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("CreateCluster", params))
        return {"ClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdefabcdef"}


class _Quiet(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class Stack:
    def __init__(self, url: str, faults: Faults, eks: FakeEks, sagemaker: FakeSageMaker,
                 middleware: EmulatorMiddleware) -> None:
        self.url = url
        self.faults = faults
        self.eks_emulator = eks
        self.sagemaker_emulator = sagemaker
        self.middleware = middleware

    def client(self, service: str) -> Any:
        return boto3.client(
            service, endpoint_url=self.url, region_name=REGION, aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"mode": "standard", "total_max_attempts": 1}))


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    faults = Faults()
    eks, sagemaker = FakeEks(), FakeSageMaker()
    middleware = EmulatorMiddleware(
        DomainDispatcherApplication(create_backend_app),
        emulators={"eks": eks, "sagemaker": sagemaker}, faults=faults,
        region=REGION, account_id=ACCOUNT)
    server = make_server("127.0.0.1", 0, middleware, threaded=True, request_handler=_Quiet)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield Stack(f"http://127.0.0.1:{server.server_port}", faults, eks, sagemaker, middleware)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(autouse=True)
def _no_faults(stack: Stack) -> Iterator[None]:
    stack.faults.clear()
    stack.eks_emulator.calls.clear()
    stack.sagemaker_emulator.calls.clear()
    yield
    stack.faults.clear()


def test_eks_rest_json_operation_with_uri_labels_and_body(stack: Stack) -> None:
    eks = stack.client("eks")
    result = eks.create_addon(clusterName="c1", addonName="vpc-cni", tags={"team": "ml"})
    assert result["addon"]["status"] == "CREATING"
    assert result["addon"]["createdAt"] == WHEN
    assert result["addon"]["tags"] == {"team": "ml"}
    name, params = stack.eks_emulator.calls[-1]
    assert name == "CreateAddon"
    assert params["clusterName"] == "c1"
    assert params["addonName"] == "vpc-cni"
    assert params["tags"] == {"team": "ml"}
    assert params["clientRequestToken"]  # botocore's idempotency token arrives


def test_eks_encoded_labels_and_query_string(stack: Stack) -> None:
    eks = stack.client("eks")
    eks.disassociate_access_policy(
        clusterName="c1", principalArn="arn:aws:iam::123456789012:role/path/admin",
        policyArn="arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy")
    assert stack.eks_emulator.calls[-1][1]["principalArn"] == (
        "arn:aws:iam::123456789012:role/path/admin")
    result = eks.list_addons(clusterName="c1", maxResults=5, nextToken="t1")
    assert result["addons"] == ["vpc-cni"]
    assert stack.eks_emulator.calls[-1][1] == {"clusterName": "c1", "maxResults": 5,
                                              "nextToken": "t1"}


def test_eks_modeled_error(stack: Stack) -> None:
    eks = stack.client("eks")
    with pytest.raises(eks.exceptions.ResourceNotFoundException) as caught:
        eks.describe_addon(clusterName="c1", addonName="nope")
    response = caught.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert response["Error"]["Message"] == "No addon: nope found in cluster: c1"
    assert response["addonName"] == "nope"


def test_eks_validation_error(stack: Stack) -> None:
    eks = stack.client("eks")
    with pytest.raises(eks.exceptions.InvalidParameterException) as caught:
        eks.list_addons(clusterName="c1", maxResults=500)
    assert "at 'maxResults' failed to satisfy constraint: Member must have value less than " \
           "or equal to 100" in caught.value.response["Error"]["Message"]
    assert stack.eks_emulator.calls == []


def test_sagemaker_json_operation(stack: Stack) -> None:
    sagemaker = stack.client("sagemaker")
    result = sagemaker.describe_cluster(ClusterName="my-cluster")
    assert result["ClusterStatus"] == "Creating"
    assert result["CreationTime"] == WHEN
    assert stack.sagemaker_emulator.calls == [("DescribeCluster", {"ClusterName": "my-cluster"})]


def test_sagemaker_validation_rejects_before_the_emulator(stack: Stack) -> None:
    sagemaker = stack.client("sagemaker")
    with pytest.raises(ClientError) as caught:
        sagemaker.create_cluster(
            ClusterName="c1",
            InstanceGroups=[{"InstanceGroupName": "g", "InstanceType": "ml.not-a-type",
                             "InstanceCount": 1, "ExecutionRole": ROLE,
                             "LifeCycleConfig": {"SourceS3Uri": "s3://b/p", "OnCreate": "x.sh"}}])
    error = caught.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert "'InstanceGroups[0].InstanceType'" in error["Message"]
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert stack.sagemaker_emulator.calls == []


def test_sagemaker_modeled_error(stack: Stack) -> None:
    sagemaker = stack.client("sagemaker")
    with pytest.raises(sagemaker.exceptions.ConflictException) as caught:
        sagemaker.update_cluster(ClusterName="c1", NodeRecovery="None")
    assert caught.value.response["Error"]["Message"] == "Cluster is not InService"


def test_unexpected_exception_is_an_internal_failure(stack: Stack,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    sagemaker = stack.client("sagemaker")
    with caplog.at_level(logging.ERROR, logger="hypd_local.emulator"), \
            pytest.raises(ClientError) as caught:
        sagemaker.describe_cluster(ClusterName="boom")
    assert caught.value.response["Error"]["Code"] == "InternalFailure"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert any("emulator bug" in (r.exc_text or "") for r in caplog.records)


def test_operations_not_emulated_go_to_moto(stack: Stack) -> None:
    assert stack.client("sagemaker").list_clusters()["ClusterSummaries"] == []
    assert stack.client("eks").list_clusters()["clusters"] == []
    queues = stack.client("sqs").list_queues()  # another service entirely
    assert queues["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_fault_on_an_emulated_operation_is_consumed_per_call(stack: Stack) -> None:
    sagemaker = stack.client("sagemaker")
    stack.faults.fail("sagemaker", "DescribeCluster", code="ThrottlingException", times=2)
    codes = []
    for _ in range(3):
        try:
            sagemaker.describe_cluster(ClusterName="c1")
            codes.append("ok")
        except ClientError as exc:
            codes.append(exc.response["Error"]["Code"])
    assert codes == ["ThrottlingException", "ThrottlingException", "ok"]
    assert len(stack.sagemaker_emulator.calls) == 1
    assert stack.faults.pending() == []


def test_fault_on_an_operation_moto_serves(stack: Stack) -> None:
    stack.faults.fail("eks", "ListClusters", code="ServiceUnavailableException")
    eks = stack.client("eks")
    with pytest.raises(eks.exceptions.ServiceUnavailableException) as caught:
        eks.list_clusters()
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert eks.list_clusters()["clusters"] == []


def test_eks_throttling_uses_the_model_status(stack: Stack) -> None:
    stack.faults.fail("eks", "CreateAddon", times=1)
    eks = stack.client("eks")
    with pytest.raises(ClientError) as caught:
        eks.create_addon(clusterName="c1", addonName="vpc-cni")
    assert caught.value.response["Error"]["Code"] == "ThrottlingException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429


def test_faults_retried_by_botocore_then_succeed(stack: Stack) -> None:
    stack.faults.fail("sagemaker", "DescribeCluster", code="ThrottlingException", times=2)
    client = boto3.client(
        "sagemaker", endpoint_url=stack.url, region_name=REGION, aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "total_max_attempts": 3}))
    assert client.describe_cluster(ClusterName="c1")["ClusterStatus"] == "Creating"


def test_resource_limit_fault_with_message(stack: Stack) -> None:
    stack.faults.fail("sagemaker", "CreateCluster", code="ResourceLimitExceeded",
                      message="Insufficient capacity for ml.p5.48xlarge")
    sagemaker = stack.client("sagemaker")
    with pytest.raises(sagemaker.exceptions.ResourceLimitExceeded) as caught:
        sagemaker.create_cluster(
            ClusterName="c1",
            InstanceGroups=[{"InstanceGroupName": "g", "InstanceType": "ml.p5.48xlarge",
                             "InstanceCount": 1, "ExecutionRole": ROLE}])
    assert caught.value.response["Error"]["Message"] == "Insufficient capacity for ml.p5.48xlarge"


def test_service_detection(stack: Stack) -> None:
    middleware = stack.middleware
    auth = ("AWS4-HMAC-SHA256 Credential=AKID/20240101/us-west-2/eks/aws4_request, "
            "SignedHeaders=host, Signature=abc")
    assert middleware.route(HttpRequest("GET", "/clusters/x", headers={"authorization": auth})
                            ) == ("eks", "DescribeCluster")
    assert middleware.route(HttpRequest(
        "GET", "/clusters/x", headers={"host": "eks.us-west-2.amazonaws.com"})) == (
        "eks", "DescribeCluster")
    assert middleware.route(HttpRequest(
        "GET", "/clusters/x",
        query=[("X-Amz-Credential", "AKID/20240101/us-west-2/eks/aws4_request")])) == (
        "eks", "DescribeCluster")
    assert middleware.route(HttpRequest(
        "POST", "/", headers={"x-amz-target": "SageMaker.ListClusters"})) == (
        "sagemaker", "ListClusters")
    assert middleware.route(HttpRequest(
        "POST", "/", headers={"x-amz-target": "DynamoDB_20120810.ListTables"})) == (
        "dynamodb", "ListTables")
    assert middleware.route(HttpRequest(
        "POST", "/", headers={"x-amz-target": "Kinesis_20131202.ListStreams"})) is None
    s3_auth = auth.replace("/eks/", "/s3/")
    assert middleware.route(HttpRequest("GET", "/clusters/x",
                                        headers={"authorization": s3_auth})) == ("s3", "GetObject")
    kinesis_auth = auth.replace("/eks/", "/kinesis/")  # not a service the control plane calls
    assert middleware.route(HttpRequest("GET", "/clusters/x",
                                        headers={"authorization": kinesis_auth})) is None


# --- query / ec2 / rest-xml services: faults only, bodies replayed ------------------------------

class Recorder:
    """A WSGI app standing for moto: records what reached it."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, Any], bytes]] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        self.seen.append((dict(environ), body))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"moto"]


def wsgi_call(app: Any, method: str, body: bytes, headers: dict[str, str],
              query: str = "", path: str = "/") -> tuple[str, list[tuple[str, str]], bytes,
                                                         dict[str, Any]]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
        "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)) if body else "",
    }
    environ["test.original_input"] = environ["wsgi.input"]
    for key, value in headers.items():
        name = key.upper().replace("-", "_")
        environ[name if name == "CONTENT_TYPE" else f"HTTP_{name}"] = value
    answer: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]]) -> None:
        answer["status"], answer["headers"] = status, response_headers

    chunks = app(environ, start_response)
    return answer["status"], answer["headers"], b"".join(chunks), environ


def signed(service: str) -> dict[str, str]:
    return {"authorization": f"AWS4-HMAC-SHA256 Credential=AKID/20240101/{REGION}/{service}/"
                             "aws4_request, SignedHeaders=host, Signature=abc"}


FORM = {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}


def test_query_bodies_reach_moto_byte_for_byte() -> None:
    recorder, faults = Recorder(), Faults()
    app = EmulatorMiddleware(recorder, emulators={}, faults=faults, region=REGION,
                             account_id=ACCOUNT)
    body = ("Action=CreateStack&Version=2010-05-15&StackName=s1&TemplateBody="
            + quote('{"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}} é+&=', safe="")).encode()
    headers = {**signed("cloudformation"), **FORM}

    # no fault pending for the service: the body is not even read
    status, _h, answer, environ = wsgi_call(app, "POST", body, headers)
    assert (status, answer) == ("200 OK", b"moto")
    assert recorder.seen[-1][1] == body
    assert environ["wsgi.input"] is environ["test.original_input"]  # untouched

    # a fault for another operation: the body is read to find Action=, then replayed
    faults.fail("cloudformation", "DeleteStack")
    status, _h, answer, environ = wsgi_call(app, "POST", body, headers)
    assert (status, answer) == ("200 OK", b"moto")
    seen_environ, seen_body = recorder.seen[-1]
    assert seen_body == body
    assert seen_environ["CONTENT_LENGTH"] == str(len(body))
    assert seen_environ["CONTENT_TYPE"] == FORM["content-type"]
    assert environ["wsgi.input"] is not environ["test.original_input"]  # read and replayed

    # a GET with Action= in the query string and no body keeps having no Content-Length
    faults.fail("sts", "AssumeRole")
    wsgi_call(app, "GET", b"", signed("sts"), query="Action=GetCallerIdentity&Version=2011-06-15")
    assert recorder.seen[-1][0]["CONTENT_LENGTH"] == ""
    assert len(recorder.seen) == 3


def test_query_fault_answers_xml_and_moto_never_sees_it() -> None:
    recorder, faults = Recorder(), Faults()
    app = EmulatorMiddleware(recorder, emulators={}, faults=faults, region=REGION,
                             account_id=ACCOUNT)
    faults.fail("ec2", "DescribeVpcs", code="RequestLimitExceeded")
    status, headers, answer, _env = wsgi_call(
        app, "POST", b"Action=DescribeVpcs&Version=2016-11-15", {**signed("ec2"), **FORM})
    assert status == "503 Service Unavailable"
    assert answer.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
                             b"<Code>RequestLimitExceeded</Code>")
    assert ("Content-Length", str(len(answer))) in headers
    assert recorder.seen == []


def test_s3_head_fault_has_no_body() -> None:
    recorder, faults = Recorder(), Faults()
    app = EmulatorMiddleware(recorder, emulators={}, faults=faults, region=REGION,
                             account_id=ACCOUNT)
    faults.fail("s3", "HeadBucket", code="AccessDenied")
    status, headers, answer, _env = wsgi_call(app, "HEAD", b"", signed("s3"), path="/bucket1")
    assert (status, answer) == ("403 Forbidden", b"")
    assert ("Content-Length", "0") in headers
    status, _h, answer, _env = wsgi_call(app, "HEAD", b"", signed("s3"), path="/bucket1")
    assert (status, answer) == ("200 OK", b"moto")


def test_xml_services_cannot_be_emulated() -> None:
    with pytest.raises(ValueError, match="only faulted"):
        EmulatorMiddleware(Recorder(), emulators={"s3": object()}, region=REGION,
                           account_id=ACCOUNT)


def test_real_clients_of_xml_services_through_the_middleware(stack: Stack) -> None:
    stack.faults.fail("sts", "GetCallerIdentity", code="ExpiredToken")
    sts = stack.client("sts")
    with pytest.raises(ClientError) as caught:
        sts.get_caller_identity()
    assert caught.value.response["Error"]["Code"] == "ExpiredToken"
    assert sts.get_caller_identity()["Account"] == ACCOUNT
    stack.faults.fail("s3", "ListBuckets", code="InternalError")
    s3 = stack.client("s3")
    with pytest.raises(ClientError) as caught:
        s3.list_buckets()
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert "Buckets" in s3.list_buckets()
