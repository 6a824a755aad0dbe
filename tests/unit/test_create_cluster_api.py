"""POST /clusters through functions/api/app.py in-process (moto EC2, DynamoDB and Step Functions;
training plans answered by a botocore hook), and the start's race on one tag with threads."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from hypd.api.services import ApiServices
from hypd.aws.dynamodb import Table
from hypd.clusters.create_request import ResolvedCreate
from hypd.clusters.models import Cluster, ClusterSource, ClusterStatus
from hypd.clusters.store import ClusterExists, ClusterStore
from hypd.create.start import start_create
from hypd.errors import ConflictError
from hypd.operations import lifecycle
from hypd.operations.kinds import cluster_lock
from hypd.operations.locks import LockStore
from hypd.operations.models import OperationKind, OperationStatus, StageStatus
from hypd.operations.starter import Starter
from hypd.operations.store import OperationStore
from tests.support import create_body, group_body
from tests.unit.support import (
    ACCOUNT,
    ANSWER_TRAINING_PLANS,
    REGION,
    TABLE_NAME,
    FakeClock,
    FakeLambdaContext,
    SerializedClient,
    answer_list_training_plans,
    cluster_record,
    eks_arn,
    load_event,
)
from tests.unit.test_api_handler import api_event, load_api, state_machine

pytestmark = pytest.mark.usefixtures("fresh_imports")

PLAN_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/p5-now"
PLAN_START = datetime(2026, 1, 15, 9, tzinfo=UTC)
PLAN = {
    "TrainingPlanArn": PLAN_ARN,
    "TrainingPlanName": "p5-now",
    "Status": "Active",
    "StartTime": PLAN_START,
    "EndTime": PLAN_START.replace(day=16),
    "DurationHours": 24,
    "TotalInstanceCount": 4,
    "AvailableInstanceCount": 3,
    "InUseInstanceCount": 1,
    "ReservedCapacitySummaries": [
        {
            "ReservedCapacityArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:reserved-capacity/x",
            "InstanceType": "ml.p5.48xlarge",
            "TotalInstanceCount": 4,
            "Status": "Active",
            "AvailabilityZone": "us-west-2b",
            "AvailabilityZoneId": "usw2-az1",
        }
    ],
}


group = group_body


@dataclass
class CreateApi:
    module: Any
    sfn: Any
    create_arn: str
    operations: OperationStore
    clusters: ClusterStore
    locks: LockStore

    def create(self, body: dict[str, Any] | str) -> tuple[int, Any]:
        raw_body = body if isinstance(body, str) else json.dumps(body)
        raw = self.module.handler(
            api_event("POST", "/clusters", body=raw_body), FakeLambdaContext("hypd-api")
        )
        return raw["statusCode"], json.loads(raw["body"])

    def get(self, path: str, resource: str, parameters: dict[str, str]) -> tuple[int, Any]:
        raw = self.module.handler(
            api_event("GET", path, resource=resource, path_parameters=parameters),
            FakeLambdaContext("hypd-api"),
        )
        return raw["statusCode"], json.loads(raw["body"])

    def executions(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.sfn.list_executions(stateMachineArn=self.create_arn)[
            "executions"
        ]
        return found


@pytest.fixture
def training_plans(moto_aws: None) -> Iterator[None]:
    session = boto3.DEFAULT_SESSION
    answer_list_training_plans(session, [PLAN])
    yield
    session.events.unregister("before-call", unique_id=ANSWER_TRAINING_PLANS)



@pytest.fixture
def api(
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    table: Table,
    fixed_clock: FakeClock,
    training_plans: None,
) -> CreateApi:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    discover = state_machine(sfn, "DiscoverStateMachine-unit")
    create = state_machine(sfn, "CreateClusterStateMachine-unit")
    return CreateApi(
        module=load_api(monkeypatch, template, table, discover, create),
        sfn=sfn,
        create_arn=create,
        operations=OperationStore(table),
        clusters=ClusterStore(table),
        locks=LockStore(table),
    )


def assert_nothing_started(api: CreateApi, tag: str = "train") -> None:
    assert api.operations.list().operations == []
    assert api.clusters.find(tag) is None
    assert api.locks.holder(cluster_lock(tag)) is None
    assert api.executions() == []


# ---------------------------------------------------------------------------- 202
def test_create_records_the_cluster_and_starts_the_operation(api: CreateApi) -> None:
    # When a cluster is created
    status, body = api.create(create_body())
    # Then 202 with a PENDING create-cluster operation
    assert status == 202, body
    assert (body["status"], body["kind"]) == ("PENDING", "create-cluster")
    operation_id = body["operationId"]
    # And its one execution is named after it and resumes nowhere (a first run)
    (execution,) = api.executions()
    assert execution["name"] == operation_id
    described = api.sfn.describe_execution(executionArn=execution["executionArn"])
    assert json.loads(described["input"]) == {
            "operationId": operation_id,
            "resumeFrom": "network",
            "done": dict.fromkeys(
                ("network", "eks", "dependencies", "hyperpod", "storage", "verify", "features"),
                False),
        }
    # And the operation holds the tag's lock, its input is the resolved request
    operation = api.operations.get(operation_id)
    assert operation.kind is OperationKind.CREATE_CLUSTER
    assert operation.cluster_tag == "train"
    assert operation.lock_scope == "cluster#train"
    assert operation.execution_arn == execution["executionArn"]
    assert [s.name for s in operation.stages] == [
        "network",
        "eks",
        "dependencies",
        "hyperpod",
        "storage",
        "verify",
        "features",
    ]
    assert {s.status for s in operation.stages} == {StageStatus.PENDING}
    assert api.locks.holder("cluster#train") == operation_id
    resolved = ResolvedCreate.model_validate(operation.input)
    assert resolved.availability_zone == "us-west-2a"
    assert operation.input["availabilityZoneSource"] == "request"
    assert operation.input["instanceGroups"][0]["resolvedCapacity"] == {
        "type": "on-demand",
        "availabilityZone": "us-west-2a",
    }
    # And the cluster is recorded as CREATING by this operation, anchored on its EKS ARN
    cluster = api.clusters.get("train")
    assert cluster.source is ClusterSource.CREATED
    assert cluster.status is ClusterStatus.CREATING
    assert cluster.last_operation_id == operation_id
    assert cluster.anchor_arn == f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/hypd-train"
    assert cluster.region == REGION
    # And GET /clusters/{tag} shows it at once
    status, shown = api.get("/clusters/train", "/clusters/{tag}", {"tag": "train"})
    assert status == 200
    assert (shown["status"], shown["source"], shown["lastOperationId"]) == (
        "CREATING",
        "created",
        operation_id,
    )


def test_a_training_plan_gives_the_zone(api: CreateApi) -> None:
    # When a group on a training plan is created without a zone
    plan_group = group(
        name="p5",
        instanceType="ml.p5.48xlarge",
        count=3,
        efaOnly=True,
        capacity={"type": "training-plan", "trainingPlanArn": PLAN_ARN},
    )
    status, body = api.create(create_body(availabilityZone=None, instanceGroups=[plan_group]))
    # Then the plan's zone is the cluster's
    assert status == 202, body
    operation = api.operations.get(body["operationId"])
    assert operation.input["availabilityZone"] == "us-west-2b"
    assert operation.input["availabilityZoneSource"] == "training-plan"
    assert operation.input["instanceGroups"][0]["resolvedCapacity"]["trainingPlanName"] == "p5-now"


def test_the_recorded_create_event_is_served(api: CreateApi) -> None:
    raw = api.module.handler(load_event("api-create-cluster.json"), FakeLambdaContext("hypd-api"))
    assert raw["statusCode"] == 202, raw["body"]
    assert json.loads(raw["body"])["kind"] == "create-cluster"


# ---------------------------------------------------------------------------- 400
LIBRARY_WORDS = re.compile(r"\^|\$'|Input should|Field required|Value error|should match")
"""What a user should never read in a field's message: a regular expression, pydantic's words."""


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (create_body(tag="has_underscore"), "tag"),
        (create_body(tag="x" * 59), "tag"),
        (create_body(instanceGroups=[]), "instanceGroups"),
        (
            create_body(instanceGroups=[group(instanceType="ml.nope.large")]),
            "instanceGroups[0].instanceType",
        ),
        (create_body(instanceGroups=[group(), group()]), "instanceGroups[1].name"),
        (create_body(storage={}), "storage"),
        (create_body(extra=True), "extra"),
        (create_body(kubernetesVersion="1.35"), "kubernetesVersion"),
        # judged against the catalogue
        (create_body(availabilityZone="us-west-2z"), "availabilityZone"),
        (create_body(availabilityZone=None), "availabilityZone"),
        (
            create_body(instanceGroups=[group(instanceType="ml.trn1.32xlarge")]),
            "instanceGroups[0].instanceType",
        ),
        (create_body(instanceGroups=[group(efaOnly=True)]), "instanceGroups[0].efaOnly"),
        (
            create_body(
                instanceGroups=[
                    group(
                        instanceType="ml.p5.48xlarge",
                        count=4,
                        capacity={"type": "training-plan", "trainingPlanArn": PLAN_ARN},
                    )
                ],
            ),
            "instanceGroups[0].capacity.trainingPlanArn",
        ),
        # the union's tag (`training-plan`) is not a field the user wrote: never in the path
        (
            create_body(
                instanceGroups=[group(capacity={"type": "training-plan", "trainingPlanArn": "x"})]
            ),
            "instanceGroups[0].capacity.trainingPlanArn",
        ),
    ],
)
def test_a_bad_request_is_400_naming_the_field_and_starts_nothing(
    api: CreateApi, body: dict[str, Any], field: str
) -> None:
    status, answer = api.create(body)
    assert status == 400, answer
    assert answer["code"] == "ValidationError"
    assert field in answer["message"]
    assert any(field == error["field"] for error in answer["details"]["errors"])
    # in a user's words: what is allowed, no regular expression or library prefix
    for error in answer["details"]["errors"]:
        assert not LIBRARY_WORDS.search(error["message"]), error
    assert_nothing_started(api, body.get("tag", "train"))


def test_every_catalogue_problem_is_reported_at_once(api: CreateApi) -> None:
    body = create_body(
        instanceGroups=[
            group(name="a", instanceType="ml.trn1.32xlarge"),
            group(name="b", efaOnly=True),
        ]
    )
    status, answer = api.create(body)
    assert status == 400
    assert [e["field"] for e in answer["details"]["errors"]] == [
        "instanceGroups[0].instanceType",
        "instanceGroups[1].efaOnly",
    ]


def test_malformed_json_is_400(api: CreateApi) -> None:
    status, answer = api.create("{not json")
    assert status == 400
    assert answer["code"] == "ValidationError"


# ---------------------------------------------------------------------------- 409
def test_a_discovered_clusters_tag_is_409_cluster_exists(api: CreateApi) -> None:
    api.clusters.save(cluster_record("train", eks_arn("train")))
    status, answer = api.create(create_body())
    assert status == 409
    assert answer["code"] == "ClusterExists"
    assert "train" in answer["message"]
    assert answer["details"] == {"tag": "train", "source": "discovered"}
    assert api.operations.list().operations == []
    assert api.locks.holder("cluster#train") is None


def test_a_second_create_of_one_tag_is_409(api: CreateApi, fixed_clock: FakeClock) -> None:
    first = api.create(create_body())[1]["operationId"]
    fixed_clock.advance(1)
    status, answer = api.create(create_body())
    assert status == 409
    assert answer["code"] == "ClusterExists"
    assert answer["details"]["lastOperationId"] == first
    assert [op.id for op in api.operations.list().operations] == [first]
    assert len(api.executions()) == 1


def test_a_tag_whose_lock_is_held_is_409_and_leaves_no_record(api: CreateApi) -> None:
    # Given another operation on the tag is in progress (its cluster record is gone)
    other = lifecycle.new_operation(
        OperationKind.DISCOVER, cluster_tag="train", lock_scope="cluster#train"
    )
    api.locks.acquire("cluster#train", other.id, holder_ended=lambda _: False)
    api.operations.create(other)
    # When the tag is created
    status, answer = api.create(create_body())
    # Then 409 names the operation, and no record or operation was left behind
    assert status == 409
    assert answer["code"] == "Conflict"
    assert answer["details"]["operationId"] == other.id
    # in the user's words: the cluster, not the lock's storage key
    assert answer["message"] == f"operation {other.id} is already in progress for cluster train"
    assert api.clusters.find("train") is None
    assert [op.id for op in api.operations.list().operations] == [other.id]
    assert api.locks.holder("cluster#train") == other.id


def test_an_orphaned_creating_record_is_replaced_only_after_the_grace(
    api: CreateApi, fixed_clock: FakeClock
) -> None:
    # Given a CREATING record whose create operation was never recorded (a crashed start)
    ghost = "op-" + "9" * 32
    orphan = Cluster(
        tag="train",
        source=ClusterSource.CREATED,
        region=REGION,
        anchor_arn=f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/hypd-train",
        created_at="2026-01-15T10:00:00.000Z",
        updated_at="2026-01-15T10:00:00.000Z",
        last_operation_id=ghost,
        status=ClusterStatus.CREATING,
    )
    api.clusters.create(orphan)
    # When the tag is created within the grace, it is 409
    status, answer = api.create(create_body())
    assert (status, answer["code"]) == (409, "ClusterExists")
    # And after it, the orphan is replaced
    fixed_clock.advance(lifecycle.START_GRACE.total_seconds())
    status, answer = api.create(create_body())
    assert status == 202, answer
    assert api.clusters.get("train").last_operation_id == answer["operationId"]


# ---------------------------------------------------------------------------- start failures
def test_a_create_that_cannot_start_leaves_the_operation_and_cluster_failed(
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    table: Table,
    fixed_clock: FakeClock,
    training_plans: None,
) -> None:
    # Given the create state machine does not exist
    missing = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:deleted"
    module = load_api(monkeypatch, template, table, missing, missing)
    # When a cluster is created
    raw = module.handler(
        api_event("POST", "/clusters", body=json.dumps(create_body())),
        FakeLambdaContext("hypd-api"),
    )
    # Then AWS's error is answered, the operation is FAILED with it, the cluster FAILED,
    # and the lock free
    assert raw["statusCode"] == 500
    assert json.loads(raw["body"])["details"] == {"awsErrorCode": "StateMachineDoesNotExist"}
    (operation,) = OperationStore(table).list().operations
    assert operation.status is OperationStatus.FAILED
    assert operation.error is not None
    assert operation.error.code == "StateMachineDoesNotExist"
    cluster = ClusterStore(table).get("train")
    assert cluster.status is ClusterStatus.FAILED
    assert cluster.last_operation_id == operation.id
    assert LockStore(table).holder("cluster#train") is None


def test_an_operation_that_cannot_be_recorded_discards_the_cluster(
    table: Table, fixed_clock: FakeClock
) -> None:
    # Given an operation id that is recorded already
    operations, clusters, locks = OperationStore(table), ClusterStore(table), LockStore(table)
    operation = lifecycle.new_operation(
        OperationKind.CREATE_CLUSTER, cluster_tag="train", lock_scope="cluster#train"
    )
    operations.create(operation.model_copy(update={"lock_scope": None}))
    cluster = cluster_record("train", eks_arn("hypd-train"), source=ClusterSource.CREATED)
    cluster = cluster.model_copy(update={"last_operation_id": operation.id})
    calls: list[Any] = []
    # When it is started with its cluster record
    with pytest.raises(ConflictError, match="exists already"):
        Starter(
            operations=operations,
            locks=locks,
            clusters=clusters,
            sfn_client=lambda: calls.append("sfn"),
            state_machine_arn=lambda _kind: "arn:aws:states:us-west-2:123456789012:stateMachine:c",
        ).launch(operation, new_cluster=cluster)
    # Then the cluster record and the lock are gone again, and nothing started
    assert clusters.find("train") is None
    assert locks.holder("cluster#train") is None
    assert calls == []


def test_a_fresh_lock_of_an_unrecorded_holder_is_a_start_in_progress(
    table: Table, fixed_clock: FakeClock
) -> None:
    # Given a lock taken by a start that has not recorded its operation yet
    locks = LockStore(table)
    ghost = "op-" + "8" * 32
    locks.acquire("cluster#train", ghost, holder_ended=lambda _: False)
    services = services_for(table, FakeStepFunctions())
    # When another create of the tag starts, it is a conflict naming that start
    with pytest.raises(ConflictError) as raised:
        start_create(services.starter, resolved("train"))
    assert raised.value.details["operationId"] == ghost
    assert ClusterStore(table).find("train") is None
    # And once that start is older than any start can take, its lock is taken over
    fixed_clock.advance(lifecycle.START_GRACE.total_seconds())
    started = start_create(services.starter, resolved("train"))
    assert locks.holder("cluster#train") == started.id


# ---------------------------------------------------------------------------- the race
class FakeStepFunctions:
    def __init__(self) -> None:
        self.names: list[str] = []
        self._lock = threading.Lock()

    def start_execution(self, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self.names.append(kwargs["name"])
        return {"executionArn": f"{kwargs['stateMachineArn']}:{kwargs['name']}"}


def services_for(table: Table, sfn: FakeStepFunctions) -> ApiServices:
    unused: Any = None
    return ApiServices(
        operations=OperationStore(table),
        clusters=ClusterStore(table),
        locks=LockStore(table),
        sfn_client=lambda: sfn,
        ec2_client=unused,
        sagemaker_client=unused,
        state_machines={
            OperationKind.CREATE_CLUSTER: (
                f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:CreateClusterStateMachine-unit"
            )
        },
    )


def resolved(tag: str) -> ResolvedCreate:
    group_body = {
        **group(),
        "resolvedCapacity": {"type": "on-demand", "availabilityZone": "us-west-2a"},
    }
    return ResolvedCreate.model_validate(
        {
            "tag": tag,
            "availabilityZone": "us-west-2a",
            "availabilityZoneSource": "request",
            "instanceGroups": [group_body],
            "storage": {"s3": {"bucket": "team-data"}},
        }
    )


@pytest.mark.parametrize("contenders", [2, 6])
def test_simultaneous_creates_of_one_tag_start_exactly_one(
    dynamodb_client: Any, fixed_clock: FakeClock, contenders: int
) -> None:
    # Given several requests that create the same tag at the same moment
    client = SerializedClient(dynamodb_client)
    sfn = FakeStepFunctions()
    barrier = threading.Barrier(contenders)
    started: list[str] = []
    conflicts: list[ConflictError] = []
    unexpected: list[BaseException] = []

    def create() -> None:
        services = services_for(Table(client, TABLE_NAME), sfn)
        barrier.wait()
        try:
            started.append(start_create(services.starter, resolved("race")).id)
        except ConflictError as exc:
            conflicts.append(exc)
        except BaseException as exc:  # pragma: no cover - reported below
            unexpected.append(exc)

    threads = [threading.Thread(target=create) for _ in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # Then exactly one started and every other one was refused with a 409
    assert unexpected == []
    assert len(started) == 1
    assert len(conflicts) == contenders - 1
    assert all(exc.status == 409 for exc in conflicts)
    (winner,) = started
    # And there is one operation, one execution, one cluster record and one lock, all the winner's
    table = Table(client, TABLE_NAME)
    assert [op.id for op in OperationStore(table).list().operations] == [winner]
    assert sfn.names == [winner]
    assert ClusterStore(table).get("race").last_operation_id == winner
    assert LockStore(table).holder("cluster#race") == winner


def test_a_create_after_the_winner_recorded_its_cluster_is_cluster_exists(
    table: Table, fixed_clock: FakeClock
) -> None:
    # Given a create that started and then released its lock (e.g. it failed)
    services = services_for(table, FakeStepFunctions())
    first = start_create(services.starter, resolved("train"))
    LockStore(table).release("cluster#train", first.id)
    # When the tag is created again, the conditional record write refuses it
    with pytest.raises(ClusterExists) as raised:
        start_create(services.starter, resolved("train"))
    assert raised.value.details["lastOperationId"] == first.id
    assert LockStore(table).holder("cluster#train") is None
    assert [op.id for op in OperationStore(table).list().operations] == [first.id]
