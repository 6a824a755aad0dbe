"""Every operation of docs/openapi.json under schemathesis, over HTTP on the local cloud.

schemathesis (a third-party judge of the interface) generates requests from the committed
document, valid and invalid, and checks each answer against it: no 5xx, only documented status
codes, content types, headers and bodies that match their schemas, invalid input rejected.
On top of its checks, a 400 must name the offending parameter or header, and every 4xx speaks
in the user's words (`assert_in_users_words`).

Bounded and deterministic (docs/api.md):
- `MAX_EXAMPLES` generated requests per operation, plus schemathesis's coverage cases (each
  boundary and violation of the schema once), from a fixed seed with `derandomize`, and no
  example database: every run sends the same requests, on any machine.
- The path parameters name a real cluster (ACTIVE, created by the real pipeline on a frozen
  virtual clock), its groups, nodes and an operation, whenever the generated value is a
  valid one, so cluster-scoped routes get past 404. Each destructive route acts on a
  target of its own (deleteNode on one node, rebootNode on another, deleteInstanceGroup on its
  own group, deleteCluster on a cluster of its own, which it deletes ...), so no route's
  answers depend on which routes ran before it.
- A second run sends every operation under /clusters/{tag} to a cluster torn down for real
  (DELETED: what the fuzz's own DELETE leaves), watching every AWS call: no 5xx either, and
  nothing called but the API's table (hypd.api.absent_clusters answers from the record).
- After every request the test waits until whatever it started has finished (operations run
  to their end on the virtual clock), so no request meets a half-finished change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from schemathesis import Case, GenerationMode
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import CONTENT_TYPE_PROBES, CoveragePhaseData

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import follow
from hypd_local.iam.enforce import Authorization
from tests.conftest import ROOT
from tests.e2e.capacity import BUCKET, TAG, make_unhealthy, run
from tests.support import create_body, fail_calls, group_body

MAX_EXAMPLES = 20
SEED = 14

CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        # Hypothesis's health checks judge how fast data is generated, which depends on the
        # machine; they say nothing about the API.
        "suppress-health-check": ["all"],
        "generation": {
            "max-examples": MAX_EXAMPLES,
            "deterministic": True,
            "database": "none",
            # The local cloud does not verify SigV4 (docs/local-cloud.md): requests go unsigned,
            # and none is sent to see an unsigned one refused.
            "with-security-parameters": False,
        },
        "phases": {
            # A method a path does not document is answered by API Gateway (403 Missing
            # Authentication Token), before hypd: nothing of ours to judge.
            "coverage": {"unexpected-methods": []},
        },
        "checks": {
            # A request the schema allows may still be refused by design: a 400 naming a zone
            # that does not offer the type, a 404 group, a 409 for a cluster in the wrong
            # state. The document cannot say this; every other check still applies.
            "positive_data_acceptance": {"enabled": False},
        },
    }
)
schema = schemathesis.openapi.from_path(ROOT / "docs" / "openapi.json", config=CONFIG)
DOOMED = "doomed"
"""The cluster deleteCluster acts on (and deletes) in the first run."""
GONE = "gone"
"""The cluster torn down before the second run."""
deleted_schema = schema.include(path_regex=r"^/clusters/\{tag\}").exclude(
    operation_id="deleteCluster"
)
"""The second run's operations: every one of /clusters/{tag} and under it. deleteCluster is
the first run's (a DELETE of its cluster, then of the DELETED record, its forget, 404s): here a
forget would take the record from the operations after it."""


@dataclass(frozen=True)
class Target:
    """What the path parameters of each operation name when the generated value is valid."""

    cloud: Any
    values: dict[str, dict[str, str]]
    """operationId -> path parameter -> value; "*" holds the values every operation shares."""
    parameters: dict[str, dict[str, dict[str, Any]]]
    """operationId -> path parameter -> its schema (`_path_parameters`)."""

    def substitute(self, case: Case[Any]) -> None:
        operation_id = case.operation.definition.raw["operationId"]
        wanted = {**self.values["*"], **self.values.get(operation_id, {})}
        schemas = self.parameters.get(operation_id, {})
        for name, value in (case.path_parameters or {}).items():
            if name in wanted and name in schemas and _valid(schemas[name], value):
                case.path_parameters[name] = wanted[name]


def _path_parameters(document: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """The schema of each path parameter of each operation (one name, e.g. `name`, has other
    patterns and lengths on other routes)."""
    return {
        operation["operationId"]: {
            parameter["name"]: parameter["schema"]
            for parameter in operation.get("parameters", [])
            if parameter["in"] == "path"
        }
        for item in document["paths"].values()
        for operation in item.values()
    }


def _valid(schema: dict[str, Any], value: Any) -> bool:
    """Whether `value` satisfies a path parameter's schema (a string: pattern and lengths)."""
    return (
        isinstance(value, str)
        and re.search(schema["pattern"], value) is not None
        and schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value))
    )


