"""hypd.discovery.tasks: the discover operation's tasks, run as the ASL chains them,
with fake EKS and SageMaker clients and the stores on moto DynamoDB."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hypd.aws.dynamodb import Table
from hypd.clusters.models import Cluster
from hypd.clusters.store import ClusterStore
from hypd.discovery.tasks import DiscoverServices, router
from hypd.errors import AwsAccessDenied, AwsThrottled
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import ErrorInfo, Operation, OperationStatus, StageStatus
from hypd.operations.steps import StaleExecution
from hypd.operations.store import OperationStore
from hypd.operations.tasks import OperationServices
from hypd.operations.tasks import router as operation_router
from tests.unit.support import (
    REGION,
    cluster_record,
    discover_operation,
    eks_arn,
    hyperpod_arn,
    load_event,
)

pytestmark = pytest.mark.usefixtures("fixed_clock")

CREATED = datetime(2025, 11, 3, 8, 30, tzinfo=UTC)


def client_error(code: str, message: str, operation: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 400}},
        operation,
    )


class Pages:
    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self._pages = pages

    def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield from self._pages


class FakeEks:
    """EKS as boto3 answers: names from ListClusters (2 pages), details from DescribeCluster."""

    def __init__(self, clusters: dict[str, dict[str, str]], *, vanished: str | None = None) -> None:
        self.clusters = clusters
        self.vanished = vanished
        self.list_error: ClientError | None = None

    def get_paginator(self, operation: str) -> Pages:
        assert operation == "list_clusters"
        if self.list_error is not None:
            raise self.list_error
        names = [*self.clusters, *([self.vanished] if self.vanished else [])]
        return Pages([{"clusters": names[:1]}, {"clusters": names[1:]}])

    def describe_cluster(self, name: str) -> dict[str, Any]:
        if name not in self.clusters:
            raise client_error(
                "ResourceNotFoundException",
                f"No cluster found for name: {name}.",
                "DescribeCluster",
            )
        return {
            "cluster": {
                "name": name,
                "arn": eks_arn(name),
                "createdAt": CREATED,
                "version": "1.31",
                "endpoint": f"https://{name.upper()}.gr7.{REGION}.eks.amazonaws.com",
                "resourcesVpcConfig": {
                    "subnetIds": ["subnet-0a1", "subnet-0b2"],
                    "vpcId": "vpc-0c3",
                },
                "status": "ACTIVE",
                "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"},
                "tags": self.clusters[name],
            }
        }


class FakeSageMaker:
    """HyperPod clusters: name -> (EKS cluster name or None, tags)."""

    def __init__(self, clusters: dict[str, tuple[str | None, dict[str, str]]]) -> None:
        self.clusters = clusters

    def get_paginator(self, operation: str) -> Pages | _TagPages:
        if operation == "list_clusters":
            return Pages([{"ClusterSummaries": [{"ClusterName": name} for name in self.clusters]}])
        assert operation == "list_tags"
        return _TagPages(self.clusters)

    def describe_cluster(self, ClusterName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        eks_name, _ = self.clusters[ClusterName]
        described: dict[str, Any] = {
            "ClusterArn": hyperpod_arn(ClusterName),
            "ClusterName": ClusterName,
            "ClusterStatus": "InService",
            "CreationTime": CREATED,
            "InstanceGroups": [
                {
                    "InstanceGroupName": "workers",
                    "InstanceType": "ml.g5.8xlarge",
                    "CurrentCount": 2,
                    "TargetCount": 2,
                    "Status": "InService",
                }
            ],
            "NodeRecovery": "Automatic",
        }
        if eks_name:
            described["Orchestrator"] = {"Eks": {"ClusterArn": eks_arn(eks_name)}}
        return described


class _TagPages:
    def __init__(self, clusters: dict[str, tuple[str | None, dict[str, str]]]) -> None:
        self._clusters = clusters

    def paginate(self, ResourceArn: str) -> Iterator[dict[str, Any]]:  # noqa: N803
        name = ResourceArn.rsplit("/", 1)[-1]
        tags = self._clusters[name][1]
        yield {"Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}


@pytest.fixture
def operations(table: Table) -> OperationStore:
    return OperationStore(table)


@pytest.fixture
def clusters(table: Table) -> ClusterStore:
    return ClusterStore(table)


@pytest.fixture
def fake_eks() -> FakeEks:
    return FakeEks(
        {"train-eks": {"env": "prod"}, "infer": {"hypd:tag": "serving"}}, vanished="gone"
    )


@pytest.fixture
def fake_sagemaker() -> FakeSageMaker:
    return FakeSageMaker({"train": ("train-eks", {"team": "ml"}), "lonely": ("elsewhere", {})})


Dispatch = Callable[[dict[str, Any]], dict[str, Any]]


def discover_tasks(services: DiscoverServices) -> Dispatch:
    """The discover function's tasks with these services, as its handler dispatches them."""
    return lambda event: router.dispatch(event, services)


