"""Writes the operations' state machines (every statemachines/*.asl.json) from one readable
description each.

The create pipeline has six stages and about thirty states, the capacity machines a dozen each;
written by hand, every Task would repeat the same Retry and Catch blocks. This script builds the
states from a few helpers so the retry policy exists once, and
`tests/build/test_statemachines.py` fails when a JSON file is not what this script writes. Run
it after changing it:

    .venv/bin/python statemachines/generate.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

State = dict[str, Any]


class States(dict[str, State]):
    """The States map, remembering which stage each state belongs to (`stage` is set before
    a stage's states are added; None for the operation's own bookkeeping states)."""

    def __init__(self) -> None:
        super().__init__()
        self.stage: str | None = None
        self.stage_of: dict[str, str] = {}
        self.waiting: set[str] = set()
        """States that exist only because something is being waited for."""

    def __setitem__(self, name: str, state: State) -> None:
        if self.stage is not None:
            self.stage_of[name] = self.stage
        super().__setitem__(name, state)

LAMBDA_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]
TEMPORARY_ERRORS = [
    "AwsThrottled",
    "AwsUnavailable",
    "ConcurrentUpdate",
    "SubnetCidrConflict",
    "KubernetesUnavailable",
    "ChartDownloadFailed",
    "ClusterBusy",
]
"""Every hypd.errors.TemporaryError subclass a task may raise (a build test checks the list is
complete); nothing else is retried."""

RETRY: list[dict[str, Any]] = [
    {
        "ErrorEquals": LAMBDA_ERRORS,
        "IntervalSeconds": 2,
        "MaxAttempts": 6,
        "BackoffRate": 2,
        "JitterStrategy": "FULL",
    },
    {
        "ErrorEquals": TEMPORARY_ERRORS,
        "IntervalSeconds": 5,
        "MaxAttempts": 6,
        "BackoffRate": 2,
        "MaxDelaySeconds": 120,
        "JitterStrategy": "FULL",
    },
]

FAILURE = "Record failure"
OPERATION_TASKS = "${OperationTasksFunctionArn}"
CLUSTER_TASKS = "${ClusterTasksFunctionArn}"
CAPACITY_TASKS = "${CapacityTasksFunctionArn}"
DISCOVER_TASKS = "${DiscoverFunctionArn}"
FEATURE_TASKS = "${FeatureTasksFunctionArn}"
TEARDOWN_TASKS = "${TeardownTasksFunctionArn}"
CALLBACK_INVOKE = "arn:${Partition}:states:::lambda:invoke.waitForTaskToken"
"""The callback integration, in the deployment's partition (`arn:aws-cn:states:::...` in China:
an `arn:aws:` one there is accepted at creation and fails every execution)."""

STAGES = ("network", "eks", "dependencies", "hyperpod", "storage", "verify", "features")
"""hypd.operations.models.STAGES[create-cluster]; a build test checks they agree."""

HYPERPOD_WAIT_SECONDS = 1800  # hypd.operations.waiters.TOKEN_WAIT_SECONDS (a build test)
"""How long one task-token wait for HyperPod lasts before the fallback poll looks itself
(HyperPod creation takes ~15-25 minutes; the state-change event normally ends it sooner)."""


def _catch() -> list[dict[str, Any]]:
    return [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": FAILURE}]


def lambda_task(
    comment: str,
    name: str,
    *,
    resource: str = CLUSTER_TASKS,
    timeout: int = 300,
    extra: dict[str, Any] | None = None,
) -> State:
    """A Lambda task `{"task": name, "operationId"}` (and the calling execution's name, for a
    kind's own tasks) with hypd's Retry; where it goes next is the caller's."""
    return {
        "Type": "Task",
        "Comment": comment,
        "Resource": resource,
        "Parameters": {
            "task": name,
            "operationId.$": "$.operationId",
            **({"executionName.$": "$$.Execution.Name"} if resource != OPERATION_TASKS else {}),
            **(extra or {}),
        },
        "TimeoutSeconds": timeout,
        "Retry": RETRY,
    }


def task(
    comment: str,
    name: str,
    next_state: str | None,
    *,
    resource: str = CLUSTER_TASKS,
    result_path: str | None = "$.step",
    timeout: int = 300,
    extra: dict[str, Any] | None = None,
) -> State:
    """A Lambda task with hypd's Retry and Catch; `next_state` None ends the execution."""
    return {
        **lambda_task(comment, name, resource=resource, timeout=timeout, extra=extra),
        "ResultPath": result_path,
        "Catch": _catch(),
        **({"Next": next_state} if next_state is not None else {"End": True}),
    }


def begin(next_state: str) -> State:
    """The operation's first state: mark it RUNNING with the execution's ARN."""
    return task(
        "Mark the operation RUNNING.",
        "begin",
        next_state,
        resource=OPERATION_TASKS,
        result_path=None,
        timeout=30,
        extra={"executionArn.$": "$$.Execution.Id"},
    )


def recorder(name: str, next_state: str, *, resource: str, comment: str) -> State:
    """The one failure recorder every Catch goes to (the `fail-...` task of the kind): it has no
    Catch of its own."""
    return {
        **lambda_task(comment, name, resource=resource, timeout=30, extra={"error.$": "$.error"}),
        "ResultPath": None,
        "Next": next_state,
    }


KEEPS_EARLIER_STAGES = "Mark the failing stage and the operation FAILED (earlier stages stay)."


def poll(
    states: States,
    *,
    first: str,
    first_comment: str,
    first_task: str,
    ready_choice: str,
    wait: str,
    wait_comment: str,
    check: str,
    check_comment: str,
    check_task: str,
    then: str,
    resource: str = CLUSTER_TASKS,
) -> None:
    """first task -> (ready? then : wait -> check task -> ready? ...).

    Every task answers `{"ready": bool, "waitSeconds": int}`; the wait length is chosen by the
    task from the resource's expected duration (first look near its expected end, then short
    intervals), not fixed here.
    """
    states[first] = task(first_comment, first_task, ready_choice, resource=resource)
    states[ready_choice] = {
        "Type": "Choice",
        "Choices": [{"Variable": "$.step.ready", "BooleanEquals": True, "Next": then}],
        "Default": wait,
    }
    states[wait] = {
        "Type": "Wait",
        "Comment": wait_comment,
        "SecondsPath": "$.step.waitSeconds",
        "Next": check,
    }
    states[check] = task(check_comment, check_task, ready_choice, resource=resource)
    states.waiting |= {ready_choice, wait, check}


def stage_poll(
    states: States,
    task_name: str,
    *,
    title: str,
    comment: str,
    wait_comment: str,
    check_comment: str,
    then: str,
    resource: str,
    ready_word: str = "done",
) -> None:
    """One polled stage whose states are named by its title: the task `task_name` (for
    example ``workload-submit``) and ``{task_name}-check`` after each Wait, the Choice
    ``{title}: {ready_word}?``, the Wait ``{title}: wait`` and the look ``{title}: look again``."""
    poll(
        states,
        first=title,
        first_comment=comment,
        first_task=task_name,
        ready_choice=f"{title}: {ready_word}?",
        wait=f"{title}: wait",
        wait_comment=wait_comment,
        check=f"{title}: look again",
        check_comment=check_comment,
        check_task=f"{task_name}-check",
        then=then,
        resource=resource,
    )


def start(states: States, first_state: dict[str, str]) -> None:
    """Start (mark RUNNING) -> "Resume where?": the first stage that has not succeeded."""
    stages = list(first_state)
    if len(stages) == 1:  # one stage: nowhere else to resume (a Choice needs a choice)
        states["Start"] = begin(first_state[stages[0]])
        return
    states["Start"] = begin("Resume where?")
    states["Resume where?"] = {
        "Type": "Choice",
        "Comment": "A retry resumes at the first stage that has not succeeded.",
        "Choices": [
            {
                "And": [
                    {"Variable": "$.resumeFrom", "IsPresent": True},
                    {"Variable": "$.resumeFrom", "IsString": True},
                    {"Variable": "$.resumeFrom", "StringEquals": stage},
                ],
                "Next": first_state[stage],
            }
            for stage in stages[1:]
        ],
        "Default": first_state[stages[0]],
    }


def definition() -> dict[str, Any]:
    return _definition(States())


def described_states() -> States:
    """The states with their stages and which of them only wait (the benchmark groups by it)."""
    states = States()
    _definition(states)
    return states


CREATE_PARALLEL = "Build EKS side and storage"
EKS_SIDE_RESUME = "EKS side: resume where?"
STORAGE_RESUME = "Storage: resume where?"
CREATE_BRANCHES = (("eks", "dependencies", "hyperpod"), ("storage",))
"""The create's Parallel: the EKS chain beside the storage, which needs only the network."""


def _definition(states: States) -> dict[str, Any]:
    start(
        states,
        {
            "network": "Create network stack",
            **{stage: CREATE_PARALLEL for branch in CREATE_BRANCHES for stage in branch},
            "verify": "Verify cluster",
            "features": "Turn on features",
        },
    )

    states.stage = "network"
    # ---- network: the VPC stack, then the compute subnet from the one network function
    poll(
        states,
        first="Create network stack",
        first_comment="CloudFormation stack hypd-TAG-network: VPC, control-plane subnets, NAT.",
        first_task="create-network-stack",
        ready_choice="Network stack ready?",
        wait="Wait for network stack",
        wait_comment="CloudFormation is creating the VPC.",
        check="Check network stack",
        check_comment="Read the stack's status and outputs.",
        check_task="check-network-stack",
        then="Ensure compute subnet",
    )
    states["Ensure compute subnet"] = task(
        "The HyperPod compute subnet: explicit, else the zone's existing one, else a new /20.",
        "ensure-compute-subnet",
        CREATE_PARALLEL,
    )

    states.stage = None
    states[CREATE_PARALLEL] = {
        "Type": "Parallel",
        "Comment": "Once the network exists: the EKS cluster, its add-ons and the HyperPod "
        "cluster, beside the storage (the S3 bucket checked, or the FSx file system created).",
        "Branches": [
            _branch_of(_eks_side, EKS_SIDE_RESUME, states),
            _branch_of(_storage, STORAGE_RESUME, states),
        ],
        "ResultPath": None,
        "Catch": _catch(),
        "Next": "Verify cluster",
    }
    _verify_and_features(states)
    return {
        "Comment": (
            "Create a HyperPod cluster end to end: network, then eks, dependencies and "
            "hyperpod beside storage, then verify and features. Each stage is recorded on "
            "the operation (GET /operations/{id}); a failure never rolls back an earlier "
            "stage, and POST /operations/{id}/retry resumes at the stage that failed."
        ),
        "StartAt": "Start",
        "States": states,
    }


def _resume_choice(states: States, name: str, stages: tuple[str, ...],
                   first_state: dict[str, str], done: str) -> None:
    """A branch's first state: skip the stages of the branch that already SUCCEEDED (every
    execution's input says in `done`: stage -> bool); stages succeed in order, so the last one
    done decides."""
    following = [*(first_state[s] for s in stages[1:]), done]
    states[name] = {
        "Type": "Choice",
        "Comment": "A retry resumes after the stages of this branch that succeeded.",
        "Choices": [{"Variable": f"$.done.{stage}", "BooleanEquals": True, "Next": nxt}
                    for stage, nxt in reversed(list(zip(stages, following, strict=True)))],
        "Default": first_state[stages[0]],
    }
    states[done] = {"Type": "Pass", "End": True}


def _branch_of(build: Any, start_at: str, into: States) -> dict[str, Any]:
    """A Parallel branch built by `build(branch_states)` starting at `start_at`. Its tasks
    have no Catch to the failure recorder (a branch cannot go there: the Parallel's Catch
    does); other catches (a task-token timeout's) stay."""
    branch = States()
    build(branch)
    for state in branch.values():
        kept = [c for c in state.get("Catch", []) if c.get("Next") != FAILURE]
        if kept:
            state["Catch"] = kept
        else:
            state.pop("Catch", None)
    into.stage_of.update(branch.stage_of)
    into.waiting |= branch.waiting
    return {"StartAt": start_at, "States": dict(branch)}


def _eks_side(states: States) -> None:
    """eks -> dependencies -> hyperpod (a Parallel branch)."""
    _resume_choice(states, EKS_SIDE_RESUME, CREATE_BRANCHES[0], {
        "eks": "Create EKS cluster", "dependencies": "Install add-ons",
        "hyperpod": "Create HyperPod cluster"}, "EKS side done")
    states.stage = "eks"
    # ---- eks
    poll(
        states,
        first="Create EKS cluster",
        first_comment="EKS control plane hypd-TAG (API authentication mode).",
        first_task="create-eks-cluster",
        ready_choice="EKS cluster active?",
        wait="Wait for EKS cluster",
        wait_comment="EKS is creating the control plane (about 10 minutes).",
        check="Check EKS cluster",
        check_comment="Read the cluster's status.",
        check_task="check-eks-cluster",
        then="Grant cluster access",
    )
    states["Grant cluster access"] = task(
        "Access entry with cluster-admin for the control plane's own role.",
        "grant-cluster-access",
        "Install add-ons",
    )

    states.stage = "dependencies"
    # ---- dependencies
    poll(
        states,
        first="Install add-ons",
        first_comment="EKS add-ons in dependency order, each once its prerequisites are active.",
        first_task="install-addons",
        ready_choice="Add-ons active?",
        wait="Wait for add-ons",
        wait_comment="EKS is installing add-ons.",
        check="Check add-ons",
        check_comment="Read the add-ons; install those whose prerequisites became active.",
        check_task="check-addons",
        then="Apply HyperPod dependency chart",
    )
    states["Apply HyperPod dependency chart"] = task(
        "Render the HyperPod dependency chart and server-side apply it.",
        "apply-dependency-chart",
        "Create HyperPod cluster",
    )

    states.stage = "hyperpod"
    # ---- hyperpod: a task-token wait woken by the cluster's state-change event
    poll(
        states,
        first="Create HyperPod cluster",
        first_comment=(
            "HyperPod cluster hypd-TAG on the EKS cluster (node recovery Automatic, continuous "
            "provisioning). On a retry, a cluster that ended Failed is deleted first."
        ),
        first_task="create-hyperpod-cluster",
        ready_choice="HyperPod cluster requested?",
        wait="Wait for failed cluster deletion",
        wait_comment="HyperPod is deleting the failed cluster of an earlier attempt.",
        check="Replace HyperPod cluster",
        check_comment="Create the cluster once the failed one is gone.",
        check_task="replace-hyperpod-cluster",
        then="Wait for HyperPod cluster",
    )
    states["Wait for HyperPod cluster"] = {
        "Type": "Task",
        "Comment": (
            "Parks a task token until the 'SageMaker HyperPod Cluster State Change' event says "
            "InService (or Failed). On timeout the fallback poll looks itself."
        ),
        "Resource": CALLBACK_INVOKE,
        "Parameters": {
            "FunctionName": CLUSTER_TASKS,
            "Payload": {
                "task": "await-hyperpod-cluster",
                "operationId.$": "$.operationId",
                "executionName.$": "$$.Execution.Name",
                "taskToken.$": "$$.Task.Token",
            },
        },
        "TimeoutSeconds": HYPERPOD_WAIT_SECONDS,
        "Retry": RETRY,
        "ResultPath": "$.step",
        "Catch": [
            {
                "ErrorEquals": ["States.Timeout"],
                "ResultPath": None,
                "Next": "Check HyperPod cluster",
            },
            *_catch(),
        ],
        "Next": "Record HyperPod cluster",
    }
    states["Check HyperPod cluster"] = task(
        "Fallback poll: the state-change event did not arrive in time.",
        "check-hyperpod-cluster",
        "HyperPod cluster in service?",
    )
    states["HyperPod cluster in service?"] = {
        "Type": "Choice",
        "Choices": [
            {"Variable": "$.step.ready", "BooleanEquals": True, "Next": "Record HyperPod cluster"}
        ],
        "Default": "Wait for HyperPod cluster",
    }
    states.waiting |= {
        "Wait for HyperPod cluster",
        "Check HyperPod cluster",
        "HyperPod cluster in service?",
    }
    states["Record HyperPod cluster"] = task(
        "Record the HyperPod cluster and its instance groups.",
        "record-hyperpod-cluster",
        "EKS side done",
    )


def _storage(states: States) -> None:
    """storage (a Parallel branch): it needs only the network."""
    _resume_choice(states, STORAGE_RESUME, CREATE_BRANCHES[1], {"storage": "Create storage"},
                   "Storage done")
    states.stage = "storage"
    poll(
        states,
        first="Create storage",
        first_comment="The S3 bucket checked, or the FSx for Lustre file system created in the "
        "compute subnet.",
        first_task="create-storage",
        ready_choice="Storage ready?",
        wait="Wait for storage",
        wait_comment="The file system is being created.",
        check="Check storage",
        check_comment="Read the file system until it is AVAILABLE.",
        check_task="check-storage",
        then="Storage done",
    )


def _verify_and_features(states: States) -> None:
    states.stage = "verify"
    # ---- verify
    poll(
        states,
        first="Verify cluster",
        first_comment="The storage's volume and claim applied; nodes joined and schedulable, "
        "the claim bound.",
        first_task="verify-cluster",
        ready_choice="Cluster verified?",
        wait="Wait for nodes",
        wait_comment="Nodes are joining the cluster.",
        check="Check cluster",
        check_comment="Look at the nodes and the claim again.",
        check_task="check-verification",
        then="Turn on features",
    )

    states.stage = "features"
    # ---- features: the request's managed features, by the reconciler set-features runs
    poll(
        states,
        first="Turn on features",
        first_comment="The managed features the request names, prerequisites first (nothing "
        "when it names none): docs/features.md.",
        first_task="create-features",
        ready_choice="Features ready?",
        wait="Wait for features",
        wait_comment="Add-ons and settings are on their way.",
        check="Check features",
        check_comment="Read the features again and do what is still missing.",
        check_task="create-features-check",
        then="Create succeeded",
        resource=FEATURE_TASKS,
    )
    states.stage = None
    states["Create succeeded"] = task(
        "Mark the cluster ACTIVE and the operation SUCCEEDED with its summary.",
        "finish-create",
        "Done",
        result_path=None,
    )
    states["Done"] = {"Type": "Succeed"}

    states[FAILURE] = recorder(
        "fail-create", "Failed", resource=CLUSTER_TASKS, comment=KEEPS_EARLIER_STAGES
    )
    states["Failed"] = {"Type": "Fail", "Error": "CreateClusterFailed"}


# ---------------------------------------------------------------------------- capacity
CAPACITY_HYPERPOD_WAIT_SECONDS = HYPERPOD_WAIT_SECONDS
"""How long a capacity change's task-token wait lasts before it looks itself (HyperPod applies
an update in minutes; the state-change event normally ends the wait)."""


def finish(
    states: States, *, done: str, done_comment: str, resource: str, failed_error: str,
    tasks: tuple[str, str] = ("finish-capacity", "fail-capacity"),
) -> None:
    """The success recorder (`done`) and the one failure recorder every Catch goes to
    (`tasks`: the kind's own succeed and fail tasks)."""
    states.stage = None
    states[done] = task(
        done_comment, tasks[0], "Done", resource=resource, result_path=None
    )
    states["Done"] = {"Type": "Succeed"}
    states[FAILURE] = recorder(
        tasks[1], "Failed", resource=resource, comment=KEEPS_EARLIER_STAGES
    )
    states["Failed"] = {"Type": "Fail", "Error": failed_error}


def hyperpod_change(
    states: States,
    *,
    first: str,
    first_comment: str,
    check: str,
    done_choice: str,
    then: str,
    resource: str = CAPACITY_TASKS,
) -> None:
    """A change HyperPod applies: request it, then wait until it is applied.

    The task answers `{"ready", "waitFor": "cluster" | "poll", "waitSeconds"}`: "cluster"
    parks a task token until the cluster's state-change event (the timeout falls back to
    looking again), "poll" waits `waitSeconds` (a change with no state-change event: a node
    action, autoscaling coming up on an InService cluster).
    """
    parked = "Wait for HyperPod cluster"
    poll_wait = "Wait before looking again"
    states[first] = task(first_comment, "hyperpod-change", done_choice, resource=resource)
    states[done_choice] = {
        "Type": "Choice",
        "Choices": [
            {"Variable": "$.step.ready", "BooleanEquals": True, "Next": then},
            {
                "And": [
                    {"Variable": "$.step.waitFor", "IsPresent": True},
                    {"Variable": "$.step.waitFor", "StringEquals": "cluster"},
                ],
                "Next": parked,
            },
        ],
        "Default": poll_wait,
    }
    states[parked] = {
        "Type": "Task",
        "Comment": (
            "Parks a task token until the 'SageMaker HyperPod Cluster State Change' event says "
            "InService (or Failed / RollingBack). On timeout, look again."
        ),
        "Resource": CALLBACK_INVOKE,
        "Parameters": {
            "FunctionName": resource,
            "Payload": {
                "task": "await-hyperpod-cluster",
                "operationId.$": "$.operationId",
                "executionName.$": "$$.Execution.Name",
                "taskToken.$": "$$.Task.Token",
            },
        },
        "TimeoutSeconds": CAPACITY_HYPERPOD_WAIT_SECONDS,
        "Retry": RETRY,
        "ResultPath": None,
        "Catch": [
            {"ErrorEquals": ["States.Timeout"], "ResultPath": None, "Next": check},
            *_catch(),
        ],
        "Next": check,
    }
    states[poll_wait] = {
        "Type": "Wait",
        "Comment": "HyperPod is applying the change; look again after waitSeconds.",
        "SecondsPath": "$.step.waitSeconds",
        "Next": check,
    }
    states[check] = task(
        "Look at the cluster again; send the change if it is still missing.",
        "check-hyperpod-change",
        done_choice,
        resource=resource,
    )
    states.waiting |= {done_choice, parked, poll_wait, check}


def verify(
    states: States, *, first: str, first_comment: str, then: str, wait_comment: str
) -> None:
    states.stage = "verify"
    poll(
        states,
        first=first,
        first_comment=first_comment,
        first_task="verify-capacity",
        ready_choice="Verified?",
        wait="Wait for nodes",
        wait_comment=wait_comment,
        check="Look at the nodes again",
        check_comment="Read the group and its nodes in HyperPod and Kubernetes again.",
        check_task="check-capacity",
        then=then,
        resource=CAPACITY_TASKS,
    )


def instance_group_definition(states: States | None = None) -> dict[str, Any]:
    """add-instance-group (network, hyperpod, verify), update- and delete-instance-group
    (hyperpod, verify): the API starts each at its first stage (`resumeFrom`)."""
    states = States() if states is None else states
    start(
        states,
        {
            "network": "Ensure compute subnet",
            "hyperpod": "Update HyperPod cluster",
            "verify": "Verify instance group",
        },
    )
    states.stage = "network"
    states["Ensure compute subnet"] = task(
        "The new group's compute subnet from the one network function: the zone's shared "
        "subnet, or the group's dedicated one (found again if it outlived a predecessor).",
        "ensure-group-subnet",
        "Update HyperPod cluster",
        resource=CAPACITY_TASKS,
    )
    states.stage = "hyperpod"
    hyperpod_change(
        states,
        first="Update HyperPod cluster",
        first_comment=(
            "UpdateCluster with the change: a new group, the changed group through the "
            "normaliser, or InstanceGroupsToDelete. Skipped when HyperPod has it already."
        ),
        check="Check HyperPod cluster",
        done_choice="HyperPod change applied?",
        then="Verify instance group",
    )
    verify(
        states,
        first="Verify instance group",
        first_comment="The group has its count of Running nodes, joined and schedulable.",
        then="Record outcome",
        wait_comment="Nodes are starting (or leaving).",
    )
    finish(
        states,
        done="Record outcome",
        done_comment="Mark the operation SUCCEEDED with the group as HyperPod describes it.",
        resource=CAPACITY_TASKS,
        failed_error="InstanceGroupChangeFailed",
    )
    return {
        "Comment": (
            "Add, change or delete an instance group of a HyperPod cluster. Each stage is "
            "recorded on the operation; POST /operations/{id}/retry resumes at the stage that "
            "failed."
        ),
        "StartAt": "Start",
        "States": states,
    }


def node_action_definition(states: States | None = None) -> dict[str, Any]:
    """reboot-node, replace-node, delete-node: hyperpod, verify."""
    states = States() if states is None else states
    start(states, {"hyperpod": "Request node action", "verify": "Verify node"})
    states.stage = "hyperpod"
    hyperpod_change(
        states,
        first="Request node action",
        first_comment=(
            "BatchRebootClusterNodes, BatchReplaceClusterNodes or BatchDeleteClusterNodes for "
            "the node; skipped when HyperPod is acting on it already."
        ),
        check="Check node action",
        done_choice="Node action accepted?",
        then="Verify node",
    )
    verify(
        states,
        first="Verify node",
        first_comment=(
            "Rebooted: Running again. Replaced: a new node Running in its place. Deleted: gone."
        ),
        then="Record outcome",
        wait_comment="HyperPod is acting on the node.",
    )
    finish(
        states,
        done="Record outcome",
        done_comment="Mark the operation SUCCEEDED with the node as HyperPod describes it.",
        resource=CAPACITY_TASKS,
        failed_error="NodeActionFailed",
    )
    return {
        "Comment": "Reboot, replace or delete one node of a HyperPod cluster.",
        "StartAt": "Start",
        "States": states,
    }


def _karpenter_poll(states: States, *, first: str, first_comment: str, first_task: str,
                    check_task: str, then: str) -> None:
    states.stage = "kubernetes"
    poll(
        states,
        first=first,
        first_comment=first_comment,
        first_task=first_task,
        ready_choice="Karpenter objects settled?",
        wait="Wait for Karpenter objects",
        wait_comment="The NodeClass and NodePool are being reconciled.",
        check="Check Karpenter objects",
        check_comment="Read the NodeClass and NodePool again.",
        check_task=check_task,
        then=then,
        resource=CAPACITY_TASKS,
    )


def enable_autoscaling_definition(states: States | None = None) -> dict[str, Any]:
    """enable-autoscaling: prerequisites, role, hyperpod, kubernetes."""
    states = States() if states is None else states
    start(
        states,
        {
            "prerequisites": "Check prerequisites",
            "role": "Ensure cluster role",
            "hyperpod": "Turn on autoscaling in HyperPod",
            "kubernetes": "Apply NodeClass and NodePool",
        },
    )
    states.stage = "prerequisites"
    states["Check prerequisites"] = task(
        "Continuous provisioning, automatic node recovery, eligible groups, and the HyperPod "
        "health-monitoring agent running in the cluster.",
        "check-prerequisites",
        "Ensure cluster role",
        resource=CAPACITY_TASKS,
    )
    states.stage = "role"
    states["Ensure cluster role"] = task(
        "The cluster role HyperPod assumes to add and remove nodes: trust, one policy for this "
        "cluster, the deployment's permissions boundary.",
        "ensure-cluster-role",
        "Turn on autoscaling in HyperPod",
        resource=CAPACITY_TASKS,
    )
    states.stage = "hyperpod"
    hyperpod_change(
        states,
        first="Turn on autoscaling in HyperPod",
        first_comment=(
            "UpdateCluster AutoScaling Enable (Karpenter) with the cluster role; then wait for "
            "AutoScaling InService."
        ),
        check="Check HyperPod autoscaling",
        done_choice="Autoscaling in service?",
        then="Apply NodeClass and NodePool",
    )
    _karpenter_poll(
        states,
        first="Apply NodeClass and NodePool",
        first_comment="Server-side apply of the HyperpodNodeClass and the Karpenter NodePool.",
        first_task="apply-karpenter",
        check_task="check-karpenter",
        then="Record outcome",
    )
    finish(
        states,
        done="Record outcome",
        done_comment="Record autoscaling as on and mark the operation SUCCEEDED.",
        resource=CAPACITY_TASKS,
        failed_error="EnableAutoscalingFailed",
    )
    return {
        "Comment": "Turn on managed Karpenter autoscaling of a HyperPod cluster.",
        "StartAt": "Start",
        "States": states,
    }


def disable_autoscaling_definition(states: States | None = None) -> dict[str, Any]:
    """disable-autoscaling: kubernetes, hyperpod, role (what enabling made, in reverse)."""
    states = States() if states is None else states
    start(
        states,
        {
            "kubernetes": "Delete NodePool and NodeClass",
            "hyperpod": "Turn off autoscaling in HyperPod",
            "role": "Delete cluster role",
        },
    )
    _karpenter_poll(
        states,
        first="Delete NodePool and NodeClass",
        first_comment="Delete the NodePool, then the HyperpodNodeClass hypd made.",
        first_task="remove-karpenter",
        check_task="check-karpenter-removal",
        then="Turn off autoscaling in HyperPod",
    )
    states.stage = "hyperpod"
    hyperpod_change(
        states,
        first="Turn off autoscaling in HyperPod",
        first_comment="UpdateCluster AutoScaling Disable; then wait until it is gone.",
        check="Check HyperPod autoscaling",
        done_choice="Autoscaling off?",
        then="Delete cluster role",
    )
    states.stage = "role"
    states["Delete cluster role"] = task(
        "Delete the cluster role enabling made (its inline policy first).",
        "delete-cluster-role",
        "Record outcome",
        resource=CAPACITY_TASKS,
    )
    finish(
        states,
        done="Record outcome",
        done_comment="Record autoscaling as off and mark the operation SUCCEEDED.",
        resource=CAPACITY_TASKS,
        failed_error="DisableAutoscalingFailed",
    )
    return {
        "Comment": "Turn off managed Karpenter autoscaling and remove what enabling made.",
        "StartAt": "Start",
        "States": states,
    }


# ---------------------------------------------------------------------------- features
FEATURE_PHASES = {
    "prerequisites": ("Install prerequisites", "Shared add-ons, the OIDC provider, the AMP "
                      "workspace, the feature roles and pod identity associations."),
    "addons": ("Apply feature add-ons", "CreateAddon or DeleteAddon per feature, "
               "TieredStorageConfig, the scheduler config."),
    "verify": ("Verify features", "Add-ons ACTIVE and healthy, CRDs served, controllers "
               "available, settings read back."),
    "cleanup": ("Remove what is no longer needed", "Associations and roles of features turned "
                "off, then shared prerequisites nothing needs that hypd installed."),
}


def set_features_definition(states: States | None = None) -> dict[str, Any]:
    """set-features: prerequisites, addons, verify, cleanup (each a polled reconcile step)."""
    states = States() if states is None else states
    phases = list(FEATURE_PHASES)
    start(states, {phase: FEATURE_PHASES[phase][0] for phase in phases})
    for index, phase in enumerate(phases):
        title, comment = FEATURE_PHASES[phase]
        following = FEATURE_PHASES[phases[index + 1]][0] if index + 1 < len(phases) else (
            "Record outcome")
        states.stage = phase
        stage_poll(states, f"features-{phase}", title=title, comment=comment,
                   wait_comment="What was started is still on its way.",
                   check_comment="Read the actual state again and do what is still missing.",
                   then=following, resource=FEATURE_TASKS)
    finish(
        states,
        done="Record outcome",
        done_comment="Mark the operation SUCCEEDED with the features as they are.",
        resource=FEATURE_TASKS,
        failed_error="SetFeaturesFailed",
        tasks=("finish-features", "fail-features"),
    )
    return {
        "Comment": "Bring a cluster's managed features to what a request named, prerequisites "
        "first (docs/features.md).",
        "StartAt": "Start",
        "States": states,
    }


# ---------------------------------------------------------------------------- upgrades
UPGRADE_POLLS = {
    "control-plane": ("Upgrade control plane", "UpdateClusterVersion to the next minor "
                      "version, one step at a time, until the plan's version is read back."),
    "addons": ("Upgrade add-ons", "UpdateAddon (resolveConflicts PRESERVE) to the plan's "
               "versions, compatible with the new Kubernetes version."),
    "nodes": ("Roll nodes", "UpdateClusterSoftware with the rolling deployment "
              "configuration; one look per batch, recorded per instance group."),
}


def _upgrade_poll(states: States, stage: str, then: str) -> None:
    title, comment = UPGRADE_POLLS[stage]
    states.stage = stage
    stage_poll(states, f"upgrade-{stage}", title=title, comment=comment,
               wait_comment="EKS or HyperPod is still updating.",
               check_comment="Read the versions again and start what is still missing.",
               then=then, resource=FEATURE_TASKS)


def upgrade_cluster_definition(states: States | None = None) -> dict[str, Any]:
    """upgrade-cluster: control-plane, addons, chart, nodes, verify (docs/upgrades.md)."""
    states = States() if states is None else states
    start(states, {"control-plane": UPGRADE_POLLS["control-plane"][0],
                   "addons": UPGRADE_POLLS["addons"][0], "chart": "Apply chart",
                   "nodes": UPGRADE_POLLS["nodes"][0], "verify": "Verify versions"})
    _upgrade_poll(states, "control-plane", UPGRADE_POLLS["addons"][0])
    _upgrade_poll(states, "addons", "Apply chart")
    states.stage = "chart"
    states["Apply chart"] = task(
        "Render the bundled HyperPod dependencies chart for the cluster's Kubernetes version, "
        "apply it and record its release in the cluster.", "upgrade-chart",
        UPGRADE_POLLS["nodes"][0], resource=FEATURE_TASKS)
    _upgrade_poll(states, "nodes", "Verify versions")
    states.stage = "verify"
    states["Verify versions"] = task(
        "Read every version back and compare it with the plan.", "upgrade-verify",
        "Record outcome", resource=FEATURE_TASKS)
    finish(
        states,
        done="Record outcome",
        done_comment="Mark the operation SUCCEEDED with the versions as read back.",
        resource=FEATURE_TASKS,
        failed_error="UpgradeFailed",
        tasks=("finish-upgrade", "fail-upgrade"),
    )
    return {
        "Comment": "Upgrade a cluster in the documented order: the EKS control plane one "
        "minor version per step, the add-ons, the HyperPod dependencies chart, then the nodes "
        "in rolling batches (docs/upgrades.md).",
        "StartAt": "Start",
        "States": states,
    }


def team_definition(states: States | None = None) -> dict[str, Any]:
    """set-team and delete-team: quota (the team's compute quota, polled until settled)."""
    states = States() if states is None else states
    start(states, {"quota": "Apply team quota"})
    states.stage = "quota"
    poll(
        states,
        first="Apply team quota",
        first_comment="Create, update (at its current version) or delete the compute quota.",
        first_task="team-quota",
        ready_choice="Quota settled?",
        wait="Wait for quota",
        wait_comment="SageMaker is creating, updating or deleting the quota.",
        check="Check quota",
        check_comment="Read the quota again.",
        check_task="team-quota-check",
        then="Record outcome",
        resource=FEATURE_TASKS,
    )
    finish(
        states,
        done="Record outcome",
        done_comment="Mark the operation SUCCEEDED with the team as it is.",
        resource=FEATURE_TASKS,
        failed_error="TeamFailed",
        tasks=("finish-team", "fail-team"),
    )
    return {
        "Comment": "Set or delete a task governance team's compute quota.",
        "StartAt": "Start",
        "States": states,
    }


def _workload_poll(states: States, stage: str, title: str, comment: str, wait_comment: str,
                   then: str) -> None:
    states.stage = stage
    stage_poll(states, f"workload-{stage}", title=title, comment=comment,
               wait_comment=wait_comment, check_comment="Read the object's status again.",
               then=then, resource=FEATURE_TASKS)


def workload_definition(states: States | None = None) -> dict[str, Any]:
    """submit-training-job (submit), deploy-endpoint (submit, deploy, register when a SageMaker
    endpoint is named), delete-training-job and delete-endpoint (delete)."""
    states = States() if states is None else states
    start(states, {"submit": "Submit workload", "deploy": "Watch deployment",
                   "register": "Watch registration", "delete": "Delete workload"})
    states.stage = "submit"
    states["Submit workload"] = task(
        "Create the job's or the endpoint's custom resource.", "workload-submit",
        "Deploys?", resource=FEATURE_TASKS)
    states["Deploys?"] = {
        "Type": "Choice",
        "Comment": "An endpoint waits for its deployment; a job is submitted.",
        "Choices": [{"Variable": "$.step.then", "StringEquals": "deploy",
                     "Next": "Watch deployment"}],
        "Default": "Record outcome",
    }
    _workload_poll(states, "deploy", "Watch deployment",
                   "Read the operator's deployment status (DeploymentComplete ends the stage).",
                   "The operator is downloading the model and starting its servers.",
                   "Registers?")
    states.stage = None
    states["Registers?"] = {
        "Type": "Choice",
        "Comment": "A SageMaker endpoint was named: wait for it.",
        "Choices": [{"Variable": "$.step.register", "BooleanEquals": True,
                     "Next": "Watch registration"}],
        "Default": "Record outcome",
    }
    _workload_poll(states, "register", "Watch registration",
                   "Read the SageMaker endpoint's state in the object's status.",
                   "SageMaker is creating the endpoint.", "Record outcome")
    _workload_poll(states, "delete", "Delete workload",
                   "Delete the object (foreground) and wait for it and its pods to go.",
                   "The operator's finalizers and the pods' termination are running.",
                   "Record outcome")
    finish(
        states,
        done="Record outcome",
        done_comment="Mark the operation SUCCEEDED with the workload as it is.",
        resource=FEATURE_TASKS,
        failed_error="WorkloadFailed",
        tasks=("finish-workload", "fail-workload"),
    )
    return {
        "Comment": "Submit, deploy or delete a training job or an inference endpoint through "
        "the cluster's Kubernetes API (docs/workloads.md).",
        "StartAt": "Start",
        "States": states,
    }


# ---------------------------------------------------------------------------- teardown
TEARDOWN_STEPS = {
    # stage: (title, what the first task does, what the wait is for, function)
    "workloads": ("Delete workloads", "Delete every job and endpoint (foreground: the "
                  "operators' finalizers run while the nodes are up).",
                  "The operators are stopping the pods and removing endpoints.", FEATURE_TASKS),
    "governance": ("Delete quotas", "Delete the compute quotas, then the scheduler config.",
                   "SageMaker is deleting the quotas.", FEATURE_TASKS),
    "hyperpod": ("Delete HyperPod cluster", "DeleteCluster of the HyperPod cluster.",
                 "HyperPod is deleting the cluster and its nodes.", TEARDOWN_TASKS),
    "addons": ("Delete add-ons", "Delete the features' add-ons, then the shared ones and the "
               "pod identity associations.", "EKS is deleting the add-ons.", FEATURE_TASKS),
    "eks": ("Delete EKS cluster", "DeleteCluster of the EKS cluster.",
            "EKS is deleting the cluster.", TEARDOWN_TASKS),
    "storage": ("Delete file systems", "DeleteFileSystem of the cluster's FSx file systems.",
                "FSx is deleting the file systems.", TEARDOWN_TASKS),
    "network": ("Delete network", "Delete the compute subnets, then the network stack.",
                "Network interfaces of the deleted clusters linger; the stack is deleting.",
                TEARDOWN_TASKS),
    "roles": ("Delete roles", "Delete the cluster's IAM roles, OIDC provider and AMP "
              "workspace.", "AMP is deleting the workspace.", FEATURE_TASKS),
}


TEARDOWN_BRANCHES = (("addons", "eks"), ("storage",))
"""hypd.teardown.plan.BRANCHES (a build test holds them equal)."""


def _teardown_poll(states: States, stage: str, then: str | None) -> None:
    """One stage: teardown-<stage> -> (gone? then : wait -> teardown-<stage>-check ...).
    `then` None ends the states' execution (the last state of a Parallel branch)."""
    title, comment, wait_comment, resource = TEARDOWN_STEPS[stage]
    states.stage = stage
    stage_poll(states, f"teardown-{stage}", title=title, comment=comment,
               wait_comment=wait_comment,
               check_comment="Read what is left and start what can start now.",
               then=then or f"{title}: done", resource=resource, ready_word="gone")
    if then is None:
        states[f"{title}: done"] = {"Type": "Pass", "End": True}


def _branch(stages: tuple[str, ...], into: States) -> dict[str, Any]:
    """A Parallel branch running the teardown `stages` one after another (a retry skips those
    that succeeded, `_resume_choice`)."""
    resume = f"{TEARDOWN_STEPS[stages[0]][0]}: resume where?"

    def build(branch: States) -> None:
        _resume_choice(branch, resume, stages,
                       {stage: TEARDOWN_STEPS[stage][0] for stage in stages},
                       f"{TEARDOWN_STEPS[stages[-1]][0]}: done")
        for i, stage in enumerate(stages):
            following = stages[i + 1] if i + 1 < len(stages) else None
            _teardown_poll(branch, stage, TEARDOWN_STEPS[following][0] if following else None)

    return _branch_of(build, resume, into)


def delete_cluster_definition(states: States | None = None) -> dict[str, Any]:
    """delete-cluster: workloads -> governance -> hyperpod -> (addons -> eks) || storage ->
    network -> roles -> record. A retry resumes at the first stage that did not succeed; a
    stage inside the Parallel resumes the Parallel, whose branches skip their stages that
    succeeded."""
    states = States() if states is None else states
    parallel = "Delete EKS side and storage"
    first = {stage: TEARDOWN_STEPS[stage][0] for stage in ("workloads", "governance",
                                                           "hyperpod")}
    first |= {stage: parallel for branch in TEARDOWN_BRANCHES for stage in branch}
    first |= {"network": TEARDOWN_STEPS["network"][0], "roles": TEARDOWN_STEPS["roles"][0],
              "record": "Record deletion"}
    start(states, first)
    _teardown_poll(states, "workloads", TEARDOWN_STEPS["governance"][0])
    _teardown_poll(states, "governance", TEARDOWN_STEPS["hyperpod"][0])
    _teardown_poll(states, "hyperpod", parallel)
    states.stage = None
    states[parallel] = {
        "Type": "Parallel",
        "Comment": "Once HyperPod is gone: the add-ons then the EKS cluster, beside the FSx "
        "file systems.",
        "Branches": [_branch(branch, states) for branch in TEARDOWN_BRANCHES],
        "ResultPath": None,
        "Catch": _catch(),
        "Next": TEARDOWN_STEPS["network"][0],
    }
    _teardown_poll(states, "network", TEARDOWN_STEPS["roles"][0])
    _teardown_poll(states, "roles", "Record deletion")
    states.stage = "record"
    states["Record deletion"] = task(
        "Mark the cluster's record DELETED (kept, with its operations).", "teardown-record",
        "Record outcome", resource=TEARDOWN_TASKS)
    finish(
        states,
        done="Record outcome",
        done_comment="Mark the operation SUCCEEDED with what was deleted.",
        resource=TEARDOWN_TASKS,
        failed_error="TeardownFailed",
        tasks=("finish-teardown", "fail-teardown"),
    )
    return {
        "Comment": "Delete a cluster hypd created and everything hypd made for it, in reverse "
        "order (docs/teardown.md).",
        "StartAt": "Start",
        "States": states,
    }


# ---------------------------------------------------------------------------- discover
DISCOVER_TASK_TIMEOUT = 120
"""DiscoverFunction's own timeout: one task lists and describes every cluster of a kind."""


def inventory(name: str, task_name: str, comment: str) -> dict[str, Any]:
    """A Parallel branch of one task that answers `{"clusters": [...]}`: the branch's output is
    the list (the Parallel's Catch covers the branch)."""
    return {
        "StartAt": name,
        "States": {
            name: {
                **lambda_task(
                    comment, task_name, resource=DISCOVER_TASKS, timeout=DISCOVER_TASK_TIMEOUT
                ),
                "ResultPath": "$",
                "OutputPath": "$.clusters",
                "End": True,
            }
        },
    }


def discover_definition(states: States | None = None) -> dict[str, Any]:
    """discover: eks-clusters and hyperpod-clusters side by side, then record. No resume: a
    retry reruns every stage (`resumeFrom` is not read)."""
    states = States() if states is None else states
    states["Start discovery"] = begin("Find clusters")
    states["Find clusters"] = {
        "Type": "Parallel",
        "Comment": "List EKS and HyperPod clusters at the same time.",
        "Branches": [
            inventory(
                "List EKS clusters",
                "list-eks-clusters",
                "ListClusters, then DescribeCluster of each (one deleted meanwhile is skipped); "
                "the eks-clusters stage records the names.",
            ),
            inventory(
                "List HyperPod clusters",
                "list-hyperpod-clusters",
                "ListClusters, then DescribeCluster and ListTags of each; the "
                "hyperpod-clusters stage records the names.",
            ),
        ],
        "ResultPath": "$.found",
        "Catch": _catch(),
        "Next": "Link and record clusters",
    }
    # The branches' states are not in this States map; their stages are recorded all the same.
    states.stage_of["List EKS clusters"] = "eks-clusters"
    states.stage_of["List HyperPod clusters"] = "hyperpod-clusters"
    states.stage = "record"
    states["Link and record clusters"] = task(
        "Link each HyperPod cluster to its EKS cluster and record the pairs (only those the "
        "operation's clusterNames name, when it has any).",
        "record-clusters",
        "Discovery succeeded",
        resource=DISCOVER_TASKS,
        result_path=None,
        timeout=DISCOVER_TASK_TIMEOUT,
        extra={"eksClusters.$": "$.found[0]", "hyperPodClusters.$": "$.found[1]"},
    )
    states.stage = None
    states["Discovery succeeded"] = task(
        "Mark the operation SUCCEEDED with what was recorded.",
        "finish-discover",
        None,
        resource=DISCOVER_TASKS,
        result_path=None,
        timeout=30,
    )
    states[FAILURE] = recorder(
        "fail-discover",
        "Discovery failed",
        resource=DISCOVER_TASKS,
        comment="Mark the failing stage and the operation FAILED with the error.",
    )
    states["Discovery failed"] = {
        "Type": "Fail",
        "Comment": "The operation record holds the failing stage and its error.",
        "ErrorPath": "$.error.Error",
        "CausePath": "$.error.Cause",
    }
    return {
        "Comment": (
            "Discover: find the EKS and HyperPod clusters in this account and Region, link each "
            "HyperPod cluster to its EKS cluster and record them as hypd clusters. The "
            "operation record (GET /operations/{id}) shows each stage."
        ),
        "StartAt": "Start discovery",
        "States": states,
    }


MACHINES: dict[str, Any] = {
    "create_cluster": lambda: definition(),
    "instance_group": lambda: instance_group_definition(),
    "node_action": lambda: node_action_definition(),
    "enable_autoscaling": lambda: enable_autoscaling_definition(),
    "disable_autoscaling": lambda: disable_autoscaling_definition(),
    "discover": lambda: discover_definition(),
    "set_features": lambda: set_features_definition(),
    "team": lambda: team_definition(),
    "workload": lambda: workload_definition(),
    "delete_cluster": lambda: delete_cluster_definition(),
    "upgrade_cluster": lambda: upgrade_cluster_definition(),
}
"""File stem -> definition of every state machine this script writes."""


def render(machine: str = "create_cluster") -> str:
    return json.dumps(MACHINES[machine](), indent=2) + "\n"


def target(machine: str) -> Path:
    return HERE / f"{machine}.asl.json"


TARGET = target("create_cluster")


def main() -> int:
    for machine in MACHINES:
        target(machine).write_text(render(machine))
        print(f"wrote {target(machine).relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
