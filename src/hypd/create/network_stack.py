"""The `network` stage of the create pipeline: the cluster's VPC as one CloudFormation stack.

The stack `hypd-{tag}-network` holds a /16 VPC with an internet gateway, two public /24s (the
NAT gateway, load balancers), two private /24s for the EKS control plane in two zones (default
route through one NAT gateway), an S3 gateway endpoint on the private route tables and the
cluster's security group. HyperPod compute /20s are not in the stack: `hypd.network.
ensure_compute_subnet` carves them from the free space below the /24s afterwards.

Inspect before create: `ensure_network_stack` reuses a stack that exists, reports one that is
being created as not ready, and raises `NetworkStackFailed` for one that failed. The state
machine waits (`next_check_seconds`) and checks with `read_network_stack`. See
docs/network.md ("The network stack").

EKS does not place control planes in every zone: `control_plane_zones` skips the zones EKS
documents as unsupported (`EKS_UNSUPPORTED_ZONE_IDS`), and when CreateCluster still refuses a
zone (UnsupportedAvailabilityZoneException, with the zones it accepts), `move_control_plane`
updates the stack to add control-plane subnets in accepted zones and point the
``ControlPlaneSubnetIds`` output at them. The update only adds resources: nothing the stack made
is changed or removed (the subnet EKS refused stays, empty).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.aws import cloudformation as cfn_api
from hypd.aws.cloudformation import Stack
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.create.network_template import (
    DEFAULT_VPC_CIDR,
    EKS_UNSUPPORTED_ZONE_IDS,
    NetworkStackFailed,
    NotEnoughZones,
    UnknownZone,
    control_plane_moved,
    control_plane_zones,
    known_unsupported_zones,
    network_stack_template,
)

__all__ = [
    "EKS_UNSUPPORTED_ZONE_IDS",
    "EXPECTED_STACK_SECONDS",
    "UPDATE_CHECK_SECONDS",
    "NetworkStack",
    "NetworkStackFailed",
    "NotEnoughZones",
    "UnknownZone",
    "control_plane_moved",
    "control_plane_zones",
    "ensure_network_stack",
    "known_unsupported_zones",
    "move_control_plane",
    "network_stack_template",
    "next_check_seconds",
    "read_network_stack",
    "stack_name",
]

STACK_TIMEOUT_MINUTES = 30
"""CloudFormation fails (and rolls back) a creation that takes longer, so waiting ends."""

EXPECTED_STACK_SECONDS = 180
"""A VPC stack with a NAT gateway takes about three minutes on AWS (the NAT gateway most)."""
MIN_CHECK_SECONDS = 15
MAX_CHECK_SECONDS = 60
UPDATE_CHECK_SECONDS = MIN_CHECK_SECONDS
"""How soon to look again after asking CloudFormation to add control-plane subnets (a subnet, a
route table and a route: well under a minute)."""

READY_STATUSES = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"})
"""The stack's resources exist and its outputs are current."""
IN_PROGRESS_STATUSES = frozenset(
    {
        "CREATE_IN_PROGRESS",
        "UPDATE_IN_PROGRESS",
        "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
        "UPDATE_ROLLBACK_IN_PROGRESS",
        "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS",
    }
)
"""Worth waiting for: the stack will end in a ready status (or a failed one)."""
REPLACEABLE_STATUSES = frozenset({"ROLLBACK_COMPLETE", "CREATE_FAILED", "ROLLBACK_FAILED"})
"""A creation that failed: the stack serves nothing and only the retry path may delete it."""
_OUTPUTS = ("VpcId", "ControlPlaneSubnetIds", "SecurityGroupId", "NatGatewayId", "S3EndpointId")


