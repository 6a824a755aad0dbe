"""The cloud's own AWS requests are served in process (`hypd_local.transport`), authorised and
answered exactly as over HTTP; everyone else's still go over HTTP."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
import urllib3
from botocore.awsrequest import AWSPreparedRequest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError
from werkzeug.serving import make_server

from hypd_local import LocalCloud, transport
from hypd_local.iam.enforce import Authorization
from hypd_local.transport import InProcessTransport, serving_in_process

from .test_template import write_template

CALLER_TEMPLATE = """
    Transform: AWS::Serverless-2016-10-31
    Resources:
      Records:
        Type: AWS::DynamoDB::Table
        Properties:
          BillingMode: PAY_PER_REQUEST
          AttributeDefinitions: [{AttributeName: PK, AttributeType: S}]
          KeySchema: [{AttributeName: PK, KeyType: HASH}]
      Caller:
        Type: AWS::Serverless::Function
        Properties:
          CodeUri: caller
          Handler: app.handler
          Runtime: python3.12
          Policies:
            - DynamoDBCrudPolicy: {TableName: !Ref Records}
"""

# Calls what the event names with the clients it made at import; answers what came back.
CALLER_CODE = '''
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

CLIENTS = {name: boto3.client(name) for name in ("dynamodb", "ec2", "s3", "sns")}


def handler(event, context):
    try:
        answer = getattr(CLIENTS[event["service"]], event["operation"])(**event["params"])
    except ClientError as exc:
        return {"error": exc.response["Error"],
                "status": exc.response["ResponseMetadata"]["HTTPStatusCode"]}
    return {"status": answer["ResponseMetadata"]["HTTPStatusCode"]}
'''


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    tmp_path = tmp_path_factory.mktemp("transport")
    template = write_template(tmp_path, CALLER_TEMPLATE, {"caller/app.py": CALLER_CODE})
    with LocalCloud(template) as running:
        yield running


def authorised_on(cloud: LocalCloud, call: Callable[[], Any]) -> tuple[Any, list[tuple[str, int]]]:
    """What ``call()`` returned, and each authorisation it caused: (action, thread)."""
    seen: list[tuple[str, int]] = []

    def observe(authorization: Authorization) -> None:
        seen.append((authorization.operation, threading.get_ident()))

    with cloud.watch_authorizations(observe):
        result = call()
    return result, seen


def as_function(cloud: LocalCloud, service: str, *, secret: str | None = None) -> Any:
    """A client over HTTP signing with the Caller function's role session."""
    frozen = cloud.lambdas.credentials_of(cloud.lambdas.find("Caller"))
    assert frozen is not None
    keys = frozen.get_frozen_credentials()
    return boto3.client(service, region_name=cloud.region, endpoint_url=cloud.aws_endpoint,
                        aws_access_key_id=keys.access_key,
                        aws_secret_access_key=secret or keys.secret_key,
                        aws_session_token=keys.token)


