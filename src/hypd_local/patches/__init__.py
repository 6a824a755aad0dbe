"""Patches to moto 5.2.5 that make it a local cloud. Read docs/local-cloud.md first.

moto's classes are process-wide, so the patches are installed once and stay installed; each one
delegates to the *active engine* (the running `LocalCloud`, `engine.active()`) and falls back to
moto's original behaviour when no local cloud is running. Only one local cloud can be active in
a process at a time (moto's backends are global too).

One module per service patched, each saying what it changes and why:

- `awslambda`: invocations run the template's handlers in-process; Event invocations on a
  worker thread; FunctionError "Unhandled".
- `stepfunctions_waits`: Wait states, Retry back-off, task-token and heartbeat waits in virtual
  time (`virtual_wait`).
- `stepfunctions`: tracked execution threads, virtual dates, the status-change event, aborts
  that stay ABORTED, generated execution names, ``send_task_failure``'s cause, stopped Parallel
  branches, the kept ASL syntax trees and one interpreter client per role.
- `fsx`: a file system's life cycle on the virtual clock.
- `amp`: a Prometheus workspace's life cycle on the virtual clock; deleting an unknown one fails.
- `events`: Lambda, Step Functions and API Gateway targets delivered; event times virtual.
- `dynamodb`: stream records reach their Lambda mappings asynchronously
  (`hypd_local.streams`), with virtual times.
- `scheduler`: what CreateSchedule / UpdateSchedule refuse, virtual dates, the local cloud's
  `Scheduler` told of every change.
- `sagemaker`: the HyperPod cluster fields moto drops are kept.
- `botocore`: botocore's retry and waiter sleeps advance the virtual clock.
- `server`: moto's module list read once, not on every request; each response class's
  method names listed once.
- `cloudformation`: stacks authorised as their role, tagged like CloudFormation, their EC2
  resources deleted; a deletion EC2 refuses leaves the stack DELETE_FAILED, and a later
  DeleteStack retries.
- `ec2`: a subnet, security group or VPC a network interface holds is not deleted
  (DependencyViolation).

`engine` holds the active engine and what the patches share (`replace`, `VirtualTime`,
`poke`).
"""

from __future__ import annotations

from hypd_local.patches import (
    amp,
    awslambda,
    botocore,
    cloudformation,
    dynamodb,
    ec2,
    events,
    fsx,
    sagemaker,
    scheduler,
    server,
    stepfunctions,
    stepfunctions_waits,
)
from hypd_local.patches.amp import AMP_CREATE_SECONDS
from hypd_local.patches.engine import Engine, active, set_active, state_lock
from hypd_local.patches.fsx import FSX_CREATE_SECONDS
from hypd_local.patches.stepfunctions import ASL_TREES_KEPT
from hypd_local.patches.stepfunctions_waits import (
    QUIET_KINDS,
    QUIET_TIMEOUT_SECONDS,
    virtual_wait,
)

__all__ = [
    "AMP_CREATE_SECONDS", "ASL_TREES_KEPT", "FSX_CREATE_SECONDS", "QUIET_KINDS",
    "QUIET_TIMEOUT_SECONDS", "Engine", "activate", "active", "deactivate", "install",
    "virtual_wait",
]

_installed = False
_saved_sfn_config: bool | None = None


def activate(engine: Engine) -> None:
    """Make ``engine`` the target of every patch (installing them on first use)."""
    global _saved_sfn_config
    from moto.core.config import default_user_config

    install()
    with state_lock:
        current = active()
        if current is not None and current is not engine:
            raise RuntimeError(
                "another LocalCloud is already running in this process; stop it first "
                "(moto's backends are process-wide)"
            )
        set_active(engine)
        sfn_config = default_user_config.setdefault("stepfunctions", {})
        _saved_sfn_config = sfn_config.get("execute_state_machine", False)
        # Read by moto.stepfunctions.responses.get_backend on every request, server mode included.
        sfn_config["execute_state_machine"] = True


def deactivate(engine: Engine) -> None:
    from moto.core.config import default_user_config

    with state_lock:
        if active() is not engine:
            return
        set_active(None)
        default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = bool(
            _saved_sfn_config
        )


def install() -> None:
    """Install every patch once per process (idempotent)."""
    global _installed
    with state_lock:
        if _installed:
            return
        awslambda.patch_lambda()
        stepfunctions_waits.patch_waits()
        stepfunctions_waits.patch_callbacks()
        stepfunctions.patch_program_state()
        stepfunctions.patch_executions()
        stepfunctions.patch_send_task_failure()
        stepfunctions.patch_parallel_branches()
        fsx.patch_fsx()
        amp.patch_amp()
        events.patch_events()
        dynamodb.patch_dynamodb()
        scheduler.patch_scheduler()
        sagemaker.patch_sagemaker()
        botocore.patch_botocore()
        server.patch_server_dispatch()
        server.patch_response_methods()
        stepfunctions.patch_asl_parser()
        stepfunctions.patch_json_paths()
        stepfunctions.patch_interpreter_clients()
        cloudformation.patch_cloudformation()
        ec2.patch_ec2()
        _installed = True
