"""Every AWS action a function's code performs is allowed by its policy in template.yaml.

Each function runs in-process on moto with a boto3 session that records every API call
(botocore's `before-call` event); the recorded `service:Operation` names must be among the
actions of the function's policy statements.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from hypd.aws.dynamodb import Table
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import ErrorInfo, OperationKind
from hypd.operations.store import OperationStore
from tests.unit.support import (
    ACCOUNT,
    REGION,
    TABLE_NAME,
    FakeLambdaContext,
    answer_list_training_plans,
    discover_operation,
    function_environment,
    load_event,
    load_function_module,
)

pytestmark = pytest.mark.usefixtures("fresh_imports")

PASS_DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


TRANSACTION_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def policy_actions(template: dict[str, Any], logical_id: str) -> set[str]:
    """The actions a function's policies allow, and those of the managed policies attached to
    its role (`Roles: [!Ref <Function>Role]`)."""
    actions: set[str] = set()
    documents = [
        policy for policy in template["Resources"][logical_id]["Properties"].get("Policies", [])
        if isinstance(policy, dict) and "Statement" in policy  # not SAM policy templates
    ]
    documents += [
        resource["Properties"]["PolicyDocument"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::ManagedPolicy"
        and {"Ref": f"{logical_id}Role"} in (resource["Properties"].get("Roles") or [])
    ]
    for policy in documents:
        for statement in policy["Statement"]:
            if statement.get("Effect") != "Allow":
                continue
            action = statement["Action"]
            actions.update([action] if isinstance(action, str) else action)
    return actions


@pytest.fixture
def recorded(moto_aws: None, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The IAM actions of every call made through clients created by `boto3.client`."""
    calls: set[str] = set()
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )

    def record(model: Any, params: dict[str, Any] | None = None, **kwargs: Any) -> None:
        prefix = model.service_model.signing_name
        if model.name == "TransactWriteItems":
            # IAM authorises a transaction item by item, as the item operations.
            calls.update(
                f"{prefix}:{TRANSACTION_ITEM_ACTIONS[kind]}"
                for item in (params or {}).get("TransactItems", [])
                for kind in item
            )
            return
        calls.add(f"{prefix}:{model.name}")

    session.events.register("before-call", record)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)
    return calls


def set_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in {**env, "POWERTOOLS_TRACE_DISABLED": "true"}.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def state_machine_arn(table: Table) -> str:
    sfn = boto3.session.Session(region_name=REGION).client("stepfunctions")
    arn: str = sfn.create_state_machine(
        name="DiscoverStateMachine-iam",
        definition=PASS_DEFINITION,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/DiscoverStateMachineRole",
    )["stateMachineArn"]
    return arn


def api_call(module: Any, method: str, path: str, resource: str | None = None, **extra: Any) -> int:
    event = load_event("api-get-operation.json")
    event.update(resource=resource or path, path=path, httpMethod=method, body=None, **extra)
    response = module.handler(event, FakeLambdaContext("hypd-api"))
    status: int = response["statusCode"]
    return status


def load_api(
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    state_machine_arn: str,
    create_cluster_arn: str | None = None,
) -> Any:
    set_env(
        monkeypatch,
        function_environment(
            template,
            "ApiFunction",
            {
                "HypdTable": TABLE_NAME,
                "DiscoverStateMachine": state_machine_arn,
                "CreateClusterStateMachine": create_cluster_arn or state_machine_arn,
            },
        ),
    )
    return load_function_module("api")


