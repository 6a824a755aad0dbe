"""``hypd local kubeconfig TAG`` on the local cloud, then the real kubectl with what it wrote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from hypd_local.seed import seed_clusters
from tests.cli.conftest import RunCli
from tests.cli.test_cli_local_cloud import FAST
from tests.kubectl import Kubectl

MOTO_USER = "arn:aws:iam::123456789012:user/moto"


@pytest.fixture
def discovered(run_cli: RunCli, cloud: Any) -> str:
    """The seeded clusters, recorded by discovery (so they have tags); the REST API's URL."""
    seed_clusters(cloud)
    url = str(cloud.api_url)
    done = run_cli("clusters", "discover", "--wait", *FAST, endpoint=url)
    assert done.code == 0, done.text
    return url


def test_a_static_token_kubeconfig_for_a_seeded_cluster(
    run_cli: RunCli, cloud: Any, discovered: str, tmp_path: Path
) -> None:
    eks = cloud.client("eks")
    # without an access entry for the local credentials, the command makes one
    eks.delete_access_entry(clusterName="training-eks", principalArn=MOTO_USER)
    path = tmp_path / "kubeconfig"
    made = run_cli("local", "kubeconfig", "training", "--output", str(path), endpoint=discovered)
    assert made.code == 0, made.text
    assert (f"Created an access entry for {MOTO_USER} on training-eks with "
            "AmazonEKSClusterAdminPolicy.") in made.err
    assert "The token is valid for 15 minutes" in made.err
    assert path.stat().st_mode & 0o777 == 0o600
    config = json.loads(path.read_text())
    cluster = eks.describe_cluster(name="training-eks")["cluster"]
    assert config["current-context"] == cluster["arn"]
    assert config["clusters"][0]["cluster"] == {
        "server": cluster["endpoint"],
        "certificate-authority-data": cluster["certificateAuthority"]["data"]}
    assert config["users"][0]["user"]["token"].startswith("k8s-aws-v1.")

    kubectl = Kubectl(path, tmp_path / "home")
    server = json.loads(kubectl.run("version", "-o", "json"))["serverVersion"]
    assert f"{server['major']}.{server['minor']}" == cluster["version"]
    nodes = kubectl.run("get", "nodes").strip().splitlines()
    assert len(nodes) == 4  # the header and the three joined HyperPod nodes
    assert all(" Ready " in line for line in nodes[1:])
    # a node turning unhealthy is seen by a watch
    first = nodes[1].split()[0]
    with kubectl.watch("get", "nodes", "--watch") as watch:
        watch.wait_for(lambda line: line.startswith(first))
        cloud.emulation.hyperpod.make_node_unhealthy("training", first.removeprefix("hyperpod-"),
                                                     action="Reboot", repair=False)
        cloud.emulation.tick(wait=True)
        watch.wait_for(lambda line: line.startswith(first) and "NotReady" in line)

    # to stdout, and the entry is there now: nothing to create
    again = run_cli("local", "kubeconfig", "training", endpoint=discovered)
    assert again.code == 0, again.text
    assert "Created an access entry" not in again.err
    assert json.loads(again.out)["clusters"] == config["clusters"]


def test_the_exec_form_runs_aws_eks_get_token_against_the_local_sts(
    run_cli: RunCli, cloud: Any, discovered: str, tmp_path: Path
) -> None:
    path = tmp_path / "kubeconfig"
    made = run_cli("local", "kubeconfig", "inference", "--exec", "--output", str(path),
                   endpoint=discovered)
    assert made.code == 0, made.text
    user = json.loads(path.read_text())["users"][0]["user"]["exec"]
    assert user["command"] == "aws"
    assert user["args"] == ["--region", cloud.region, "eks", "get-token", "--cluster-name",
                            "inference-eks", "--output", "json"]
    env = {e["name"]: e["value"] for e in user["env"]}
    assert env["AWS_ENDPOINT_URL_STS"] == cloud.aws_endpoint
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"} <= set(env)
    if shutil.which("aws") is None:
        pytest.skip("no aws CLI on PATH: the exec plugin itself is not run")
    kubectl = Kubectl(path, tmp_path / "home")
    assert "kube-system" in kubectl.run("get", "namespaces")


def test_what_the_command_refuses(run_cli: RunCli, discovered: str) -> None:
    unknown = run_cli("local", "kubeconfig", "nope", endpoint=discovered)
    assert unknown.code == 1
    assert "cluster nope does not exist" in unknown.err
    remote = run_cli("local", "kubeconfig", "training",
                     endpoint="https://abc.execute-api.us-west-2.amazonaws.com/v1")
    assert remote.code == 2
    assert "the local cloud's REST API" in remote.err