@pytest.fixture
def services(
    table: Table,
    operations: OperationStore,
    clusters: ClusterStore,
    fake_eks: FakeEks,
    fake_sagemaker: FakeSageMaker,
) -> DiscoverServices:
    return DiscoverServices(
        operations=operations,
        clusters=clusters,
        locks=LockStore(table),
        eks_client=lambda: fake_eks,
        sagemaker_client=lambda: fake_sagemaker,
        region=REGION,
    )


@pytest.fixture
def tasks(services: DiscoverServices) -> Dispatch:
    return discover_tasks(services)


@pytest.fixture
def operation(operations: OperationStore) -> Operation:
    return operations.create(discover_operation())


def run_discovery(tasks: Dispatch, operation_id: str) -> dict[str, Any]:
    found = [
        tasks({"task": task, "operationId": operation_id})["clusters"]
        for task in ("list-eks-clusters", "list-hyperpod-clusters")
    ]
    return tasks(
        {
            "task": "record-clusters",
            "operationId": operation_id,
            "eksClusters": found[0],
            "hyperPodClusters": found[1],
        }
    )


def test_list_eks_clusters_describes_every_listed_cluster(
    tasks: Dispatch, operations: OperationStore, operation: Operation
) -> None:
    # When the EKS stage runs (one listed cluster vanished before it was described)
    result = tasks({"task": "list-eks-clusters", "operationId": operation.id})
    # Then the existing clusters are returned in camelCase, and the stage summarises them
    assert [c["name"] for c in result["clusters"]] == ["infer", "train-eks"]
    train = result["clusters"][1]
    assert train["arn"] == eks_arn("train-eks")
    assert train["createdAt"] == "2025-11-03T08:30:00.000Z"
    assert train["authenticationMode"] == "API_AND_CONFIG_MAP"
    assert (train["vpcId"], train["subnetIds"]) == ("vpc-0c3", ["subnet-0a1", "subnet-0b2"])
    stage = operations.get(operation.id).stage("eks-clusters")
    assert stage.status is StageStatus.SUCCEEDED
    assert stage.output == {"found": 2, "names": ["infer", "train-eks"]}


def test_list_hyperpod_clusters_reads_orchestrator_and_tags(
    tasks: Dispatch, operation: Operation
) -> None:
    result = tasks({"task": "list-hyperpod-clusters", "operationId": operation.id})
    by_name = {c["name"]: c for c in result["clusters"]}
    assert by_name["train"]["eksClusterArn"] == eks_arn("train-eks")
    assert by_name["train"]["tags"] == {"team": "ml"}
    assert by_name["train"]["instanceGroups"][0]["instanceType"] == "ml.g5.8xlarge"
    assert by_name["lonely"]["eksClusterArn"] == eks_arn("elsewhere")


