"""The MCP tools against the REST API's contract: one tool per operation of docs/openapi.json,
schemas from the API's pydantic models (a body's tool takes the path parameters beside the
body's fields; a change the API may find made answers either model), how operation_get_status
waits, and what a server refuses before any request: a write tool when it is read-only, a
destructive call without the right confirm (no subprocess)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

from hypd.api.models import (
    AutoscalingUnchanged,
    FeaturesUnchanged,
    InstanceGroupUnchanged,
    OperationAccepted,
    OperationView,
    TeamUnchanged,
)
from hypd.capacity.requests import AddInstanceGroupRequest, UpdateInstanceGroupRequest
from hypd.clusters.create_request import CreateClusterRequest
from hypd_cli.api_client import ROUTES, ApiError, ApiUnreachable
from hypd_cli.mcp_binding import bind_tools, openapi_document
from hypd_cli.mcp_server import HypdTools
from hypd_cli.mcp_tools import TOOL_SPECS, WAIT_SECONDS_MAX, ToolSpec
from tests.mcp.conftest import error_of

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = ROOT / "docs" / "openapi.json"
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}

TOOLS = {
    "cluster_list_all": "listClusters",
    "cluster_get": "getCluster",
    "cluster_create": "createCluster",
    "cluster_discover": "discoverClusters",
    "cluster_teardown_plan": "getTeardownPlan",
    "cluster_delete": "deleteCluster",
    "cluster_protection_set": "setProtection",
    "cluster_upgrades_get": "getUpgrades",
    "cluster_upgrade": "upgradeCluster",
    "operation_list": "listOperations",
    "operation_get_status": "getOperation",
    "operation_retry": "retryOperation",
    "operation_cancel": "cancelOperation",
    "events_list_recent": "listEvents",
    "catalog_availability_zones": "listAvailabilityZones",
    "catalog_instance_types": "listInstanceTypes",
    "catalog_training_plans": "listTrainingPlans",
    "catalog_instance_group_fields": "listInstanceGroupFields",
    "instance_group_list": "listInstanceGroups",
    "instance_group_add": "addInstanceGroup",
    "instance_group_update": "updateInstanceGroup",
    "instance_group_delete": "deleteInstanceGroup",
    "node_list": "listNodes",
    "node_reboot": "rebootNode",
    "node_replace": "replaceNode",
    "node_delete": "deleteNode",
    "autoscaling_get": "getAutoscaling",
    "autoscaling_set": "setAutoscaling",
    "cluster_health_get": "getClusterHealth",
    "node_health_get": "getNodeHealth",
    "health_policy_get": "getHealthPolicy",
    "health_policy_set": "setHealthPolicy",
    "features_get": "getFeatures",
    "features_set": "setFeatures",
    "team_list": "listTeams",
    "team_get": "getTeam",
    "team_set": "setTeam",
    "team_delete": "deleteTeam",
    "training_job_submit": "submitTrainingJob",
    "training_job_list": "listTrainingJobs",
    "training_job_get": "getTrainingJob",
    "training_job_logs": "getTrainingJobLogs",
    "training_job_delete": "deleteTrainingJob",
    "endpoint_deploy": "deployInferenceEndpoint",
    "endpoint_list": "listInferenceEndpoints",
    "endpoint_get": "getInferenceEndpoint",
    "endpoint_invoke": "invokeInferenceEndpoint",
    "endpoint_delete": "deleteInferenceEndpoint",
}
DESTRUCTIVE = {"operation_cancel", "instance_group_update", "instance_group_delete",
               "node_reboot", "node_replace", "node_delete", "autoscaling_set",
               "health_policy_set", "features_set", "team_set", "team_delete",
               "training_job_delete", "endpoint_delete", "cluster_delete", "cluster_upgrade"}
CONFIRMED = {
    # tool: the argument its confirm repeats
    "cluster_delete": "tag",
    "cluster_upgrade": "tag",
    "instance_group_delete": "name",
    "node_delete": "nodeId",
    "node_replace": "nodeId",
    "node_reboot": "nodeId",
    "team_delete": "team",
    "training_job_delete": "name",
    "endpoint_delete": "name",
}
"""The destructive tools whose every call needs confirm (features_set: a call turning a feature
off); the others say in their spec why they need none."""


def committed_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(OPENAPI.read_text())
    return document


def rest_operations(document: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """operationId -> (METHOD, path) of every operation in the document."""
    found: dict[str, tuple[str, str]] = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                assert operation["operationId"] not in found
                found[operation["operationId"]] = (method.upper(), path)
    return found


def test_every_tool_maps_to_one_rest_operation_and_every_operation_has_a_tool() -> None:
    document = committed_document()
    operations = rest_operations(document)
    tools = bind_tools(document)

    assert {t.name: t.spec.operation_id for t in tools} == TOOLS
    operation_ids = [t.spec.operation_id for t in tools]
    assert sorted(operation_ids) == sorted(operations)  # each operation exactly once
    for tool in tools:
        assert (tool.method, tool.path) == operations[tool.spec.operation_id]
        # The API client runs the same route for the operation.
        route = ROUTES[tool.spec.operation_id]
        assert (route.method, route.path) == (tool.method, tool.path)
        assert set(route.query) == set(tool.query_params)


def test_the_server_binds_the_tools_to_the_document_the_api_generates() -> None:
    # The server generates the document from the API's code; docs/openapi.json is that
    # document committed (tests/unit/test_openapi.py keeps it current).
    generated = openapi_document()
    assert rest_operations(generated) == rest_operations(committed_document())
    assert [t.to_mcp() for t in bind_tools(generated)] == [
        t.to_mcp() for t in bind_tools(committed_document())
    ]


def test_each_tool_is_documented_from_its_operation() -> None:
    document = committed_document()
    for tool in bind_tools(document):
        method, path = tool.method.lower(), tool.path
        operation = document["paths"][path][method]
        mcp_tool = tool.to_mcp()
        assert mcp_tool.title == operation["summary"]
        assert mcp_tool.description is not None
        assert mcp_tool.description.startswith(operation["summary"])
        if "description" in operation:
            assert operation["description"] in mcp_tool.description
        assert f"{tool.method} {tool.path}" in mcp_tool.description
        assert mcp_tool.annotations is not None
        assert tool.read_only is (tool.method == "GET")
        assert mcp_tool.annotations.read_only_hint is tool.read_only
        if not tool.read_only:
            assert mcp_tool.annotations.destructive_hint is (tool.name in DESTRUCTIVE)


def test_input_schemas_come_from_the_apis_models_and_parameters() -> None:
    document = committed_document()
    tools = {t.name: t for t in bind_tools(document)}

    # The body of POST /clusters, exactly as the API validates it.
    assert tools["cluster_create"].input_schema == CreateClusterRequest.model_json_schema(
        by_alias=True
    )
    # Path and query parameters, with the API's patterns and limits.
    get = tools["cluster_get"].input_schema
    assert get["required"] == ["tag"]
    parameter = document["paths"]["/clusters/{tag}"]["get"]["parameters"][0]
    assert get["properties"]["tag"]["pattern"] == parameter["schema"]["pattern"]
    listed = tools["operation_list"].input_schema
    assert set(listed["properties"]) == {"clusterTag", "status", "limit", "nextToken"}
    assert listed["$defs"]["OperationStatus"]["enum"] == [
        "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"
    ]
    assert listed["properties"]["limit"]["maximum"] == 100
    zones = tools["catalog_instance_types"].input_schema["properties"]["availabilityZone"]
    assert "us-west-2c" in zones["description"]
    # Polling: wait_seconds, capped.
    status = tools["operation_get_status"].input_schema
    assert status["required"] == ["operationId"]
    assert status["properties"]["wait_seconds"]["maximum"] == WAIT_SECONDS_MAX == 300
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema["type"] == "object"
    assert tools["operation_get_status"].output_schema == OperationView.model_json_schema(
        by_alias=True, mode="serialization"
    )


def test_a_body_tool_takes_its_path_parameters_beside_the_bodys_fields() -> None:
    document = committed_document()
    tools = {t.name: t for t in bind_tools(document)}

    update = tools["instance_group_update"].input_schema
    body = UpdateInstanceGroupRequest.model_json_schema(by_alias=True)
    assert list(update["properties"])[:2] == ["tag", "name"]
    assert update["required"] == ["tag", "name"]
    # The body's fields as the API validates them; its `name` (which can only restate the
    # path's) gives way to the path parameter.
    assert {k: v for k, v in update["properties"].items() if k not in ("tag", "name")} == {
        k: v for k, v in body["properties"].items() if k != "name"}
    parameter = document["paths"]["/clusters/{tag}/instance-groups/{name}"]["patch"][
        "parameters"][1]
    assert update["properties"]["name"]["pattern"] == parameter["schema"]["pattern"]
    assert update["additionalProperties"] is False
    assert update["$defs"] == body["$defs"]

    add = tools["instance_group_add"].input_schema
    assert add["required"] == ["tag", *AddInstanceGroupRequest.model_json_schema(
        by_alias=True)["required"]]
    assert set(tools["autoscaling_set"].input_schema["required"]) == {"tag", "enabled"}
    # Every field of the health policy has its default: only the tag is required.
    policy = tools["health_policy_set"].input_schema
    assert policy["required"] == ["tag"]
    assert list(policy["properties"]) == ["tag", "action", "maxActionsPerHour",
                                          "nodeCooldownMinutes"]
    assert policy["properties"]["maxActionsPerHour"]["minimum"] == 1
    assert policy["additionalProperties"] is False
    # The features' PATCH: every feature optional (explicit diff); a team's PUT: its path's two.
    features = tools["features_set"].input_schema
    assert features["required"] == ["tag"]
    assert list(features["properties"]) == ["tag", "trainingOperator", "inferenceOperator",
                                            "tieredCheckpointing", "observability",
                                            "taskGovernance", "confirm"]
    team = tools["team_set"].input_schema
    assert team["required"] == ["tag", "team", "resources"]
    assert team["properties"]["team"]["maxLength"] == 40


def test_a_change_that_may_be_found_made_answers_either_model() -> None:
    tools = {t.name: t for t in bind_tools(committed_document())}

    for name, unchanged in (("instance_group_update", InstanceGroupUnchanged),
                            ("autoscaling_set", AutoscalingUnchanged),
                            ("features_set", FeaturesUnchanged),
                            ("team_set", TeamUnchanged)):
        schema = tools[name].output_schema
        assert schema["type"] == "object"
        assert schema["anyOf"] == [{"$ref": "#/$defs/OperationAccepted"},
                                   {"$ref": f"#/$defs/{unchanged.__name__}"}]
        validator = Draft202012Validator(schema)
        validator.validate({"operationId": OPERATION_ID, "status": "PENDING",
                            "kind": "update-instance-group"})
        assert not validator.is_valid({"changed": False})
    unchanged_group = InstanceGroupUnchanged.model_validate({
        "changed": False, "instanceGroup": {
            "name": "spot", "instanceType": "ml.g6.4xlarge", "count": 2, "currentCount": 2,
            "capacity": {"type": "spot"}, "efaOnly": False, "subnetIds": ["subnet-1"],
            "dedicatedSubnet": False}})
    Draft202012Validator(tools["instance_group_update"].output_schema).validate(
        unchanged_group.model_dump(mode="json", by_alias=True))
    assert tools["instance_group_add"].output_schema == OperationAccepted.model_json_schema(
        by_alias=True, mode="serialization")


def test_a_tool_whose_model_disagrees_with_the_api_is_refused() -> None:
    document = committed_document()
    wrong_body = ToolSpec("x", "discoverClusters", TOOL_SPECS[3].response,
                          body=CreateClusterRequest)
    with pytest.raises(ValueError, match="takes DiscoverRequest, not CreateClusterRequest"):
        bind_tools(document, [wrong_body])
    wrong_response = ToolSpec("x", "retryOperation", TOOL_SPECS[0].response)
    with pytest.raises(ValueError, match="answers OperationView, not ClusterList"):
        bind_tools(document, [wrong_response])
    with pytest.raises(ValueError, match="no operation explodeCluster"):
        bind_tools(document, [ToolSpec("x", "explodeCluster", TOOL_SPECS[0].response)])
    unchanged_missing = ToolSpec("x", "updateInstanceGroup", OperationAccepted,
                                 body=UpdateInstanceGroupRequest)
    with pytest.raises(ValueError, match="answers InstanceGroupUnchanged or OperationAccepted, "
                       "not OperationAccepted"):
        bind_tools(document, [unchanged_missing])


# ------------------------------------------------------------------ operation_get_status waits
OPERATION_ID = "op-" + "0" * 32


def operation(status: str, *stages: tuple[str, str]) -> dict[str, Any]:
    return {
        "id": OPERATION_ID,
        "status": status,
        "stages": [{"name": n, "status": s, "attempts": 1} for n, s in stages],
    }


class ScriptedClient:
    """Answers each call with the answers given in turn, the last one from then on."""

    def __init__(self, *answers: dict[str, Any] | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []

    def call(
        self, operation_id: str, /, *, body: dict[str, Any] | None = None, **params: Any
    ) -> dict[str, Any]:
        self.calls.append((operation_id, params, body))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture(scope="module")
def bound() -> list[Any]:
    return bind_tools(committed_document())


class VirtualTime:
    """The wait's clock: it moves only when the wait sleeps, so nothing waits in real time and
    how often the wait reads is the same on any machine."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def tools_with(client: ScriptedClient, bound: list[Any], time: VirtualTime | None = None,
               *, allow_write: bool = True) -> HypdTools:
    time = time or VirtualTime()
    return HypdTools(client, bound, allow_write=allow_write, poll_seconds=0.25,
                     clock=time.clock, sleep=time.sleep)


