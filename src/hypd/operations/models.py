"""Operation and Stage: the state clients read while a state machine works."""

from __future__ import annotations

import re
import uuid
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

OPERATION_ID_PATTERN = r"^op-[0-9a-f]{32}$"
_OPERATION_ID_RE = re.compile(OPERATION_ID_PATTERN)


def new_operation_id() -> str:
    """A fresh operation id; also a valid Step Functions execution name."""
    return f"op-{uuid.uuid4().hex}"


def is_operation_id(value: str) -> bool:
    return bool(_OPERATION_ID_RE.match(value))


class OperationStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL_OPERATION


_TERMINAL_OPERATION = {OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED}


class StageStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    SKIPPED = "SKIPPED"

    @property
    def terminal(self) -> bool:
        return self not in (StageStatus.PENDING, StageStatus.RUNNING)


class OperationKind(StrEnum):
    DISCOVER = "discover"
    CREATE_CLUSTER = "create-cluster"
    ADD_INSTANCE_GROUP = "add-instance-group"
    UPDATE_INSTANCE_GROUP = "update-instance-group"
    DELETE_INSTANCE_GROUP = "delete-instance-group"
    REBOOT_NODE = "reboot-node"
    REPLACE_NODE = "replace-node"
    DELETE_NODE = "delete-node"
    ENABLE_AUTOSCALING = "enable-autoscaling"
    DISABLE_AUTOSCALING = "disable-autoscaling"
    SET_FEATURES = "set-features"
    SET_TEAM = "set-team"
    DELETE_TEAM = "delete-team"
    SUBMIT_TRAINING_JOB = "submit-training-job"
    DELETE_TRAINING_JOB = "delete-training-job"
    DEPLOY_ENDPOINT = "deploy-endpoint"
    DELETE_ENDPOINT = "delete-endpoint"
    DELETE_CLUSTER = "delete-cluster"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class ErrorInfo(_Model):
    """An error as recorded on a stage: the AWS or hypd error code and a readable message."""

    code: str
    message: str


class Stage(_Model):
    name: str
    status: StageStatus = StageStatus.PENDING
    started_at: str | None = Field(default=None, alias="startedAt")
    """When the stage's first attempt started."""
    attempt_started_at: str | None = Field(default=None, alias="attemptStartedAt")
    """When its latest attempt started (waits and timeouts count from here)."""
    ended_at: str | None = Field(default=None, alias="endedAt")
    attempts: int = 0
    error: ErrorInfo | None = None
    output: dict[str, Any] | None = None
    progress: dict[str, Any] | None = None
    """What the running attempt has done and waits for (cleared when an attempt starts)."""


class RetryRecord(_Model):
    """One retry of an operation: what ended the previous attempt, and where the retry resumed.

    A retry resets the stages that had not succeeded to PENDING and clears their errors and the
    operation's; the error that ended the previous attempt is kept here (history), with the
    execution that ran it.
    """

    number: int = Field(ge=1, description="1 for the first retry; the execution is {id}-r{n}.")
    requested_at: str = Field(alias="requestedAt")
    previous_status: OperationStatus = Field(alias="previousStatus")
    previous_error: ErrorInfo | None = Field(default=None, alias="previousError")
    failed_stage: str | None = Field(default=None, alias="failedStage")
    previous_execution_arn: str | None = Field(default=None, alias="previousExecutionArn")
    resume_from: str | None = Field(default=None, alias="resumeFrom")


class Operation(_Model):
    id: str
    kind: OperationKind
    cluster_tag: str | None = Field(default=None, alias="clusterTag")
    status: OperationStatus = OperationStatus.PENDING
    stages: list[Stage]
    input: dict[str, Any] = Field(default_factory=dict)
    output: dict[str, Any] | None = None
    error: ErrorInfo | None = None
    execution_arn: str | None = Field(default=None, alias="executionArn")
    lock_scope: str | None = Field(default=None, alias="lockScope")
    """The lock this operation holds while it runs (released when it ends)."""
    retries: list[RetryRecord] = Field(default_factory=list)
    """Every retry, oldest first (the current execution is named after the last one)."""
    cancel_requested_at: str | None = Field(default=None, alias="cancelRequestedAt")
    """When a client asked to cancel the current attempt (StopExecution was called)."""
    created_at: str = Field(alias="createdAt")
    updated_at: str = Field(alias="updatedAt")
    version: int = 1

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(name)

    def to_api(self) -> dict[str, Any]:
        """The JSON clients see (camelCase, no internal keys)."""
        return self.model_dump(mode="json", by_alias=True, exclude={"lock_scope"})