def test_throttled_listing_records_the_aws_code_and_raises_for_retry(
    tasks: Dispatch, operations: OperationStore, operation: Operation, fake_eks: FakeEks
) -> None:
    fake_eks.list_error = client_error("ThrottlingException", "Rate exceeded", "ListClusters")
    with pytest.raises(AwsThrottled):
        tasks({"task": "list-eks-clusters", "operationId": operation.id})
    stage = operations.get(operation.id).stage("eks-clusters")
    assert (stage.status, stage.attempts) == (StageStatus.RUNNING, 1)
    assert stage.error is not None
    assert stage.error.code == "ThrottlingException"
    assert stage.error.message == "listing EKS clusters: ThrottlingException: Rate exceeded"


def test_record_clusters_links_and_records(
    tasks: Dispatch, operations: OperationStore, clusters: ClusterStore, operation: Operation
) -> None:
    # When the three tasks run in order
    result = run_discovery(tasks, operation.id)
    # Then HyperPod "train" is linked to train-eks, "infer" takes its hypd:tag,
    # and "lonely" (its EKS cluster is elsewhere) stands alone
    assert sorted(result["recorded"]) == ["lonely", "serving", "train"]
    assert result["conflicts"] == []
    assert result["missing"] == []
    assert (result["eksClusters"], result["hyperPodClusters"]) == (2, 2)
    train = clusters.get("train")
    assert train.anchor_arn == eks_arn("train-eks")
    assert train.eks is not None
    assert train.hyperpod is not None
    assert train.last_operation_id == operation.id
    assert clusters.get("lonely").anchor_arn == hyperpod_arn("lonely")
    assert clusters.get("serving").anchor_arn == eks_arn("infer")
    # And the record stage's output is the result
    assert operations.get(operation.id).stage("record").output == result


def test_rediscovery_keeps_tags_and_reports_missing_clusters(
    tasks: Dispatch,
    operations: OperationStore,
    clusters: ClusterStore,
    operation: Operation,
    fake_sagemaker: FakeSageMaker,
) -> None:
    # Given a first discovery
    run_discovery(tasks, operation.id)
    # When HyperPod "lonely" is deleted and "train" gets a hypd:tag, and discovery runs again
    del fake_sagemaker.clusters["lonely"]
    fake_sagemaker.clusters["train"] = ("train-eks", {"hypd:tag": "renamed"})
    second = operations.create(discover_operation())
    result = run_discovery(tasks, second.id)
    # Then existing records keep their tags and the deleted one is reported missing
    assert sorted(result["recorded"]) == ["serving", "train"]
    assert result["missing"] == ["lonely"]
    assert clusters.get("train").last_operation_id == second.id


def test_cluster_names_limit_what_is_recorded(
    tasks: Dispatch, operations: OperationStore, clusters: ClusterStore
) -> None:
    # Given a discover whose recorded input names one cluster
    operation = operations.create(discover_operation(clusterNames=["train-eks"]))
    result = run_discovery(tasks, operation.id)
    assert result["recorded"] == ["train"]
    assert [c.tag for c in clusters.all()] == ["train"]


def test_tag_taken_between_read_and_write_is_reported_as_conflict(
    table: Table, services: DiscoverServices, operation: Operation
) -> None:
    # Given another writer recorded "train" for other resources after our read
    class StaleClusterStore(ClusterStore):
        def all(self) -> list[Cluster]:
            return []

    ClusterStore(table).save(cluster_record("train", eks_arn("someone-else")))
    tasks = discover_tasks(replace(services, clusters=StaleClusterStore(table)))
    # When discovery records
    result = run_discovery(tasks, operation.id)
    # Then "train" is reported, not overwritten, and the others are recorded
    assert sorted(result["recorded"]) == ["lonely", "serving"]
    assert result["conflicts"] == [
        {
            "tag": "train",
            "reason": "cluster tag train is already used by other resources",
            "arns": [],
        }
    ]
    assert ClusterStore(table).get("train").anchor_arn == eks_arn("someone-else")


