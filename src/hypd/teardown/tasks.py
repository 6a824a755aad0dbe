"""The delete-cluster stages that delete AWS resources only: hyperpod, eks, storage, network,
record, and the operation's finish and fail (docs/teardown.md). They run on
TeardownTasksFunction, whose role reads and deletes and never creates, and which loads no
Kubernetes client. `hypd.teardown.cluster_tasks` has the other stages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypd.aws import cloudformation as cfn_api
from hypd.aws import ec2 as ec2_api
from hypd.aws import eks as eks_api
from hypd.aws import fsx as fsx_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.clusters.models import ClusterStatus
from hypd.clusters.store import ClusterStore
from hypd.config import TeardownTaskSettings
from hypd.errors import NotFoundError
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation
from hypd.operations.steps import FailInput, OperationInput, Steps
from hypd.operations.store import OperationStore
from hypd.tasks import TaskRouter
from hypd.teardown import finders
from hypd.teardown.inputs import TeardownInput
from hypd.teardown.plan import Resource
from hypd.teardown.stages import Look, stage_task

router = TaskRouter()


@dataclass
class TeardownServices:
    """TeardownTasksFunction's services."""

    operations: OperationStore
    locks: LockStore
    client: Callable[[str], Any]
    settings: TeardownTaskSettings
    clusters: ClusterStore

    @property
    def steps(self) -> Steps:
        return Steps(self.operations, self.locks)


def hyperpod(services: TeardownServices, where: TeardownInput,
             known: Sequence[Resource], start: bool) -> Look:
    """DeleteCluster, then until DescribeCluster answers ResourceNotFound."""
    sagemaker = services.client("sagemaker")
    described = sagemaker_api.find_cluster(sagemaker, where.hyperpod_name)
    if described is None:
        return Look()
    if described.get("ClusterStatus") != "Deleting":
        sagemaker_api.delete_cluster(sagemaker, where.hyperpod_name)
    return Look([Resource("HyperPodCluster", where.hyperpod_name, described.get("ClusterArn"),
                          {"status": "Deleting"})])


def eks(services: TeardownServices, where: TeardownInput,
        known: Sequence[Resource], start: bool) -> Look:
    """DeleteCluster (its access entries go with it), then until it is not found. A cluster
    still being created (a create that gave up on it) is deleted once EKS has finished it."""
    client = services.client("eks")
    cluster = eks_api.find_cluster(client, where.eks_name)
    if cluster is None:
        return Look()
    status = cluster.get("status")
    if status != "DELETING" and not eks_api.delete_cluster(client, where.eks_name):
        # EKS deletes no cluster being created or updated: it is waited for.
        return Look([Resource("EksCluster", where.eks_name, cluster.get("arn"),
                              {"status": status})],
                    reason=f"EKS deletes no cluster while it is {status}")
    return Look([Resource("EksCluster", where.eks_name, cluster.get("arn"),
                          {"status": "DELETING"})])


def storage(services: TeardownServices, where: TeardownInput,
            known: Sequence[Resource], start: bool) -> Look:
    """The FSx file systems tagged for the cluster."""
    fsx = services.client("fsx")
    left = finders.tagged_file_systems(fsx, where.tag)
    for system in left:
        if system.detail.get("lifecycle") != "DELETING":
            fsx_api.delete_file_system(fsx, system.name)
    return Look(left)


LINGERING = "network interfaces of the deleted clusters linger"
"""Why the network stage waits while AWS services still hold interfaces in the VPC."""


