"""Take one permission a path needs away, and the path fails as it would on AWS, naming it.

Each test runs the real pipeline on a local cloud whose template lacks one grant (an edit of
the parsed template.yaml before it is loaded): IAM refuses the call it was for, with
AccessDenied naming the action and the resource, or EKS's Kubernetes API refuses a principal
without its access entry. With the grant in place the same paths succeed (the other
end-to-end tests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from hypd.features.tls_bucket import tls_bucket_name
from hypd_cli.api_client import ApiClient
from hypd_cli.demo import demo_request, follow
from hypd_cli.local import local_parameters
from hypd_local import LocalCloud
from hypd_local.calls import watch_calls
from hypd_local.clock import VirtualClock
from statemachines.generate import HYPERPOD_WAIT_SECONDS
from tests.conftest import ROOT
from tests.e2e.capacity import created_cluster, run
from tests.support import group_body

Edit = Callable[[dict[str, Any]], None]
BUCKET = "hypd-least-data"


def statements(template: dict[str, Any], function: str) -> list[dict[str, Any]]:
    """The statements of a function's inline policy (the one that is a document)."""
    policies = template["Resources"][function]["Properties"]["Policies"]
    found: list[dict[str, Any]] = next(
        p for p in policies if isinstance(p, dict) and "Statement" in p)["Statement"]
    return found


def without_statement(function: str, sid: str) -> Edit:
    def edit(template: dict[str, Any]) -> None:
        found = statements(template, function)
        assert any(s.get("Sid") == sid for s in found), f"{function} has no statement {sid}"
        found[:] = [s for s in found if s.get("Sid") != sid]
    return edit


def without_action(function: str, sid: str, action: str) -> Edit:
    def edit(template: dict[str, Any]) -> None:
        (statement,) = [s for s in statements(template, function) if s.get("Sid") == sid]
        actions = statement["Action"] if isinstance(statement["Action"], list) else [
            statement["Action"]]
        assert action in actions
        statement["Action"] = [a for a in actions if a != action]
    return edit


def without_variable(function: str, name: str) -> Edit:
    def edit(template: dict[str, Any]) -> None:
        variables = template["Resources"][function]["Properties"]["Environment"]["Variables"]
        del variables[name]
    return edit


