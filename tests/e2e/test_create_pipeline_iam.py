"""Every AWS call the create pipeline's functions make is allowed by their policies.

The pipeline runs on the local cloud (S3 and FSx storage, and a retry that replaces failed EKS
and HyperPod clusters); each call a function's handler makes is recorded with botocore's
`before-call` event and attributed to the function through the invocation that made it. The
IAM action of every call must be among the actions of that function's policy statements in
template.yaml (wildcards as IAM reads them; conditions are not evaluated here).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Any

import boto3
import pytest

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import demo_request, follow
from hypd_local.template import read_template
from tests.conftest import ROOT

FUNCTIONS = ("ClusterTasksFunction", "ClusterEventsFunction")
BUCKET = "hypd-iam-data"

ACTION_OF_CALL = {
    # HeadBucket is authorised as s3:ListBucket.
    "s3:HeadBucket": "s3:ListBucket",
}
NEEDS_NO_PERMISSION = {"sts:GetCallerIdentity"}


def policy_actions(logical_id: str) -> set[str]:
    template = read_template(ROOT / "template.yaml")
    actions: set[str] = set()
    for policy in template["Resources"][logical_id]["Properties"].get("Policies", []):
        for statement in policy.get("Statement", []) if isinstance(policy, dict) else []:
            if statement.get("Effect") == "Allow":
                action = statement["Action"]
                actions.update([action] if isinstance(action, str) else action)
    return actions


@pytest.fixture
def calls_by_function(cloud: Any) -> Iterator[dict[str, set[str]]]:
    """`service:Operation` of every boto3 call, by the function whose invocation made it."""
    recorded: dict[str, set[str]] = defaultdict(set)
    current = threading.local()
    session = boto3.DEFAULT_SESSION or boto3.setup_default_session() or boto3.DEFAULT_SESSION
    assert session is not None
    events = session._session.get_component("event_emitter")

    def on_call(model: Any, **_: Any) -> None:
        function = getattr(current, "function", None)
        if function is not None:
            recorded[function].add(f"{model.service_model.signing_name}:{model.name}")

    runtime = cloud.lambdas
    original = runtime.invoke

    def invoke(function: Any, event: Any) -> Any:
        outer = getattr(current, "function", None)
        current.function = function if isinstance(function, str) else function.logical_id
        try:
            return original(function, event)
        finally:
            current.function = outer

    events.register("before-call", on_call, unique_id="iam-create-pipeline")
    runtime.invoke = invoke
    try:
        yield recorded
    finally:
        runtime.invoke = original
        events.unregister("before-call", unique_id="iam-create-pipeline")


def test_the_pipelines_calls_are_allowed_by_its_functions_policies(
    cloud: Any, api: ApiClient, calls_by_function: dict[str, set[str]]
) -> None:
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )
    # S3 storage, with the EKS and HyperPod clusters ending failed first: the retry's
    # replacement path runs too.
    cloud.emulation.eks.fail_next_cluster("hypd-iam", "injected")
    failed = follow(api, cloud, api.post("/clusters", demo_request(api, "iam", BUCKET))
                    ["operationId"], timeout=240)
    assert failed["status"] == "FAILED"
    cloud.emulation.hyperpod.fail_next_create("hypd-iam", "injected")
    api.post(f"/operations/{failed['id']}/retry")
    failed_again = follow(api, cloud, failed["id"], timeout=240)
    assert failed_again["status"] == "FAILED"
    api.post(f"/operations/{failed['id']}/retry")
    assert follow(api, cloud, failed["id"], timeout=240)["status"] == "SUCCEEDED"
    # FSx storage.
    body = demo_request(api, "iamfsx", BUCKET)
    body["storage"] = {"fsx": {"storageCapacityGiB": 1200}}
    fsx = follow(api, cloud, api.post("/clusters", body)["operationId"], timeout=240)
    assert fsx["status"] == "SUCCEEDED", fsx.get("error")

    for function in FUNCTIONS:
        allowed = policy_actions(function)
        calls = {ACTION_OF_CALL.get(c, c) for c in calls_by_function[function]}
        assert calls, f"{function} made no AWS call"
        denied = sorted(
            call
            for call in calls - NEEDS_NO_PERMISSION
            if not any(fnmatchcase(call, pattern) for pattern in allowed)
        )
        assert denied == [], f"{function}'s policy does not allow {denied}"