def refusal(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as refused:
        call()
    return {"error": refused.value.response["Error"],
            "status": refused.value.response["ResponseMetadata"]["HTTPStatusCode"]}


def test_a_functions_requests_are_served_on_its_thread_and_authorised_as_its_role(
        cloud: LocalCloud) -> None:
    # When the function lists the table's items (its role may)
    table = cloud.resources["Records"]
    answer, seen = authorised_on(cloud, lambda: cloud.invoke("Caller", {
        "service": "dynamodb", "operation": "scan", "params": {"TableName": table}}))

    # Then the request was authorised as its role, on the thread that invoked it (no HTTP)
    assert answer == {"status": 200}
    assert seen == [("dynamodb:Scan", threading.get_ident())]


def test_a_test_client_still_goes_over_http(cloud: LocalCloud) -> None:
    table = cloud.resources["Records"]
    _answer, seen = authorised_on(
        cloud, lambda: as_function(cloud, "dynamodb").scan(TableName=table))
    assert [action for action, _ in seen] == ["dynamodb:Scan"]
    assert seen[0][1] != threading.get_ident()  # served by the moto server's thread


@pytest.mark.parametrize(("service", "operation", "params"), [
    ("ec2", "describe_vpcs", {}),  # ec2 protocol: UnauthorizedOperation, 403
    ("dynamodb", "list_tables", {}),  # json: AccessDeniedException, 400
    ("s3", "head_bucket", {"Bucket": "elsewhere"}),  # a HEAD: no body, the code is the status
    ("sns", "publish", {"TopicArn": "arn:aws:sns:us-west-2:123456789012:t",
                        "Message": "m"}),  # query: AuthorizationError
])
def test_a_refusal_in_process_is_the_refusal_over_http(
        cloud: LocalCloud, service: str, operation: str, params: dict[str, Any]) -> None:
    # Given a call the function's role is not allowed
    # When the function makes it, and a client signing as the role makes it over HTTP
    in_process = cloud.invoke("Caller", {"service": service, "operation": operation,
                                         "params": params})
    over_http = refusal(lambda: getattr(as_function(cloud, service), operation)(**params))

    # Then both are refused in the service's own words, naming the role's session
    assert in_process == over_http
    assert in_process["status"] in (400, 403)
    if service != "s3":
        assert ":assumed-role/" in in_process["error"]["Message"]


def test_a_wrong_secret_still_acts_as_the_keys_principal(cloud: LocalCloud) -> None:
    # Signatures are not checked (over HTTP neither): the access key names the caller, so a
    # request signed with a wrong secret is authorised, and refused, as the key's role.
    forged = as_function(cloud, "ec2", secret="not-the-secret")
    with serving_in_process():
        in_process = refusal(forged.describe_vpcs)
    assert in_process == refusal(forged.describe_vpcs)
    assert in_process["error"]["Code"] == "UnauthorizedOperation"


def test_a_key_the_cloud_did_not_issue_is_the_administrator_as_over_http(
        cloud: LocalCloud) -> None:
    # Given a client with a key nobody issued (the developer's own credentials stand so)
    unknown = boto3.client("s3", region_name=cloud.region, endpoint_url=cloud.aws_endpoint,
                           aws_access_key_id="AKIAUNKNOWN000000000",
                           aws_secret_access_key="whatever")
    # When it writes and reads an object in process
    with serving_in_process():
        _, seen = authorised_on(cloud, lambda: (
            unknown.create_bucket(Bucket="mine", CreateBucketConfiguration={
                "LocationConstraint": cloud.region}),
            unknown.put_object(Bucket="mine", Key="k", Body=b"payload")))
        body = unknown.get_object(Bucket="mine", Key="k")["Body"].read()
    # Then nothing was authorised (as over HTTP) and the streamed body came back whole
    assert seen == []
    assert body == b"payload"
    assert unknown.get_object(Bucket="mine", Key="k")["Body"].read() == b"payload"


# ------------------------------------------------------------------ the wire, without it
class Echo:
    """A WSGI app that keeps each environ it is given (with the body) and answers JSON."""

    BODY = b'{"TableNames":[]}'

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> list[bytes]:
        environ["body"] = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        self.seen.append(environ)
        start_response("200 OK", [("Content-Type", "application/x-amz-json-1.0"),
                                  ("x-amzn-RequestId", "r-1"),
                                  ("Content-Length", str(len(self.BODY)))])
        return [self.BODY]


# What only a socket has, or what differs between two connections.
_NOT_COMPARED = {"wsgi.input", "wsgi.errors", "werkzeug.socket", "REMOTE_PORT"}


@pytest.mark.parametrize(("service", "operation", "params"), [
    ("dynamodb", "list_tables", {}),  # POST, JSON body
    ("eks", "list_clusters", {"maxResults": 5}),  # GET with a query string
    ("s3", "put_object", {"Bucket": "b", "Key": "a key/\u00fc", "Body": b"x" * 10}),  # quoted
    ("s3", "head_bucket", {"Bucket": "b"}),  # HEAD: the body is never read
])
def test_the_environ_and_the_response_are_the_servers(
        service: str, operation: str, params: dict[str, Any]) -> None:
    # Given a werkzeug server on loopback in front of an app that keeps what it is given
    echo = Echo()
    server = make_server("127.0.0.1", 0, echo, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        sent: list[AWSPreparedRequest] = []
        client = boto3.client(service, region_name="us-west-2",
                              endpoint_url=f"http://127.0.0.1:{server.server_port}",
                              aws_access_key_id="AKIAEXAMPLE", aws_secret_access_key="s",
                              config=Config(retries={"total_max_attempts": 1}))
        client.meta.events.register("before-send", lambda request, **_: sent.append(request))
        # When a request goes over HTTP, and the same prepared request in process
        with contextlib.suppress(ClientError):  # the echo's body is not every operation's answer
            getattr(client, operation)(**params)
        sent[0].reset_stream()  # as botocore does before sending a request again
        response = InProcessTransport(echo, "127.0.0.1", server.server_port).send(sent[0])
    finally:
        server.shutdown()
        server.server_close()
    over_http, in_process = echo.seen

    # Then the app saw the same environ (headers, path, query, body)
    def compared(environ: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in environ.items() if k not in _NOT_COMPARED}

    assert compared(in_process) == compared(over_http)
    # and botocore reads what the server would have sent
    assert response.status_code == 200
    assert response.headers["x-amzn-RequestId"] == "r-1"
    assert response.headers["Server"].startswith("Werkzeug/")
    assert response.content == (b"" if operation == "head_bucket" else Echo.BODY)


@pytest.mark.parametrize(("method", "path", "body", "headers"), [
    ("GET", "/api/v1/namespaces/default/configmaps?limit=5", None, {"Accept": "application/json"}),
    ("PATCH", "/api/v1/namespaces/default/configmaps/a%20b?fieldManager=hypd",
     b'{"data": {}}', {"Content-Type": "application/apply-patch+yaml"}),
    ("DELETE", "/api/v1/namespaces/default/configmaps/c", None, {}),
])
def test_a_urllib3_request_reaches_the_app_as_over_the_network(
        method: str, path: str, body: bytes | None, headers: dict[str, str]) -> None:
    # Given a werkzeug server on loopback, and the same app served in process at its address
    echo = Echo()
    server = make_server("127.0.0.1", 0, echo, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served = InProcessTransport(echo, "127.0.0.1", server.server_port)
    url = f"http://127.0.0.1:{server.server_port}{path}"
    pool = urllib3.PoolManager()
    try:
        # When urllib3 sends a request over the network, then from a thread serving in process
        over_network = pool.request(method, url, body=body, headers=headers)
        transport.serve(served)
        try:
            with serving_in_process():
                in_process = pool.request(method, url, body=body, headers=headers)
        finally:
            transport.stop_serving(served)
    finally:
        server.shutdown()
        server.server_close()

    # Then the app saw the same environ, and urllib3 read the same answer
    assert [{k: v for k, v in e.items() if k not in _NOT_COMPARED} for e in echo.seen[1:]] == [
        {k: v for k, v in echo.seen[0].items() if k not in _NOT_COMPARED}]
    assert (in_process.status, in_process.data) == (over_network.status, over_network.data)
    assert in_process.headers["x-amzn-RequestId"] == over_network.headers["x-amzn-RequestId"]


def test_a_stream_is_left_to_the_network(cloud: LocalCloud) -> None:
    # A watch never ends: it is not collected in process, even from a function's thread
    served = InProcessTransport(Echo(), "127.0.0.1", 9)
    transport.serve(served)
    try:
        with serving_in_process(), pytest.raises(urllib3.exceptions.MaxRetryError):
            urllib3.PoolManager().request("GET", "http://127.0.0.1:9/api/v1/pods?watch=true",
                                          retries=0)
    finally:
        transport.stop_serving(served)


def test_a_request_to_another_endpoint_goes_over_http(cloud: LocalCloud) -> None:
    # Serving in process concerns the running cloud's moto server only
    client = boto3.client("dynamodb", region_name="us-west-2",
                          endpoint_url="http://127.0.0.1:9", aws_access_key_id="a",
                          aws_secret_access_key="b",
                          config=Config(retries={"total_max_attempts": 1}))
    with serving_in_process(), pytest.raises(EndpointConnectionError):
        client.list_tables()
