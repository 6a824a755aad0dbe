"""The EKS and HyperPod emulators wired into a running local cloud, end to end.

Everything goes through what a user has: plain boto3 clients on the local cloud's AWS endpoint,
the official kubernetes client on the endpoint DescribeCluster returns, EventBridge targets of
a template and the ``/_local/`` HTTP routes. Time is virtual: tests advance ``cloud.clock`` and
wait for background work with ``cloud.wait_for_executions()``; nothing sleeps.

Two clouds, one at a time (a class each): the project's template.yaml, and
``fixtures/emulation.yaml`` whose EventBridge rules send the emulators' events to a Lambda
function and a state machine.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hypd_local import LocalCloud
from tests.local_cloud.conftest import FIXTURES, REAL_TEMPLATE
from tests.support import service_role

EMULATION_TEMPLATE = FIXTURES / "emulation.yaml"
CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
HEALTH = "sagemaker.amazonaws.com/node-health-status"
GROUP = "sagemaker.amazonaws.com/instance-group-name"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"

_ids = itertools.count(1)
_cidrs = itertools.count(1)


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_ids)}"


# --------------------------------------------------------------------------- clouds

@pytest.fixture(scope="class")
def real_cloud() -> Iterator[LocalCloud]:
    """The project's template.yaml on a local cloud (shared by one class's tests)."""
    with LocalCloud(REAL_TEMPLATE) as running:
        yield running
        running.wait_for_executions(timeout=30)


@pytest.fixture(scope="class")
def events_cloud() -> Iterator[LocalCloud]:
    """fixtures/emulation.yaml: rules on the emulators' events -> a function, a state machine."""
    with LocalCloud(EMULATION_TEMPLATE) as running:
        yield running
        running.wait_for_executions(timeout=30)


# --------------------------------------------------------------------------- helpers

class Network:
    def __init__(self, vpc_id: str, subnets: list[str], security_group: str) -> None:
        self.vpc_id = vpc_id
        self.subnets = subnets
        self.security_group = security_group


def make_network(cloud: LocalCloud, zones: tuple[str, ...] = ("us-west-2a", "us-west-2b")
                 ) -> Network:
    """A VPC with one subnet per zone (in moto's EC2) and a security group."""
    ec2 = cloud.client("ec2")
    block = next(_cidrs) % 250
    vpc = ec2.create_vpc(CidrBlock=f"10.{block}.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.{block}.{i}.0/24",
                          AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for i, zone in enumerate(zones)
    ]
    group = ec2.create_security_group(GroupName=unique("sg"), Description="test",
                                      VpcId=vpc)["GroupId"]
    return Network(vpc, subnets, group)


def role(cloud: LocalCloud, service: str) -> str:
    return service_role(cloud, unique("role"), service)


def create_eks(cloud: LocalCloud, name: str, network: Network) -> dict[str, Any]:
    cluster: dict[str, Any] = cloud.client("eks").create_cluster(
        name=name,
        roleArn=role(cloud, "eks.amazonaws.com"),
        resourcesVpcConfig={"subnetIds": network.subnets,
                            "securityGroupIds": [network.security_group]},
        accessConfig={"authenticationMode": "API"},
    )["cluster"]
    return cluster


def active_eks(cloud: LocalCloud, name: str) -> tuple[dict[str, Any], Network]:
    """An EKS cluster made ACTIVE by letting 12 virtual minutes pass."""
    network = make_network(cloud)
    create_eks(cloud, name, network)
    cloud.clock.advance(12 * 60)
    cluster: dict[str, Any] = cloud.client("eks").describe_cluster(name=name)["cluster"]
    assert cluster["status"] == "ACTIVE"
    return cluster, network


def group_spec(cloud: LocalCloud, name: str, instance_type: str, count: int) -> dict[str, Any]:
    return {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "InstanceCount": count,
        "ExecutionRole": role(cloud, "sagemaker.amazonaws.com"),
        "ThreadsPerCore": 1,
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lifecycle/scripts/",
                            "OnCreate": "on_create.sh"},
    }


def create_hyperpod(cloud: LocalCloud, name: str, eks_arn: str, network: Network,
                    groups: list[dict[str, Any]], **extra: Any) -> str:
    arn: str = cloud.client("sagemaker").create_cluster(
        ClusterName=name,
        Orchestrator={"Eks": {"ClusterArn": eks_arn}},
        InstanceGroups=groups,
        VpcConfig={"SecurityGroupIds": [network.security_group],
                   "Subnets": network.subnets[:1]},
        **extra,
    )["ClusterArn"]
    return arn