@pytest.mark.usefixtures("fixed_clock")
def test_api_function_reads_and_starts_within_its_policy(
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    table: Table,
    state_machine_arn: str,
    recorded: set[str],
) -> None:
    # Given the API function
    module = load_api(monkeypatch, template, state_machine_arn)
    # When it serves every route, a started discover and a conflicting one
    assert api_call(module, "POST", "/clusters/discover") == 202
    assert api_call(module, "POST", "/clusters/discover") == 409
    operation_id = OperationStore(table).list().operations[0].id
    assert (
        api_call(
            module,
            "GET",
            f"/operations/{operation_id}",
            "/operations/{operationId}",
            pathParameters={"operationId": operation_id},
        )
        == 200
    )
    assert api_call(module, "GET", "/operations") == 200
    assert api_call(module, "GET", "/clusters") == 200
    answer_list_training_plans(boto3.DEFAULT_SESSION, [])
    for path in ("/catalog/availability-zones", "/catalog/training-plans"):
        assert api_call(module, "GET", path) == 200
    assert (
        api_call(
            module,
            "GET",
            "/catalog/instance-types",
            queryStringParameters={"availabilityZone": f"{REGION}a"},
        )
        == 200
    )
    assert (
        api_call(module, "GET", "/clusters/x", "/clusters/{tag}", pathParameters={"tag": "x"})
        == 404
    )
    # Then every call it made is allowed
    assert {
        "states:StartExecution",
        "ec2:DescribeAvailabilityZones",
        "ec2:DescribeInstanceTypeOfferings",
        "ec2:DescribeInstanceTypes",
        "sagemaker:ListTrainingPlans",
    } <= recorded
    assert recorded - policy_actions(template, "ApiFunction") == set()


@pytest.mark.usefixtures("fixed_clock")
def test_api_function_start_failure_stays_within_its_policy(
    monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table, recorded: set[str]
) -> None:
    # Given the API function whose state machine cannot be started
    module = load_api(
        monkeypatch, template, f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:deleted"
    )
    # When discover is requested, fails to start, and is recorded FAILED with its lock released
    assert api_call(module, "POST", "/clusters/discover") == 500
    # Then every call it made is allowed
    assert recorded - policy_actions(template, "ApiFunction") == set()


@pytest.mark.usefixtures("fixed_clock")
def test_operation_tasks_function_stays_within_its_policy(
    monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table, recorded: set[str]
) -> None:
    # Given two operations holding locks
    store = OperationStore(table)
    set_env(
        monkeypatch,
        function_environment(template, "OperationTasksFunction", {"HypdTable": TABLE_NAME}),
    )
    module = load_function_module("operation_tasks")
    context = FakeLambdaContext("hypd-operations")
    ids = []
    for scope in ("a", "b"):
        operation = discover_operation(lock_scope=scope)
        LockStore(table).acquire(scope, operation.id, holder_ended=lambda _: False)
        ids.append(store.create(operation).id)
    # When every task runs: begin, succeed, fail, and an execution-ended event
    module.handler({"task": "begin", "operationId": ids[0]}, context)
    module.handler({"task": "succeed", "operationId": ids[0], "output": {}}, context)
    module.handler(
        {"task": "fail", "operationId": ids[1], "error": load_event("lambda-error-cause.json")},
        context,
    )
    event = load_event("sfn-execution-status-change.json")
    event["detail"]["name"] = ids[1]
    module.handler(event, context)
    store.update(ids[1], lambda op: lifecycle.fail(op, ErrorInfo(code="X", message="x")))
    # Then every call it made is allowed
    assert "dynamodb:DeleteItem" in recorded
    assert recorded - policy_actions(template, "OperationTasksFunction") == set()