@pytest.mark.anyio
async def test_wait_returns_when_a_stage_changes(bound: list[Any]) -> None:
    client = ScriptedClient(
        operation("RUNNING", ("network", "RUNNING"), ("eks", "PENDING")),
        operation("RUNNING", ("network", "RUNNING"), ("eks", "PENDING")),
        operation("RUNNING", ("network", "SUCCEEDED"), ("eks", "RUNNING")),
        operation("SUCCEEDED", ("network", "SUCCEEDED"), ("eks", "SUCCEEDED")),
    )
    progress: list[tuple[float, float | None, str | None]] = []

    async def report(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    result = await tools_with(client, bound).call(
        "operation_get_status", {"operationId": OPERATION_ID, "wait_seconds": 30}, report
    )

    assert not result.is_error
    assert result.structured_content["stages"][1]["status"] == "RUNNING"
    assert len(client.calls) == 3
    assert client.calls == [("getOperation", {"operationId": OPERATION_ID}, None)] * 3
    assert "changed" in result.content[1].text  # type: ignore[union-attr]
    assert "stage eks RUNNING" in result.content[1].text  # type: ignore[union-attr]
    assert [p[1] for p in progress] == [30.0, 30.0]


@pytest.mark.anyio
async def test_wait_returns_at_once_for_an_ended_operation(bound: list[Any]) -> None:
    client = ScriptedClient(operation("FAILED", ("network", "FAILED")))

    result = await tools_with(client, bound).call(
        "operation_get_status", {"operationId": OPERATION_ID, "wait_seconds": 300}
    )

    assert result.structured_content["status"] == "FAILED"
    assert len(client.calls) == 1
    assert "ended" in result.content[1].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_wait_gives_up_after_wait_seconds_and_says_so(bound: list[Any]) -> None:
    client = ScriptedClient(operation("RUNNING", ("eks", "RUNNING")))
    time = VirtualTime()
    tools = tools_with(client, bound, time)
    tools.wait_seconds_max = 1  # the cap applies to larger requests

    result = await tools.call(
        "operation_get_status", {"operationId": OPERATION_ID, "wait_seconds": 10_000}
    )

    assert result.structured_content["status"] == "RUNNING"
    # read once, then every poll_seconds (0.25 s) until the capped second has passed
    assert time.sleeps == [0.25] * 4
    assert len(client.calls) == 1 + 4
    assert "Waited 1 s: no change" in result.content[1].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_the_wait_says_what_the_running_stage_waits_for_and_when_it_looks_next(
    bound: list[Any],
) -> None:
    running = operation("RUNNING", ("network", "SUCCEEDED"), ("eks", "RUNNING"))
    running["timeline"] = [
        {"stage": "network", "attempt": 1, "status": "SUCCEEDED",
         "startedAt": "2026-01-01T00:00:00.000Z", "endedAt": "2026-01-01T00:00:01.000Z",
         "looks": 2},
        {"stage": "eks", "attempt": 1, "status": "RUNNING", "startedAt": "2026-01-01T00:00:01.000Z",
         "looks": 3, "waitingFor": "EKS cluster hypd-demo is CREATING",
         "nextLookAt": "2026-01-01T00:08:31.000Z"},
    ]
    tools = tools_with(ScriptedClient(running), bound)
    tools.wait_seconds_max = 1

    result = await tools.call(
        "operation_get_status", {"operationId": OPERATION_ID, "wait_seconds": 1}
    )

    assert result.structured_content["timeline"] == running["timeline"]
    assert ("the operation is still RUNNING, stage eks RUNNING (attempt 1, 3 look(s); waiting "
            "for: EKS cluster hypd-demo is CREATING; next look at 2026-01-01T00:08:31.000Z)"
            in result.content[1].text)  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_without_wait_seconds_the_operation_is_read_once(bound: list[Any]) -> None:
    client = ScriptedClient(operation("RUNNING", ("eks", "RUNNING")))

    result = await tools_with(client, bound).call("operation_get_status",
                                                  {"operationId": OPERATION_ID})

    assert len(client.calls) == 1
    assert len(result.content) == 1


@pytest.mark.anyio
async def test_an_api_error_while_waiting_is_a_tool_error(bound: list[Any]) -> None:
    client = ScriptedClient(
        operation("RUNNING", ("eks", "RUNNING")),
        ApiError(503, "ServiceUnavailable", "try again", {}),
    )

    result = await tools_with(client, bound).call(
        "operation_get_status", {"operationId": OPERATION_ID, "wait_seconds": 5}
    )

    assert error_of(result) == {
        "status": 503, "code": "ServiceUnavailable", "message": "try again", "details": {}
    }


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("cluster_get", {}, "tag: this argument is required"),
        ("cluster_get", {"tag": "a", "name": "b"}, "unknown argument(s) name"),
        ("instance_group_update", {"tag": "a", "count": 2}, "name: this argument is required"),
        ("operation_get_status", {"operationId": OPERATION_ID, "wait_seconds": "soon"},
         "wait_seconds: expected a number"),
    ],
)
async def test_arguments_that_make_no_request_are_tool_errors(
    bound: list[Any], name: str, arguments: dict[str, Any], message: str
) -> None:
    client = ScriptedClient(operation("RUNNING"))

    result = await tools_with(client, bound).call(name, arguments)

    error = error_of(result)
    assert error["code"] == "ValidationError"
    assert message in error["message"]
    assert client.calls == []


