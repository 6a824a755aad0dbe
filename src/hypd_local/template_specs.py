"""What the template loader resolves each resource into: one small spec per type, every value
resolved, which `hypd_local.provision` creates in moto (`hypd_local.template`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Resource:
    """One planned resource: its type, ``Ref`` value and ``Fn::GetAtt`` attributes."""

    logical_id: str
    type: str
    ref: Any
    attributes: Mapping[str, Any] = field(default_factory=dict)
    generated_by: str | None = None
    """The SAM resource that implied this one (e.g. an event's rule), if any."""


@dataclass(frozen=True)
class TableSpec:
    logical_id: str
    name: str
    arn: str
    create_args: Mapping[str, Any]
    """Keyword arguments of dynamodb.create_table (TableName included)."""
    ttl_attribute: str | None = None
    point_in_time_recovery: bool = False
    stream_arn: str | None = None
    """The stream's ARN (its label planned, so references resolve before the table exists)."""


@dataclass(frozen=True)
class StreamMappingSpec:
    """A function's DynamoDB stream event source mapping (SAM ``Type: DynamoDB``): how Lambda
    reads the stream and hands its records to the function (`hypd_local.streams`)."""

    logical_id: str
    function_logical_id: str
    stream_arn: str
    table_logical_id: str
    batch_size: int = 100
    starting_position: str = "LATEST"
    maximum_retry_attempts: int = -1
    """-1: retried until the records expire."""
    maximum_record_age_seconds: int = -1
    bisect_on_error: bool = False
    report_item_failures: bool = False
    on_failure: str | None = None
    enabled: bool = True


@dataclass(frozen=True)
class LayerSpec:
    logical_id: str
    name: str
    arn: str
    content_dir: Path | None


@dataclass(frozen=True)
class RoleSpec:
    logical_id: str
    name: str
    arn: str
    assume_role_policy: Mapping[str, Any]
    path: str = "/"
    permissions_boundary: str | None = None
    policies: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """Inline policies: (PolicyName, PolicyDocument)."""
    managed_policy_arns: tuple[str, ...] = ()


@dataclass(frozen=True)
class ManagedPolicySpec:
    """An ``AWS::IAM::ManagedPolicy``: created in moto, attached to its ``Roles``."""

    logical_id: str
    name: str
    arn: str
    path: str
    document: Mapping[str, Any]
    description: str = ""
    roles: tuple[str, ...] = ()
    """Names of the roles it is attached to."""


@dataclass(frozen=True)
class AsyncConfig:
    """How Lambda handles a function's asynchronous invocations (EventBridge, InvocationType
    Event): retries, then the OnFailure destination, else the function's dead-letter queue."""

    maximum_retry_attempts: int = 2
    maximum_event_age_seconds: int | None = None
    on_success: str | None = None
    on_failure: str | None = None
    dead_letter_arn: str | None = None

    def to_api(self) -> dict[str, Any]:
        """The config as lambda.put_function_event_invoke_config takes it."""
        config: dict[str, Any] = {"MaximumRetryAttempts": self.maximum_retry_attempts}
        if self.maximum_event_age_seconds is not None:
            config["MaximumEventAgeInSeconds"] = self.maximum_event_age_seconds
        destinations = {}
        if self.on_success:
            destinations["OnSuccess"] = {"Destination": self.on_success}
        if self.on_failure:
            destinations["OnFailure"] = {"Destination": self.on_failure}
        if destinations:
            config["DestinationConfig"] = destinations
        return config


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda function, every value resolved: the one description of a template's functions
    (the local cloud runs it; `bench/cold_start.py` and `tests/build` read it too)."""

    logical_id: str
    name: str
    arn: str
    code_dir: Path
    handler: str
    runtime: str
    memory_size: int
    timeout: int
    environment: Mapping[str, str]
    """The function's variables: ``Globals.Function`` merged with its own, intrinsics resolved."""
    layers: tuple[str, ...]
    """Layer ARNs, in order."""
    role_arn: str
    description: str = ""
    architectures: tuple[str, ...] = ("x86_64",)
    tracing: str = "PassThrough"
    async_config: AsyncConfig | None = None
    """EventInvokeConfig and DeadLetterQueue: what happens to asynchronous invocations."""
    layer_ids: tuple[str, ...] = ()
    """Logical ids of the template's own layers among ``layers``, in order."""
    alias: str | None = None
    """SAM's ``AutoPublishAlias``: the alias its events (and their Lambda permissions) name."""
    snap_start: bool = False
    """``SnapStart: {ApplyOn: PublishedVersions}`` (read, not emulated: no snapshot is taken)."""

    @property
    def invoked_arn(self) -> str:
        """The ARN its event sources invoke: the alias's when it has one (SAM points every
        event at the alias), else the function's."""
        return f"{self.arn}:{self.alias}" if self.alias else self.arn

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.name}"

    @property
    def handler_module(self) -> str:
        """The dotted module name of ``Handler`` (``app`` for ``app.handler``)."""
        return self.handler.rpartition(".")[0]

    @property
    def handler_attribute(self) -> str:
        """The handler's name in its module (``handler`` for ``app.handler``)."""
        return self.handler.rpartition(".")[2]

    @property
    def handler_path(self) -> str:
        """The handler module's file, relative to the code directory."""
        return self.handler_module.replace(".", "/") + ".py"

    def lambda_environment(self) -> dict[str, str]:
        """What the handler module sees in ``os.environ`` at import: Lambda's own variables for
        this function, then the template's (``environment``)."""
        return {
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.memory_size),
            "AWS_LAMBDA_LOG_GROUP_NAME": self.log_group_name,
            "LAMBDA_TASK_ROOT": str(self.code_dir),
            "_HANDLER": self.handler,
            **self.environment,
        }

    def standalone_environment(self) -> dict[str, str]:
        """`lambda_environment` for a fresh process that imports the handler outside the local
        cloud (the cold-start benchmark, the build tests): plus what Lambda's runtime also sets
        (``AWS_EXECUTION_ENV``, the Region of the function's ARN) and fake credentials, so that
        botocore never looks for real ones."""
        region = self.arn.split(":")[3]
        return {
            **self.lambda_environment(),
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{self.runtime}",
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
        }


