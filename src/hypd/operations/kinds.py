"""Every operation kind declared once: its stages, state machine, lock, and whether it resumes.

The one table of the facts of each kind (docs/operation-model.md). What used to hold its own
copy reads it: the stages a new operation gets (`lifecycle.new_operation`), whether a retry
resumes (`lifecycle.retry`), the environment variable naming the kind's state machine
(`config`), the lock an operation takes (`lock_scope`); `tests/build/test_operation_specs.py`
checks the template's repeated parts (the state machines, the API's environment and grants, the
rule that sees executions end) against it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from hypd.operations.models import OperationKind


class Lock(StrEnum):
    """What an operation of a kind locks while it runs: at most one running per scope."""

    DISCOVER = "discover"
    """The account's discovery: one discover at a time."""
    CLUSTER = "cluster"
    """Its cluster (`cluster#{tag}`): a create and every capacity operation, one at a time."""
    WORKLOAD = "workload"
    """One workload of a cluster (`workload#{tag}#{namespace}/{name}`): a job or an endpoint
    changes while its cluster scales, one operation at a time per workload."""


@dataclass(frozen=True)
class OperationSpec:
    kind: OperationKind
    stages: tuple[str, ...]
    """The ordered stages, as clients see them."""
    state_machine: str
    """The template's logical id of the state machine that runs it."""
    lock: Lock
    resumes: bool
    """A retry resumes at the first stage that did not succeed (its tasks never repeat a stage
    that did); otherwise a retry reruns every stage (discover: cheap and idempotent)."""
    capacity: bool = False
    """Changes an existing cluster's capacity (hypd.capacity)."""
    fails_cluster: bool = False
    """Its failure (or cancellation) marks its cluster record FAILED: the cluster it makes does
    not exist as asked (a create). Other kinds leave the record as it is."""

    @property
    def state_machine_variable(self) -> str:
        """The environment variable that holds the state machine's ARN (set by template.yaml):
        `InstanceGroupStateMachine` -> `INSTANCE_GROUP_STATE_MACHINE_ARN`."""
        return state_machine_variable(self.state_machine)


def state_machine_variable(logical_id: str) -> str:
    words = re.findall(r"[A-Z][a-z0-9]*", logical_id)
    return "_".join(word.upper() for word in words) + "_ARN"


_HYPERPOD_VERIFY = ("hyperpod", "verify")


def _capacity(kind: OperationKind, stages: tuple[str, ...], state_machine: str) -> OperationSpec:
    return OperationSpec(kind, stages, state_machine, Lock.CLUSTER, resumes=True, capacity=True)