@pytest.mark.anyio
async def test_each_call_runs_its_one_operation_with_the_arguments(bound: list[Any]) -> None:
    client = ScriptedClient({"operations": []})
    tools = tools_with(client, bound)

    await tools.call("cluster_get", {"tag": "a/b"})
    await tools.call("operation_list", {"clusterTag": "demo", "status": "FAILED",
                                        "nextToken": None})
    await tools.call("operation_retry", {"operationId": OPERATION_ID})
    await tools.call("cluster_create", {"tag": "demo"})
    await tools.call("cluster_discover", {})
    await tools.call("instance_group_update", {"tag": "demo", "name": "spot", "count": 2})
    await tools.call("autoscaling_set", {"tag": "demo", "enabled": False})
    await tools.call("node_list", {"tag": "demo", "instanceGroup": "spot"})
    await tools.call("node_delete", {"tag": "demo", "nodeId": "i-0123456789abcdef0",
                                     "confirm": "i-0123456789abcdef0"})
    await tools.call("node_health_get", {"tag": "demo", "nodeId": "i-0123456789abcdef0"})
    await tools.call("health_policy_set", {"tag": "demo", "action": "replace",
                                           "maxActionsPerHour": 3})
    await tools.call("features_set", {"tag": "demo", "trainingOperator": {"enabled": True}})
    await tools.call("team_set", {"tag": "demo", "team": "ml", "resources": [
        {"instanceType": "ml.g6.4xlarge", "count": 1}]})
    await tools.call("team_delete", {"tag": "demo", "team": "ml", "confirm": "ml"})

    assert client.calls == [
        ("getCluster", {"tag": "a/b"}, None),
        ("listOperations", {"clusterTag": "demo", "status": "FAILED"}, None),
        ("retryOperation", {"operationId": OPERATION_ID}, None),
        ("createCluster", {}, {"tag": "demo"}),
        ("discoverClusters", {}, {}),
        ("updateInstanceGroup", {"tag": "demo", "name": "spot"}, {"count": 2}),
        ("setAutoscaling", {"tag": "demo"}, {"enabled": False}),
        ("listNodes", {"tag": "demo", "instanceGroup": "spot"}, None),
        ("deleteNode", {"tag": "demo", "nodeId": "i-0123456789abcdef0"}, None),
        ("getNodeHealth", {"tag": "demo", "nodeId": "i-0123456789abcdef0"}, None),
        ("setHealthPolicy", {"tag": "demo"}, {"action": "replace", "maxActionsPerHour": 3}),
        ("setFeatures", {"tag": "demo"}, {"trainingOperator": {"enabled": True}}),
        ("setTeam", {"tag": "demo", "team": "ml"},
         {"resources": [{"instanceType": "ml.g6.4xlarge", "count": 1}]}),
        ("deleteTeam", {"tag": "demo", "team": "ml"}, None),  # confirm is not sent
    ]