@pytest.mark.usefixtures("fixed_clock")
def test_discover_function_stays_within_its_policy(
    monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table, recorded: set[str]
) -> None:
    # Given an EKS cluster and a HyperPod cluster in the account
    session = boto3.session.Session(region_name=REGION)
    session.client("eks").create_cluster(
        name="train-eks",
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-0a1b2c3d"]},
    )
    session.client("sagemaker").create_cluster(
        ClusterName="train",
        InstanceGroups=[
            {
                "InstanceGroupName": "workers",
                "InstanceType": "ml.g5.xlarge",
                "InstanceCount": 1,
                "LifeCycleConfig": {
                    "SourceS3Uri": "s3://sagemaker-lcc/",
                    "OnCreate": "on_create.sh",
                },
                "ExecutionRole": f"arn:aws:iam::{ACCOUNT}:role/hyperpod",
                "ThreadsPerCore": 1,
            }
        ],
        VpcConfig={"SecurityGroupIds": ["sg-0a1b2c3d"], "Subnets": ["subnet-0a1b2c3d"]},
        Tags=[{"Key": "team", "Value": "ml"}],
    )
    # And a discover holding its lock, as the API starts one
    operation = OperationStore(table).create(
        lifecycle.new_operation(OperationKind.DISCOVER, lock_scope="discover")
    )
    LockStore(table).acquire("discover", operation.id, holder_ended=lambda _: False)
    set_env(
        monkeypatch,
        function_environment(template, "DiscoverFunction", {"HypdTable": TABLE_NAME}),
    )
    module = load_function_module("discover")
    context = FakeLambdaContext("hypd-discover")
    # When the discover tasks run as the state machine chains them
    eks_out = module.handler({"task": "list-eks-clusters", "operationId": operation.id}, context)
    hp_out = module.handler(
        {"task": "list-hyperpod-clusters", "operationId": operation.id}, context
    )
    result = module.handler(
        {
            "task": "record-clusters",
            "operationId": operation.id,
            "eksClusters": eks_out["clusters"],
            "hyperPodClusters": hp_out["clusters"],
        },
        context,
    )
    finished = module.handler({"task": "finish-discover", "operationId": operation.id}, context)
    # Then both clusters were found and recorded
    assert [c["name"] for c in eks_out["clusters"]] == ["train-eks"]
    assert [c["name"] for c in hp_out["clusters"]] == ["train"]
    assert hp_out["clusters"][0]["tags"] == {"team": "ml"}
    assert sorted(result["recorded"]) == ["train", "train-eks"]
    # And the operation SUCCEEDED with its lock released
    assert finished["status"] == "SUCCEEDED"
    assert LockStore(table).holder("discover") is None
    # And every call it made is allowed
    assert {"eks:ListClusters", "eks:DescribeCluster", "sagemaker:ListTags"} <= recorded
    assert "dynamodb:DeleteItem" in recorded
    assert recorded - policy_actions(template, "DiscoverFunction") == set()


def _resources(statement: dict[str, Any]) -> list[str]:
    """A statement's resources with the pseudo parameters of this account and Region."""
    found = statement.get("Resource", [])
    values = found if isinstance(found, list) else [found]
    texts = []
    for value in values:
        text = value.get("Fn::Sub") if isinstance(value, dict) else value
        if isinstance(text, str):
            texts.append(text.replace("${AWS::Partition}", "aws")
                         .replace("${AWS::Region}", REGION)
                         .replace("${AWS::AccountId}", ACCOUNT))
    return texts


def test_hyperpod_cluster_resources_match_the_arns_hyperpod_gives() -> None:
    # HyperPod cluster ARNs carry a generated id, not the cluster's name (botocore's model):
    # a resource such as cluster/hypd-* would match no cluster, and every call would be denied.
    import re
    from fnmatch import fnmatchcase

    import botocore.session

    from tests.unit.support import load_template

    pattern = botocore.session.get_session().get_service_model("sagemaker").shape_for(
        "ClusterArn").metadata["pattern"]
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/k3x9zq2m7p1w"
    assert re.fullmatch(pattern, arn)
    checked = 0
    for logical_id, resource in load_template()["Resources"].items():
        policies = resource.get("Properties", {}).get("Policies", [])
        for policy in policies if isinstance(policies, list) else []:
            for statement in policy.get("Statement", []) if isinstance(policy, dict) else []:
                for text in _resources(statement):
                    if ":sagemaker:" in text and ":cluster/" in text:
                        checked += 1
                        assert fnmatchcase(arn, text), (logical_id, statement.get("Sid"), text)
    assert checked >= 4
