"""One strategy per capacity kind: its input model and its domain steps in the stages every
capacity operation shares (what to ask HyperPod, how the change is verified, what the
operation's output says).

The tasks (`hypd.capacity.tasks`) dispatch on `STRATEGIES[operation.kind]` instead of on the
input's type. A strategy reads what its kind needs (the node a node action names, the stage an
earlier task recorded) and hands it to the pure rules (`changes`, `verify`). The kinds' own
facts (stages, state machine, lock) stay in `hypd.operations.kinds.SPECS`: the table has a
strategy for each of its capacity kinds, a `Verified` one where the spec has a verify stage
(tests/unit/capacity/test_strategies.py checks both). The stages only one family has (an
add's network, managed Karpenter's prerequisites, role and Kubernetes objects) are tasks of
their own that read the input with their family's model (`recorded`).

The checks a request gets before its operation starts are the API's (`hypd.capacity.service`),
not a strategy's: the API function runs without the Kubernetes layer, and the verify rules
build on `hypd.create.verify`, which imports the Kubernetes client.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from hypd import clock
from hypd.aws import sagemaker as sagemaker_api
from hypd.capacity import autoscaling, changes
from hypd.capacity import verify as checks
from hypd.capacity.inputs import (
    AddGroupInput,
    AutoscalingInput,
    CapacityInput,
    DeleteGroupInput,
    NodeActionInput,
    UpdateGroupInput,
)
from hypd.capacity.live import LiveCluster
from hypd.capacity.state import AutoscalingState
from hypd.errors import OperationStateError
from hypd.instance_groups.spec import group_spec
from hypd.operations.kinds import CAPACITY_KINDS
from hypd.operations.models import Operation, OperationKind
from hypd.operations.steps import Steps

if TYPE_CHECKING:
    from hypd.capacity.services import CapacityServices

In = TypeVar("In", bound=CapacityInput)
Nodes = checks.Nodes


@dataclass(frozen=True)
class Context:
    """What a stage task hands its kind's strategy: the operation as recorded, the live
    cluster, and the function's services (clients, stores, settings)."""

    operation: Operation
    live: LiveCluster
    services: CapacityServices

    @property
    def progress(self) -> dict[str, Any]:
        """What the hyperpod stage's current attempt has recorded (`calls`, ...)."""
        return dict(self.operation.stage("hyperpod").progress or {})

    @property
    def calls(self) -> int:
        """How many times the hyperpod stage's current attempt has sent its change."""
        return int(self.progress.get("calls") or 0)

    def group_nodes(self, group: str) -> list[dict[str, Any]]:
        """HyperPod's nodes of one instance group (ListClusterNodes)."""
        return sagemaker_api.list_cluster_nodes(
            self.services.client("sagemaker"), self.live.name, instance_group=group
        )


class Strategy(ABC, Generic[In]):
    """A capacity kind's steps in the hyperpod stage and at the operation's end."""

    input_model: type[In]

    def read(self, operation: Operation) -> In:
        """The operation's recorded input, as this kind's model."""
        return self.input_model.model_validate(operation.input)

    @abstractmethod
    def ask(self, request: In, context: Context) -> changes.Decision:
        """The hyperpod stage: the change is there, or what to send HyperPod, or to wait."""

    @abstractmethod
    def result(self, request: In, context: Context) -> dict[str, Any]:
        """What the operation's output says of the change, after its tag and warnings."""


class Verified(Strategy[In]):
    """A kind whose verify stage waits for HyperPod and Kubernetes to show the change (the
    instance-group kinds and the node actions)."""

    @abstractmethod
    def group(self, request: In) -> str:
        """The instance group the change is about."""

    @abstractmethod
    def verify(self, request: In, context: Context, kube_nodes: Nodes) -> checks.Check:
        """Whether the change shows, or the problems still open."""

    @abstractmethod
    def first_look(self, request: In, live: LiveCluster) -> int:
        """Seconds after the change was sent when it should be done: the verify stage's first
        look."""

    def deep_health_checks(self, request: In, live: LiveCluster) -> bool:
        """Whether the group runs deep health checks (the verify stage waits longer)."""
        details = live.group(self.group(request)) or {}
        return bool(details.get("OnStartDeepHealthChecks"))


def _group_result(live: LiveCluster, name: str) -> dict[str, Any]:
    view = live.view(name)
    return {"instanceGroup": view.model_dump(mode="json", by_alias=True) if view else None}