@pytest.fixture
def cloud_without(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A local cloud of template.yaml with the test's edit (``@pytest.mark.parametrize``'d
    as ``edit`` through indirect=False: the test passes it to ``make``)."""
    made: list[LocalCloud] = []

    def make(edit: Edit) -> LocalCloud:
        template = ROOT / "template.yaml"
        cloud = LocalCloud(template, parameters=local_parameters(template), template_edit=edit,
                           clock=VirtualClock(ticking=False))
        made.append(cloud.start())
        return cloud

    yield make
    for cloud in made:
        cloud.stop()


def create(cloud: LocalCloud, tag: str = "least") -> dict[str, Any]:
    api = ApiClient(cloud.api_url)
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
    accepted = api.post("/clusters", demo_request(api, tag, BUCKET))
    return follow(api, cloud, str(accepted["operationId"]), timeout=240)


def failed_stage(operation: dict[str, Any]) -> dict[str, Any]:
    assert operation["status"] == "FAILED", operation
    return next(s for s in operation["stages"] if s["status"] == "FAILED")


def test_without_eks_create_cluster_on_star_the_eks_stage_is_denied(cloud_without: Any) -> None:
    cloud = cloud_without(without_statement("ClusterTasksFunction", "CreateEksClusters"))
    stage = failed_stage(create(cloud))
    assert stage["name"] == "eks"
    assert stage["error"]["code"] == "AccessDeniedException"
    assert "is not authorized to perform: eks:CreateCluster" in stage["error"]["message"]
    role = cloud.resources["ClusterTasksFunctionRole"]
    assert f"assumed-role/{role}/" in stage["error"]["message"]


def passed_to(function: str, sid: str, service: str) -> Edit:
    def edit(template: dict[str, Any]) -> None:
        (statement,) = [s for s in statements(template, function) if s.get("Sid") == sid]
        statement["Condition"] = {"StringEquals": {"iam:PassedToService": service}}
    return edit


@pytest.mark.parametrize("edit", [
    without_statement("ClusterTasksFunction", "PassExecutionRole"),
    # passing it is allowed, but only to another service than the one it is handed to
    passed_to("ClusterTasksFunction", "PassExecutionRole", "eks.amazonaws.com"),
], ids=["no-grant", "other-service"])
def test_without_passing_the_execution_role_the_hyperpod_stage_is_denied(
    cloud_without: Any, edit: Edit,
) -> None:
    cloud = cloud_without(edit)
    stage = failed_stage(create(cloud))
    assert stage["name"] == "hyperpod"
    assert stage["error"]["code"] == "AccessDeniedException"
    role = cloud.stack.roles["HyperPodExecutionRole"].arn
    assert f"iam:PassRole on resource: {role}" in stage["error"]["message"]


def test_without_send_task_success_the_hyperpod_wait_falls_back_to_its_poll(
    cloud_without: Any,
) -> None:
    cloud = cloud_without(without_action("ClusterEventsFunction", "WakeWaiters",
                                         "states:SendTaskSuccess"))
    api = ApiClient(cloud.api_url)
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
    accepted = api.post("/clusters", demo_request(api, "least", BUCKET))
    # The HyperPod wait blocks once the cluster is InService and its event was not acted on;
    # then the clock moves to the wait's end, as time would.
    cloud.clock.wait_for_waiters(1, timeout=120)
    cloud.clock.advance(HYPERPOD_WAIT_SECONDS)
    operation = follow(api, cloud, str(accepted["operationId"]), timeout=240)
    # The state-change event reaches the events function, which IAM refuses...
    refused = [f for f in cloud.async_failures if f.function == "ClusterEventsFunction"]
    assert refused
    assert any("states:SendTaskSuccess" in f.error_message for f in refused)
    # ...so the stage waits for the fallback poll instead of the event
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    (hyperpod,) = [s for s in operation["stages"] if s["name"] == "hyperpod"]
    assert _seconds(hyperpod) >= HYPERPOD_WAIT_SECONDS


def test_without_a_network_stack_role_grant_the_stack_rolls_back_naming_it(
    cloud_without: Any,
) -> None:
    def edit(template: dict[str, Any]) -> None:
        policy = template["Resources"]["NetworkStackRole"]["Properties"]["Policies"][0]
        policy["PolicyDocument"]["Statement"] = [
            s for s in policy["PolicyDocument"]["Statement"] if s["Sid"] != "CreateInTaggedNetwork"]

    cloud = cloud_without(edit)
    stage = failed_stage(create(cloud))
    assert stage["name"] == "network"
    assert stage["error"]["code"] == "ROLLBACK_COMPLETE"
    assert f"assumed-role/{cloud.resources['NetworkStackRole']}/" in (
        stage["error"]["message"])
    assert "is not authorized to perform: ec2:Create" in stage["error"]["message"]
    stack = cloud.client("cloudformation").describe_stacks(
        StackName="hypd-least-network")["Stacks"][0]
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    assert not [v for v in cloud.client("ec2").describe_vpcs()["Vpcs"] if not v["IsDefault"]]


def test_without_its_access_entry_the_capacity_function_is_refused_by_kubernetes(
    cloud_without: Any,
) -> None:
    cloud = cloud_without(without_variable("ClusterTasksFunction",
                                           "KUBERNETES_ACCESS_ROLE_ARNS"))
    api = ApiClient(cloud.api_url)
    created_cluster(api, cloud, group_body(count=1))
    added = run(api, cloud, api.call("addInstanceGroup", tag="train",
                                     body=group_body(name="more", count=1)))
    assert added["status"] == "FAILED"
    assert added["error"]["code"] == "UnauthorizedException"
    assert "Unauthorized" in added["error"]["message"]


def test_without_deleting_objects_the_tls_bucket_hypd_made_is_not_emptied(
    cloud_without: Any,
) -> None:
    """The bucket grants are on the bucket's ARN; emptying it needs s3:DeleteObject on its
    objects' ARNs, a statement of its own."""
    cloud = cloud_without(without_statement("FeatureTasksFunction", "EmptyTlsBuckets"))
    api = ApiClient(cloud.api_url)
    created_cluster(api, cloud, group_body(count=1))
    on = run(api, cloud, api.call("setFeatures", tag="train",
                                  body={"inferenceOperator": {"enabled": True}}))
    assert on["status"] == "SUCCEEDED", on.get("error")
    bucket = tls_bucket_name("train", cloud.account_id, cloud.region)
    cloud.client("s3").put_object(Bucket=bucket, Key="certs/tls.crt", Body=b"certificate")
    off = run(api, cloud, api.call("setFeatures", tag="train",
                                   body={"inferenceOperator": {"enabled": False}}))
    stage = failed_stage(off)
    assert stage["name"] == "cleanup"
    assert stage["error"]["code"] == "AccessDenied"
    assert (f"s3:DeleteObject on resource: arn:aws:s3:::{bucket}/certs/tls.crt"
            in stage["error"]["message"])
    assert cloud.client("s3").head_bucket(Bucket=bucket)  # kept until it can be emptied


