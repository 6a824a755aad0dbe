"""Reads a SAM template and turns it into the stack the local cloud provisions.

moto does not run the SAM transform, so this module does the part of it the local cloud needs,
driven by resource types (never by the logical ids of a particular template):

- parameters (defaults or overrides), pseudo-parameters, conditions, mappings and the intrinsic
  functions of `hypd_local.intrinsics`;
- SAM ``Globals`` merged into each resource (maps merged, lists appended, scalars overridden);
- deterministic physical names, so every ``Ref``/``Fn::GetAtt`` is known before anything is
  created and resources may refer to each other in any order;
- per type, a small spec (`FunctionSpec`, `StateMachineSpec`, `TableSpec`, `RuleSpec`, ...)
  with every value resolved, which `hypd_local.provision` creates in moto.

Reading the template is pure: no moto, no network. That keeps the loader fast to test.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hypd_local import sam_roles
from hypd_local.intrinsics import NO_VALUE, Resolver, TemplateError, is_intrinsic, scalar_str
from hypd_local.partitions import dns_suffix, partition_of

LOG = logging.getLogger(__name__)

DEFAULT_ACCOUNT_ID = "123456789012"

# SAM Globals sections and the resource type each one applies to.
_GLOBALS_SECTIONS = {
    "Function": "AWS::Serverless::Function",
    "Api": "AWS::Serverless::Api",
    "HttpApi": "AWS::Serverless::HttpApi",
    "SimpleTable": "AWS::Serverless::SimpleTable",
    "StateMachine": "AWS::Serverless::StateMachine",
    "LayerVersion": "AWS::Serverless::LayerVersion",
}

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_IMPLICIT_API = "ServerlessRestApi"
_IMPLICIT_API_STAGE = "Prod"


PROJECT_ROOT = Path(__file__).resolve().parents[2]


def find_template(cwd: Path | None = None) -> Path:
    """``./template.yaml`` if the current directory has one, else the project's own."""
    here = (cwd or Path.cwd()) / "template.yaml"
    return here if here.is_file() else PROJECT_ROOT / "template.yaml"


def read_template(path: Path) -> dict[str, Any]:
    """The template as plain Python data (cfn-lint's decoder reads the short intrinsic tags)."""
    from cfnlint.decode import cfn_json, cfn_yaml

    if not path.is_file():
        raise TemplateError(f"template not found: {path}")
    try:
        loader = cfn_json.load if path.suffix == ".json" else cfn_yaml.load
        raw = loader(str(path))
    except Exception as exc:  # cfn-lint raises several unrelated types for a bad file
        raise TemplateError(f"{path}: cannot parse template: {exc}") from exc
    # The decoder returns its own node classes (with line marks); plain data is easier to handle.
    data = json.loads(json.dumps(raw))
    if not isinstance(data, dict) or not isinstance(data.get("Resources"), dict):
        raise TemplateError(f"{path}: a template needs a Resources mapping")
    return data


def resources_of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """The declarations of one resource type, by logical id, as written (Globals not merged,
    nothing resolved)."""
    return {
        logical_id: resource
        for logical_id, resource in (template.get("Resources") or {}).items()
        if isinstance(resource, dict) and resource.get("Type") == resource_type
    }


def describe_functions(
    template_path: Path | str | None = None,
    *,
    region: str = "us-east-1",
    account_id: str = DEFAULT_ACCOUNT_ID,
    stack_name: str = "hypd",
) -> list[FunctionSpec]:
    """The template's functions (``find_template()`` by default), sorted by logical id.

    Resolved as the local cloud resolves them, without moto or network: ``Globals`` merged,
    every intrinsic in the environment replaced by the value the stack would have on AWS
    (deterministic names ``<stack>-<LogicalId>``, ARNs in ``region`` and ``account_id``, SQS
    URLs on AWS's endpoint). For code that imports handlers outside the local cloud (the
    cold-start benchmark, the build tests). Raises `TemplateError` like `Stack`.
    """
    stack = Stack(
        template_path or find_template(),
        region=region,
        account_id=account_id,
        stack_name=stack_name,
        aws_endpoint=None,
    )
    return sorted(stack.functions.values(), key=lambda spec: spec.logical_id)


# ---------------------------------------------------------------------------------- specs
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
class RouteSpec:
    """One API route: ``method`` is upper case, or ``ANY``."""

    path: str
    method: str
    function_logical_id: str
    event_id: str
    auth: str | None = None


@dataclass(frozen=True)
class ApiSpec:
    logical_id: str
    api_id: str
    stage: str
    routes: tuple[RouteSpec, ...]
    binary_media_types: tuple[str, ...] = ()
    auth: str | None = None
    logs_to_cloudwatch: bool = False
    """The stage writes access or execution logs, which needs the account's CloudWatch role."""
    depends_on: frozenset[str] = frozenset()
    """Every resource it depends on through DependsOn (transitively)."""


@dataclass(frozen=True)
class ApiAccountSpec:
    """An ``AWS::ApiGateway::Account``: the Region's API Gateway CloudWatch Logs role."""

    logical_id: str
    cloudwatch_role_arn: str | None


