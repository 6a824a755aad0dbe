"""A workloads conversation of an agent, as MCP tool calls only, against the local cloud: a real
MCP client session over stdio with ``hypd mcp serve --allow-write``. Look first (groups,
features), get each refusal as a tool error naming the field with nothing submitted, then submit
a job, poll it, follow the job and read its logs; deploy an endpoint, invoke it and delete it
(each delete confirmed by the workload's name)."""

from __future__ import annotations

from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from tests.e2e.capacity import created_cluster, run
from tests.e2e.test_workloads import in_phase, wait_job
from tests.mcp.conftest import call, call_error, mcp_session
from tests.mcp.test_create_conversation import poll

pytestmark = pytest.mark.anyio

TAG = "agents"
TLS_BUCKET = "hyperpod-tls-agents"
JOB = {"name": "train", "image": "repo/train:1", "instanceType": "ml.g6.4xlarge",
       "nodeCount": 2, "command": ["bash", "-c", "sleep 600"],
       "volumes": [{"claim": "hypd-shared", "mountPath": "/shared"}]}


async def test_a_job_and_an_endpoint_run_on_tools_alone(cloud: Any, api: ApiClient) -> None:
    created_cluster(api, cloud, tag=TAG)

    async with mcp_session(cloud.api_url, allow_write=True) as session:
        # Look first: the groups' types and counts, and the training operator is off.
        groups = await call(session, "instance_group_list", tag=TAG)
        assert [(g["instanceType"], g["count"]) for g in groups["instanceGroups"]] == [
            ("ml.g6.4xlarge", 2)]
        off = await call_error(session, "training_job_submit", tag=TAG, **JOB)
        assert (off["status"], off["code"], off["details"]["feature"]) == (
            409, "FeatureNotEnabled", "trainingOperator")

        cloud.client("s3").create_bucket(
            Bucket=TLS_BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
        accepted = await call(session, "features_set", tag=TAG,
                              trainingOperator={"enabled": True},
                              inferenceOperator={"enabled": True,
                                                 "tlsCertificateBucket": TLS_BUCKET})
        done, _ = await poll(session, accepted["operationId"])
        assert done["status"] == "SUCCEEDED", done.get("error")

        # Each refusal names the field, and nothing is submitted.
        for fields, status, field in (({"nodeCount": 3}, 400, "nodeCount"),
                                      ({"instanceType": "ml.g5.8xlarge"}, 400, "instanceType"),
                                      ({"volumes": [{"claim": "absent", "mountPath": "/d"}]},
                                       400, "volumes[0].claim")):
            error = await call_error(session, "training_job_submit", tag=TAG,
                                     **{**JOB, **fields})
            assert error["status"] == status, error
            assert field in error["message"], error
        assert (await call(session, "training_job_list", tag=TAG))["jobs"] == []

        # Submit, poll the operation, then follow the job and read its logs.
        started = await call(session, "training_job_submit", tag=TAG, **JOB)
        submitted, _ = await poll(session, started["operationId"])
        assert submitted["status"] == "SUCCEEDED", submitted.get("error")
        # The operator starts the pods on its next tick: follow the job to Running.
        wait_job(api, cloud, "train", in_phase("Running"), tag=TAG)
        job = await call(session, "training_job_get", tag=TAG, name="train")
        assert job["phase"] == "Running"
        assert len(job["pods"]) == 2
        logs = await call(session, "training_job_logs", tag=TAG, name="train", tail=2)
        assert logs["pod"] == "train-pod-0"
        assert len(logs["logs"].splitlines()) <= 2

        deleting = await call(session, "training_job_delete", tag=TAG, name="train",
                              confirm="train")
        deleted, _ = await poll(session, deleting["operationId"])
        assert deleted["status"] == "SUCCEEDED", deleted.get("error")

        # An endpoint: deployed (the operation waits to ready), invoked, deleted.
        deploying = await call(session, "endpoint_deploy", tag=TAG, name="falcon",
                               instanceType="ml.g6.4xlarge", sageMakerEndpointName="falcon",
                               jumpStart={"modelId": "huggingface-llm-falcon-7b-bf16",
                                          "acceptEula": True})
        deployed = run(api, cloud, deploying)  # minutes of virtual time: follow it here
        assert deployed["status"] == "SUCCEEDED", deployed.get("error")
        endpoint = await call(session, "endpoint_get", tag=TAG, name="falcon")
        assert endpoint["ready"] is True
        assert endpoint["invoke"]
        answer = await call(session, "endpoint_invoke", tag=TAG, name="falcon",
                            body={"inputs": "hello"}, namespace="default")
        assert answer["body"]["input"] == {"inputs": "hello"}
        wrong = await call_error(session, "endpoint_delete", tag=TAG, name="falcon",
                                 confirm="train")
        assert (wrong["code"], wrong["details"]) == ("ConfirmationRequired", {"confirm": "falcon"})
        assert (await call(session, "endpoint_get", tag=TAG, name="falcon"))["ready"] is True
        removing = await call(session, "endpoint_delete", tag=TAG, name="falcon",
                              confirm="falcon")
        removed, _ = await poll(session, removing["operationId"])
        assert removed["status"] == "SUCCEEDED", removed.get("error")
        assert (await call(session, "endpoint_list", tag=TAG))["endpoints"] == []