def _seconds(stage: dict[str, Any]) -> float:
    from datetime import datetime

    started = datetime.fromisoformat(stage["startedAt"])
    ended = datetime.fromisoformat(stage["endedAt"])
    return (ended - started).total_seconds()


def test_hyperpod_grants_reach_only_clusters_with_a_hypd_tag(cloud: Any) -> None:
    """The HyperPod actions on ``cluster/*`` are narrowed by ``aws:ResourceTag/hypd:tag``:
    a HyperPod cluster of the account that hypd did not make is out of the functions' reach
    (its nodes, any change), except for describing it."""
    from botocore.exceptions import ClientError

    from hypd_local.seed import ClusterSeed, seed_clusters

    foreign, ours = seed_clusters(cloud, [ClusterSeed("theirs"),
                                          ClusterSeed("hypd-ours", tags={"hypd:tag": "ours"})])
    role = cloud.client("iam").get_role(
        RoleName=cloud.resources["CapacityTasksFunctionRole"])["Role"]["Arn"]
    keys = cloud.role_session(role, "lambda.amazonaws.com", "hypd-CapacityTasksFunction"
                              ).credentials.get_frozen_credentials()
    sagemaker = boto3.Session(
        aws_access_key_id=keys.access_key, aws_secret_access_key=keys.secret_key,
        aws_session_token=keys.token, region_name=cloud.region,
    ).client("sagemaker", endpoint_url=cloud.aws_endpoint)

    assert sagemaker.describe_cluster(ClusterName=ours.name)["ClusterName"] == ours.name
    assert sagemaker.list_cluster_nodes(ClusterName=ours.name)["ClusterNodeSummaries"]
    # DescribeCluster alone is not narrowed: a cluster deleted outside hypd has no tags, and
    # its describe must say it is missing, not refuse (test_capacity_groups)
    assert sagemaker.describe_cluster(ClusterName=foreign.name)["ClusterName"] == foreign.name
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_cluster_nodes", {}),
        ("batch_reboot_cluster_nodes", {"NodeIds": ["i-0123456789abcdef0"]}),
    ]
    for method, arguments in calls:
        with pytest.raises(ClientError) as refused:
            getattr(sagemaker, method)(ClusterName=foreign.name, **arguments)
        error = refused.value.response["Error"]
        assert error["Code"] == "AccessDeniedException"
        assert f"on resource: {foreign.hyperpod_arn}" in error["Message"]
        assert f"assumed-role/{cloud.resources['CapacityTasksFunctionRole']}/" in (
            error["Message"])


LONG_STACK = "hypd-production-eu-west-inference-fleet-a"  # 41 characters


def test_with_a_long_stack_name_the_feature_tasks_grant_their_access_entries() -> None:
    """CloudFormation shortens a long stack's generated role names (``<stack>-<LogicalId>``
    no longer starts them), so the feature tasks' grant names the roles by ARN: on a
    cluster that lacks both entries they grant themselves and the API's reader access."""
    assert len(LONG_STACK) > 40
    template = ROOT / "template.yaml"
    with LocalCloud(template, parameters=local_parameters(template), stack_name=LONG_STACK,
                    clock=VirtualClock(ticking=False)) as cloud:
        roles = {logical: cloud.stack.roles[logical].arn
                 for logical in ("FeatureTasksFunctionRole", "ApiFunctionRole")}
        assert not any(f"{LONG_STACK}-FeatureTasksFunctionRole" in arn
                       for arn in roles.values()), "the name is shortened"
        api = ApiClient(cloud.api_url)
        created_cluster(api, cloud, group_body(count=1))
        eks = cloud.client("eks")
        for principal in roles.values():
            eks.delete_access_entry(clusterName="hypd-train", principalArn=principal)
        calls: list[str] = []
        with watch_calls(lambda call: calls.append(call.action)):
            deleted = run(api, cloud, api.call("deleteCluster", tag="train", force=True))
        assert deleted["status"] == "SUCCEEDED", deleted.get("error")
        assert calls.count("eks:CreateAccessEntry") == 2