# ---------------------------------------------------------------------------- instance groups
class AddGroup(Verified[AddGroupInput]):
    input_model = AddGroupInput

    def group(self, request: AddGroupInput) -> str:
        return request.group.name

    def ask(self, request: AddGroupInput, context: Context) -> changes.Decision:
        live = context.live
        network = context.operation.stage("network").output or {}
        subnet = str(network.get("subnetId") or live.subnet_id)
        spec = group_spec(
            request.group,
            execution_role_arn=context.services.settings.hyperpod_execution_role_arn,
            override_subnet=subnet if subnet != live.subnet_id else None,
            security_group_id=live.security_group_ids[0],
        )
        return changes.add_group(live, request, spec, context.calls)

    def verify(
        self, request: AddGroupInput, context: Context, kube_nodes: Nodes
    ) -> checks.Check:
        name = request.group.name
        nodes = context.group_nodes(name)
        return checks.group_check(context.live, name, request.group.count, nodes, kube_nodes)

    def first_look(self, request: AddGroupInput, live: LiveCluster) -> int:
        if not request.group.count:
            return checks.CHECK_SECONDS
        return checks.first_look(checks.boot_time(bool(request.group.deep_health_checks)))

    def deep_health_checks(self, request: AddGroupInput, live: LiveCluster) -> bool:
        return super().deep_health_checks(request, live) or bool(
            request.group.deep_health_checks
        )

    def result(self, request: AddGroupInput, context: Context) -> dict[str, Any]:
        return {
            **_group_result(context.live, request.group.name),
            "subnet": context.operation.stage("network").output,
        }


Existing = TypeVar("Existing", UpdateGroupInput, DeleteGroupInput)


class _ExistingGroup(Verified[Existing]):
    """A change of a group the cluster has (its input names it)."""

    def group(self, request: Existing) -> str:
        return request.group

    def result(self, request: Existing, context: Context) -> dict[str, Any]:
        return _group_result(context.live, request.group)


class UpdateGroup(_ExistingGroup[UpdateGroupInput]):
    input_model = UpdateGroupInput

    def ask(self, request: UpdateGroupInput, context: Context) -> changes.Decision:
        return changes.update_group(context.live, request, context.calls)

    def verify(
        self, request: UpdateGroupInput, context: Context, kube_nodes: Nodes
    ) -> checks.Check:
        details = context.live.group(request.group) or {}
        count = int(request.changes.get("InstanceCount", details.get("TargetCount") or 0))
        nodes = context.group_nodes(request.group)
        return checks.group_check(context.live, request.group, count, nodes, kube_nodes)

    def first_look(self, request: UpdateGroupInput, live: LiveCluster) -> int:
        count = request.changes.get("InstanceCount")
        if count is None:
            return checks.CHECK_SECONDS
        if int(count) <= request.previous_count:
            return checks.first_look(checks.NODE_TERMINATE)
        details = live.group(request.group) or {}
        return checks.first_look(
            checks.boot_time(bool(details.get("OnStartDeepHealthChecks")))
        )


class DeleteGroup(_ExistingGroup[DeleteGroupInput]):
    input_model = DeleteGroupInput

    def ask(self, request: DeleteGroupInput, context: Context) -> changes.Decision:
        return changes.delete_group(context.live, request, context.calls)

    def verify(
        self, request: DeleteGroupInput, context: Context, kube_nodes: Nodes
    ) -> checks.Check:
        return checks.group_gone_check(context.live, request.group, kube_nodes)

    def first_look(self, request: DeleteGroupInput, live: LiveCluster) -> int:
        return checks.first_look(checks.GROUP_DELETE)


# ---------------------------------------------------------------------------- nodes
NodeCheck = Callable[[str, str, LiveCluster, Nodes, Nodes], checks.Check]