def test_a_whole_discovery_succeeds(
    tasks: Dispatch, operations: OperationStore, table: Table, operation: Operation
) -> None:
    # Given the operation tasks of the same table
    operation_tasks = operation_router.bind(OperationServices(operations, LockStore(table)))
    # When the state machine's happy path runs: begin, the two listings, record, finish
    operation_tasks.dispatch(
        {"task": "begin", "operationId": operation.id, "executionArn": "arn:exec"}
    )
    result = run_discovery(tasks, operation.id)
    tasks({"task": "finish-discover", "operationId": operation.id})
    # Then the operation SUCCEEDED with every stage SUCCEEDED once
    stored = operations.get(operation.id)
    assert stored.status is OperationStatus.SUCCEEDED
    assert [(s.status, s.attempts) for s in stored.stages] == [(StageStatus.SUCCEEDED, 1)] * 3
    assert stored.output == result


@pytest.fixture
def locked(operations: OperationStore, services: DiscoverServices) -> Operation:
    """A recorded discover holding the "discover" lock, as the API starts one."""
    operation = operations.create(discover_operation(lock_scope="discover"))
    services.locks.acquire("discover", operation.id, holder_ended=lambda _: False)
    return operation


def test_finish_makes_the_record_stage_the_result_and_frees_the_lock(
    tasks: Dispatch, operations: OperationStore, services: DiscoverServices, locked: Operation
) -> None:
    # Given the three stages done by the execution named after the operation
    result = run_discovery(tasks, locked.id)
    # When the state machine finishes
    answer = tasks(
        {"task": "finish-discover", "operationId": locked.id, "executionName": locked.id}
    )
    # Then the operation SUCCEEDED with what the record stage recorded, and the lock is free
    assert answer == {"operationId": locked.id, "status": "SUCCEEDED"}
    assert operations.get(locked.id).output == result
    assert services.locks.holder("discover") is None


def test_fail_blames_the_stage_that_recorded_the_aws_error_and_frees_the_lock(
    tasks: Dispatch,
    operations: OperationStore,
    services: DiscoverServices,
    locked: Operation,
    fake_eks: FakeEks,
) -> None:
    # Given the EKS listing was refused (a permanent error: no retry)
    fake_eks.list_error = client_error("AccessDeniedException", "not authorized", "ListClusters")
    with pytest.raises(AwsAccessDenied):
        tasks({"task": "list-eks-clusters", "operationId": locked.id})
    # When Record failure runs with the Catch's result
    answer = tasks(
        {
            "task": "fail-discover",
            "operationId": locked.id,
            "executionName": locked.id,
            "error": load_event("lambda-error-cause.json"),
        }
    )
    # Then the stage and the operation carry AWS's code, and the lock is free
    assert answer == {"operationId": locked.id, "status": "FAILED"}
    stored = operations.get(locked.id)
    assert stored.stage("eks-clusters").status is StageStatus.FAILED
    assert stored.error is not None
    assert stored.error.code == "AccessDeniedException"
    assert services.locks.holder("discover") is None


def test_a_task_of_a_superseded_execution_changes_nothing(
    tasks: Dispatch, operations: OperationStore, operation: Operation
) -> None:
    # Given a discover that failed and was retried: its current execution is {id}-r1
    operations.update(operation.id, lambda op: lifecycle.fail(op, ErrorInfo(code="X", message="x")))
    operations.update(operation.id, lifecycle.retry)
    # When a task of the first execution ({id}) still runs
    with pytest.raises(StaleExecution):
        tasks(
            {"task": "list-eks-clusters", "operationId": operation.id,
             "executionName": operation.id}
        )
    # Then its stage is untouched
    assert operations.get(operation.id).stage("eks-clusters").attempts == 0
    # And that execution's failure recorder leaves the operation to the retry
    answer = tasks(
        {
            "task": "fail-discover",
            "operationId": operation.id,
            "executionName": operation.id,
            "error": {"Error": "StaleExecution", "Cause": "{}"},
        }
    )
    assert answer == {"operationId": operation.id, "stale": True}
    assert operations.get(operation.id).status is OperationStatus.PENDING
