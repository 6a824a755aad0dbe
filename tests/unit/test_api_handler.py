"""functions/api/app.py end to end in-process: API Gateway REST proxy events in, responses out.

The handler is imported with the environment template.yaml gives ApiFunction, inside moto
(DynamoDB table from the template, a discover state machine with a trivial Pass definition).
"""

from __future__ import annotations

import base64
import copy
import importlib
import importlib.util
import json
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from hypd.aws.dynamodb import Table
from hypd.clusters.store import ClusterStore
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import ErrorInfo, OperationStatus, is_operation_id
from hypd.operations.store import OperationStore
from hypd.pagination import encode_token
from tests.unit.support import (
    ACCOUNT,
    REGION,
    ROOT,
    TABLE_NAME,
    FakeClock,
    FakeLambdaContext,
    cluster_record,
    eks,
    eks_arn,
    function_environment,
    load_event,
    load_function_module,
)
from tests.unit.support import operation_with_cluster as op_for

pytestmark = pytest.mark.usefixtures("fresh_imports")

PASS_DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


def state_machine(sfn: Any, name: str) -> str:
    """A state machine that does nothing, standing in for an operation's."""
    arn: str = sfn.create_state_machine(
        name=name, definition=PASS_DEFINITION, roleArn=f"arn:aws:iam::{ACCOUNT}:role/{name}Role"
    )["stateMachineArn"]
    return arn
UNKNOWN_OP = "op-" + "0" * 32


def api_event(
    method: str,
    path: str,
    *,
    resource: str | None = None,
    path_parameters: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: str | None = None,
    content_type: str | None = "application/json",
    base64_encoded: bool = False,
) -> dict[str, Any]:
    """A REST proxy event shaped like events/api-get-operation.json (with a body: of
    `content_type`, none when None; `base64_encoded` as API Gateway marks binary bodies)."""
    event = copy.deepcopy(load_event("api-get-operation.json"))
    resource = resource or path
    event.update(
        resource=resource,
        path=path,
        httpMethod=method,
        pathParameters=path_parameters,
        queryStringParameters=query,
        multiValueQueryStringParameters={k: [v] for k, v in query.items()} if query else None,
        body=body,
        isBase64Encoded=base64_encoded,
    )
    event["requestContext"].update(resourcePath=resource, httpMethod=method, path=f"/v1{path}")
    if body is not None and content_type is not None:
        event["headers"]["Content-Type"] = content_type
        event["multiValueHeaders"]["Content-Type"] = [content_type]
    return event


@dataclass
class Response:
    status: int
    body: Any
    headers: dict[str, str]


@dataclass
class Api:
    module: Any
    state_machine_arn: str
    sfn: Any
    operations: OperationStore
    clusters: ClusterStore
    locks: LockStore

    def call(self, method: str, path: str, **kwargs: Any) -> Response:
        return self.send(api_event(method, path, **kwargs))

    def send(self, event: dict[str, Any]) -> Response:
        raw = self.module.handler(event, FakeLambdaContext("hypd-api"))
        headers = {name: values[-1] for name, values in raw["multiValueHeaders"].items()}
        return Response(raw["statusCode"], json.loads(raw["body"]), headers)

    def get_operation(self, operation_id: str) -> Response:
        return self.call(
            "GET",
            f"/operations/{operation_id}",
            resource="/operations/{operationId}",
            path_parameters={"operationId": operation_id},
        )

    def get_cluster(self, tag: str) -> Response:
        return self.call(
            "GET", f"/clusters/{tag}", resource="/clusters/{tag}", path_parameters={"tag": tag}
        )

    def discover(self, body: str | None = None, **kwargs: Any) -> Response:
        return self.call("POST", "/clusters/discover", body=body, **kwargs)


CREATE_CLUSTER_ARN = (
    f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:CreateClusterStateMachine-unit"
)


