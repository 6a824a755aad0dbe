"""Writes statemachines/create_cluster.asl.json from one readable description.

The create pipeline has six stages and about thirty states; written by hand, every Task would
repeat the same Retry and Catch blocks. This script builds the states from a few helpers so the
retry policy exists once, and `tests/build/test_state_machines.py` fails when the JSON file is
not what this script writes. Run it after changing it:

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

STAGES = ("network", "eks", "dependencies", "hyperpod", "storage", "verify")
"""hypd.operations.models.STAGES[create-cluster]; a build test checks they agree."""

HYPERPOD_WAIT_SECONDS = 1800
"""How long one task-token wait for HyperPod lasts before the fallback poll looks itself
(HyperPod creation takes ~15-25 minutes; the state-change event normally ends it sooner)."""


def _catch() -> list[dict[str, Any]]:
    return [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": FAILURE}]


def task(
    comment: str,
    name: str,
    next_state: str,
    *,
    resource: str = CLUSTER_TASKS,
    result_path: str | None = "$.step",
    timeout: int = 300,
    extra: dict[str, Any] | None = None,
) -> State:
    """A Lambda task `{"task": name, "operationId"}` with hypd's Retry and Catch."""
    return {
        "Type": "Task",
        "Comment": comment,
        "Resource": resource,
        "Parameters": {
            "task": name,
            "operationId.$": "$.operationId",
            **({"executionName.$": "$$.Execution.Name"} if resource == CLUSTER_TASKS else {}),
            **(extra or {}),
        },
        "TimeoutSeconds": timeout,
        "Retry": RETRY,
        "ResultPath": result_path,
        "Catch": _catch(),
        "Next": next_state,
    }


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
) -> None:
    """first task -> (ready? then : wait -> check task -> ready? ...).

    Every task answers `{"ready": bool, "waitSeconds": int}`; the wait length is chosen by the
    task from the resource's expected duration (first look near its expected end, then short
    intervals), not fixed here.
    """
    states[first] = task(first_comment, first_task, ready_choice)
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
    states[check] = task(check_comment, check_task, ready_choice)
    states.waiting |= {ready_choice, wait, check}


def definition() -> dict[str, Any]:
    return _definition(States())


def described_states() -> States:
    """The states with their stages and which of them only wait (the benchmark groups by it)."""
    states = States()
    _definition(states)
    return states


def _definition(states: States) -> dict[str, Any]:
    states["Start"] = task(
        "Mark the operation RUNNING.",
        "begin",
        "Resume where?",
        resource=OPERATION_TASKS,
        result_path=None,
        timeout=30,
        extra={"executionArn.$": "$$.Execution.Id"},
    )
    first_state = {
        "network": "Create network stack",
        "eks": "Create EKS cluster",
        "dependencies": "Install add-ons",
        "hyperpod": "Create HyperPod cluster",
        "storage": "Mount storage",
        "verify": "Verify cluster",
    }
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
            for stage in STAGES[1:]
        ],
        "Default": first_state["network"],
    }

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
        "Create EKS cluster",
    )

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
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
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
        "Mount storage",
    )

    states.stage = "storage"
    # ---- storage
    poll(
        states,
        first="Mount storage",
        first_comment="S3 bucket through the Mountpoint CSI driver, or FSx for Lustre: PV + PVC.",
        first_task="mount-storage",
        ready_choice="Storage ready?",
        wait="Wait for storage",
        wait_comment="The file system is being created.",
        check="Check storage",
        check_comment="Read the file system; create the volume and claim once it is available.",
        check_task="check-storage",
        then="Verify cluster",
    )

    states.stage = "verify"
    # ---- verify
    poll(
        states,
        first="Verify cluster",
        first_comment="Nodes joined and schedulable, storage claim bound.",
        first_task="verify-cluster",
        ready_choice="Cluster verified?",
        wait="Wait for nodes",
        wait_comment="Nodes are joining the cluster.",
        check="Check cluster",
        check_comment="Look at the nodes and the claim again.",
        check_task="check-verification",
        then="Create succeeded",
    )
    states.stage = None
    states["Create succeeded"] = task(
        "Mark the cluster ACTIVE and the operation SUCCEEDED with its summary.",
        "finish-create",
        "Done",
        result_path=None,
    )
    states["Done"] = {"Type": "Succeed"}

    states[FAILURE] = {
        "Type": "Task",
        "Comment": "Mark the failing stage and the operation FAILED (earlier stages stay).",
        "Resource": CLUSTER_TASKS,
        "Parameters": {
            "task": "fail-create",
            "operationId.$": "$.operationId",
            "executionName.$": "$$.Execution.Name",
            "error.$": "$.error",
        },
        "TimeoutSeconds": 30,
        "Retry": RETRY,
        "ResultPath": None,
        "Next": "Failed",
    }
    states["Failed"] = {"Type": "Fail", "Error": "CreateClusterFailed"}

    return {
        "Comment": (
            "Create a HyperPod cluster end to end: network, eks, dependencies, hyperpod, "
            "storage, verify. Each stage is recorded on the operation (GET /operations/{id}); "
            "a failure never rolls back an earlier stage, and POST /operations/{id}/retry "
            "resumes at the stage that failed."
        ),
        "StartAt": "Start",
        "States": states,
    }


def render() -> str:
    return json.dumps(definition(), indent=2) + "\n"


TARGET = HERE / "create_cluster.asl.json"


def main() -> int:
    TARGET.write_text(render())
    print(f"wrote {TARGET.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