def network(services: TeardownServices, where: TeardownInput,
            known: Sequence[Resource], start: bool) -> Look:
    """What the network function made outside the stack (endpoints, compute subnets, their
    route tables), then the stack. Network interfaces HyperPod and EKS made linger a few
    minutes after them: a DependencyViolation meanwhile is waited out, not fatal, and the
    stack is deleted once none is left in its VPC (one DeleteStack, not one per look that
    ends DELETE_FAILED on the interfaces). The interfaces the VPC CNI left `available` for
    the EKS cluster are deleted first: nothing else ever would."""
    cfn, ec2 = services.client("cloudformation"), services.client("ec2")
    made, stack = finders.network_of(cfn, ec2, where.tag, where.vpc_id)
    network_vpc = where.vpc_id or (stack.detail.get("vpcId") if stack is not None else None)
    left, found = (_cni_interfaces(ec2, str(network_vpc), where.eks_name) if network_vpc
                   else ([], []))
    for resource in made:
        if resource.type == "VpcEndpoint":
            ec2_api.delete_vpc_endpoint(ec2, resource.name)
            left.append(resource)
        elif resource.type == "Subnet":
            if not ec2_api.delete_subnet(ec2, resource.name):  # DependencyViolation: ENIs
                left.append(resource)
        # A route table goes once its subnets (and their associations) are gone, after it
        # is taken off the gateway endpoints the network function added it to.
        elif resource.type == "RouteTable":
            for endpoint in ec2_api.list_vpc_endpoints(ec2, str(resource.detail["vpcId"])):
                if resource.name in (endpoint.get("RouteTableIds") or []):
                    ec2_api.remove_endpoint_route_table(ec2, str(endpoint["VpcEndpointId"]),
                                                        resource.name)
            if not ec2_api.delete_route_table(ec2, resource.name):
                left.append(resource)
    reason = LINGERING if left else None
    if stack is not None:
        status = stack.detail.get("status")
        if status == "DELETE_FAILED":
            reason = cfn_api.stack_failure_reason(cfn, stack.name)
        vpc_id = stack.detail.get("vpcId")
        lingering = (ec2_api.list_service_interfaces(ec2, str(vpc_id))
                     if vpc_id and not left and status != "DELETE_IN_PROGRESS" else [])
        if lingering:
            reason = f"{LINGERING}: {', '.join(lingering[:5])}"
        elif not left and status != "DELETE_IN_PROGRESS":
            cfn_api.delete_stack(cfn, stack.name)
        left.append(stack)
    return Look(left, reason=reason, found=found)


def _cni_interfaces(ec2: Any, vpc_id: str, eks_name: str
                    ) -> tuple[list[Resource], list[Resource]]:
    """The network interfaces the VPC CNI left for the EKS cluster in its VPC: the available
    ones deleted (they would hold their subnets, and so the stack, forever), those still
    attached waited for. Returns (left, deleted)."""
    left, deleted = [], []
    for interface in ec2_api.list_cni_interfaces(ec2, vpc_id, eks_name):
        resource = Resource("NetworkInterface", interface["id"],
                            detail={"subnetId": interface["subnetId"]})
        if interface["status"] == "available" and ec2_api.delete_network_interface(
                ec2, interface["id"]):
            deleted.append(resource)
        else:
            resource.detail["status"] = interface["status"]
            left.append(resource)
    return left, deleted


for _stage, _look in (("hyperpod", hyperpod), ("eks", eks), ("storage", storage),
                      ("network", network)):
    stage_task(router, _stage, _look)


@router.task("teardown-record", OperationInput)
def record(task: OperationInput, services: TeardownServices) -> dict[str, Any]:
    """The cluster's record: status DELETED, kept with its operation history."""
    def work() -> dict[str, Any]:
        where = TeardownInput.model_validate(services.operations.get(task.operation_id).input)
        changed = services.clusters.set_status(where.tag, ClusterStatus.DELETED,
                                               task.operation_id)
        if changed is None:
            raise NotFoundError(f"cluster record {where.tag} is gone",
                                details={"tag": where.tag})
        record = Resource("ClusterRecord", where.tag, detail={"status": "DELETED"})
        return {"deleted": [record.view()]}

    return services.steps.step(task, "record", work, start=True, complete=True,
                               summarize=lambda r: r)


@router.task("finish-teardown", OperationInput)
def finish(task: OperationInput, services: TeardownServices) -> dict[str, Any]:
    def output(operation: Operation) -> dict[str, Any]:
        where = TeardownInput.model_validate(operation.input)
        deleted = [r for stage in operation.stages
                   for r in (stage.output or {}).get("deleted") or []]
        return {"tag": where.tag, "deleted": deleted, "kept": where.kept}

    return services.steps.finish(task, output)


@router.task("fail-teardown", FailInput)
def fail(task: FailInput, services: TeardownServices) -> dict[str, Any]:
    return services.steps.fail_answer(task)