@pytest.mark.anyio
async def test_client_failures_are_tool_errors(bound: list[Any]) -> None:
    client = ScriptedClient(ApiUnreachable("http://127.0.0.1:9/v1", "Connection refused"))

    result = await tools_with(client, bound).call("catalog_training_plans", {})

    error = error_of(result)
    assert error["code"] == "ApiUnreachable"
    assert "http://127.0.0.1:9/v1" in error["message"]


# ------------------------------------------------------------------ safe by default
ARGUMENTS = {"tag": "demo", "name": "spot", "nodeId": "i-0123456789abcdef0", "team": "ml",
             "operationId": OPERATION_ID}
"""A value for each path parameter of the tools."""


def required_arguments(tool: Any) -> dict[str, Any]:
    """The tool's path parameters, from `ARGUMENTS`."""
    return {name: ARGUMENTS[name] for name in tool.path_params}


@pytest.mark.anyio
async def test_a_read_only_server_lists_only_the_read_tools_and_refuses_the_others(
    bound: list[Any],
) -> None:
    client = ScriptedClient({"clusters": []})
    tools = tools_with(client, bound, allow_write=False)

    listed = tools.list()

    assert {t.name for t in listed} == {t.name for t in bound if t.read_only}
    assert all(t.annotations is not None and t.annotations.read_only_hint for t in listed)
    writes = [t for t in bound if not t.read_only]
    assert writes  # and each of them is refused by name, before any request
    for tool in writes:
        result = await tools.call(tool.name, required_arguments(tool))
        error = error_of(result)
        assert (error["status"], error["code"]) == (None, "ReadOnlyServer"), tool.name
        assert "started read-only" in error["message"]
        assert "--allow-write" in error["message"]
    assert client.calls == []
    # A read still runs.
    assert not (await tools.call("cluster_list_all", {})).is_error
    assert client.calls == [("listClusters", {}, None)]