K = OperationKind
SPECS: Mapping[OperationKind, OperationSpec] = {
    spec.kind: spec
    for spec in (
        OperationSpec(K.DISCOVER, ("eks-clusters", "hyperpod-clusters", "record"),
                      "DiscoverStateMachine", Lock.DISCOVER, resumes=False),
        OperationSpec(K.CREATE_CLUSTER,
                      ("network", "eks", "dependencies", "hyperpod", "storage", "verify",
                       "features"),
                      "CreateClusterStateMachine", Lock.CLUSTER, resumes=True,
                      fails_cluster=True),
        _capacity(K.ADD_INSTANCE_GROUP, ("network", "hyperpod", "verify"),
                  "InstanceGroupStateMachine"),
        _capacity(K.UPDATE_INSTANCE_GROUP, _HYPERPOD_VERIFY, "InstanceGroupStateMachine"),
        _capacity(K.DELETE_INSTANCE_GROUP, _HYPERPOD_VERIFY, "InstanceGroupStateMachine"),
        _capacity(K.REBOOT_NODE, _HYPERPOD_VERIFY, "NodeActionStateMachine"),
        _capacity(K.REPLACE_NODE, _HYPERPOD_VERIFY, "NodeActionStateMachine"),
        _capacity(K.DELETE_NODE, _HYPERPOD_VERIFY, "NodeActionStateMachine"),
        _capacity(K.ENABLE_AUTOSCALING, ("prerequisites", "role", "hyperpod", "kubernetes"),
                  "EnableAutoscalingStateMachine"),
        _capacity(K.DISABLE_AUTOSCALING, ("kubernetes", "hyperpod", "role"),
                  "DisableAutoscalingStateMachine"),
        OperationSpec(K.SET_FEATURES, ("prerequisites", "addons", "verify", "cleanup"),
                      "SetFeaturesStateMachine", Lock.CLUSTER, resumes=True),
        OperationSpec(K.SET_TEAM, ("quota",), "TeamStateMachine", Lock.CLUSTER, resumes=True),
        OperationSpec(K.DELETE_TEAM, ("quota",), "TeamStateMachine", Lock.CLUSTER,
                      resumes=True),
        OperationSpec(K.SUBMIT_TRAINING_JOB, ("submit",), "WorkloadStateMachine",
                      Lock.WORKLOAD, resumes=True),
        OperationSpec(K.DELETE_TRAINING_JOB, ("delete",), "WorkloadStateMachine",
                      Lock.WORKLOAD, resumes=True),
        OperationSpec(K.DEPLOY_ENDPOINT, ("submit", "deploy", "register"),
                      "WorkloadStateMachine", Lock.WORKLOAD, resumes=True),
        OperationSpec(K.DELETE_ENDPOINT, ("delete",), "WorkloadStateMachine", Lock.WORKLOAD,
                      resumes=True),
        OperationSpec(K.DELETE_CLUSTER,
                      ("workloads", "governance", "hyperpod", "addons", "eks", "storage",
                       "network", "roles", "record"),
                      "DeleteClusterStateMachine", Lock.CLUSTER, resumes=True),
        OperationSpec(K.UPGRADE_CLUSTER, ("control-plane", "addons", "chart", "nodes", "verify"),
                      "UpgradeClusterStateMachine", Lock.CLUSTER, resumes=True),
    )
}
del K

CAPACITY_KINDS = frozenset(kind for kind, spec in SPECS.items() if spec.capacity)
"""The kinds that change an existing cluster's capacity (hypd.capacity)."""


def spec_of(kind: OperationKind) -> OperationSpec:
    return SPECS[kind]


def lock_scope(kind: OperationKind, cluster_tag: str | None = None,
               workload: str | None = None) -> str:
    """The lock an operation of `kind` takes (on cluster `cluster_tag` for a cluster's lock;
    on `workload`, ``{namespace}/{name}``, of that cluster for a workload's).

    Raises:
        ValueError: the kind locks its cluster (or a workload) and no tag (or workload) is given.
    """
    lock = SPECS[kind].lock
    if lock is Lock.DISCOVER:
        return Lock.DISCOVER.value
    if not cluster_tag:
        raise ValueError(f"a {kind.value} operation locks its cluster: a cluster tag is needed")
    if lock is Lock.WORKLOAD:
        if not workload:
            raise ValueError(f"a {kind.value} operation locks its workload: name it")
        return f"{Lock.WORKLOAD.value}#{cluster_tag}#{workload}"
    return cluster_lock(cluster_tag)


def cluster_lock(tag: str) -> str:
    """The lock scope of every operation on a cluster: one at a time per tag."""
    return f"{Lock.CLUSTER.value}#{tag}"


def describe_scope(scope: str) -> str:
    """A lock scope in a user's words (``cluster#demo`` -> ``cluster demo``,
    ``workload#demo#ml/llama`` -> ``workload ml/llama of cluster demo``): a message never
    shows a storage key."""
    kind, _, rest = scope.partition("#")
    if kind == Lock.CLUSTER.value and rest:
        return f"cluster {rest}"
    if kind == Lock.WORKLOAD.value and "#" in rest:
        tag, _, workload = rest.partition("#")
        return f"workload {workload} of cluster {tag}"
    if kind == Lock.DISCOVER.value:
        return "the account's discovery"
    return scope