@dataclass(frozen=True)
class NodeAction(Verified[NodeActionInput]):
    """reboot-node, replace-node, delete-node: one batch call, then the node's outcome."""

    input_model = NodeActionInput

    takes: timedelta
    """How long HyperPod takes to carry the action out."""
    check: NodeCheck
    """The verify stage's rule (`verify.node_rebooted`, `node_replaced`, `node_deleted`)."""
    missing_fails: bool
    """A node gone before the call fails the stage (else the action has nothing left to do)."""

    def group(self, request: NodeActionInput) -> str:
        return request.group

    def decide(
        self, node: Mapping[str, Any] | None, request: NodeActionInput, calls: int
    ) -> changes.Decision:
        return changes.node_action(node, request, calls, missing_fails=self.missing_fails)

    def ask(self, request: NodeActionInput, context: Context) -> changes.Decision:
        node = sagemaker_api.describe_cluster_node(
            context.services.client("sagemaker"), context.live.name, request.node_id
        )
        return self.decide(node, request, context.calls)

    def verify(
        self, request: NodeActionInput, context: Context, kube_nodes: Nodes
    ) -> checks.Check:
        nodes = context.group_nodes(request.group)
        return self.check(request.node_id, request.group, context.live, nodes, kube_nodes)

    def first_look(self, request: NodeActionInput, live: LiveCluster) -> int:
        return checks.first_look(self.takes)

    def result(self, request: NodeActionInput, context: Context) -> dict[str, Any]:
        return {"node": context.operation.stage("verify").output}


# ---------------------------------------------------------------------------- autoscaling
class _Autoscaling(Strategy[AutoscalingInput]):
    input_model = AutoscalingInput

    def result(self, request: AutoscalingInput, context: Context) -> dict[str, Any]:
        """Records what the operation made (or that autoscaling is off)."""
        role = context.operation.stage("role").output or {}
        on = request.enabled
        state = AutoscalingState(
            enabled=on,
            settings=request.settings if on else None,
            role_arn=role.get("roleArn") if on else None,
            node_class=autoscaling.OBJECT_NAME if on else None,
            node_pool=autoscaling.OBJECT_NAME if on else None,
            operation_id=context.operation.id,
            updated_at=clock.now_iso(),
        )
        context.services.autoscaling.put(request.tag, state)
        return {"autoscaling": state.model_dump(mode="json", by_alias=True)}


class EnableAutoscaling(_Autoscaling):
    def ask(self, request: AutoscalingInput, context: Context) -> changes.Decision:
        role = Steps.output_of(context.operation, "role", autoscaling.RoleOutput)
        return changes.enable_autoscaling(
            context.live,
            role.role_arn,
            context.calls,
            enable_sent=bool(context.progress.get("enableSent")),
        )


class DisableAutoscaling(_Autoscaling):
    def ask(self, request: AutoscalingInput, context: Context) -> changes.Decision:
        return changes.disable_autoscaling(context.live, context.calls)


K = OperationKind
STRATEGIES: Mapping[OperationKind, Strategy[Any]] = {
    K.ADD_INSTANCE_GROUP: AddGroup(),
    K.UPDATE_INSTANCE_GROUP: UpdateGroup(),
    K.DELETE_INSTANCE_GROUP: DeleteGroup(),
    K.REBOOT_NODE: NodeAction(checks.NODE_REBOOT, checks.node_rebooted, missing_fails=True),
    K.REPLACE_NODE: NodeAction(checks.NODE_BOOT, checks.node_replaced, missing_fails=False),
    K.DELETE_NODE: NodeAction(checks.NODE_TERMINATE, checks.node_deleted, missing_fails=False),
    K.ENABLE_AUTOSCALING: EnableAutoscaling(),
    K.DISABLE_AUTOSCALING: DisableAutoscaling(),
}
"""Every capacity kind's strategy (`CAPACITY_KINDS`, the kinds `SPECS` marks as capacity)."""
del K


def strategy_of(kind: OperationKind) -> Strategy[Any]:
    """The strategy of a capacity kind.

    Raises:
        OperationStateError: `kind` is not a capacity kind.
    """
    if kind not in CAPACITY_KINDS:
        raise OperationStateError(f"a {kind.value} operation is not a capacity operation")
    return STRATEGIES[kind]


def verified_of(kind: OperationKind) -> Verified[Any]:
    """The strategy of a kind with a verify stage.

    Raises:
        OperationStateError: the kind has no verify stage.
    """
    strategy = strategy_of(kind)
    if not isinstance(strategy, Verified):
        raise OperationStateError(f"a {kind.value} operation has no verify stage")
    return strategy


def recorded(operation: Operation, model: type[In]) -> In:
    """The input of an operation whose kind records `model` (the stages only one family has).

    Raises:
        OperationStateError: the operation's kind records another input.
    """
    if strategy_of(operation.kind).input_model is not model:
        raise OperationStateError(
            f"a {operation.kind.value} operation records no {model.__name__}"
        )
    return model.model_validate(operation.input)
