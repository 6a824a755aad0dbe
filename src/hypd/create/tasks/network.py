"""The network and eks stages' tasks: the VPC stack and the compute subnets, then the EKS
cluster and the access entries of the functions that call its Kubernetes API."""

from __future__ import annotations

from typing import Any

from hypd.aws import ec2 as ec2_api
from hypd.aws import eks as eks_api
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.create import control_plane, network_stack
from hypd.create.tasks.common import CreateServices, EksOutput, NetworkOutput, router
from hypd.instance_groups import placement
from hypd.network import ensure_compute_subnet
from hypd.operations.steps import OperationInput, Steps, dump, poll_result, polled


# ---------------------------------------------------------------------------- network
@polled(router, "create-network-stack", "check-network-stack")
def network_poll(task: OperationInput, services: CreateServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation, resolved = services.load(task.operation_id)
        attempt = operation.stage("network").attempts

        def zones() -> tuple[str, str]:  # asked only when the stack is to be created
            region = ec2_api.list_availability_zones(services.client("ec2"))
            return network_stack.control_plane_zones(
                resolved.availability_zone,
                [z.name for z in region],
                unsupported=network_stack.known_unsupported_zones(region),
            )

        # Inspect before create, on every look: a failed stack of an earlier attempt is
        # replaced (the retry path), whose deletion may take several looks.
        stack = network_stack.ensure_network_stack(
            services.client("cloudformation"),
            resolved.tag,
            zones,
            client_token=f"{operation.id}-network-{attempt}",
            replace_failed=attempt > 1,
            role_arn=services.settings.network_stack_role_arn,
        )
        return poll_result(
            stack.ready,
            network_stack.next_check_seconds(Steps.elapsed(operation, "network")),
            waiting=f"network stack {stack.stack_name} is {stack.status}",
        )

    return services.steps.step(task, "network", work, start=start)


@router.task("ensure-compute-subnet", OperationInput)
def ensure_compute_subnet_task(task: OperationInput, services: CreateServices) -> dict[str, Any]:
    def work() -> NetworkOutput:
        _operation, resolved = services.load(task.operation_id)
        stack = network_stack.read_network_stack(services.client("cloudformation"), resolved.tag)
        assert stack.vpc_id
        assert stack.security_group_id
        ec2 = services.client("ec2")
        facts = ec2_api.describe_instance_types(
            ec2, [g.instance_type.removeprefix("ml.") for g in resolved.instance_groups]
        )
        subnets: dict[str, str] = {}
        for index, group in enumerate(resolved.instance_groups):
            subnet = ensure_compute_subnet(
                ec2,
                placement.subnet_request(
                    group,
                    facts.get(group.instance_type.removeprefix("ml.")),
                    vpc_id=stack.vpc_id,
                    availability_zone=resolved.availability_zone,
                    cluster_tag=resolved.tag,
                    field=f"instanceGroups[{index}]",
                ),
            )
            subnets[group.name] = subnet.subnet_id
        return NetworkOutput(
            stack_name=stack.stack_name,
            vpc_id=stack.vpc_id,
            control_plane_subnet_ids=list(stack.control_plane_subnet_ids),
            security_group_id=stack.security_group_id,
            compute_subnets=subnets,
        )

    services.steps.step(task, "network", work, complete=True, summarize=dump)
    return {}


# ---------------------------------------------------------------------------- eks
@polled(router, "create-eks-cluster", "check-eks-cluster")
def eks_poll(task: OperationInput, services: CreateServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation, resolved = services.load(task.operation_id)
        cfn = services.client("cloudformation")
        attempt = operation.stage("eks").attempts
        moves = int((operation.stage("eks").progress or {}).get("controlPlaneMoves", 0))
        waited = Steps.elapsed(operation, "eks")
        # The stack's control-plane subnets as they are now: a zone EKS refused may have
        # been replaced (below), also in an earlier attempt.
        network = network_stack.read_network_stack(cfn, resolved.tag)
        if not network.ready:  # control-plane subnets being added
            doing = (
                f"waiting for control-plane subnets in zones EKS supports (network stack "
                f"{network.stack_name} is {network.status})"
            )
            control_plane.check_overdue(resolved.eks_cluster_name, doing, waited)
            return poll_result(False, network_stack.UPDATE_CHECK_SECONDS, waiting=doing)
        assert network.security_group_id
        # A new CreateCluster request after each move (other subnets): a fresh token.
        token = f"{operation.id}-eks-{attempt}" + (f"-z{moves}" if moves else "")
        try:
            # Inspect before create, on every look: a FAILED cluster of an earlier attempt
            # is replaced (the retry path), whose deletion takes several looks.
            state = control_plane.ensure_eks_cluster(
                services.client("eks"),
                name=resolved.eks_cluster_name,
                role_arn=services.settings.eks_cluster_role_arn,
                subnet_ids=network.control_plane_subnet_ids,
                security_group_ids=[network.security_group_id],
                kubernetes_version=resolved.kubernetes_version,
                tags={HYPD_TAG_KEY: resolved.tag},
                client_token=token,
                replace_failed=attempt > 1,
            )
        except eks_api.UnsupportedAvailabilityZone as refused:
            # EKS refuses a zone: the stack gains control-plane subnets in zones it
            # supports (nothing made so far is lost), and CreateCluster is asked again.
            moving = network_stack.move_control_plane(
                cfn,
                resolved.tag,
                refused.valid_zones,
                client_token=f"{operation.id}-eks-{attempt}-zones-{moves + 1}",
                role_arn=services.settings.network_stack_role_arn,
                moved_before=moves > 0,
            )
            if moving is None:
                raise
            return {
                **poll_result(
                    False,
                    network_stack.UPDATE_CHECK_SECONDS,
                    waiting="EKS refused the control plane's zone: adding control-plane "
                    f"subnets in {', '.join(refused.valid_zones)}",
                ),
                "controlPlaneMoves": moves + 1,
                "validZones": refused.valid_zones,
            }
        if not state.ready:
            control_plane.check_overdue(state.name, f"still {state.status}", waited)
        return poll_result(
            state.ready,
            control_plane.next_check_seconds(waited),
            waiting=f"EKS cluster {state.name} is {state.status}",
        )

    return services.steps.step(task, "eks", work, start=start, progress=_moved)


def _moved(result: dict[str, Any]) -> dict[str, Any] | None:
    """What an eks look records as the attempt's progress: the control plane's moves."""
    if "controlPlaneMoves" not in result:
        return None
    return {k: result[k] for k in ("controlPlaneMoves", "validZones")}


@router.task("grant-cluster-access", OperationInput)
def grant_cluster_access(task: OperationInput, services: CreateServices) -> dict[str, Any]:
    def work() -> EksOutput:
        _operation, resolved = services.load(task.operation_id)
        eks = services.client("eks")
        principal = control_plane.principal_of(services.client("sts"))
        # EKS admits a principal by its own access entry: every function that calls the
        # cluster's Kubernetes API needs one.
        for role in (principal, *services.settings.kubernetes_access_roles):
            control_plane.ensure_admin_access(eks, resolved.eks_cluster_name, role)
        for role in services.settings.kubernetes_read_roles:
            control_plane.ensure_admin_access(
                eks, resolved.eks_cluster_name, role, policy=control_plane.ADMIN_VIEW_POLICY
            )
        state = control_plane.read_eks_cluster(eks, resolved.eks_cluster_name)
        return EksOutput(
            name=resolved.eks_cluster_name,
            arn=state.arn,
            version=state.version,
            endpoint=state.endpoint,
            access_principal=principal,
        )

    services.steps.step(task, "eks", work, complete=True, summarize=dump)
    return {}