def hyperpod_status(cloud: LocalCloud, name: str) -> str:
    return str(cloud.client("sagemaker").describe_cluster(ClusterName=name)["ClusterStatus"])


def nodes(cloud: LocalCloud, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = cloud.client("sagemaker").list_cluster_nodes(
        ClusterName=name)["ClusterNodeSummaries"]
    return found


def eks_token(session: boto3.session.Session, cluster_name: str, region: str) -> str:
    """An EKS bearer token the way ``aws eks get-token`` builds one: a presigned STS
    GetCallerIdentity URL (GET) signing ``x-k8s-aws-id: <cluster>``, for the regional STS host
    (AWS_ENDPOINT_URL would otherwise point it at the local moto server)."""
    sts = session.client("sts", region_name=region,
                         endpoint_url=f"https://sts.{region}.amazonaws.com")

    def take_cluster(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["eks_cluster"] = params.pop("ClusterName")

    def add_header(request: Any, **_: Any) -> None:
        request.headers["x-k8s-aws-id"] = request.context["eks_cluster"]

    sts.meta.events.register("provide-client-params.sts.GetCallerIdentity", take_cluster)
    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_header)
    url = sts.generate_presigned_url("get_caller_identity",
                                     Params={"ClusterName": cluster_name},
                                     ExpiresIn=60, HttpMethod="GET")
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def api_client(cluster: dict[str, Any], token: str, directory: Path) -> k8s.ApiClient:
    """The official client on the cluster's endpoint, trusting certificateAuthority.data."""
    ca = directory / f"{cluster['name']}-ca.crt"
    ca.write_bytes(base64.b64decode(cluster["certificateAuthority"]["data"]))
    configuration = k8s.Configuration()
    configuration.host = cluster["endpoint"]
    configuration.ssl_ca_cert = str(ca)
    configuration.api_key = {"authorization": f"Bearer {token}"}
    return k8s.ApiClient(configuration)


def kube(cluster: dict[str, Any], token: str, directory: Path) -> k8s.CoreV1Api:
    """The core API of the official client on the cluster's endpoint (see `api_client`)."""
    return k8s.CoreV1Api(api_client(cluster, token, directory))


def assumed_role(cloud: LocalCloud) -> tuple[str, boto3.session.Session]:
    """A role in moto's IAM and a session that assumed it through moto's STS."""
    arn = cloud.client("iam").create_role(
        RoleName=unique("operator"), AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    creds = cloud.client("sts").assume_role(RoleArn=arn,
                                            RoleSessionName="test")["Credentials"]
    session = boto3.session.Session(
        aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"], region_name=cloud.region)
    return str(arn), session


def hyperpod_nodes(api: k8s.CoreV1Api) -> dict[str, dict[str, str]]:
    """The Kubernetes Nodes of HyperPod instances: name -> labels."""
    found: dict[str, dict[str, str]] = {}
    for node in api.list_node().items:
        assert node.metadata is not None
        name = str(node.metadata.name)
        if name.startswith("hyperpod-"):
            found[name] = dict(node.metadata.labels or {})
    return found


def namespaces(api: k8s.CoreV1Api) -> set[str]:
    names: set[str] = set()
    for namespace in api.list_namespace().items:
        assert namespace.metadata is not None
        names.add(str(namespace.metadata.name))
    return names


def error_code(info: pytest.ExceptionInfo[ClientError]) -> str:
    return str(info.value.response["Error"]["Code"])


def strict_client(cloud: LocalCloud, service: str) -> Any:
    """No client-side validation, no retries: what the server says reaches the test."""
    return cloud.boto3_session().client(
        service, endpoint_url=cloud.aws_endpoint,
        config=Config(parameter_validation=False, retries={"total_max_attempts": 1}))


# --------------------------------------------------------------------------- the real template

@pytest.mark.usefixtures("real_cloud")
class TestOnTheProjectTemplate:
    def test_eks_cluster_goes_active_and_serves_kubernetes_to_access_entries(
        self, real_cloud: LocalCloud, tmp_path: Path
    ) -> None:
        cloud = real_cloud
        eks = cloud.client("eks")
        name = unique("eks")
        network = make_network(cloud)

        created = create_eks(cloud, name, network)
        assert created["status"] == "CREATING"
        described = eks.describe_cluster(name=name)["cluster"]
        assert described["status"] == "CREATING"
        assert not described.get("endpoint")

        cloud.clock.advance(12 * 60)
        cluster = eks.describe_cluster(name=name)["cluster"]
        assert cluster["status"] == "ACTIVE"
        assert cluster["endpoint"].startswith("https://127.0.0.1:")
        assert cluster["certificateAuthority"]["data"]
        assert cluster["accessConfig"]["authenticationMode"] == "API"

        # The creator (moto's default identity) got a cluster-admin access entry.
        creator = kube(cluster, eks_token(cloud.boto3_session(), name, cloud.region), tmp_path)
        assert "default" in namespaces(creator)

        # Another principal, with no access entry: 401.
        principal, session = assumed_role(cloud)
        operator = kube(cluster, eks_token(session, name, cloud.region), tmp_path)
        with pytest.raises(ApiException) as denied:
            operator.list_namespace()
        assert denied.value.status == 401

        eks.create_access_entry(clusterName=name, principalArn=principal)
        eks.associate_access_policy(clusterName=name, principalArn=principal,
                                    policyArn=CLUSTER_ADMIN, accessScope={"type": "cluster"})
        # A new token: the server caches what it decided about one for a while.
        operator = kube(cluster, eks_token(session, name, cloud.region), tmp_path)
        assert "kube-system" in namespaces(operator)

    def test_hyperpod_cluster_comes_up_and_its_nodes_join_kubernetes(
        self, real_cloud: LocalCloud, tmp_path: Path
    ) -> None:
        cloud = real_cloud
        sagemaker = cloud.client("sagemaker")
        eks_name = unique("eks")
        cluster, network = active_eks(cloud, eks_name)
        name = unique("hp")
        create_hyperpod(cloud, name, cluster["arn"], network,
                        [group_spec(cloud, "workers", "ml.g5.8xlarge", 2)])
        assert hyperpod_status(cloud, name) == "Creating"
        def api() -> k8s.CoreV1Api:  # a fresh token each time, as `aws eks get-token` makes
            return kube(cluster, eks_token(cloud.boto3_session(), eks_name, cloud.region),
                        tmp_path)

        assert hyperpod_nodes(api()) == {}  # nodes still Pending

        cloud.clock.advance(20 * 60)
        assert hyperpod_status(cloud, name) == "InService"
        summaries = nodes(cloud, name)
        assert len(summaries) == 2
        assert {n["InstanceStatus"]["Status"] for n in summaries} == {"Running"}
        assert all(n["InstanceId"].startswith("i-") for n in summaries)

        joined = hyperpod_nodes(api())
        assert set(joined) == {f"hyperpod-{n['InstanceId']}" for n in summaries}
        for labels in joined.values():
            assert labels[INSTANCE_TYPE] == "ml.g5.8xlarge"
            assert labels[GROUP] == "workers"
            assert labels[HEALTH] == "Schedulable"
        selected = api().list_node(label_selector=f"{GROUP}=workers").items
        assert len(selected) == 2
        # time passing with nothing new about the nodes writes nothing to them
        def versions() -> dict[str, str]:
            return {str(n.metadata.name): str(n.metadata.resource_version)
                    for n in api().list_node(label_selector=f"{GROUP}=workers").items
                    if n.metadata is not None}

        before = versions()
        cloud.clock.advance(5 * 60)
        cloud.clock.advance(5 * 60)
        assert versions() == before

        sick = summaries[0]["InstanceId"]
        assert cloud.emulation is not None
        cloud.emulation.hyperpod.make_node_unhealthy(name, sick, "GPU health check failed",
                                                     "Reboot")
        cloud.clock.advance(1)  # a tick
        labels = hyperpod_nodes(api())[f"hyperpod-{sick}"]
        assert labels[HEALTH] == "Unschedulable"
        detail = sagemaker.describe_cluster_node(ClusterName=name, NodeId=sick)["NodeDetails"]
        assert detail["InstanceStatus"]["Status"] == "Failure"

        # NodeRecovery Automatic reboots it: Schedulable again once it is back.
        cloud.clock.advance(10 * 60)
        assert hyperpod_nodes(api())[f"hyperpod-{sick}"][HEALTH] == "Schedulable"

    def test_bad_requests_fail_the_way_aws_fails(self, real_cloud: LocalCloud) -> None:
        cloud = real_cloud
        sagemaker = strict_client(cloud, "sagemaker")
        eks = strict_client(cloud, "eks")
        group = group_spec(cloud, "workers", "ml.g5.8xlarge", 1)

        with pytest.raises(ClientError) as bad_name:
            sagemaker.create_cluster(ClusterName="bad_name", InstanceGroups=[group])
        assert error_code(bad_name) == "ValidationException"
        assert "ClusterName" in str(bad_name.value)

        with pytest.raises(ClientError) as bad_count:
            sagemaker.create_cluster(ClusterName=unique("hp"),
                                     InstanceGroups=[{**group, "InstanceCount": -1}])
        assert error_code(bad_count) == "ValidationException"
        assert "InstanceCount" in str(bad_count.value)

        network = make_network(cloud)
        with pytest.raises(ClientError) as no_role:
            eks.create_cluster(name=unique("eks"),
                               resourcesVpcConfig={"subnetIds": network.subnets})
        assert error_code(no_role) == "InvalidParameterException"
        assert "roleArn" in str(no_role.value)
        assert no_role.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400

    def test_faults_injected_in_python_and_over_http(self, real_cloud: LocalCloud) -> None:
        cloud = real_cloud
        sagemaker = strict_client(cloud, "sagemaker")
        eks_name = unique("eks")
        cluster, network = active_eks(cloud, eks_name)
        name = unique("hp")
        create_hyperpod(cloud, name, cluster["arn"], network,
                        [group_spec(cloud, "workers", "ml.c5.2xlarge", 1)])

        cloud.faults.fail("sagemaker", "DescribeCluster", code="ThrottlingException", times=2)
        for _ in range(2):
            with pytest.raises(ClientError) as throttled:
                sagemaker.describe_cluster(ClusterName=name)
            assert error_code(throttled) == "ThrottlingException"
        assert sagemaker.describe_cluster(ClusterName=name)["ClusterName"] == name

        faults = f"{cloud.local_url}/_local/faults"
        added = requests.post(faults, json={"service": "eks", "operation": "DescribeCluster",
                                            "code": "ThrottlingException", "times": 1},
                              timeout=10)
        assert added.status_code == 201
        listed = requests.get(faults, timeout=10).json()["faults"]
        assert [(f["service"], f["operation"], f["times"]) for f in listed] == [
            ("eks", "DescribeCluster", 1)]
        eks = strict_client(cloud, "eks")
        with pytest.raises(ClientError) as throttled:
            eks.describe_cluster(name=eks_name)
        assert error_code(throttled) == "ThrottlingException"
        assert throttled.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429
        assert eks.describe_cluster(name=eks_name)["cluster"]["status"] == "ACTIVE"

        requests.post(faults, json={"service": "sagemaker", "operation": "*",
                                    "code": "InternalFailure", "times": None}, timeout=10)
        with pytest.raises(ClientError) as failing:
            sagemaker.list_clusters()
        assert error_code(failing) == "InternalFailure"
        assert requests.delete(faults, timeout=10).json() == {"cleared": 1}
        assert requests.get(faults, timeout=10).json() == {"faults": []}
        sagemaker.list_clusters()

        bad = requests.post(faults, json={"service": "eks", "operation": "DescribeCluster",
                                          "times": 0}, timeout=10)
        assert bad.status_code == 400

    def test_info_and_clock_routes(self, real_cloud: LocalCloud) -> None:
        cloud = real_cloud
        info = requests.get(f"{cloud.local_url}/_local/info", timeout=10)
        assert info.status_code == 200
        body = info.json()
        assert body["region"] == cloud.region
        # awsEndpoint is what AWS_ENDPOINT_URL is set to: plain boto3 works with it.
        plain = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="y",
                                      region_name=body["region"])
        clusters = plain.client("eks", endpoint_url=body["awsEndpoint"]).list_clusters()
        assert "clusters" in clusters

        before = cloud.clock.now()
        now = requests.get(f"{cloud.local_url}/_local/clock", timeout=10).json()["now"]
        assert now >= before.isoformat()[:19]
        moved = requests.post(f"{cloud.local_url}/_local/clock/advance",
                              json={"seconds": 7200}, timeout=10)
        assert moved.status_code == 200
        assert cloud.clock.now() - before >= timedelta(hours=2)
        assert moved.json()["now"] >= (before + timedelta(hours=2)).isoformat()[:19]
        for bad in ({"seconds": -1}, {"seconds": "soon"}, {"seconds": True}, {}, [60]):
            answer = requests.post(f"{cloud.local_url}/_local/clock/advance", json=bad,
                                   timeout=10)
            assert answer.status_code == 400, bad
            assert "seconds" in answer.json()["message"]
        not_json = requests.post(f"{cloud.local_url}/_local/clock/advance", data=b"{",
                                 timeout=10)
        assert not_json.status_code == 400

    def test_emulator_fault_routes(self, real_cloud: LocalCloud) -> None:
        cloud = real_cloud
        base = f"{cloud.local_url}/_local/faults"
        eks = cloud.client("eks")
        sagemaker = cloud.client("sagemaker")

        # eks/create-fails: the next CreateCluster of that name ends FAILED.
        doomed = unique("eks")
        answer = requests.post(f"{base}/eks/create-fails",
                               json={"name": doomed, "message": "no capacity"}, timeout=10)
        assert answer.status_code == 201
        create_eks(cloud, doomed, make_network(cloud))
        cloud.clock.advance(12 * 60)
        assert eks.describe_cluster(name=doomed)["cluster"]["status"] == "FAILED"

        # eks/unsupported-zones: EKS refuses subnets there, naming the zones it accepts
        # (botocore puts the error's validZones at the top of the response).
        answer = requests.post(f"{base}/eks/unsupported-zones", json={"zones": ["us-west-2b"]},
                               timeout=10)
        assert answer.status_code == 201, answer.text
        with pytest.raises(eks.exceptions.UnsupportedAvailabilityZoneException) as refused:
            create_eks(cloud, unique("eks"), make_network(cloud))
        assert refused.value.response["validZones"] == ["us-west-2a", "us-west-2c", "us-west-2d"]
        requests.post(f"{base}/eks/unsupported-zones", json={"zones": []}, timeout=10)

        # eks/create-stalls: the next CreateCluster stays CREATING until released.
        stalled = unique("eks")
        answer = requests.post(f"{base}/eks/create-stalls", json={"name": stalled}, timeout=10)
        assert answer.status_code == 201, answer.text
        create_eks(cloud, stalled, make_network(cloud))
        cloud.clock.advance(3 * 3600)
        assert eks.describe_cluster(name=stalled)["cluster"]["status"] == "CREATING"
        answer = requests.post(f"{base}/eks/create-stalls",
                               json={"name": stalled, "release": True}, timeout=10)
        assert answer.status_code == 201, answer.text
        assert eks.describe_cluster(name=stalled)["cluster"]["status"] == "ACTIVE"

        eks_name = unique("eks")
        cluster, network = active_eks(cloud, eks_name)

        # eks/addon-stalls: the add-on's creation takes the given seconds.
        answer = requests.post(f"{base}/eks/addon-stalls", json={
            "clusterName": eks_name, "addonName": "kube-proxy", "seconds": 7200}, timeout=10)
        assert answer.status_code == 201, answer.text
        eks.create_addon(clusterName=eks_name, addonName="kube-proxy")
        cloud.clock.advance(3600)
        assert eks.describe_addon(clusterName=eks_name,
                                  addonName="kube-proxy")["addon"]["status"] == "CREATING"
        cloud.clock.advance(3600)
        assert eks.describe_addon(clusterName=eks_name,
                                  addonName="kube-proxy")["addon"]["status"] == "ACTIVE"

        # eks/addon-degraded: an ACTIVE add-on turns DEGRADED with the issue.
        eks.create_addon(clusterName=eks_name, addonName="vpc-cni")
        cloud.clock.advance(10 * 60)
        assert eks.describe_addon(clusterName=eks_name,
                                  addonName="vpc-cni")["addon"]["status"] == "ACTIVE"
        answer = requests.post(f"{base}/eks/addon-degraded", json={
            "clusterName": eks_name, "addonName": "vpc-cni", "issueCode": "AccessDenied",
            "message": "the role cannot be assumed"}, timeout=10)
        assert answer.status_code == 201, answer.text
        addon = eks.describe_addon(clusterName=eks_name, addonName="vpc-cni")["addon"]
        assert addon["status"] == "DEGRADED"
        assert [i["code"] for i in addon["health"]["issues"]] == ["AccessDenied"]

        # hyperpod/create-fails: the next CreateCluster ends Failed with the message.
        failing = unique("hp")
        answer = requests.post(f"{base}/hyperpod/create-fails",
                               json={"clusterName": failing, "message": "lifecycle failed"},
                               timeout=10)
        assert answer.status_code == 201
        create_hyperpod(cloud, failing, cluster["arn"], network,
                        [group_spec(cloud, "workers", "ml.c5.2xlarge", 1)])
        cloud.clock.advance(20 * 60)
        failed = sagemaker.describe_cluster(ClusterName=failing)
        assert failed["ClusterStatus"] == "Failed"
        assert failed["FailureMessage"] == "lifecycle failed"

        # hyperpod/insufficient-capacity: a group in that zone cannot get instances.
        answer = requests.post(f"{base}/hyperpod/insufficient-capacity", json={
            "instanceType": "ml.g5.4xlarge", "availabilityZone": "us-west-2a"}, timeout=10)
        assert answer.status_code == 201
        short = unique("hp")
        create_hyperpod(cloud, short, cluster["arn"], network,
                        [group_spec(cloud, "workers", "ml.g5.4xlarge", 1)])
        cloud.clock.advance(20 * 60)
        result = sagemaker.describe_cluster(ClusterName=short)
        assert result["ClusterStatus"] == "Failed"
        assert "InsufficientInstanceCapacity" in result["FailureMessage"]
        requests.post(f"{base}/hyperpod/insufficient-capacity", json={
            "instanceType": "ml.g5.4xlarge", "availabilityZone": "us-west-2a",
            "enabled": False}, timeout=10)

        # hyperpod/node-unhealthy: the node fails now (and its Kubernetes Node says so).
        healthy = unique("hp")
        create_hyperpod(cloud, healthy, cluster["arn"], network,
                        [group_spec(cloud, "workers", "ml.c5.2xlarge", 1)],
                        NodeRecovery="None")
        cloud.clock.advance(20 * 60)
        node_id = nodes(cloud, healthy)[0]["InstanceId"]
        answer = requests.post(f"{base}/hyperpod/node-unhealthy", json={
            "clusterName": healthy, "nodeId": node_id, "reason": "NVLink errors",
            "action": "Replace"}, timeout=10)
        assert answer.status_code == 201, answer.text
        detail = sagemaker.describe_cluster_node(ClusterName=healthy, NodeId=node_id)
        assert detail["NodeDetails"]["InstanceStatus"]["Status"] == "Failure"

        # Bad bodies: 400 naming the field; unknown resources: the AWS error's status.
        bad_bodies: list[tuple[str, Any, str]] = [
            ("hyperpod/node-unhealthy", {"clusterName": healthy}, "nodeId"),
            ("hyperpod/node-unhealthy", {"clusterName": healthy, "nodeId": node_id,
                                         "action": "Explode"}, "action"),
            ("hyperpod/insufficient-capacity", {"instanceType": "ml.g5.4xlarge"},
             "availabilityZone"),
            ("hyperpod/insufficient-capacity", {"instanceType": 5,
                                                "availabilityZone": "us-west-2a"},
             "instanceType"),
            ("hyperpod/create-fails", {"clusterName": ""}, "clusterName"),
            ("hyperpod/create-fails", {"cluster": "x"}, "cluster"),
            ("eks/create-fails", ["x"], "body"),
            ("eks/create-stalls", {"seconds": "long"}, "seconds"),
            ("eks/unsupported-zones", {"zones": [1]}, "zones"),
            ("eks/unsupported-zones", {}, "zones"),
            ("eks/create-stalls", {"release": True}, "name"),
            ("eks/addon-stalls", {"clusterName": eks_name}, "addonName"),
            ("eks/addon-degraded", {"clusterName": eks_name, "addonName": "vpc-cni",
                                    "issueCode": "Melted"}, "issueCode"),
            ("eks/addon-degraded", {"addonName": "vpc-cni"}, "clusterName"),
        ]
        for path, body, field in bad_bodies:
            answer = requests.post(f"{base}/{path}", json=body, timeout=10)
            assert answer.status_code == 400, (path, body, answer.text)
            assert field in answer.json()["message"], (path, body, answer.text)
        unknown = requests.post(f"{base}/hyperpod/node-unhealthy", json={
            "clusterName": "no-such-cluster", "nodeId": "i-0"}, timeout=10)
        assert unknown.status_code == 404
        assert unknown.json()["code"] == "ResourceNotFound"
        unknown = requests.post(f"{base}/eks/addon-degraded", json={
            "clusterName": "no-such-cluster", "addonName": "vpc-cni"}, timeout=10)
        assert unknown.status_code == 404
        assert requests.get(f"{base}/eks/create-fails", timeout=10).status_code == 405

    def test_a_life_cycle_of_virtual_hours(self, real_cloud: LocalCloud) -> None:
        cloud = real_cloud
        eks = cloud.client("eks")
        sagemaker = cloud.client("sagemaker")
        start = cloud.clock.now()

        eks_name = unique("eks")
        network = make_network(cloud)
        create_eks(cloud, eks_name, network)
        eks.get_waiter("cluster_active").wait(name=eks_name,
                                             WaiterConfig={"Delay": 30, "MaxAttempts": 60})
        cluster = eks.describe_cluster(name=eks_name)["cluster"]

        name = unique("hp")
        workers = group_spec(cloud, "workers", "ml.g5.8xlarge", 1)
        create_hyperpod(cloud, name, cluster["arn"], network, [workers])
        wait_for_hyperpod(cloud, name, "InService")

        sagemaker.update_cluster(ClusterName=name,
                                 InstanceGroups=[{**workers, "InstanceCount": 3}])
        assert hyperpod_status(cloud, name) == "Updating"
        wait_for_hyperpod(cloud, name, "InService")
        running = [n for n in nodes(cloud, name) if n["InstanceStatus"]["Status"] == "Running"]
        assert len(running) == 3

        old = running[0]["InstanceId"]
        replaced = sagemaker.batch_replace_cluster_nodes(ClusterName=name, NodeIds=[old])
        assert replaced["Successful"] == [old]
        cloud.clock.advance(30 * 60)
        after = {n["InstanceId"]: n["InstanceStatus"]["Status"] for n in nodes(cloud, name)}
        assert old not in after
        assert list(after.values()) == ["Running"] * 3

        sagemaker.delete_cluster(ClusterName=name)
        cloud.clock.advance(60 * 60)
        assert name not in [c["ClusterName"] for c in
                            sagemaker.list_clusters()["ClusterSummaries"]]

        eks.delete_cluster(name=eks_name)
        eks.get_waiter("cluster_deleted").wait(name=eks_name,
                                              WaiterConfig={"Delay": 30, "MaxAttempts": 60})
        assert eks_name not in eks.list_clusters()["clusters"]
        assert cloud.emulation is not None
        assert cloud.emulation.kube is not None
        assert eks_name not in cloud.emulation.kube

        assert cloud.clock.now() - start >= timedelta(hours=2)


def wait_for_hyperpod(cloud: LocalCloud, name: str, status: str) -> None:
    """Let virtual time pass, a minute at a time, until the cluster has ``status``."""
    for _ in range(180):
        current = hyperpod_status(cloud, name)
        if current == status:
            return
        assert current not in ("Failed", "RollingBack"), current
        cloud.clock.advance(60)
    raise AssertionError(f"{name} not {status} after 3 virtual hours")


# --------------------------------------------------------------------------- event delivery

def received(cloud: LocalCloud, via: str) -> list[dict[str, Any]]:
    """What the recorder function got (directly, or through the state machine), in order."""
    table = cloud.resources["ReceivedTable"]
    items = cloud.client("dynamodb").query(
        TableName=table, KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": f"RECEIVED#{via}"}})["Items"]
    return [json.loads(item["event"]["S"]) for item in items]


@pytest.mark.usefixtures("events_cloud")
class TestEventDelivery:
    def test_hyperpod_events_reach_a_function_and_a_state_machine(
        self, events_cloud: LocalCloud, tmp_path: Path
    ) -> None:
        cloud = events_cloud
        eks_name = unique("eks")
        cluster, network = active_eks(cloud, eks_name)
        name = unique("hp")
        arn = create_hyperpod(cloud, name, cluster["arn"], network,
                              [group_spec(cloud, "workers", "ml.c5.2xlarge", 1)],
                              NodeRecovery="None")
        cloud.wait_for_executions()
        first = [e for e in received(cloud, "lambda") if e["detail-type"] == STATE_CHANGE]
        assert [e["detail"]["ClusterStatus"] for e in first] == ["Creating"]

        cloud.clock.advance(20 * 60)
        cloud.wait_for_executions()
        states = [e for e in received(cloud, "lambda") if e["detail-type"] == STATE_CHANGE]
        assert [e["detail"]["ClusterStatus"] for e in states] == ["Creating", "InService"]
        for event in states:
            assert event["source"] == "aws.sagemaker"
            assert event["resources"] == [arn]
            assert event["detail"]["ClusterName"] == name

        machine = received(cloud, "stepfunctions")
        assert [(e["detail-type"], e["detail"]["ClusterStatus"]) for e in machine] == [
            (STATE_CHANGE, "Creating"), (STATE_CHANGE, "InService")]
        assert not cloud.delivery_failures
        assert not cloud.async_failures

        # A node turning unhealthy: the Node Health event reaches the function. Under
        # NodeRecovery None HyperPod does not repair it: it recommends the repair instead.
        node_id = nodes(cloud, name)[0]["InstanceId"]
        assert cloud.emulation is not None
        cloud.emulation.hyperpod.make_node_unhealthy(name, node_id, "GPU fell off the bus",
                                                     "Replace")
        cloud.clock.advance(1)
        cloud.wait_for_executions()
        health = [e for e in received(cloud, "lambda") if e["detail-type"] == NODE_HEALTH]
        assert len(health) == 1
        summary = health[0]["detail"]["HealthSummary"]
        assert health[0]["detail"]["InstanceId"] == node_id
        assert summary["HealthStatus"] == "Unhealthy"
        assert summary["HealthStatusReason"] == "GPU fell off the bus"
        assert summary["RepairAction"] == "None"
        assert summary["Recommendation"] == "Please Replace the Faulty Node."

    def test_joined_nodes_look_like_hyperpod_nodes(
        self, events_cloud: LocalCloud, tmp_path: Path
    ) -> None:
        cloud = events_cloud
        eks_name = unique("eks")
        cluster, network = active_eks(cloud, eks_name)
        name = unique("hp")
        create_hyperpod(cloud, name, cluster["arn"], network,
                        [group_spec(cloud, "workers", "ml.c5.2xlarge", 2)])
        cloud.clock.advance(20 * 60)
        cloud.wait_for_executions()

        api = kube(cluster, eks_token(cloud.boto3_session(), eks_name, cloud.region), tmp_path)
        # The client's models type every field optional: read them as plain values.
        joined: list[Any] = [n for n in api.list_node().items
                             if str(n.metadata and n.metadata.name).startswith("hyperpod-")]
        assert len(joined) == 2
        for node in joined:
            instance_id = str(node.metadata.name).removeprefix("hyperpod-")
            placement = cloud.client("sagemaker").describe_cluster_node(
                ClusterName=name, NodeId=instance_id)["NodeDetails"]["Placement"]
            labels = node.metadata.labels
            assert labels[GROUP] == "workers"
            assert labels[INSTANCE_TYPE] == "ml.c5.2xlarge"
            assert labels[HEALTH] == "Schedulable"
            assert labels["topology.kubernetes.io/zone"] == placement["AvailabilityZone"]
            assert labels["topology.kubernetes.io/zone"] == "us-west-2a"  # its subnet's zone
            assert labels["topology.kubernetes.io/region"] == cloud.region
            ready = [c.status for c in node.status.conditions if c.type == "Ready"]
            assert ready == ["True"]
            assert not node.spec.unschedulable
            assert not node.spec.taints

    def test_eks_addon_events_reach_a_function(self, events_cloud: LocalCloud) -> None:
        cloud = events_cloud
        eks = cloud.client("eks")
        eks_name = unique("eks")
        active_eks(cloud, eks_name)
        eks.create_addon(clusterName=eks_name, addonName="vpc-cni")
        cloud.clock.advance(10 * 60)
        # EventBridge promises no order between events: let the first one arrive before the
        # second is emitted, so the order below is the order they happened in.
        cloud.wait_for_executions()
        assert cloud.emulation is not None
        cloud.emulation.eks.degrade_addon(eks_name, "vpc-cni", "InsufficientNumberOfReplicas")
        cloud.clock.advance(1)
        cloud.wait_for_executions()
        addon_events = [(e["detail-type"], e["detail"]["addonName"])
                        for e in received(cloud, "lambda")
                        if e["source"] == "aws.eks" and e["detail"]["clusterName"] == eks_name]
        assert addon_events == [("EKS Addon Creation Succeeded", "vpc-cni"),
                                ("EKS Addon Health Degraded", "vpc-cni")]
