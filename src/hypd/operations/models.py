"""Operation and Stage: the state clients read while a state machine works."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
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
    UPGRADE_CLUSTER = "upgrade-cluster"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class ErrorInfo(_Model):
    """An error as recorded on a stage: the AWS or hypd error code and a readable message."""

    code: str
    message: str


class AttemptStatus(StrEnum):
    """How one attempt of a stage stands (a stage's own status adds PENDING and SKIPPED)."""

    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


MAX_KEPT_ATTEMPTS = 20
"""Attempts a stage keeps (the latest); `Stage.attempts` counts them all. An operation is one
DynamoDB item (400 KB at most): a stage retried without end must not outgrow it."""

MAX_NOTE_CHARS = 300
"""The longest wait reason or error message an attempt keeps (the stage keeps its error whole)."""


def clip(text: str | None, limit: int = MAX_NOTE_CHARS) -> str | None:
    """`text` cut to `limit` characters (an ellipsis marks the cut)."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class Wait:
    """Why a look of a stage waits, and in how many seconds it looks again (None: nothing
    says; for a wait an event ends, the fallback look)."""

    reason: str | None = None
    seconds: float | None = None


class Attempt(_Model):
    """One attempt of a stage: when it ran, how it ended, how often it looked and what it
    waited for last."""

    number: int = Field(ge=1)
    status: AttemptStatus = AttemptStatus.RUNNING
    started_at: str = Field(alias="startedAt")
    ended_at: str | None = Field(default=None, alias="endedAt")
    looks: int = 0
    """The attempt's task calls (each looks at the stage's resources once)."""
    waiting_for: str | None = Field(default=None, alias="waitingFor")
    """Why its last look waited (kept once the attempt ends: what it waited for last)."""
    next_look_at: str | None = Field(default=None, alias="nextLookAt")
    """When the running attempt looks again (for an event-driven wait: the fallback look)."""
    error: ErrorInfo | None = None
    """What ended a FAILED attempt (its message clipped)."""


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
    history: list[Attempt] = Field(default_factory=list)
    """The latest attempts (at most `MAX_KEPT_ATTEMPTS`), oldest first; a record written
    before attempts were kept has none."""


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
        """The JSON clients see (camelCase, no internal keys): the stages' attempts as one
        `timeline`."""
        body = self.model_dump(
            mode="json",
            by_alias=True,
            exclude={"lock_scope": True, "stages": {"__all__": {"history"}}},
        )
        body["timeline"] = [entry.to_api() for entry in timeline(self)]
        return body


class TimelineEntry(_Model):
    """One attempt of one stage, as `GET /operations/{id}` lists it."""

    stage: str
    attempt: Attempt

    def to_api(self) -> dict[str, Any]:
        body = self.attempt.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {"stage": self.stage, "attempt": body.pop("number"), **body}


def attempts_of(stage: Stage) -> list[Attempt]:
    """The stage's kept attempts; for a record written before attempts were kept, its latest
    attempt as the stage's own fields describe it."""
    if stage.history or stage.attempts < 1 or stage.status is StageStatus.PENDING:
        return stage.history
    started = stage.attempt_started_at or stage.started_at
    if started is None or stage.status is StageStatus.SKIPPED:
        return []
    return [
        Attempt(
            number=stage.attempts,
            status=AttemptStatus(stage.status.value),
            started_at=started,
            ended_at=stage.ended_at,
            error=stage.error if stage.status is StageStatus.FAILED else None,
        )
    ]


def timeline(operation: Operation) -> list[TimelineEntry]:
    """Every kept attempt of every stage, in the order they started (stage order breaks ties)."""
    entries = [
        (attempt.started_at, index, TimelineEntry(stage=stage.name, attempt=attempt))
        for index, stage in enumerate(operation.stages)
        for attempt in attempts_of(stage)
    ]
    return [entry for _started, _index, entry in sorted(entries, key=lambda e: (e[0], e[1]))]