def _failed_discover(cloud: Any, api: ApiClient) -> str:
    """A discover operation that FAILED (HyperPod refused to list clusters): retryable."""
    with fail_calls(cloud, "sagemaker", "list_clusters", "AccessDeniedException", times=100):
        operation_id = str(api.post("/clusters/discover")["operationId"])
        cloud.wait_for_executions(timeout=120)
    assert api.get(f"/operations/{operation_id}")["status"] == "FAILED"
    return operation_id


def _create_all(api: ApiClient, cloud: Any, bodies: list[dict[str, Any]]) -> None:
    """Create the clusters of `bodies` at once (the local cloud runs their pipelines side by
    side) and wait until each is ACTIVE."""
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )
    accepted = [str(api.post("/clusters", body)["operationId"]) for body in bodies]
    for operation_id in accepted:
        operation = follow(api, cloud, operation_id, timeout=240)
        assert operation["status"] == "SUCCEEDED", operation.get("error")


@dataclass(frozen=True)
class Clusters:
    active: Target
    """The first run's: cluster `train` and its targets, `doomed` for deleteCluster."""
    deleted: Target
    """The second run's: cluster `gone`, DELETED."""


@pytest.fixture(scope="module")
def clusters() -> Iterator[Clusters]:
    """One local cloud for the module: a created cluster with a group per destructive route,
    a node per node route (one with a health event), and a failed operation; a cluster for
    deleteCluster to delete; and a cluster torn down for real."""
    from hypd_cli.local import local_parameters
    from hypd_local import LocalCloud
    from hypd_local.clock import VirtualClock

    template = ROOT / "template.yaml"
    clock = VirtualClock(ticking=False)
    with LocalCloud(template, parameters=local_parameters(template), clock=clock) as cloud:
        api = ApiClient(cloud.api_url)
        one_node = [group_body(name="workers", count=1)]
        _create_all(api, cloud, [
            create_body(tag=TAG, instanceGroups=[
                group_body(name="workers", count=4),  # the node routes' nodes
                group_body(name="scaled", count=1),  # updateInstanceGroup's
                group_body(name="spare", count=1),  # deleteInstanceGroup's
            ]),
            create_body(tag=DOOMED, instanceGroups=one_node),  # deleteCluster's
            create_body(tag=GONE, instanceGroups=one_node),
        ])
        nodes = [
            str(node["nodeId"])
            for node in api.get(f"/clusters/{TAG}/nodes", instanceGroup="workers")["nodes"]
        ]
        assert len(nodes) == 4
        deleted, rebooted, replaced, unhealthy = sorted(nodes)
        make_unhealthy(cloud, unhealthy, action="Reboot")
        (gone_node,) = [str(n["nodeId"]) for n in api.get(f"/clusters/{GONE}/nodes")["nodes"]]
        teardown = run(api, cloud, api.call("deleteCluster", tag=GONE))
        assert teardown["status"] == "SUCCEEDED", teardown.get("error")
        parameters = _path_parameters(schema.raw_schema)
        values = {
            "*": {"tag": TAG, "nodeId": unhealthy, "operationId": _failed_discover(cloud, api)},
            "updateInstanceGroup": {"name": "scaled"},
            "deleteInstanceGroup": {"name": "spare"},
            "deleteNode": {"nodeId": deleted},
            "rebootNode": {"nodeId": rebooted},
            "replaceNode": {"nodeId": replaced},
            "deleteCluster": {"tag": DOOMED},
        }
        gone = {"*": {"tag": GONE, "nodeId": gone_node, "name": "workers"}}
        yield Clusters(Target(cloud, values, parameters), Target(cloud, gone, parameters))
        cloud.wait_for_executions(timeout=120)


