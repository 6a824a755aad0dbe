"""Every AWS call the create pipeline's functions make is allowed by their roles' policies.

The pipeline runs on the local cloud (S3 and FSx storage, and a retry that replaces failed EKS
and HyperPod clusters) in a fresh account (no service-linked role yet), each function as its
own role, every call authorised as IAM would (resource types, conditions, PassRole): the path
succeeds, every function made its calls as its role, and IAM denied nothing.
"""

from __future__ import annotations

from typing import Any

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import demo_request, follow
from tests.e2e.iam_calls import Calls, assert_allowed, calls_by_function

__all__ = ["calls_by_function"]  # the fixture

FUNCTIONS = ("ClusterTasksFunction", "ClusterEventsFunction")
BUCKET = "hypd-iam-data"


def test_the_pipelines_calls_are_allowed_by_its_functions_policies(
    cloud: Any, api: ApiClient, calls_by_function: Calls
) -> None:
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )
    # S3 storage, with the EKS and HyperPod clusters ending failed first: the retry's
    # replacement path runs too; and EKS refuses the stack's second zone, so the control-plane
    # subnets move (GetTemplate, UpdateStack).
    cloud.emulation.eks.set_unsupported_zones(["us-west-2b"])
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

    assert_allowed(calls_by_function, FUNCTIONS)
