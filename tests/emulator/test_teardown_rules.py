"""What the local cloud refuses, and how long things take, while a cluster is torn down
(docs/local-cloud.md, "Deletions"): a wrong order fails here as it would on AWS.

One local cloud for the module, its clock frozen: tests move it (`advance`), nothing sleeps.
Each test makes its own network and clusters (unique names)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hypd.create.network_template import network_stack_template
from hypd_local import LocalCloud
from hypd_local.clock import VirtualClock
from hypd_local.emulator.eks_model import EksDurations
from hypd_local.emulator.hyperpod_state import HyperPodDurations
from tests.kube.test_emulated_operators_cloud import advance, emulation
from tests.local_cloud.conftest import FIXTURE_TEMPLATE
from tests.local_cloud.test_emulation import (
    Network,
    active_eks,
    create_hyperpod,
    group_spec,
    unique,
)

HP = HyperPodDurations()
EKS = EksDurations()


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(FIXTURE_TEMPLATE, clock=VirtualClock(ticking=False)) as running:
        yield running


def advance_to_next_due(cloud: LocalCloud) -> None:
    due = emulation(cloud).next_due()
    assert due is not None
    advance(cloud, (due - cloud.clock.now()).total_seconds())


def error(info: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    response: Any = info.value.response
    return response["Error"]["Code"], response["Error"]["Message"]


def in_service_hyperpod(cloud: LocalCloud, count: int = 2
                        ) -> tuple[dict[str, Any], Network, str]:
    """An ACTIVE EKS cluster and an InService HyperPod cluster of ``count`` nodes on it."""
    eks, network = active_eks(cloud, unique("eks"))
    name = unique("hp")
    create_hyperpod(cloud, name, eks["arn"], network,
                    [group_spec(cloud, "workers", "ml.g5.8xlarge", count)])
    advance(cloud, (HP.cluster_create + HP.node_boot).total_seconds())
    status = cloud.client("sagemaker").describe_cluster(ClusterName=name)["ClusterStatus"]
    assert status == "InService"
    return eks, network, name


def interfaces(cloud: LocalCloud, network: Network) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = cloud.client("ec2").describe_network_interfaces(
        Filters=[{"Name": "vpc-id", "Values": [network.vpc_id]}])["NetworkInterfaces"]
    return found


def hyperpod_gone(cloud: LocalCloud, name: str) -> bool:
    """DescribeCluster answers ResourceNotFound (the way to know a deletion is done)."""
    try:
        cloud.client("sagemaker").describe_cluster(ClusterName=name)
    except ClientError as exc:
        return bool(exc.response["Error"]["Code"] == "ResourceNotFound")
    return False


def delete_network(cloud: LocalCloud, network: Network) -> None:
    ec2 = cloud.client("ec2")
    for subnet in network.subnets:
        ec2.delete_subnet(SubnetId=subnet)
    ec2.delete_security_group(GroupId=network.security_group)
    ec2.delete_vpc(VpcId=network.vpc_id)


# --------------------------------------------------------------------------- HyperPod


def test_a_hyperpod_cluster_is_deleting_for_its_duration_then_not_found(
        cloud: LocalCloud) -> None:
    eks, _network, name = in_service_hyperpod(cloud)
    sagemaker = cloud.client("sagemaker")
    server = emulation(cloud).kube.get(eks["name"])  # type: ignore[union-attr]
    assert server is not None
    nodes = server.store.find_type("", "v1", "nodes")
    assert nodes is not None
    assert len(server.store.list(nodes, None)[0]) == 2

    sagemaker.delete_cluster(ClusterName=name)
    assert sagemaker.describe_cluster(ClusterName=name)["ClusterStatus"] == "Deleting"
    listed = {c["ClusterName"]: c["ClusterStatus"]
              for c in sagemaker.list_clusters()["ClusterSummaries"]}
    assert listed[name] == "Deleting"
    # A second DeleteCluster while Deleting is refused, as any change in a transitional status.
    with pytest.raises(ClientError) as again:
        sagemaker.delete_cluster(ClusterName=name)
    assert error(again)[0] == "ConflictException"
    advance(cloud, HP.node_terminate.total_seconds())
    assert server.store.list(nodes, None)[0] == []  # the nodes left the Kubernetes API

    advance(cloud, (HP.cluster_delete - HP.node_terminate).total_seconds() - 1)
    assert not hyperpod_gone(cloud, name)
    advance(cloud, 1)
    assert hyperpod_gone(cloud, name)
    assert name not in [c["ClusterName"] for c in sagemaker.list_clusters()["ClusterSummaries"]]


# --------------------------------------------------------------------------- EKS


def test_eks_refuses_to_delete_a_cluster_a_hyperpod_cluster_still_names(
        cloud: LocalCloud) -> None:
    eks_cluster, _network, name = in_service_hyperpod(cloud, count=1)
    eks = cloud.client("eks")
    with pytest.raises(ClientError) as in_use:
        eks.delete_cluster(name=eks_cluster["name"])
    code, message = error(in_use)
    assert code == "ResourceInUseException"
    assert name in message
    assert in_use.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409

    cloud.client("sagemaker").delete_cluster(ClusterName=name)
    with pytest.raises(ClientError) as deleting:  # Deleting still names it
        eks.delete_cluster(name=eks_cluster["name"])
    assert error(deleting)[0] == "ResourceInUseException"
    assert eks.describe_cluster(name=eks_cluster["name"])["cluster"]["status"] == "ACTIVE"

    advance(cloud, HP.cluster_delete.total_seconds())
    assert eks.delete_cluster(name=eks_cluster["name"])["cluster"]["status"] == "DELETING"
    advance(cloud, EKS.cluster_delete - 1)
    assert eks.describe_cluster(name=eks_cluster["name"])["cluster"]["status"] == "DELETING"
    advance(cloud, 1)
    with pytest.raises(ClientError) as gone:
        eks.describe_cluster(name=eks_cluster["name"])
    assert error(gone)[0] == "ResourceNotFoundException"


# --------------------------------------------------------------------------- ENIs


def test_hyperpod_and_eks_interfaces_hold_the_network_until_they_linger_out(
        cloud: LocalCloud) -> None:
    eks_cluster, network, name = in_service_hyperpod(cloud)
    found = interfaces(cloud, network)
    descriptions = sorted(i["Description"] for i in found)
    assert descriptions[:2] == [f"Amazon EKS {eks_cluster['name']}"] * 2
    assert [d.split(" ")[:4] for d in descriptions[2:]] == [
        ["Amazon", "SageMaker", "HyperPod", name]] * 2
    assert all(i["Groups"][0]["GroupId"] == network.security_group for i in found)
    control_plane = {i["SubnetId"] for i in found if i["Description"].startswith("Amazon EKS")}
    assert control_plane == set(network.subnets)
    # HyperPod's are in the group's subnet (the cluster's VpcConfig: its first subnet)
    assert {i["SubnetId"] for i in found if "HyperPod" in i["Description"]} == {
        network.subnets[0]}

    sagemaker, eks, ec2 = (cloud.client(s) for s in ("sagemaker", "eks", "ec2"))
    sagemaker.delete_cluster(ClusterName=name)
    advance(cloud, HP.cluster_delete.total_seconds())
    assert hyperpod_gone(cloud, name)
    assert len(interfaces(cloud, network)) == 4  # HyperPod's linger after their cluster
    eks.delete_cluster(name=eks_cluster["name"])
    advance(cloud, EKS.cluster_delete)

    with pytest.raises(ClientError) as subnet:
        ec2.delete_subnet(SubnetId=network.subnets[0])
    assert error(subnet) == (
        "DependencyViolation",
        f"The subnet '{network.subnets[0]}' has dependencies and cannot be deleted.")
    with pytest.raises(ClientError) as group:
        ec2.delete_security_group(GroupId=network.security_group)
    assert error(group) == ("DependencyViolation",
                            f"resource {network.security_group} has a dependent object")
    with pytest.raises(ClientError) as vpc:
        ec2.delete_vpc(VpcId=network.vpc_id)
    assert error(vpc)[0] == "DependencyViolation"

    # The next scheduled change is HyperPod's interfaces going, eni_linger after the cluster
    advance_to_next_due(cloud)
    left = interfaces(cloud, network)
    assert [i["Description"] for i in left] == [f"Amazon EKS {eks_cluster['name']}"] * 2
    advance_to_next_due(cloud)
    assert interfaces(cloud, network) == []
    delete_network(cloud, network)


def test_a_node_s_interface_goes_its_linger_after_the_node(cloud: LocalCloud) -> None:
    _eks, network, name = in_service_hyperpod(cloud)
    sagemaker = cloud.client("sagemaker")
    node = sagemaker.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"][0]
    sagemaker.batch_delete_cluster_nodes(ClusterName=name, NodeIds=[node["InstanceId"]])
    mine = [i for i in interfaces(cloud, network) if node["InstanceId"] in i["Description"]]
    assert len(mine) == 1
    advance(cloud, (HP.node_terminate + HP.eni_linger).total_seconds() - 1)
    assert [i for i in interfaces(cloud, network) if node["InstanceId"] in i["Description"]]
    advance(cloud, 1)
    assert not [i for i in interfaces(cloud, network)
                if node["InstanceId"] in i["Description"]]


def test_the_linger_is_a_duration_a_test_can_shorten(cloud: LocalCloud) -> None:
    hyperpod, eks = emulation(cloud).hyperpod, emulation(cloud).eks
    hyperpod.set_durations(eni_linger=timedelta(seconds=10))
    eks.set_durations(eni_linger=10)
    try:
        eks_cluster, network, name = in_service_hyperpod(cloud, count=1)
        cloud.client("sagemaker").delete_cluster(ClusterName=name)
        advance(cloud, HP.cluster_delete.total_seconds())
        cloud.client("eks").delete_cluster(name=eks_cluster["name"])
        advance(cloud, EKS.cluster_delete + 10)
        assert interfaces(cloud, network) == []
        delete_network(cloud, network)
    finally:
        hyperpod.set_durations(eni_linger=HP.eni_linger)
        eks.set_durations(eni_linger=EKS.eni_linger)


# --------------------------------------------------------------------------- CloudFormation


def stack_outputs(cloud: LocalCloud, stack: str) -> dict[str, str]:
    described = cloud.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in described["Outputs"]}


def ec2_inventory(cloud: LocalCloud) -> dict[str, Any]:
    ec2 = cloud.client("ec2")
    return {
        "vpcs": sorted(v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]),
        "subnets": sorted(s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]),
        "groups": sorted(g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]),
        "route tables": sorted(r["RouteTableId"]
                               for r in ec2.describe_route_tables()["RouteTables"]),
        "gateways": sorted(g["InternetGatewayId"]
                           for g in ec2.describe_internet_gateways()["InternetGateways"]),
        "nat gateways": sorted(n["NatGatewayId"] for n in ec2.describe_nat_gateways()[
            "NatGateways"] if n["State"] != "deleted"),
        "addresses": sorted(a["AllocationId"] for a in ec2.describe_addresses()["Addresses"]),
        "endpoints": sorted(e["VpcEndpointId"] for e in ec2.describe_vpc_endpoints()[
            "VpcEndpoints"] if e["State"] != "deleted"),
        "interfaces": sorted(i["NetworkInterfaceId"] for i in
                             ec2.describe_network_interfaces()["NetworkInterfaces"]),
    }


def test_the_network_stack_is_delete_failed_while_an_interface_holds_it_then_retried(
        cloud: LocalCloud) -> None:
    cfn, ec2 = cloud.client("cloudformation"), cloud.client("ec2")
    before = ec2_inventory(cloud)
    tag = unique("td")
    stack = f"hypd-{tag}-network"
    cfn.create_stack(StackName=stack, TemplateBody=json.dumps(
        network_stack_template(tag, ["us-west-2a", "us-west-2b"])))
    outputs = stack_outputs(cloud, stack)
    subnet = outputs["ControlPlaneSubnetIds"].split(",")[0]
    held = ec2.create_network_interface(SubnetId=subnet, Groups=[outputs["SecurityGroupId"]],
                                        Description="Amazon EKS x")["NetworkInterface"]
    # The NAT gateway's interface is EC2's: requester-managed, of type nat_gateway
    (gateway,) = ec2.describe_nat_gateways(Filters=[
        {"Name": "vpc-id", "Values": [outputs["VpcId"]]}])["NatGateways"]
    nat = ec2.describe_network_interfaces(NetworkInterfaceIds=[
        gateway["NatGatewayAddresses"][0]["NetworkInterfaceId"]])["NetworkInterfaces"][0]
    assert (nat["RequesterManaged"], nat["InterfaceType"], nat["Description"]) == (
        True, "nat_gateway", f"Interface for NAT Gateway {gateway['NatGatewayId']}")
    assert held["RequesterManaged"] is False  # one the account made

    cfn.delete_stack(StackName=stack)  # accepted: the failure is the stack's status
    described = cfn.describe_stacks(StackName=stack)["Stacks"][0]
    assert described["StackStatus"] == "DELETE_FAILED"
    assert described["StackStatusReason"] == (
        "The following resource(s) failed to delete: [ControlPlaneSubnet1, "
        "ClusterSecurityGroup]. ")
    failed = {e["LogicalResourceId"]: e["ResourceStatusReason"]
              for e in cfn.describe_stack_events(StackName=stack)["StackEvents"]
              if e["ResourceStatus"] == "DELETE_FAILED" and e["LogicalResourceId"] != stack}
    assert failed["ControlPlaneSubnet1"].startswith(
        f"The subnet '{subnet}' has dependencies and cannot be deleted.")
    assert "Error Code: DependencyViolation" in failed["ClusterSecurityGroup"]
    left = {r["LogicalResourceId"] for r in cfn.describe_stack_resources(
        StackName=stack)["StackResources"] if r.get("LogicalResourceId")}
    # what the refused ones depend on is left alone; everything else is gone
    assert left == {"Vpc", "ControlPlaneSubnet1", "ClusterSecurityGroup"}

    ec2.delete_network_interface(NetworkInterfaceId=held["NetworkInterfaceId"])
    cfn.delete_stack(StackName=stack)
    statuses = [s["StackStatus"] for s in cfn.list_stacks()["StackSummaries"]
                if s["StackName"] == stack]
    assert statuses == ["DELETE_COMPLETE"]
    assert ec2_inventory(cloud) == before  # NAT, address, gateway, endpoint, routes: all gone


# --------------------------------------------------------------------------- FSx, IAM


def test_an_fsx_file_system_is_deleting_for_its_duration_then_not_found(
        cloud: LocalCloud) -> None:
    from hypd_local.patches.fsx import FSX_DELETE_SECONDS

    ec2, fsx = cloud.client("ec2"), cloud.client("fsx")
    vpc = ec2.create_vpc(CidrBlock="10.251.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.251.1.0/24",
                               AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
    ident = fsx.create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=1200, SubnetIds=[subnet],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2",
                             "PerUnitStorageThroughput": 125})["FileSystem"]["FileSystemId"]
    assert fsx.delete_file_system(FileSystemId=ident)["Lifecycle"] == "DELETING"
    described = fsx.describe_file_systems(FileSystemIds=[ident])["FileSystems"]
    assert [f["Lifecycle"] for f in described] == ["DELETING"]
    assert fsx.delete_file_system(FileSystemId=ident)["Lifecycle"] == "DELETING"
    advance(cloud, FSX_DELETE_SECONDS)
    with pytest.raises(ClientError) as gone:
        fsx.describe_file_systems(FileSystemIds=[ident])
    assert error(gone) == ("FileSystemNotFound", f"File system '{ident}' does not exist.")
    assert ident not in [f["FileSystemId"] for f in fsx.describe_file_systems()["FileSystems"]]


def test_a_role_with_policies_is_not_deleted(cloud: LocalCloud) -> None:
    iam = cloud.client("iam")
    role = unique("hypd-td-role")
    document = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]})
    iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": []}))
    policy = iam.create_policy(PolicyName=unique("td"), PolicyDocument=document)["Policy"]["Arn"]
    iam.attach_role_policy(RoleName=role, PolicyArn=policy)
    with pytest.raises(ClientError) as attached:
        iam.delete_role(RoleName=role)
    assert error(attached) == ("DeleteConflict",
                               "Cannot delete entity, must detach all policies first.")
    iam.detach_role_policy(RoleName=role, PolicyArn=policy)
    iam.put_role_policy(RoleName=role, PolicyName="inline", PolicyDocument=document)
    with pytest.raises(ClientError) as inline:
        iam.delete_role(RoleName=role)
    assert error(inline) == ("DeleteConflict",
                             "Cannot delete entity, must delete policies first.")
    iam.delete_role_policy(RoleName=role, PolicyName="inline")
    iam.delete_role(RoleName=role)
    # DeleteOpenIDConnectProvider is idempotent (IAM's API reference): no error for none
    iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=(
        "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/NONE"))