# ---------------------------------------------------------------------------- errors
# ---------------------------------------------------------------------------- model
class NetworkStack(BaseModel):
    """The stack's state; the ids are None until it is ready."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    ready: bool
    status: str
    stack_name: str = Field(alias="stackName")
    stack_id: str | None = Field(default=None, alias="stackId")
    vpc_id: str | None = Field(default=None, alias="vpcId")
    control_plane_subnet_ids: list[str] = Field(default_factory=list, alias="controlPlaneSubnetIds")
    public_subnet_ids: list[str] = Field(default_factory=list, alias="publicSubnetIds")
    security_group_id: str | None = Field(default=None, alias="securityGroupId")
    nat_gateway_id: str | None = Field(default=None, alias="natGatewayId")
    s3_endpoint_id: str | None = Field(default=None, alias="s3EndpointId")


# ---------------------------------------------------------------------------- the stack
def stack_name(tag: str) -> str:
    return f"hypd-{tag}-network"


def next_check_seconds(elapsed_seconds: float) -> int:
    """How long the state machine waits before it next checks a stack created
    `elapsed_seconds` ago: until the expected end first, then short intervals that grow with
    the overrun (a quarter of it), between MIN_CHECK_SECONDS and MAX_CHECK_SECONDS.

    CloudFormation's own timeout (STACK_TIMEOUT_MINUTES) ends a stack that never finishes.
    """
    elapsed = max(0.0, float(elapsed_seconds))
    if elapsed < EXPECTED_STACK_SECONDS:
        return max(MIN_CHECK_SECONDS, round(EXPECTED_STACK_SECONDS - elapsed))
    overrun = elapsed - EXPECTED_STACK_SECONDS
    return int(min(MAX_CHECK_SECONDS, max(MIN_CHECK_SECONDS, overrun // 4)))


# ---------------------------------------------------------------------------- AWS
def ensure_network_stack(
    cfn: Any,
    tag: str,
    zones: Callable[[], Sequence[str]],
    client_token: str,
    *,
    replace_failed: bool = False,
    vpc_cidr: str = DEFAULT_VPC_CIDR,
    role_arn: str | None = None,
) -> NetworkStack:
    """The cluster's network stack, created if missing; inspect before create.

    `zones()` answers the two control-plane zones (`control_plane_zones`); it is called only
    when the stack has to be created, so a look at an existing stack costs no zone lookup.
    A ready stack is reused as it is (its template is not compared); one being created is
    reported not ready. A failed stack raises `NetworkStackFailed`, unless `replace_failed`
    (the retry path) and its creation failed: then it is deleted and, once gone, created anew;
    while its deletion runs the answer is not ready with status DELETE_IN_PROGRESS (call again
    later). The retry path should pass a new `client_token`.

    Raises:
        NetworkStackFailed: the stack failed, is being deleted, or lacks its outputs.
        AwsThrottled, AwsUnavailable, AwsAccessDenied, AwsRequestRejected: from CloudFormation.
    """
    name = stack_name(tag)
    stack = cfn_api.describe_stack(cfn, name)
    if stack is not None and replace_failed and stack.status in REPLACEABLE_STATUSES:
        cfn_api.delete_stack(cfn, name)
        stack = cfn_api.describe_stack(cfn, name)
    if stack is not None and replace_failed and stack.status == "DELETE_IN_PROGRESS":
        return NetworkStack(ready=False, status=stack.status, stack_name=name)
    if stack is None:
        template = network_stack_template(tag, zones(), vpc_cidr=vpc_cidr)
        cfn_api.create_stack(
            cfn,
            name,
            json.dumps(template, separators=(",", ":")),
            tags={HYPD_TAG_KEY: tag},
            client_request_token=client_token,
            timeout_minutes=STACK_TIMEOUT_MINUTES,
            role_arn=role_arn,
        )
        stack = cfn_api.describe_stack(cfn, name)
        if stack is None:  # not visible yet: CreateStack was accepted a moment ago
            return NetworkStack(ready=False, status="CREATE_IN_PROGRESS", stack_name=name)
    return _network_stack(cfn, stack)


def move_control_plane(
    cfn: Any,
    tag: str,
    valid_zones: Collection[str],
    *,
    client_token: str,
    role_arn: str | None = None,
    moved_before: bool = False,
) -> NetworkStack | None:
    """Ask CloudFormation to put the stack's control-plane subnets in `valid_zones`
    (`control_plane_moved`: resources are only added) after EKS refused a zone; the stack is
    then not ready (UPDATE_IN_PROGRESS) until the update ends: look again with
    `read_network_stack`. None when its control-plane subnets are all in `valid_zones` already
    (nothing to move: EKS refused something else).

    `moved_before`: this attempt already asked once; if that update rolled back, fail with its
    reason rather than ask again (a retry of the operation asks again).

    Raises:
        NotEnoughZones: fewer than two valid zones.
        NetworkStackFailed: the stack is missing or failed, or the earlier move rolled back.
    """
    name = stack_name(tag)
    stack = _live_stack(cfn, name)
    if moved_before and stack.status == "UPDATE_ROLLBACK_COMPLETE":
        reason = cfn_api.stack_failure_reason(cfn, stack.stack_id) or "no reason given"
        raise NetworkStackFailed(
            f"network stack {name} could not add control-plane subnets in the zones EKS "
            f"supports ({', '.join(sorted(valid_zones))}): {reason}",
            details={"awsErrorCode": stack.status, "stackName": name, "reason": reason},
        )
    current = _network_stack(cfn, stack)  # a failed stack raises NetworkStackFailed here
    if not current.ready:  # an update is running: wait for it
        return current
    moved = control_plane_moved(cfn_api.get_template(cfn, name), tag, valid_zones)
    if moved is None or not cfn_api.update_stack(
        cfn, name, json.dumps(moved, separators=(",", ":")), client_token, role_arn=role_arn
    ):
        return None
    return NetworkStack(ready=False, status="UPDATE_IN_PROGRESS", stack_name=name,
                        stack_id=stack.stack_id)


def read_network_stack(cfn: Any, tag: str) -> NetworkStack:
    """The stack's state after a wait: ready (with its ids) or still in progress.

    Raises:
        NetworkStackFailed: the stack failed, is being deleted, is missing or lacks outputs.
    """
    return _network_stack(cfn, _live_stack(cfn, stack_name(tag)))


def _live_stack(cfn: Any, name: str) -> Stack:
    """The stack `name`; `NetworkStackFailed` (StackNotFound) when there is none."""
    stack = cfn_api.describe_stack(cfn, name)
    if stack is None:
        raise NetworkStackFailed(
            f"network stack {name} does not exist",
            details={"awsErrorCode": "StackNotFound", "stackName": name},
        )
    return stack


def _network_stack(cfn: Any, stack: Stack) -> NetworkStack:
    if stack.status in IN_PROGRESS_STATUSES:
        return NetworkStack(
            ready=False, status=stack.status, stack_name=stack.name, stack_id=stack.stack_id
        )
    if stack.status not in READY_STATUSES:
        reason = cfn_api.stack_failure_reason(cfn, stack.stack_id) or "no reason given"
        retry = (
            " (a retry deletes and re-creates it)" if stack.status in REPLACEABLE_STATUSES else ""
        )
        raise NetworkStackFailed(
            f"network stack {stack.name} is {stack.status}: {reason}{retry}",
            details={
                "awsErrorCode": stack.status,
                "stackName": stack.name,
                "stackId": stack.stack_id,
                "reason": reason,
            },
        )
    missing = [key for key in _OUTPUTS if not stack.outputs.get(key)]
    if missing:
        raise NetworkStackFailed(
            f"network stack {stack.name} is {stack.status} but lacks the outputs "
            f"{', '.join(missing)}; it was not made by hypd's template",
            details={
                "awsErrorCode": "MissingOutputs",
                "stackName": stack.name,
                "missingOutputs": missing,
            },
        )
    outputs = stack.outputs
    return NetworkStack(
        ready=True,
        status=stack.status,
        stack_name=stack.name,
        stack_id=stack.stack_id,
        vpc_id=outputs["VpcId"],
        control_plane_subnet_ids=_split(outputs["ControlPlaneSubnetIds"]),
        public_subnet_ids=_split(outputs.get("PublicSubnetIds", "")),
        security_group_id=outputs["SecurityGroupId"],
        nat_gateway_id=outputs["NatGatewayId"],
        s3_endpoint_id=outputs["S3EndpointId"],
    )


def _split(value: str) -> list[str]:
    return [item for item in value.split(",") if item]