def _offending_field(case: Case[Any]) -> str | None:
    """The parameter or header a negative case made invalid, when schemathesis names one."""
    meta = case.meta
    if meta is None or meta.generation.mode is not GenerationMode.NEGATIVE:
        return None
    data = meta.phase.data
    if isinstance(data, CoveragePhaseData) and data.scenario in CONTENT_TYPE_PROBES:
        # A route without a body does not read it, nor its Content-Type.
        return "Content-Type" if case.operation.body else None
    if data.parameter and data.parameter_location in (
        ParameterLocation.PATH,
        ParameterLocation.QUERY,
        ParameterLocation.HEADER,  # Idempotency-Key, the one header a route documents
    ):
        return data.parameter
    return None


def assert_error_names_the_field(case: Case[Any], response: Any) -> None:
    """A 400 for a parameter or header schemathesis made invalid names it in its message."""
    if response.status_code != 400:
        return
    field = _offending_field(case)
    if field is None:
        return
    body = response.json()
    assert field in body["message"], (field, body, case.as_curl_command())


NOT_USERS_WORDS = re.compile(
    r"\b(?:CLUSTER|OP|NODE|REPAIR|FEATURE|GSI\d)#"  # a table key (cluster#demo, OP#op-...)
    r"|\bcluster#"
    r"|Input should|Field required|Value error|[Ss]tring should|should match pattern"  # pydantic
    r"|Extra inputs are not permitted|validation errors? for "
    r"|\^\[|\]\{\d|\\d|\(\?"  # a regular expression
    r"|Traceback|<class '|object at 0x|KeyError|NoneType",  # Python itself
)
"""What a user must never read in an error: storage keys, pydantic's words, regular
expressions, Python's internals (issue: messages name the field, what is allowed, the command)."""


def assert_in_users_words(case: Case[Any], response: Any) -> None:
    """A 4xx message, and each of its field errors, reads as hypd's, not a library's."""
    if not 400 <= response.status_code < 500:
        return
    body = response.json()
    texts = [str(body.get("message", ""))] + [
        str(error.get("message", "")) for error in (body.get("details") or {}).get("errors") or []
        if isinstance(error, dict)]
    for text in texts:
        found = NOT_USERS_WORDS.search(text)
        assert found is None, (found and found.group(0), text, case.as_curl_command())


@schema.parametrize()
def test_every_operation_answers_as_documented(case: Case[Any], clusters: Clusters) -> None:
    target = clusters.active
    target.substitute(case)
    try:
        response = case.call_and_validate(base_url=target.cloud.api_url)
    finally:
        # Whatever the request started ends before the next request.
        target.cloud.wait_for_executions(timeout=240)
    assert_error_names_the_field(case, response)
    assert_in_users_words(case, response)


@deleted_schema.parametrize()
def test_every_route_of_a_deleted_cluster_answers_as_documented_without_calling_aws(
    case: Case[Any], clusters: Clusters
) -> None:
    target = clusters.deleted
    target.substitute(case)
    calls: list[Authorization] = []
    with target.cloud.watch_authorizations(calls.append):
        response = case.call_and_validate(base_url=target.cloud.api_url)
    assert_error_names_the_field(case, response)
    assert_in_users_words(case, response)
    # The record answers: nothing but the table is read, nothing is started.
    called = sorted({c.operation for c in calls if not c.operation.startswith("dynamodb:")})
    assert called == [], (called, case.as_curl_command())
    if response.status_code == 409:
        assert response.json()["code"] == "ClusterDeleted", case.as_curl_command()