def test_with_allow_write_every_tool_is_listed(bound: list[Any]) -> None:
    listed = tools_with(ScriptedClient({}), bound).list()

    assert [t.name for t in listed] == [t.name for t in bound]


def test_each_destructive_tool_confirms_its_target_or_says_why_it_need_not(
    bound: list[Any],
) -> None:
    tools = {t.name: t for t in bound}
    destructive = {name for name, t in tools.items() if t.spec.destructive}
    assert destructive == DESTRUCTIVE
    for name in destructive:
        spec = tools[name].spec
        assert (spec.confirm is None) == bool(spec.unconfirmed), name
    assert {n for n in destructive if tools[n].spec.confirm} == {*CONFIRMED, "features_set"}

    # Every call of these needs confirm, repeating one of its required arguments.
    for name, parameter in CONFIRMED.items():
        schema = tools[name].input_schema
        assert "confirm" in schema["required"], name
        assert parameter in schema["required"], name
        assert "Ask the user first" in schema["properties"]["confirm"]["description"]
        assert tools[name].to_mcp().description.count("confirm set to") == 1
    # A call of features_set needs it only to turn a feature off.
    features = tools["features_set"].input_schema
    assert "confirm" not in features["required"]
    assert "turns a feature off" in features["properties"]["confirm"]["description"]

    # A destructive spec without either is refused where it is written.
    with pytest.raises(ValueError, match="give it a confirm, or say in unconfirmed why"):
        ToolSpec("x", "deleteTeam", OperationAccepted, destructive=True)


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(CONFIRMED))
async def test_a_destructive_call_without_its_targets_name_as_confirm_is_refused(
    bound: list[Any], name: str
) -> None:
    client = ScriptedClient({"operationId": OPERATION_ID, "status": "PENDING", "kind": "x"})
    tools = tools_with(client, bound)
    tool = next(t for t in bound if t.name == name)
    arguments = required_arguments(tool)
    target = arguments[CONFIRMED[name]]

    for confirm in ({}, {"confirm": ""}, {"confirm": "yes"}, {"confirm": target.upper()},
                    {"confirm": ARGUMENTS["tag"]} if CONFIRMED[name] != "tag" else {}):
        error = error_of(await tools.call(name, {**arguments, **confirm}))
        assert (error["status"], error["code"]) == (None, "ConfirmationRequired"), confirm
        assert f"confirm set to {target!r}" in error["message"]
        assert error["details"] == {"confirm": target}
    assert client.calls == []

    assert not (await tools.call(name, {**arguments, "confirm": target})).is_error
    # a tool whose operation takes a body sends the body's fields given (none here)
    body: dict[str, Any] | None = {} if tool.spec.body is not None else None
    assert client.calls == [(tool.spec.operation_id, arguments, body)]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("features", "expected"),
    [
        ({"trainingOperator": {"enabled": True}}, None),
        ({"tieredCheckpointing": {"memoryPercent": 30}}, None),
        ({"trainingOperator": {"enabled": False}}, "trainingOperator"),
        # Named in the API's order, however the call orders them.
        ({"observability": {"enabled": False}, "trainingOperator": {"enabled": True},
          "inferenceOperator": {"enabled": False}}, "inferenceOperator,observability"),
        # Every spelling the API takes for "off" counts (a field's Python name)...
        ({"task_governance": {"enabled": False}}, "taskGovernance"),
        # ...and one it refuses (400 naming the field: a boolean is true or false) changes
        # nothing, so there is nothing to confirm.
        ({"taskGovernance": {"enabled": "false"}}, None),
        ({"taskGovernance": {"enabled": 0}}, None),
    ],
)
async def test_features_set_needs_confirm_naming_the_features_it_turns_off(
    bound: list[Any], features: dict[str, Any], expected: str | None
) -> None:
    client = ScriptedClient({"operationId": OPERATION_ID, "status": "PENDING", "kind": "x"})
    tools = tools_with(client, bound)

    unconfirmed = await tools.call("features_set", {"tag": "demo", **features})

    if expected is None:  # nothing turned off: nothing to confirm
        assert not unconfirmed.is_error
        assert client.calls == [("setFeatures", {"tag": "demo"}, features)]
        return
    error = error_of(unconfirmed)
    assert (error["code"], error["details"]) == ("ConfirmationRequired", {"confirm": expected})
    assert f"turns off {expected!r}" in error["message"]
    wrong = await tools.call("features_set", {"tag": "demo", **features, "confirm": "all"})
    assert error_of(wrong)["code"] == "ConfirmationRequired"
    assert client.calls == []
    confirmed = await tools.call("features_set", {"tag": "demo", **features, "confirm": expected})
    assert not confirmed.is_error
    assert client.calls == [("setFeatures", {"tag": "demo"}, features)]  # confirm not sent