@dataclass(frozen=True)
class StateMachineSpec:
    logical_id: str
    name: str
    arn: str
    definition: str
    """The ASL document with every DefinitionSubstitution applied."""
    type: str
    role_arn: str


@dataclass(frozen=True)
class QueueSpec:
    logical_id: str
    name: str
    url: str
    arn: str
    attributes: Mapping[str, str]


@dataclass(frozen=True)
class TopicSpec:
    logical_id: str
    name: str
    arn: str
    attributes: Mapping[str, str]


@dataclass(frozen=True)
class LogGroupSpec:
    logical_id: str
    name: str
    arn: str
    retention_days: int | None


@dataclass(frozen=True)
class TargetSpec:
    id: str
    arn: str
    input: str | None = None
    input_path: str | None = None
    input_transformer: Mapping[str, Any] | None = None
    dead_letter_arn: str | None = None
    role_arn: str | None = None
    retry_policy: Mapping[str, Any] | None = None
    http_parameters: Mapping[str, Any] | None = None
    """An API Gateway target's PathParameterValues, QueryStringParameters, HeaderParameters."""

    def to_api(self) -> dict[str, Any]:
        """The target as events.put_targets takes it."""
        target: dict[str, Any] = {"Id": self.id, "Arn": self.arn}
        if self.input is not None:
            target["Input"] = self.input
        if self.input_path is not None:
            target["InputPath"] = self.input_path
        if self.input_transformer is not None:
            target["InputTransformer"] = dict(self.input_transformer)
        if self.dead_letter_arn is not None:
            target["DeadLetterConfig"] = {"Arn": self.dead_letter_arn}
        if self.role_arn is not None:
            target["RoleArn"] = self.role_arn
        if self.retry_policy is not None:
            target["RetryPolicy"] = dict(self.retry_policy)
        if self.http_parameters is not None:
            target["HttpParameters"] = dict(self.http_parameters)
        return target


@dataclass(frozen=True)
class RuleSpec:
    logical_id: str
    name: str
    arn: str
    event_bus_name: str
    event_pattern: Mapping[str, Any] | None
    schedule_expression: str | None
    state: str
    targets: tuple[TargetSpec, ...]
    description: str = ""


@dataclass(frozen=True)
class ScheduleGroupSpec:
    """An ``AWS::Scheduler::ScheduleGroup``."""

    logical_id: str
    name: str
    arn: str
    tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ScheduleSpec:
    """An ``AWS::Scheduler::Schedule``: made with scheduler.create_schedule."""

    logical_id: str
    name: str
    arn: str
    group_name: str
    create_args: Mapping[str, Any]
    """Keyword arguments of scheduler.create_schedule (Name included)."""


@dataclass(frozen=True)
class RouteSpec:
    """One API route: ``method`` is upper case, or ``ANY``."""

    path: str
    method: str
    function_logical_id: str
    event_id: str
    auth: str | None = None
    invoke_role: str | None = None
    """The event's own ``Auth.InvokeRole``, if any (else the API's)."""


CALLER_CREDENTIALS = "CALLER_CREDENTIALS"
"""``InvokeRole`` for an integration that calls Lambda as the caller (credentials
``arn:aws:iam::*:user/*`` after the SAM transform)."""


@dataclass(frozen=True)
class ApiSpec:
    logical_id: str
    api_id: str
    stage: str
    routes: tuple[RouteSpec, ...]
    binary_media_types: tuple[str, ...] = ()
    auth: str | None = None
    invoke_role: str | None = None
    """``Auth.InvokeRole`` as written: None (SAM's default, CALLER_CREDENTIALS for AWS_IAM),
    ``CALLER_CREDENTIALS``, ``NONE`` or a role ARN."""
    logs_to_cloudwatch: bool = False
    """The stage writes access or execution logs, which needs the account's CloudWatch role."""
    depends_on: frozenset[str] = frozenset()
    """Every resource it depends on through DependsOn (transitively)."""


@dataclass(frozen=True)
class ApiAccountSpec:
    """An ``AWS::ApiGateway::Account``: the Region's API Gateway CloudWatch Logs role."""

    logical_id: str
    cloudwatch_role_arn: str | None


@dataclass(frozen=True)
class ResourcePolicySpec:
    """A resource-based policy: a queue, topic, bucket or key policy, or a Lambda permission
    (declared, or implied by a SAM event) rendered as the statement Lambda's GetPolicy shows."""

    logical_id: str
    resources: tuple[str, ...]
    """The ARNs it is attached to (a function's or alias's ARN for a permission)."""
    document: Mapping[str, Any]
    generated_by: str | None = None


@dataclass(frozen=True)
class AlarmSpec:
    """A CloudWatch alarm: only what it notifies (the local cloud keeps no metrics)."""

    logical_id: str
    name: str
    arn: str
    actions: tuple[str, ...]
    """AlarmActions, OKActions and InsufficientDataActions (SNS topic ARNs), in order."""