# ---------------------------------------------------------------------------------- stack
class Stack:
    """A template resolved for one region, account and stack name.

    ``aws_endpoint`` is used only for SQS queue URLs, which embed the endpoint; None means AWS's
    own (``https://sqs.<region>.amazonaws.com``).
    """

    def __init__(
        self,
        template_path: Path | str,
        *,
        region: str = "us-west-2",
        account_id: str = DEFAULT_ACCOUNT_ID,
        stack_name: str = "hypd",
        parameters: Mapping[str, Any] | None = None,
        aws_endpoint: str | None = "http://127.0.0.1:5000",
        allow_external_layers: bool = False,
        edit: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.template_path = Path(template_path).resolve()
        self.template_dir = self.template_path.parent
        self.region = region
        self.account_id = account_id
        self.stack_name = stack_name
        self.partition = partition_of(region)
        self.url_suffix = dns_suffix(region)
        self.aws_endpoint = (aws_endpoint or f"https://sqs.{region}.{self.url_suffix}").rstrip("/")
        self.allow_external_layers = allow_external_layers
        self.template = read_template(self.template_path)
        if edit is not None:  # a test's change to the template (say, one permission less)
            edit(self.template)
        self.warnings: list[str] = []

        self._raw: dict[str, dict[str, Any]] = {}
        self._planned: dict[str, Resource] = {}
        self._planning: set[str] = set()
        self._parameters = self._parameter_values(parameters or {})
        self.resolver = Resolver(
            ref=self._ref,
            get_att=self._get_att,
            conditions=self.template.get("Conditions") or {},
            mappings=self.template.get("Mappings") or {},
            region=region,
        )

        self.tables: dict[str, TableSpec] = {}
        self.layers: dict[str, LayerSpec] = {}
        self.roles: dict[str, RoleSpec] = {}
        self.managed_policies: dict[str, ManagedPolicySpec] = {}
        self.functions: dict[str, FunctionSpec] = {}
        self.state_machines: dict[str, StateMachineSpec] = {}
        self.queues: dict[str, QueueSpec] = {}
        self.topics: dict[str, TopicSpec] = {}
        self.log_groups: dict[str, LogGroupSpec] = {}
        self.rules: dict[str, RuleSpec] = {}
        self.apis: dict[str, ApiSpec] = {}
        self.api_accounts: dict[str, ApiAccountSpec] = {}
        self._routes: dict[str, list[RouteSpec]] = {}

        self._load_resources()
        for logical_id in list(self._raw):
            self._plan(logical_id)
        self._build_specs()

    # ------------------------------------------------------------------ public helpers
    @property
    def resources(self) -> dict[str, Resource]:
        """Every planned resource (including those a SAM resource implies), by logical id."""
        return dict(self._planned)

    def refs(self) -> dict[str, Any]:
        """Logical id -> ``Ref`` value (physical name, ARN or URL, as CloudFormation returns)."""
        return {logical_id: res.ref for logical_id, res in self._planned.items()}

    def resolve(self, value: Any, where: str = "value") -> Any:
        return self.resolver.resolve(value, where)

    def function_by_name(self, name: str) -> FunctionSpec | None:
        for spec in self.functions.values():
            if spec.name == name:
                return spec
        return None

    def _warn(self, message: str) -> None:
        LOG.warning("%s: %s", self.template_path.name, message)
        self.warnings.append(message)

    # ------------------------------------------------------------------ parameters
    def _parameter_values(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        declared = self.template.get("Parameters") or {}
        unknown = set(overrides) - set(declared)
        if unknown:
            raise TemplateError(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        values: dict[str, Any] = {}
        for name, decl in declared.items():
            if name in overrides:
                value = overrides[name]
            elif "Default" in decl:
                value = decl["Default"]
            else:
                raise TemplateError(f"Parameters.{name}: no value and no Default")
            allowed = decl.get("AllowedValues")
            if allowed is not None and str(value) not in [str(a) for a in allowed]:
                raise TemplateError(f"Parameters.{name}: {value!r} is not in {allowed!r}")
            ptype = str(decl.get("Type", "String"))
            if ptype == "CommaDelimitedList" or ptype.startswith("List<"):
                if isinstance(value, str):
                    value = [item.strip() for item in value.split(",")] if value else []
            else:
                value = scalar_str(value, f"Parameters.{name}")
            values[name] = value
        return values

    def _pseudo(self, name: str) -> Any:
        stack_id = (
            f"arn:{self.partition}:cloudformation:{self.region}:{self.account_id}:stack/"
            f"{self.stack_name}/{_stable_uuid(self.stack_name)}"
        )
        return {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account_id,
            "AWS::Partition": self.partition,
            "AWS::StackName": self.stack_name,
            "AWS::StackId": stack_id,
            "AWS::URLSuffix": self.url_suffix,
            "AWS::NotificationARNs": [],
            "AWS::NoValue": NO_VALUE,
        }.get(name, _MISSING)

    # ------------------------------------------------------------------ references
    def _ref(self, name: str, where: str) -> Any:
        pseudo = self._pseudo(name)
        if pseudo is not _MISSING:
            return pseudo
        if name in self._parameters:
            return self._parameters[name]
        return self._plan(name, where).ref

    def _get_att(self, logical_id: str, attribute: str, where: str) -> Any:
        resource = self._plan(logical_id, where)
        if attribute not in resource.attributes:
            raise TemplateError(
                f"{where}: {logical_id} ({resource.type}) has no attribute {attribute!r} "
                f"the local cloud knows (known: {', '.join(sorted(resource.attributes)) or '-'})"
            )
        return resource.attributes[attribute]

    # ------------------------------------------------------------------ loading
    def _load_resources(self) -> None:
        globals_ = self.template.get("Globals") or {}
        for section in globals_:
            if section not in _GLOBALS_SECTIONS:
                raise TemplateError(f"Globals.{section} is not a SAM Globals section")
        for logical_id, decl in self.template["Resources"].items():
            if not isinstance(decl, dict) or "Type" not in decl:
                raise TemplateError(f"Resources.{logical_id}: a resource needs a Type")
            condition = decl.get("Condition")
            if condition is not None and not self.resolver.condition(
                str(condition), f"Resources.{logical_id}.Condition"
            ):
                continue
            rtype = str(decl["Type"])
            properties = dict(decl.get("Properties") or {})
            for section, section_type in _GLOBALS_SECTIONS.items():
                if section_type == rtype and section in globals_:
                    properties = merge_globals(globals_[section], properties)
            depends = decl.get("DependsOn") or []
            self._raw[logical_id] = {"Type": rtype, "Properties": properties,
                                     "DependsOn": [depends] if isinstance(depends, str)
                                     else list(depends)}

    def _props(self, logical_id: str) -> dict[str, Any]:
        props: dict[str, Any] = self._raw[logical_id]["Properties"]
        return props

    def _resolve_prop(self, logical_id: str, name: str, default: Any = None) -> Any:
        props = self._props(logical_id)
        if name not in props:
            return default
        value = self.resolve(props[name], f"Resources.{logical_id}.Properties.{name}")
        return default if value is NO_VALUE else value

    # ------------------------------------------------------------------ planning
    def _plan(self, logical_id: str, where: str = "Resources") -> Resource:
        """Names and attributes of a resource, computed on first use (any order works)."""
        if logical_id in self._planned:
            resource = self._planned[logical_id]
            if isinstance(resource.ref, _Unsupported) and where != "Resources":
                raise TemplateError(f"{where}: {logical_id} is a {resource.type}, which the "
                                    "local cloud does not emulate")
            return resource
        if logical_id not in self._raw:
            raise TemplateError(f"{where}: unknown resource or parameter {logical_id!r}")
        if logical_id in self._planning:
            raise TemplateError(f"{where}: the name of {logical_id} depends on itself")
        self._planning.add(logical_id)
        try:
            rtype = self._raw[logical_id]["Type"]
            planner = _PLANNERS.get(rtype)
            if planner is None:
                resource = Resource(logical_id, rtype, ref=_Unsupported(logical_id, rtype))
                self._warn(f"{logical_id}: resource type {rtype} is not emulated; skipped")
            else:
                resource = planner(self, logical_id)
            self._planned[logical_id] = resource
        finally:
            self._planning.discard(logical_id)
        if isinstance(resource.ref, _Unsupported) and where != "Resources":
            raise TemplateError(f"{where}: {logical_id} is a {resource.type}, which the "
                                "local cloud does not emulate")
        return resource

    def _name(self, logical_id: str, explicit_prop: str | None, limit: int) -> str:
        if explicit_prop is not None:
            explicit = self._resolve_prop(logical_id, explicit_prop)
            if explicit is not None:
                return scalar_str(explicit, f"Resources.{logical_id}.{explicit_prop}")
        return f"{self.stack_name}-{logical_id}"[:limit]

    def _arn(self, service: str, resource: str, *, region: bool = True) -> str:
        reg = self.region if region else ""
        return f"arn:{self.partition}:{service}:{reg}:{self.account_id}:{resource}"

    def _add_generated(self, resource: Resource) -> None:
        if resource.logical_id in self._raw or resource.logical_id in self._planned:
            raise TemplateError(
                f"{resource.generated_by}: implied resource {resource.logical_id} clashes with "
                "an existing logical id"
            )
        self._planned[resource.logical_id] = resource

    def _plan_table(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "TableName", 255)
        arn = self._arn("dynamodb", f"table/{name}")
        return Resource(logical_id, self._raw[logical_id]["Type"], name, {"Arn": arn})

    def _plan_function(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "FunctionName", 64)
        arn = self._arn("lambda", f"function:{name}")
        rtype = self._raw[logical_id]["Type"]
        if rtype == "AWS::Serverless::Function" and "Role" not in self._props(logical_id):
            role_name = f"{self.stack_name}-{logical_id}Role"[:64]
            role_arn = self._arn("iam", f"role/{role_name}", region=False)
            self._add_generated(
                Resource(f"{logical_id}Role", "AWS::IAM::Role", role_name,
                         {"Arn": role_arn}, generated_by=logical_id)
            )
        resource = Resource(logical_id, rtype, name, {"Arn": arn})
        self._planned[logical_id] = resource
        self._plan_sam_events(logical_id, arn, kind="function")
        destinations = (self._props(logical_id).get("EventInvokeConfig") or {}).get(
            "DestinationConfig") or {}
        for condition, destination in destinations.items():
            if (isinstance(destination, dict) and destination.get("Type") == "SQS"
                    and "Destination" not in destination):
                queue_id = f"{logical_id}EventInvokeConfig{condition}Queue"
                self._add_generated(self._queue_resource(
                    queue_id, f"{self.stack_name}-{queue_id}"[:80], "AWS::SQS::Queue",
                    by=logical_id,
                ))
        return resource

    def _plan_state_machine(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "Name", 80)
        if "StateMachineName" in self._props(logical_id):
            name = self._name(logical_id, "StateMachineName", 80)
        arn = self._arn("states", f"stateMachine:{name}")
        rtype = self._raw[logical_id]["Type"]
        resource = Resource(logical_id, rtype, arn, {"Arn": arn, "Name": name})
        self._planned[logical_id] = resource
        if rtype == "AWS::Serverless::StateMachine":
            if "Role" not in self._props(logical_id):
                role_name = f"{self.stack_name}-{logical_id}Role"[:64]
                self._add_generated(Resource(
                    f"{logical_id}Role", "AWS::IAM::Role", role_name,
                    {"Arn": self._arn("iam", f"role/{role_name}", region=False)},
                    generated_by=logical_id,
                ))
            self._plan_sam_events(logical_id, arn, kind="state machine")
        return resource

    def _plan_layer(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "LayerName", 140)
        arn = self._arn("lambda", f"layer:{name}:1")
        return Resource(logical_id, self._raw[logical_id]["Type"], arn, {"LayerVersionArn": arn})

    def _plan_api(self, logical_id: str) -> Resource:
        api_id = _stable_id(f"{self.stack_name}/{logical_id}")
        return Resource(
            logical_id,
            self._raw[logical_id]["Type"],
            api_id,
            {"RootResourceId": _stable_id(f"{self.stack_name}/{logical_id}/root")},
        )

    def _plan_queue(self, logical_id: str) -> Resource:
        fifo = bool(self._resolve_prop(logical_id, "FifoQueue", False))
        name = self._name(logical_id, "QueueName", 80 - (5 if fifo else 0))
        if fifo and not name.endswith(".fifo"):
            name += ".fifo"
        return self._queue_resource(logical_id, name, self._raw[logical_id]["Type"])

    def _queue_resource(
        self, logical_id: str, name: str, rtype: str, by: str | None = None
    ) -> Resource:
        url = f"{self.aws_endpoint}/{self.account_id}/{name}"
        arn = self._arn("sqs", name)
        return Resource(logical_id, rtype, url, {"Arn": arn, "QueueName": name, "QueueUrl": url},
                        generated_by=by)

    def _plan_topic(self, logical_id: str) -> Resource:
        fifo = bool(self._resolve_prop(logical_id, "FifoTopic", False))
        name = self._name(logical_id, "TopicName", 256 - (5 if fifo else 0))
        if fifo and not name.endswith(".fifo"):
            name += ".fifo"
        arn = self._arn("sns", name)
        # Ref of an AWS::SNS::Topic is its ARN.
        return Resource(logical_id, self._raw[logical_id]["Type"], arn,
                        {"TopicArn": arn, "TopicName": name})

    def _plan_log_group(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "LogGroupName", 512)
        arn = self._arn("logs", f"log-group:{name}:*")
        return Resource(logical_id, self._raw[logical_id]["Type"], name, {"Arn": arn})

    def _plan_rule(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "Name", 64)
        bus = self._bus_name(self._resolve_prop(logical_id, "EventBusName"))
        arn = self._rule_arn(name, bus)
        return Resource(logical_id, self._raw[logical_id]["Type"], name, {"Arn": arn})

    def _plan_role(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "RoleName", 64)
        arn = self._arn("iam", f"role{self._iam_path(logical_id)}{name}", region=False)
        return Resource(logical_id, self._raw[logical_id]["Type"], name,
                        {"Arn": arn, "RoleId": "AROA" + _stable_id(name, 17).upper()})

    def _plan_managed_policy(self, logical_id: str) -> Resource:
        # Ref is the ARN. PolicyId is left unknown: moto draws it at random on creation.
        name = self._name(logical_id, "ManagedPolicyName", 128)
        arn = self._arn("iam", f"policy{self._iam_path(logical_id)}{name}", region=False)
        return Resource(logical_id, self._raw[logical_id]["Type"], arn, {"PolicyArn": arn})

    def _iam_path(self, logical_id: str) -> str:
        path = scalar_str(self._resolve_prop(logical_id, "Path", "/"),
                          f"Resources.{logical_id}.Properties.Path")
        if not (path.startswith("/") and path.endswith("/")):
            raise TemplateError(f"Resources.{logical_id}.Properties.Path: {path!r} must begin "
                                "and end with /")
        return path

    def _plan_policy(self, logical_id: str) -> Resource:
        # Resource-based policies and Lambda permissions are not evaluated (a same-account
        # caller is authorised by its identity policies, docs/iam.md); the resource exists to
        # be referred to.
        rtype = self._raw[logical_id]["Type"]
        return Resource(logical_id, rtype, f"{self.stack_name}-{logical_id}")

    def _bus_name(self, bus: Any) -> str:
        if bus is None:
            return "default"
        text = scalar_str(bus)
        return text.rsplit("/", 1)[-1] if text.startswith("arn:") else text

    def _rule_arn(self, name: str, bus: str) -> str:
        prefix = "" if bus == "default" else f"{bus}/"
        return self._arn("events", f"rule/{prefix}{name}")

    def _plan_sam_events(self, owner: str, owner_arn: str, *, kind: str) -> None:
        """Plan the resources a SAM function's or state machine's Events imply."""
        events = self._props(owner).get("Events") or {}
        if not isinstance(events, dict):
            raise TemplateError(f"Resources.{owner}.Properties.Events must be a mapping")
        for event_id, event in events.items():
            etype = event.get("Type")
            where = f"Resources.{owner}.Properties.Events.{event_id}"
            if etype in ("EventBridgeRule", "CloudWatchEvent", "Schedule", "ScheduleV2"):
                props = event.get("Properties") or {}
                rule_id = f"{owner}{event_id}"
                name = props.get("RuleName") or props.get("Name")
                rule_name = (
                    scalar_str(self.resolve(name, where)) if name
                    else f"{self.stack_name}-{rule_id}"[:64]
                )
                bus = self._bus_name(self.resolve(props.get("EventBusName"), where))
                self._add_generated(
                    Resource(rule_id, "AWS::Events::Rule", rule_name,
                             {"Arn": self._rule_arn(rule_name, bus)}, generated_by=owner)
                )
                dlq = props.get("DeadLetterConfig") or {}
                if dlq.get("Type") == "SQS":
                    queue_id = str(dlq.get("QueueLogicalId") or f"{rule_id}Queue")
                    queue_name = f"{self.stack_name}-{queue_id}"[:80]
                    self._add_generated(
                        self._queue_resource(queue_id, queue_name, "AWS::SQS::Queue", by=owner)
                    )
            elif etype == "Api":
                props = event.get("Properties") or {}
                if "RestApiId" not in props and _IMPLICIT_API not in self._planned:
                    self._add_generated(
                        Resource(_IMPLICIT_API, "AWS::Serverless::Api",
                                 _stable_id(f"{self.stack_name}/{_IMPLICIT_API}"),
                                 {"RootResourceId": _stable_id(f"{self.stack_name}/root")},
                                 generated_by=owner)
                    )
            else:
                self._warn(f"{where}: {kind} event type {etype} is not emulated; ignored")

    # ------------------------------------------------------------------ specs
    def _build_specs(self) -> None:
        for logical_id, raw in self._raw.items():
            builder = _BUILDERS.get(raw["Type"])
            if builder is not None:
                builder(self, logical_id)
        for api_id, routes in self._routes.items():
            if api_id == _IMPLICIT_API and api_id not in self.apis:
                self.apis[api_id] = ApiSpec(
                    _IMPLICIT_API, self._planned[api_id].ref, _IMPLICIT_API_STAGE, tuple(routes)
                )
            elif api_id in self.apis:
                api = self.apis[api_id]
                self.apis[api_id] = replace(api, routes=tuple(routes))
        self._check_routes()

    def _check_routes(self) -> None:
        for api in self.apis.values():
            seen: dict[tuple[str, str], str] = {}
            for route in api.routes:
                key = (route.path, route.method)
                if key in seen:
                    raise TemplateError(
                        f"{api.logical_id}: {route.method} {route.path} is declared by both "
                        f"{seen[key]} and {route.function_logical_id}.{route.event_id}"
                    )
                seen[key] = f"{route.function_logical_id}.{route.event_id}"

    def _build_table(self, logical_id: str) -> None:
        where = f"Resources.{logical_id}.Properties"
        res = self._planned[logical_id]
        props = self.resolve(self._props(logical_id), where)
        if res.type == "AWS::Serverless::SimpleTable":
            key = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
            attr_type = {"String": "S", "Number": "N", "Binary": "B"}[key.get("Type", "String")]
            args: dict[str, Any] = {
                "TableName": res.ref,
                "AttributeDefinitions": [
                    {"AttributeName": key["Name"], "AttributeType": attr_type}
                ],
                "KeySchema": [{"AttributeName": key["Name"], "KeyType": "HASH"}],
                "BillingMode": "PAY_PER_REQUEST",
            }
            if "SSESpecification" in props:
                args["SSESpecification"] = props["SSESpecification"]
            self.tables[logical_id] = TableSpec(logical_id, res.ref, res.attributes["Arn"], args)
            return
        args = {"TableName": res.ref}
        for key in ("AttributeDefinitions", "KeySchema", "BillingMode", "ProvisionedThroughput",
                    "TableClass", "DeletionProtectionEnabled"):
            if key in props:
                args[key] = props[key]
        if props.get("GlobalSecondaryIndexes"):
            args["GlobalSecondaryIndexes"] = [
                _pick(index, "IndexName", "KeySchema", "Projection", "ProvisionedThroughput",
                      "OnDemandThroughput")
                for index in props["GlobalSecondaryIndexes"]
            ]
        if props.get("LocalSecondaryIndexes"):
            args["LocalSecondaryIndexes"] = [
                _pick(index, "IndexName", "KeySchema", "Projection")
                for index in props["LocalSecondaryIndexes"]
            ]
        stream = props.get("StreamSpecification")
        if stream and stream.get("StreamViewType"):
            args["StreamSpecification"] = {
                "StreamEnabled": True, "StreamViewType": stream["StreamViewType"],
            }
        if "KeySchema" not in args or "AttributeDefinitions" not in args:
            raise TemplateError(f"{where}: a table needs KeySchema and AttributeDefinitions")
        sse = props.get("SSESpecification")
        if sse:
            args["SSESpecification"] = {
                "Enabled": bool(sse.get("SSEEnabled", False)),
                **({"SSEType": sse["SSEType"]} if "SSEType" in sse else {}),
            }
        if props.get("Tags"):
            args["Tags"] = props["Tags"]
        ttl = props.get("TimeToLiveSpecification") or {}
        pitr = props.get("PointInTimeRecoverySpecification") or {}
        self.tables[logical_id] = TableSpec(
            logical_id,
            res.ref,
            res.attributes["Arn"],
            args,
            ttl_attribute=ttl.get("AttributeName") if ttl.get("Enabled") else None,
            point_in_time_recovery=bool(pitr.get("PointInTimeRecoveryEnabled", False)),
        )

    def _build_layer(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        uri = self._resolve_prop(logical_id, "ContentUri")
        if uri is None:
            uri = self._resolve_prop(logical_id, "Content")
        content_dir: Path | None = None
        if isinstance(uri, str):
            content_dir = (self.template_dir / uri).resolve()
            if not content_dir.exists():
                raise TemplateError(f"{where}.ContentUri: {content_dir} does not exist")
        name = res.ref.split(":")[-2]
        self.layers[logical_id] = LayerSpec(logical_id, name, res.ref, content_dir)

    def _build_role(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        policy = self._resolve_prop(logical_id, "AssumeRolePolicyDocument") or _lambda_trust()
        boundary = self._resolve_prop(logical_id, "PermissionsBoundary")
        inline = self._resolve_prop(logical_id, "Policies") or []
        self.roles[logical_id] = RoleSpec(
            logical_id, res.ref, res.attributes["Arn"], policy,
            path=self._iam_path(logical_id),
            permissions_boundary=scalar_str(boundary, f"{where}.PermissionsBoundary")
            if boundary is not None else None,
            policies=tuple(
                (scalar_str(p["PolicyName"], f"{where}.Policies[{i}].PolicyName"),
                 p["PolicyDocument"])
                for i, p in enumerate(inline)
            ),
            managed_policy_arns=tuple(
                scalar_str(arn, f"{where}.ManagedPolicyArns")
                for arn in self._resolve_prop(logical_id, "ManagedPolicyArns") or []
            ),
        )

    def _build_managed_policy(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        document = self._resolve_prop(logical_id, "PolicyDocument")
        if not isinstance(document, dict):
            raise TemplateError(f"{where}.PolicyDocument: a managed policy needs a document")
        for unsupported in ("Users", "Groups"):
            if self._props(logical_id).get(unsupported):
                self._warn(f"{where}.{unsupported}: not emulated; ignored")
        self.managed_policies[logical_id] = ManagedPolicySpec(
            logical_id,
            res.ref.rsplit("/", 1)[-1],
            res.ref,
            self._iam_path(logical_id),
            document,
            description=scalar_str(self._resolve_prop(logical_id, "Description", ""),
                                   f"{where}.Description"),
            roles=tuple(scalar_str(role, f"{where}.Roles")
                        for role in self._resolve_prop(logical_id, "Roles") or []),
        )

    def _build_function(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        if res.type != "AWS::Serverless::Function":
            raise TemplateError(
                f"Resources.{logical_id}: plain AWS::Lambda::Function resources have no local "
                "code directory; declare the function as AWS::Serverless::Function with CodeUri"
            )
        if self._resolve_prop(logical_id, "PackageType", "Zip") != "Zip":
            raise TemplateError(f"{where}.PackageType: only Zip functions run in-process")
        code_uri = self._resolve_prop(logical_id, "CodeUri")
        if not isinstance(code_uri, str):
            raise TemplateError(f"{where}.CodeUri: a local directory is needed, got {code_uri!r}")
        code_dir = (self.template_dir / code_uri).resolve()
        if not code_dir.is_dir():
            raise TemplateError(f"{where}.CodeUri: {code_dir} is not a directory")
        handler = self._resolve_prop(logical_id, "Handler")
        if not isinstance(handler, str) or "." not in handler:
            raise TemplateError(f"{where}.Handler: expected 'module.function', got {handler!r}")
        env_vars = (self._resolve_prop(logical_id, "Environment") or {}).get("Variables") or {}
        environment = {
            str(k): scalar_str(v, f"{where}.Environment.Variables.{k}") for k, v in env_vars.items()
        }
        layers = tuple(scalar_str(arn, f"{where}.Layers") for arn in
                       self._resolve_prop(logical_id, "Layers", []))
        layer_types = ("AWS::Serverless::LayerVersion", "AWS::Lambda::LayerVersion")
        known_layers = {res.ref: res.logical_id for res in self._planned.values()
                        if res.type in layer_types}
        for arn in layers:
            if arn not in known_layers and not self.allow_external_layers:
                raise TemplateError(
                    f"{where}.Layers: {arn} is not a layer of this template; the local cloud "
                    "can only provide the template's own layers (from the installed packages)"
                )
        role = self._resolve_prop(logical_id, "Role")
        if role is not None:
            role_arn = scalar_str(role, f"{where}.Role")
        else:
            role_arn = self._planned[f"{logical_id}Role"].attributes["Arn"]
        tracing = self._resolve_prop(logical_id, "Tracing")
        async_config = self._async_config(logical_id, where)
        self.functions[logical_id] = FunctionSpec(
            logical_id=logical_id,
            name=res.ref,
            arn=res.attributes["Arn"],
            code_dir=code_dir,
            handler=handler,
            runtime=str(self._resolve_prop(logical_id, "Runtime", "python3.12")),
            memory_size=int(self._resolve_prop(logical_id, "MemorySize", 128)),
            timeout=int(self._resolve_prop(logical_id, "Timeout", 3)),
            environment=environment,
            layers=layers,
            role_arn=role_arn,
            description=str(self._resolve_prop(logical_id, "Description", "")),
            architectures=tuple(self._resolve_prop(logical_id, "Architectures", ["x86_64"])),
            tracing="Active" if tracing == "Active" else "PassThrough",
            async_config=async_config,
            layer_ids=tuple(known_layers[arn] for arn in layers if arn in known_layers),
        )
        if role is None:
            role_res = self._planned[f"{logical_id}Role"]

            def destination_arn(condition: str, destination: Mapping[str, Any]) -> Any:
                if "Destination" in destination:
                    return destination["Destination"]
                return {"Fn::GetAtt": [f"{logical_id}EventInvokeConfig{condition}Queue",
                                       "Arn"]}

            trust, managed, inline = sam_roles.function_role(
                logical_id, self._props(logical_id), self.partition, destination_arn)
            self._add_sam_role(role_res, trust, managed, inline,
                               self._resolve_prop(logical_id, "PermissionsBoundary"))
        self._build_sam_events(logical_id, res.attributes["Arn"], target_kind="Lambda")

    def _add_sam_role(self, role_res: Resource, trust: Mapping[str, Any], managed: list[Any],
                      inline: list[tuple[str, Any]], boundary: Any) -> None:
        where = f"Resources.{role_res.generated_by}.Properties"
        self.roles[role_res.logical_id] = RoleSpec(
            role_res.logical_id, role_res.ref, role_res.attributes["Arn"], trust,
            permissions_boundary=scalar_str(boundary, f"{where}.PermissionsBoundary")
            if boundary is not None else None,
            policies=tuple((name, self.resolve(document, f"{where}.Policies ({name})"))
                           for name, document in inline),
            managed_policy_arns=tuple(scalar_str(self.resolve(arn, f"{where}.Policies"),
                                                 f"{where}.Policies") for arn in managed),
        )

    def _async_config(self, logical_id: str, where: str) -> AsyncConfig | None:
        invoke_config = self._resolve_prop(logical_id, "EventInvokeConfig")
        dead_letter = self._resolve_prop(logical_id, "DeadLetterQueue")
        if invoke_config is None and dead_letter is None:
            return None
        invoke_config = invoke_config or {}
        destinations = invoke_config.get("DestinationConfig") or {}
        resolved: dict[str, str | None] = {}
        for condition in ("OnSuccess", "OnFailure"):
            destination = destinations.get(condition)
            if not destination:
                resolved[condition] = None
                continue
            arn = destination.get("Destination")
            if arn is None:
                generated = self._planned.get(f"{logical_id}EventInvokeConfig{condition}Queue")
                if generated is None:
                    raise TemplateError(
                        f"{where}.EventInvokeConfig.DestinationConfig.{condition}: give a "
                        "Destination ARN (the local cloud only creates SQS destinations)"
                    )
                arn = generated.attributes["Arn"]
                self.queues[generated.logical_id] = QueueSpec(
                    generated.logical_id, generated.attributes["QueueName"], generated.ref, arn,
                    {},
                )
            resolved[condition] = scalar_str(arn, f"{where}.EventInvokeConfig")
        retries = invoke_config.get("MaximumRetryAttempts", 2)
        age = invoke_config.get("MaximumEventAgeInSeconds")
        return AsyncConfig(
            maximum_retry_attempts=int(retries),
            maximum_event_age_seconds=int(age) if age is not None else None,
            on_success=resolved["OnSuccess"],
            on_failure=resolved["OnFailure"],
            dead_letter_arn=(dead_letter or {}).get("TargetArn"),
        )

    def _build_state_machine(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        props = self._props(logical_id)
        if res.type == "AWS::Serverless::StateMachine":
            text = self._definition_text(logical_id, props, uri_key="DefinitionUri",
                                         inline_key="Definition")
        else:
            text = self._definition_text(logical_id, props, uri_key="DefinitionS3Location",
                                         inline_key="Definition", string_key="DefinitionString")
        subs = self._resolve_prop(logical_id, "DefinitionSubstitutions", {}) or {}
        if not isinstance(subs, dict):
            raise TemplateError(f"{where}.DefinitionSubstitutions must be a mapping")
        definition = substitute_definition(text, subs, f"{where}.DefinitionSubstitutions")
        try:
            json.loads(definition)
        except ValueError as exc:
            raise TemplateError(f"{where}: the definition is not valid JSON after substitution: "
                                f"{exc}") from exc
        role = self._resolve_prop(logical_id, "Role") or self._resolve_prop(logical_id, "RoleArn")
        if role:
            role_arn = scalar_str(role, f"{where}.Role")
        else:
            role_res = self._planned[f"{logical_id}Role"]
            role_arn = role_res.attributes["Arn"]
            trust, managed, inline = sam_roles.state_machine_role(
                logical_id, props, self.partition)
            self._add_sam_role(role_res, trust, managed, inline,
                               self._resolve_prop(logical_id, "PermissionsBoundary"))
        self.state_machines[logical_id] = StateMachineSpec(
            logical_id=logical_id,
            name=res.attributes["Name"],
            arn=res.ref,
            definition=definition,
            type=str(self._resolve_prop(logical_id, "Type", None)
                     or self._resolve_prop(logical_id, "StateMachineType", "STANDARD")),
            role_arn=role_arn,
        )
        if res.type == "AWS::Serverless::StateMachine":
            self._build_sam_events(logical_id, res.ref, target_kind="StepFunctions")

    def _definition_text(
        self, logical_id: str, props: dict[str, Any], *, uri_key: str, inline_key: str,
        string_key: str | None = None,
    ) -> str:
        where = f"Resources.{logical_id}.Properties"
        if string_key and string_key in props:
            value = self._resolve_prop(logical_id, string_key)
            return scalar_str(value, f"{where}.{string_key}")
        if inline_key in props:
            return json.dumps(self._resolve_prop(logical_id, inline_key), indent=2)
        if uri_key in props:
            uri = self._resolve_prop(logical_id, uri_key)
            if not isinstance(uri, str):
                raise TemplateError(
                    f"{where}.{uri_key}: only a local file is supported, got {uri!r}"
                )
            path = (self.template_dir / uri).resolve()
            if not path.is_file():
                raise TemplateError(f"{where}.{uri_key}: {path} does not exist")
            text = path.read_text(encoding="utf-8")
            if path.suffix in (".yaml", ".yml"):
                import yaml  # type: ignore[import-untyped]

                return json.dumps(yaml.safe_load(text), indent=2)
            return text
        raise TemplateError(f"{where}: a state machine needs {uri_key} or {inline_key}")

    def _build_queue(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        props = self.resolve(self._props(logical_id), f"Resources.{logical_id}.Properties")
        attributes: dict[str, str] = {}
        for key in ("DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod",
                    "ReceiveMessageWaitTimeSeconds", "VisibilityTimeout", "FifoQueue",
                    "ContentBasedDeduplication", "KmsMasterKeyId", "SqsManagedSseEnabled"):
            if key in props:
                attributes[key] = scalar_str(props[key])
        if "RedrivePolicy" in props:
            attributes["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
        self.queues[logical_id] = QueueSpec(
            logical_id, res.attributes["QueueName"], res.ref, res.attributes["Arn"], attributes
        )

    def _build_topic(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        props = self.resolve(self._props(logical_id), f"Resources.{logical_id}.Properties")
        attributes = {
            key: scalar_str(props[key])
            for key in ("DisplayName", "KmsMasterKeyId", "FifoTopic",
                        "ContentBasedDeduplication")
            if key in props
        }
        self.topics[logical_id] = TopicSpec(
            logical_id, res.attributes["TopicName"], res.ref, attributes
        )

    def _build_log_group(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        retention = self._resolve_prop(logical_id, "RetentionInDays")
        self.log_groups[logical_id] = LogGroupSpec(
            logical_id, res.ref, res.attributes["Arn"], int(retention) if retention else None
        )

    def _build_api(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        props = self._props(logical_id)
        if "DefinitionBody" in props or "DefinitionUri" in props:
            self._warn(f"{where}: an OpenAPI definition is not emulated; routes come from the "
                       "functions' Api events only")
        stage = self._resolve_prop(logical_id, "StageName")
        if not stage:
            raise TemplateError(f"{where}.StageName is required")
        auth = (self._resolve_prop(logical_id, "Auth") or {}).get("DefaultAuthorizer")
        method_settings = self._resolve_prop(logical_id, "MethodSettings") or []
        logs = bool(self._resolve_prop(logical_id, "AccessLogSetting")) or any(
            str(m.get("LoggingLevel", "OFF")).upper() != "OFF" or m.get("DataTraceEnabled")
            for m in method_settings if isinstance(m, dict))
        self.apis[logical_id] = ApiSpec(
            logical_id=logical_id,
            api_id=res.ref,
            stage=scalar_str(stage),
            routes=(),
            binary_media_types=tuple(self._resolve_prop(logical_id, "BinaryMediaTypes", []) or []),
            auth=auth,
            logs_to_cloudwatch=logs,
            depends_on=self.dependencies_of(logical_id),
        )

    def dependencies_of(self, logical_id: str) -> frozenset[str]:
        """The resources ``logical_id`` depends on through DependsOn, transitively."""
        found: set[str] = set()
        todo = list(self._raw.get(logical_id, {}).get("DependsOn", []))
        while todo:
            other = str(todo.pop())
            if other not in found:
                found.add(other)
                todo += self._raw.get(other, {}).get("DependsOn", [])
        return frozenset(found)

    def _build_api_account(self, logical_id: str) -> None:
        role = self._resolve_prop(logical_id, "CloudWatchRoleArn")
        self.api_accounts[logical_id] = ApiAccountSpec(
            logical_id, scalar_str(role, f"Resources.{logical_id}.Properties.CloudWatchRoleArn")
            if role is not None else None)

    def _build_rule(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        targets = []
        for i, target in enumerate(self._resolve_prop(logical_id, "Targets", []) or []):
            twhere = f"{where}.Targets[{i}]"
            if "Id" not in target or "Arn" not in target:
                raise TemplateError(f"{twhere}: a target needs Id and Arn")
            targets.append(TargetSpec(
                id=str(target["Id"]),
                arn=scalar_str(target["Arn"], twhere),
                input=target.get("Input"),
                input_path=target.get("InputPath"),
                input_transformer=target.get("InputTransformer"),
                dead_letter_arn=(target.get("DeadLetterConfig") or {}).get("Arn"),
                role_arn=target.get("RoleArn"),
                retry_policy=target.get("RetryPolicy"),
            ))
        pattern = self._resolve_prop(logical_id, "EventPattern")
        if isinstance(pattern, str):
            pattern = json.loads(pattern)
        self.rules[logical_id] = RuleSpec(
            logical_id=logical_id,
            name=res.ref,
            arn=res.attributes["Arn"],
            event_bus_name=self._bus_name(self._resolve_prop(logical_id, "EventBusName")),
            event_pattern=pattern,
            schedule_expression=self._resolve_prop(logical_id, "ScheduleExpression"),
            state=str(self._resolve_prop(logical_id, "State", "ENABLED")),
            targets=tuple(targets),
            description=str(self._resolve_prop(logical_id, "Description", "")),
        )

    def _build_sam_events(self, owner: str, owner_arn: str, *, target_kind: str) -> None:
        events = self._props(owner).get("Events") or {}
        for event_id, event in events.items():
            etype = event.get("Type")
            where = f"Resources.{owner}.Properties.Events.{event_id}.Properties"
            props = self.resolve(event.get("Properties") or {}, where)
            if etype in ("EventBridgeRule", "CloudWatchEvent", "Schedule", "ScheduleV2"):
                self._build_event_rule(owner, owner_arn, event_id, etype, props, target_kind, where)
            elif etype == "Api":
                if target_kind != "Lambda":
                    self._warn(f"{where}: Api events of state machines are not emulated; ignored")
                    continue
                api_id = _IMPLICIT_API
                if "RestApiId" in props:
                    api_ref = props["RestApiId"]
                    api_id = next((r.logical_id for r in self._planned.values()
                                   if r.type == "AWS::Serverless::Api" and r.ref == api_ref), "")
                    if not api_id:
                        raise TemplateError(f"{where}.RestApiId: no AWS::Serverless::Api with id "
                                            f"{api_ref!r} in this template")
                path, method = props.get("Path"), props.get("Method")
                if not isinstance(path, str) or not path.startswith("/") or not method:
                    raise TemplateError(f"{where}: an Api event needs Path (starting with /) "
                                        "and Method")
                method = str(method).upper()
                self._routes.setdefault(api_id, []).append(RouteSpec(
                    path=path,
                    method="ANY" if method in ("ANY", "X-AMAZON-APIGATEWAY-ANY-METHOD") else method,
                    function_logical_id=owner,
                    event_id=event_id,
                    auth=(props.get("Auth") or {}).get("Authorizer"),
                ))

    def _build_event_rule(
        self, owner: str, owner_arn: str, event_id: str, etype: str, props: dict[str, Any],
        target_kind: str, where: str,
    ) -> None:
        rule = self._planned[f"{owner}{event_id}"]
        schedule = None
        pattern = None
        if etype in ("Schedule", "ScheduleV2"):
            schedule = props.get("Schedule") or props.get("ScheduleExpression")
        else:
            pattern = props.get("Pattern")
            if not isinstance(pattern, dict):
                raise TemplateError(f"{where}.Pattern: an event pattern mapping is required")
        dlq = props.get("DeadLetterConfig") or {}
        dlq_arn = dlq.get("Arn")
        if dlq.get("Type") == "SQS":
            queue_id = str(dlq.get("QueueLogicalId") or f"{owner}{event_id}Queue")
            queue = self._planned[queue_id]
            dlq_arn = queue.attributes["Arn"]
            self.queues[queue_id] = QueueSpec(queue_id, queue.attributes["QueueName"], queue.ref,
                                              dlq_arn, {})
        target_id = (props.get("Target") or {}).get("Id") or f"{owner}{event_id}{target_kind}Target"
        target = TargetSpec(
            id=str(target_id),
            arn=owner_arn,
            input=props.get("Input"),
            input_path=props.get("InputPath"),
            input_transformer=props.get("InputTransformer"),
            dead_letter_arn=dlq_arn,
            retry_policy=props.get("RetryPolicy"),
        )
        enabled = props.get("Enabled", True)
        state = props.get("State") or ("ENABLED" if enabled else "DISABLED")
        self.rules[rule.logical_id] = RuleSpec(
            logical_id=rule.logical_id,
            name=rule.ref,
            arn=rule.attributes["Arn"],
            event_bus_name=self._bus_name(props.get("EventBusName")),
            event_pattern=pattern,
            schedule_expression=schedule,
            state=str(state),
            targets=(target,),
            description=str(props.get("Description", "")),
        )


# ---------------------------------------------------------------------------------- helpers
_MISSING = object()


class _Unsupported:
    """The Ref value of a resource type the local cloud does not emulate."""

    def __init__(self, logical_id: str, rtype: str) -> None:
        self.logical_id = logical_id
        self.type = rtype

    def __repr__(self) -> str:
        return f"<unsupported {self.type} {self.logical_id}>"


_PLANNERS: dict[str, Callable[[Stack, str], Resource]] = {
    "AWS::DynamoDB::Table": Stack._plan_table,
    "AWS::Serverless::SimpleTable": Stack._plan_table,
    "AWS::Serverless::Function": Stack._plan_function,
    "AWS::Lambda::Function": Stack._plan_function,
    "AWS::Serverless::StateMachine": Stack._plan_state_machine,
    "AWS::StepFunctions::StateMachine": Stack._plan_state_machine,
    "AWS::Serverless::LayerVersion": Stack._plan_layer,
    "AWS::Lambda::LayerVersion": Stack._plan_layer,
    "AWS::Serverless::Api": Stack._plan_api,
    "AWS::SQS::Queue": Stack._plan_queue,
    "AWS::SNS::Topic": Stack._plan_topic,
    "AWS::Logs::LogGroup": Stack._plan_log_group,
    "AWS::Events::Rule": Stack._plan_rule,
    "AWS::IAM::Role": Stack._plan_role,
    "AWS::IAM::ManagedPolicy": Stack._plan_managed_policy,
    "AWS::ApiGateway::Account": Stack._plan_policy,
    # Permissions: accepted, not enforced (moto does not enforce IAM either by default).
    "AWS::SQS::QueuePolicy": Stack._plan_policy,
    "AWS::SNS::TopicPolicy": Stack._plan_policy,
    "AWS::Lambda::Permission": Stack._plan_policy,
    "AWS::IAM::Policy": Stack._plan_policy,
    "AWS::Events::EventBusPolicy": Stack._plan_policy,
}

_BUILDERS: dict[str, Callable[[Stack, str], None]] = {
    "AWS::DynamoDB::Table": Stack._build_table,
    "AWS::Serverless::SimpleTable": Stack._build_table,
    "AWS::Serverless::Function": Stack._build_function,
    "AWS::Lambda::Function": Stack._build_function,
    "AWS::Serverless::StateMachine": Stack._build_state_machine,
    "AWS::StepFunctions::StateMachine": Stack._build_state_machine,
    "AWS::Serverless::LayerVersion": Stack._build_layer,
    "AWS::Lambda::LayerVersion": Stack._build_layer,
    "AWS::Serverless::Api": Stack._build_api,
    "AWS::SQS::Queue": Stack._build_queue,
    "AWS::SNS::Topic": Stack._build_topic,
    "AWS::Logs::LogGroup": Stack._build_log_group,
    "AWS::Events::Rule": Stack._build_rule,
    "AWS::IAM::Role": Stack._build_role,
    "AWS::IAM::ManagedPolicy": Stack._build_managed_policy,
    "AWS::ApiGateway::Account": Stack._build_api_account,
}


def merge_globals(global_props: Any, local_props: Any) -> Any:
    """SAM's Globals rule: maps merge (local wins), lists append, scalars are overridden."""
    if isinstance(global_props, dict) and isinstance(local_props, dict):
        if is_intrinsic(global_props) or is_intrinsic(local_props):
            return local_props
        merged = dict(global_props)
        for key, value in local_props.items():
            merged[key] = merge_globals(global_props[key], value) if key in global_props else value
        return merged
    if isinstance(global_props, list) and isinstance(local_props, list):
        return [*global_props, *local_props]
    return local_props


def substitute_definition(text: str, substitutions: Mapping[str, Any], where: str) -> str:
    """Apply DefinitionSubstitutions to an ASL document, as CloudFormation does (text level).

    Raises TemplateError when a ``${...}`` placeholder has no substitution or a substitution is
    never used: both are typos that cfn-lint does not catch and AWS reports only at deploy time.
    """
    values = {str(k): scalar_str(v, f"{where}.{k}") for k, v in substitutions.items()}
    used: set[str] = set()
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            missing.append(name)
            return match.group(0)
        used.add(name)
        return values[name]

    result = _PLACEHOLDER.sub(replace, text)
    if missing:
        raise TemplateError(
            f"{where}: the definition has placeholder(s) without a substitution: "
            + ", ".join("${" + name + "}" for name in sorted(set(missing)))
        )
    unused = sorted(set(values) - used)
    if unused:
        raise TemplateError(
            f"{where}: substitution(s) never used by the definition: {', '.join(unused)}"
        )
    return result


def _lambda_trust() -> dict[str, Any]:
    return _service_trust("lambda.amazonaws.com")


def _service_trust(service: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": service},
            "Action": "sts:AssumeRole",
        }],
    }


def _pick(mapping: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {key: mapping[key] for key in keys if key in mapping}


def _stable_id(seed: str, length: int = 10) -> str:
    """A short lowercase id that is the same for the same seed (API ids, resource ids)."""
    digest = hashlib.sha256(seed.encode()).hexdigest()
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    number = int(digest, 16)
    chars = []
    for _ in range(length):
        number, index = divmod(number, len(alphabet))
        chars.append(alphabet[index])
    return "".join(chars)


def _stable_uuid(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