def load_api(
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    table: Table,
    state_machine_arn: str,
    create_cluster_arn: str = CREATE_CLUSTER_ARN,
) -> Any:
    env = function_environment(
        template,
        "ApiFunction",
        {
            "HypdTable": TABLE_NAME,
            "DiscoverStateMachine": state_machine_arn,
            "CreateClusterStateMachine": create_cluster_arn,
        },
    )
    for name, value in {**env, "POWERTOOLS_TRACE_DISABLED": "true"}.items():
        monkeypatch.setenv(name, value)
    return load_function_module("api")


def discover_api(monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table) -> Api:
    """The API function over `table`, with a do-nothing discover state machine (boto3's
    default session, as it is when this is called)."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    arn = state_machine(sfn, "DiscoverStateMachine-unit")
    return Api(
        module=load_api(monkeypatch, template, table, arn),
        state_machine_arn=arn,
        sfn=sfn,
        operations=OperationStore(table),
        clusters=ClusterStore(table),
        locks=LockStore(table),
    )


@pytest.fixture
def api(
    fresh_imports: None,
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    table: Table,
    fixed_clock: FakeClock,
) -> Api:
    return discover_api(monkeypatch, template, table)


def assert_validation_error(response: Response, field: str) -> None:
    assert response.status == 400, response.body
    assert response.headers["Content-Type"] == "application/json"
    assert response.body["code"] == "ValidationError"
    assert field in response.body["message"]
    assert set(response.body) == {"code", "message", "details"}


# ---------------------------------------------------------------------------- the fixture itself
def test_the_recorded_event_reaches_get_operation(api: Api) -> None:
    # Given the operation the recorded event asks for does not exist
    # When the event is handled exactly as recorded
    raw = api.module.handler(load_event("api-get-operation.json"), FakeLambdaContext("hypd-api"))
    # Then the answer is a JSON 404 naming it
    assert raw["statusCode"] == 404
    assert json.loads(raw["body"]) == {
        "code": "NotFound",
        "message": "operation op-3f9d2c7a1b8e4f60a5d4c3b2a1908f7e does not exist",
        "details": {"operationId": "op-3f9d2c7a1b8e4f60a5d4c3b2a1908f7e"},
    }


# ---------------------------------------------------------------------------- 400s
@pytest.mark.parametrize("tag", ["-leading-dash", "has.dot", "x" * 101])
def test_get_cluster_with_bad_tag_is_400(api: Api, tag: str) -> None:
    assert_validation_error(api.get_cluster(tag), "tag")


@pytest.mark.parametrize("operation_id", ["op-123", "OP-" + "a" * 32, "op-" + "g" * 32, "x"])
def test_get_operation_with_bad_id_is_400(api: Api, operation_id: str) -> None:
    assert_validation_error(api.get_operation(operation_id), "operationId")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"status": "DONE"}, "status"),
        ({"status": "running"}, "status"),
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"clusterTag": "bad tag"}, "clusterTag"),
        ({"nextToken": "garbage"}, "nextToken"),
        ({"nextToken": "x" * 4097}, "nextToken"),
    ],
)
def test_list_operations_with_bad_query_is_400(api: Api, query: dict[str, str], field: str) -> None:
    assert_validation_error(api.call("GET", "/operations", query=query), field)


@pytest.mark.parametrize(
    ("query", "field"),
    [({"limit": "0"}, "limit"), ({"limit": "1000"}, "limit"), ({"nextToken": "%%%"}, "nextToken")],
)
def test_list_clusters_with_bad_query_is_400(api: Api, query: dict[str, str], field: str) -> None:
    assert_validation_error(api.call("GET", "/clusters", query=query), field)


def test_operations_token_is_rejected_by_the_cluster_listing(api: Api) -> None:
    for _ in range(2):
        api.operations.create(op_for(None))
    token = api.call("GET", "/operations", query={"limit": "1"}).body["nextToken"]
    assert token
    response = api.call("GET", "/clusters", query={"nextToken": token})
    assert_validation_error(response, "nextToken")
    assert response.body["details"] == {"field": "nextToken"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"clusterNames": ["train"], "force": true}', "force"),
        ('{"clusterNames": []}', "clusterNames"),
        ('{"clusterNames": "train"}', "clusterNames"),
        ('{"clusterNames": [1]}', "clusterNames[0]"),
        ("not json", "body"),
        ('{"clusterNames": ["train"', "body"),
    ],
)
def test_discover_with_bad_body_is_400(api: Api, body: str, field: str) -> None:
    response = api.discover(body)
    assert_validation_error(response, field)
    assert field in {error["field"] for error in response.body["details"]["errors"]}
    # and nothing was started
    assert api.operations.list().operations == []
    assert api.sfn.list_executions(stateMachineArn=api.state_machine_arn)["executions"] == []


# ---------------------------------------------------------------------------- 404s
def test_unknown_operation_is_404(api: Api) -> None:
    response = api.get_operation(UNKNOWN_OP)
    assert response.status == 404
    assert response.body == {
        "code": "NotFound",
        "message": f"operation {UNKNOWN_OP} does not exist",
        "details": {"operationId": UNKNOWN_OP},
    }


def test_unknown_cluster_is_404(api: Api) -> None:
    response = api.get_cluster("ghost")
    assert response.status == 404
    assert response.body == {
        "code": "NotFound",
        "message": "cluster ghost does not exist",
        "details": {"tag": "ghost"},
    }


def test_unknown_route_is_404(api: Api) -> None:
    response = api.call("GET", "/nope", query={"limit": "1"})
    assert response.status == 404
    assert response.body == {"code": "NotFound", "message": "no route GET /nope", "details": {}}


# ---------------------------------------------------------------------------- malformed requests
def assert_nothing_started(api: Api) -> None:
    assert api.operations.list().operations == []
    assert api.sfn.list_executions(stateMachineArn=api.state_machine_arn)["executions"] == []


@pytest.mark.parametrize(
    "content_type",
    [
        "multipart/form-data",
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencoded",
        "text/plain",
    ],
)
def test_a_body_that_is_not_json_is_400_naming_content_type(api: Api, content_type: str) -> None:
    # When a body arrives as a form, multipart (with or without a boundary) or text
    response = api.discover('{"clusterNames": ["train"]}', content_type=content_type)
    # Then 400 names the Content-Type header, and nothing starts
    assert_validation_error(response, "Content-Type")
    assert response.body["details"]["errors"][0]["in"] == "header"
    assert_nothing_started(api)


@pytest.mark.parametrize(
    "content_type", [None, "application/json; charset=utf-8", "Application/JSON"]
)
def test_a_json_body_is_read_whatever_its_media_type_parameters(
    api: Api, content_type: str | None
) -> None:
    response = api.discover('{"clusterNames": ["train"]}', content_type=content_type)
    assert response.status == 202, response.body


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\xff\xfe{}", "not UTF-8"),
        ('{"clusterNames": ["caf\u00e9"]}'.encode("latin-1"), "not UTF-8"),
    ],
)
def test_a_body_that_is_not_utf8_is_400_naming_the_body(
    api: Api, raw: bytes, message: str
) -> None:
    # When API Gateway passes a binary body (base64, as it marks one)
    response = api.discover(base64.b64encode(raw).decode(), base64_encoded=True)
    # Then 400 names the body
    assert_validation_error(response, "body")
    assert message in response.body["message"]
    assert_nothing_started(api)


def test_a_utf8_body_api_gateway_passed_as_base64_is_read(api: Api) -> None:
    body = base64.b64encode('{"clusterNames": ["caf\u00e9"]}'.encode()).decode()
    assert api.discover(body, base64_encoded=True).status == 202


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[null, null]", "a JSON object is expected, not an array"),
        ('[{"clusterNames": ["train"]}]', "a JSON object is expected, not an array"),
        ('"train"', "a JSON object is expected, not a string"),
        ('{"clusterNames": [NaN]}', "NaN is not a JSON number"),
        ('{"clusterNames": ' + "[" * 100_000, "nested too deeply"),
        ('{"clusterNames": [' + "9" * 5000 + "]}", "more than 30 digits"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_400_naming_the_body(
    api: Api, body: str, message: str
) -> None:
    response = api.discover(body)
    assert_validation_error(response, "body")
    assert message in response.body["message"]
    assert_nothing_started(api)


def test_a_body_marked_base64_that_is_not_is_400(api: Api) -> None:
    assert_validation_error(api.discover("not base64!", base64_encoded=True), "body")


@pytest.mark.parametrize(
    ("method", "route", "body", "field"),
    [
        ("PUT", "/clusters/{tag}/protection", '{"enabled": 0}', "enabled"),
        ("PUT", "/clusters/{tag}/autoscaling", '{"enabled": 1}', "enabled"),
        ("PATCH", "/clusters/{tag}/features", '{"trainingOperator": {"enabled": 0}}', "enabled"),
        ("PATCH", "/clusters/{tag}/features", '{"observability": {"logging": "true"}}', "logging"),
    ],
)
def test_a_boolean_field_takes_only_true_or_false(
    api: Api, method: str, route: str, body: str, field: str
) -> None:
    # When a body gives 0, 1 or "true" where the document says boolean
    response = api.call(
        method, route.replace("{tag}", "train"), resource=route,
        path_parameters={"tag": "train"}, body=body,
    )
    # Then 400 naming the field, not a change read as false or true
    assert_validation_error(response, field)


def test_an_unknown_query_parameter_is_400_naming_it(api: Api) -> None:
    # When a filter is misspelt
    response = api.call("GET", "/operations", query={"clustertag": "train"})
    # Then 400 names it and what the route takes, instead of listing everything
    assert_validation_error(response, "clustertag")
    assert "clusterTag, limit, nextToken, status" in response.body["message"]


def test_sigv4_query_parameters_are_not_unknown(api: Api) -> None:
    query = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Signature": "abc"}
    assert api.call("GET", "/operations", query=query).status == 200


@pytest.mark.parametrize("tag", ["\x84", "caf\u00e9\u0301", 'a"b', "a b"])
def test_a_path_parameter_with_any_character_reaches_its_route(api: Api, tag: str) -> None:
    # When a tag holds a character Powertools' router does not take (API Gateway routed it)
    response = api.get_cluster(tag)
    # Then its pattern judges it: a 400 naming it, not a 404 "no route"
    assert_validation_error(response, "tag")


# ---------------------------------------------------------------------------- discover
@pytest.mark.parametrize("body", [None, "{}", '{"clusterNames": ["train", "infer"]}'])
def test_discover_starts_an_operation(api: Api, body: str | None) -> None:
    # When discover is requested
    response = api.discover(body)
    # Then 202 with the operation id, PENDING, kind discover
    assert response.status == 202, response.body
    assert set(response.body) == {"operationId", "status", "kind"}
    operation_id = response.body["operationId"]
    assert is_operation_id(operation_id)
    assert (response.body["status"], response.body["kind"]) == ("PENDING", "discover")
    # And one execution named after it got the operation id (its tasks read the rest from the
    # operation record)
    executions = api.sfn.list_executions(stateMachineArn=api.state_machine_arn)["executions"]
    assert [e["name"] for e in executions] == [operation_id]
    described = api.sfn.describe_execution(executionArn=executions[0]["executionArn"])
    names = json.loads(body)["clusterNames"] if body and "clusterNames" in body else None
    assert json.loads(described["input"]) == {
        "operationId": operation_id,
        "resumeFrom": "eks-clusters",
        "done": {"eks-clusters": False, "hyperpod-clusters": False, "record": False},
    }
    # And the operation is recorded with the requested names and the execution's ARN, holding
    # the discover lock
    stored = api.operations.get(operation_id)
    assert stored.execution_arn == executions[0]["executionArn"]
    assert stored.input == ({"clusterNames": names} if names else {})
    assert api.locks.holder("discover") == operation_id
    # And GET /operations/{id} shows it
    shown = api.get_operation(operation_id)
    assert shown.status == 200
    assert shown.body["executionArn"] == executions[0]["executionArn"]
    assert [s["name"] for s in shown.body["stages"]] == [
        "eks-clusters",
        "hyperpod-clusters",
        "record",
    ]
    assert "lockScope" not in shown.body


def test_second_discover_while_the_first_runs_is_409_naming_it(api: Api) -> None:
    # Given a discover operation that has not ended
    first = api.discover().body["operationId"]
    # When another discover is requested
    response = api.discover()
    # Then 409 names the first operation, and no second execution started
    assert response.status == 409
    assert response.body["code"] == "Conflict"
    assert response.body["details"]["operationId"] == first
    assert first in response.body["message"]
    assert len(api.sfn.list_executions(stateMachineArn=api.state_machine_arn)["executions"]) == 1
    assert [op.id for op in api.operations.list().operations] == [first]


def test_discover_after_the_first_ended_starts_again(api: Api, fixed_clock: FakeClock) -> None:
    first = api.discover().body["operationId"]
    api.operations.update(first, lambda op: lifecycle.fail(op, ErrorInfo(code="X", message="x")))
    fixed_clock.advance(1)
    response = api.discover()
    assert response.status == 202
    assert response.body["operationId"] != first
    assert api.locks.holder("discover") == response.body["operationId"]


def test_discover_that_cannot_start_records_the_failure(
    monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table, fixed_clock: FakeClock
) -> None:
    # Given the configured state machine does not exist
    missing = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:deleted"
    module = load_api(monkeypatch, template, table, missing)
    # When discover is requested
    raw = module.handler(api_event("POST", "/clusters/discover"), FakeLambdaContext("hypd-api"))
    body = json.loads(raw["body"])
    # Then the request fails with the AWS error, the operation is kept as FAILED, lock free
    assert raw["statusCode"] == 500
    assert body["code"] == "RequestRejected"
    assert body["details"] == {"awsErrorCode": "StateMachineDoesNotExist"}
    (operation,) = OperationStore(table).list().operations
    assert operation.status is OperationStatus.FAILED
    assert operation.error is not None
    assert operation.error.code == "StateMachineDoesNotExist"
    assert LockStore(table).holder("discover") is None


# ---------------------------------------------------------------------------- listings
def test_list_operations_filters_and_pages(api: Api, fixed_clock: FakeClock) -> None:
    # Given operations on clusters a and b, one of a's RUNNING
    created = {}
    for name, tag in [("a1", "a"), ("b1", "b"), ("a2", "a"), ("a3", "a")]:
        created[name] = api.operations.create(op_for(tag)).id
        fixed_clock.advance(1)
    api.operations.update(created["a2"], lambda op: lifecycle.begin(op))
    name_of = {v: k for k, v in created.items()}

    def listed(query: dict[str, str] | None = None) -> list[str]:
        response = api.call("GET", "/operations", query=query)
        assert response.status == 200, response.body
        return [name_of[op["id"]] for op in response.body["operations"]]

    # Then each filter lists its operations newest first
    assert listed() == ["a3", "a2", "b1", "a1"]
    assert listed({"clusterTag": "a"}) == ["a3", "a2", "a1"]
    assert listed({"status": "RUNNING"}) == ["a2"]
    assert listed({"clusterTag": "a", "status": "PENDING"}) == ["a3", "a1"]
    assert listed({"clusterTag": "b", "status": "RUNNING"}) == []
    # And pages of 2 chain through nextToken
    first = api.call("GET", "/operations", query={"clusterTag": "a", "limit": "2"}).body
    assert [name_of[op["id"]] for op in first["operations"]] == ["a3", "a2"]
    second = api.call(
        "GET",
        "/operations",
        query={"clusterTag": "a", "limit": "2", "nextToken": first["nextToken"]},
    ).body
    assert [name_of[op["id"]] for op in second["operations"]] == ["a1"]
    # And a token of cluster a is refused for cluster b
    other = api.call(
        "GET", "/operations", query={"clusterTag": "b", "nextToken": first["nextToken"]}
    )
    assert_validation_error(other, "nextToken")


def test_list_and_get_clusters(api: Api) -> None:
    # Given clusters saved by the store
    for tag in ["train", "infer"]:
        api.clusters.save(
            cluster_record(tag, eks_arn(f"{tag}-eks")).model_copy(update={"eks": eks(f"{tag}-eks")})
        )
    # When they are listed
    response = api.call("GET", "/clusters")
    # Then both are listed by tag, without internal fields
    assert response.status == 200
    assert [c["tag"] for c in response.body["clusters"]] == ["infer", "train"]
    assert response.body.get("nextToken") is None
    assert all("anchorArn" not in c for c in response.body["clusters"])
    assert response.body["clusters"][1]["eks"]["arn"] == eks_arn("train-eks")
    # And each can be read
    one = api.get_cluster("train")
    assert one.status == 200
    assert one.body["tag"] == "train"
    assert one.body["source"] == "discovered"
    # And paging by one yields both
    page = api.call("GET", "/clusters", query={"limit": "1"}).body
    assert [c["tag"] for c in page["clusters"]] == ["infer"]
    rest = api.call("GET", "/clusters", query={"limit": "1", "nextToken": page["nextToken"]}).body
    assert [c["tag"] for c in rest["clusters"]] == ["train"]


def test_empty_listings(api: Api) -> None:
    assert api.call("GET", "/operations").body["operations"] == []
    assert api.call("GET", "/clusters").body["clusters"] == []


def test_forged_next_token_is_400(api: Api) -> None:
    api.operations.create(op_for(None))
    token = encode_token("GSI4", "OPS", {"PK": "OP#x", "SK": "OP"})
    assert token is not None
    assert_validation_error(api.call("GET", "/operations", query={"nextToken": token}), "nextToken")


def test_discover_throttled_by_step_functions_is_503_and_recorded(
    monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table, fixed_clock: FakeClock
) -> None:
    # Given Step Functions throttles StartExecution (injected into a fresh session's calls)
    session = boto3.session.Session(region_name=REGION)

    def throttle(**kwargs: Any) -> tuple[AWSResponse, dict[str, Any]]:
        return AWSResponse("https://states.us-west-2.amazonaws.com/", 400, {}, None), {
            "Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    session.events.register("before-call.sfn.StartExecution", throttle)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)
    module = load_api(
        monkeypatch, template, table, f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:x"
    )
    # When discover is requested
    raw = module.handler(api_event("POST", "/clusters/discover"), FakeLambdaContext("hypd-api"))
    # Then 503 Throttled with Retry-After, AWS's code in details
    assert raw["statusCode"] == 503
    assert raw["multiValueHeaders"]["Retry-After"] == ["5"]
    body = json.loads(raw["body"])
    assert body["code"] == "Throttled"
    assert body["details"] == {"awsErrorCode": "ThrottlingException"}
    # And the operation is kept as FAILED with ThrottlingException; the lock is free
    (operation,) = OperationStore(table).list().operations
    assert operation.status is OperationStatus.FAILED
    assert operation.error is not None
    assert operation.error.code == "ThrottlingException"
    assert LockStore(table).holder("discover") is None


def test_api_works_when_hypd_api_was_imported_before_the_functions_environment(
    monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table, fixed_clock: FakeClock
) -> None:
    # Given hypd.api imported by something else (e.g. the OpenAPI generator) before the
    # function's environment exists
    monkeypatch.delenv("POWERTOOLS_SERVICE_NAME", raising=False)
    importlib.import_module("hypd.api.app")
    # And then the API function loaded with its environment, in the same process
    env = function_environment(
        template,
        "ApiFunction",
        {
            "HypdTable": TABLE_NAME,
            "DiscoverStateMachine": "arn:x",
            "CreateClusterStateMachine": CREATE_CLUSTER_ARN,
        },
    )
    for name, value in {**env, "POWERTOOLS_TRACE_DISABLED": "true"}.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location(
        "hypd_unit_api_shared_process", ROOT / "functions" / "api" / "app.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # When an operation is requested
    event = api_event(
        "GET",
        f"/operations/{UNKNOWN_OP}",
        resource="/operations/{operationId}",
        path_parameters={"operationId": UNKNOWN_OP},
    )
    raw = module.handler(event, FakeLambdaContext("hypd-api"))
    # Then it is answered (404), not crashed
    assert raw["statusCode"] == 404
