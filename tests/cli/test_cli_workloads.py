"""``hypd jobs`` and ``hypd endpoints``: end to end against the local cloud (each run checked to
call only its own REST operation, see conftest.py), then the request bodies and usage errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from hypd_cli.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from hypd_cli.endpoints import endpoint_body
from hypd_cli.jobs import job_body
from hypd_cli.main import build_parser
from tests.cli.conftest import RunCli
from tests.cli.test_cli_local_cloud import FAST, header, row
from tests.e2e.capacity import created_cluster, run
from tests.e2e.test_workloads import in_phase, wait_job

TLS_BUCKET = "hyperpod-tls-cli"


def test_jobs_and_endpoints_on_the_local_cloud(run_cli: RunCli, cloud: Any,
                                               api: ApiClient) -> None:
    tag = "work"
    url = cloud.api_url
    created_cluster(api, cloud, tag=tag)
    submit = ("jobs", "submit", tag, "train", "--image", "repo/train:1", "--instance-type",
              "ml.g6.4xlarge", "--nodes", "2", "--command", "bash -c 'sleep 3600'",
              "--env", "EPOCHS=3", "--volume", "hypd-shared:/shared", "--max-retries", "1")

    # The training operator is off: the API's 409 and the command that turns it on.
    off = run_cli(*submit, endpoint=url)
    assert off.code == EXIT_FAILED
    assert "(FeatureNotEnabled) when calling the submitTrainingJob operation (HTTP 409)" in (
        off.err)
    assert (f"Turn training operator on first: hypd features set {tag} --enable "
            f"trainingOperator --wait --endpoint {url}") in off.err

    cloud.client("s3").create_bucket(
        Bucket=TLS_BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
    on = run(api, cloud, api.set_features(tag, {
        "trainingOperator": {"enabled": True},
        "inferenceOperator": {"enabled": True, "tlsCertificateBucket": TLS_BUCKET}}))
    assert on["status"] == "SUCCEEDED", on.get("error")

    # A refused check names the field; nothing is started.
    wrong = run_cli(*submit[:7], "ml.p5.48xlarge", endpoint=url)
    assert wrong.code == EXIT_FAILED
    assert "instanceType" in wrong.err

    submitted = run_cli(*submit, "--wait", *FAST, endpoint=url)
    assert submitted.code == EXIT_OK, submitted.text
    assert submitted.calls[0] == "submitTrainingJob"
    assert f"Submitting training job train to cluster {tag}: operation op-" in submitted.out
    assert f"(submit-training-job, cluster {tag}): SUCCEEDED" in submitted.out

    # The operator starts the pods on its next tick: follow the job to Running first.
    wait_job(api, cloud, "train", in_phase("Running"), tag=tag)
    listed = run_cli("jobs", "list", tag, endpoint=url)
    assert listed.code == EXIT_OK, listed.text
    assert header(listed.out) == ["NAME", "NAMESPACE", "PHASE", "TYPE", "NODES", "RESTARTS",
                                  "QUEUE", "CREATED"]
    assert row(listed.out, "train")[1:6] == ["default", "Running", "ml.g6.4xlarge", "2", "0"]

    got = run_cli("jobs", "get", tag, "train", endpoint=url)
    assert got.code == EXIT_OK, got.text
    assert "Phase:          Running" in got.out
    assert "Restarts:       0 (at most 1)" in got.out
    assert "train-pod-0" in got.out
    assert "train-pod-1" in got.out
    assert "Nodes it ran on:" in got.out

    logs = run_cli("jobs", "logs", tag, "train", "--tail", "1", endpoint=url)
    assert logs.code == EXIT_OK, logs.text
    assert len(logs.out.splitlines()) == 1
    as_json = run_cli("jobs", "logs", tag, "train", "--pod", "train-pod-1", "-o", "json",
                      endpoint=url)
    assert json.loads(as_json.out)["pod"] == "train-pod-1"

    deleted = run_cli("jobs", "delete", tag, "train", "--wait", *FAST, endpoint=url)
    assert deleted.code == EXIT_OK, deleted.text
    assert f"(delete-training-job, cluster {tag}): SUCCEEDED" in deleted.out
    assert "has no training job" in run_cli("jobs", "list", tag, endpoint=url).out

    deployed = run_cli("endpoints", "deploy", tag, "falcon", "--instance-type",
                       "ml.g6.4xlarge", "--jumpstart", "huggingface-llm-falcon-7b-bf16",
                       "--accept-eula", "--sagemaker-endpoint", "falcon", "--wait", *FAST,
                       endpoint=url)
    assert deployed.code == EXIT_OK, deployed.text
    assert f"(deploy-endpoint, cluster {tag}): SUCCEEDED" in deployed.out
    endpoints = run_cli("endpoints", "list", tag, endpoint=url)
    assert row(endpoints.out, "falcon")[1:6] == ["default", "jumpstart", "DeploymentComplete",
                                                 "1/1", "ml.g6.4xlarge"]
    described = run_cli("endpoints", "get", tag, "falcon", endpoint=url)
    assert "SageMaker endpoint:  falcon (CreationCompleted)" in described.out
    assert f"Invoke it: hypd endpoints invoke {tag} falcon" in described.out

    invoked = run_cli("endpoints", "invoke", tag, "falcon", "--body",
                      '{"inputs": "What is HyperPod?"}', endpoint=url)
    assert invoked.code == EXIT_OK, invoked.text
    assert json.loads(invoked.out)["input"] == {"inputs": "What is HyperPod?"}

    gone = run_cli("endpoints", "delete", tag, "falcon", "--wait", *FAST, endpoint=url)
    assert gone.code == EXIT_OK, gone.text
    assert "has no inference endpoint" in run_cli("endpoints", "list", tag, endpoint=url).out


def parsed(*argv: str) -> Any:
    return build_parser().parse_args(list(argv))


def test_job_flags_make_the_body() -> None:
    args = parsed("jobs", "submit", "demo", "train", "--image", "img", "--instance-type",
                  "ml.g5.8xlarge", "--nodes", "2", "--command", "hyperpodrun --nnodes=2 'a b.py'",
                  "--arg=--epochs=3", "--env", "A=1", "--env", "B=x=y", "--volume",
                  "hypd-shared:/shared", "--volume", "data:/data:ro", "--processes-per-node",
                  "8", "--max-retries", "3", "--team", "ml", "--priority", "training")
    assert job_body(args) == {
        "name": "train", "image": "img", "instanceType": "ml.g5.8xlarge", "nodeCount": 2,
        "maxRetries": 3, "team": "ml", "priority": "training",
        "command": ["hyperpodrun", "--nnodes=2", "a b.py"], "args": ["--epochs=3"],
        "env": {"A": "1", "B": "x=y"},
        "volumes": [{"claim": "hypd-shared", "mountPath": "/shared"},
                    {"claim": "data", "mountPath": "/data", "readOnly": True}],
        "processesPerNode": 8,
    }
    assert job_body(parsed("jobs", "submit", "demo", "t", "--processes-per-node", "gpu"))[
        "processesPerNode"] == "gpu"


def test_endpoint_flags_make_the_body() -> None:
    jumpstart = parsed("endpoints", "deploy", "demo", "ep", "--instance-type", "ml.g5.8xlarge",
                       "--jumpstart", "meta-textgeneration-llama-3-1-8b", "--model-version",
                       "2.0.4", "--accept-eula", "--sagemaker-endpoint", "ep")
    assert endpoint_body(jumpstart) == {
        "name": "ep", "instanceType": "ml.g5.8xlarge", "sageMakerEndpointName": "ep",
        "jumpStart": {"modelId": "meta-textgeneration-llama-3-1-8b", "acceptEula": True,
                      "modelVersion": "2.0.4"}}
    custom = parsed("endpoints", "deploy", "demo", "m", "--instance-type", "ml.g5.8xlarge",
                    "--replicas", "2", "--image", "djl:1", "--port", "8080", "--s3",
                    "s3://models/llama/", "--resource", "nvidia.com/gpu=1", "--env", "X=1")
    assert endpoint_body(custom) == {
        "name": "m", "instanceType": "ml.g5.8xlarge", "replicas": 2,
        "model": {"source": {"s3": {"bucket": "models", "prefix": "llama/"}},
                  "image": "djl:1", "port": 8080,
                  "resources": {"requests": {"nvidia.com/gpu": "1"},
                                "limits": {"nvidia.com/gpu": "1"}},
                  "env": {"X": "1"}}}
    fsx = parsed("endpoints", "deploy", "demo", "m", "--image", "i", "--port", "1", "--fsx",
                 "fs-0123456789abcdef0:/models")
    assert endpoint_body(fsx)["model"]["source"] == {
        "fsx": {"fileSystemId": "fs-0123456789abcdef0", "path": "/models"}}


@pytest.mark.parametrize(("argv", "message"), [
    (("--jumpstart", "m", "--image", "i"), "drop --image"),
    (("--image", "i", "--port", "1"), "--s3 BUCKET[/PREFIX] or --fsx"),
    (("--image", "i", "--s3", "b", "--fsx", "fs-1"), "one of --s3 and --fsx"),
    ((), "give --jumpstart MODEL_ID"),
    (("--image", "i", "--s3", "b", "--accept-eula"), "are for --jumpstart"),
])
def test_endpoint_usage_errors(run_cli: RunCli, argv: tuple[str, ...], message: str) -> None:
    result = run_cli("endpoints", "deploy", "demo", "ep", *argv,
                     endpoint="http://127.0.0.1:9")
    assert result.code == EXIT_USAGE
    assert message in result.err
    assert result.calls == []


def test_bad_volume_and_env_flags_are_usage_errors(run_cli: RunCli) -> None:
    for flag, value in (("--volume", "no-path"), ("--volume", "c:/p:rx"), ("--env", "=x")):
        result = run_cli("jobs", "submit", "demo", "j", flag, value,
                         endpoint="http://127.0.0.1:9")
        assert result.code == EXIT_USAGE, (flag, value)
        assert result.calls == []
