"""The resolved stack's base: parameters, references, loading, planning and building.

`StackBase` reads the template, resolves parameters, pseudo-parameters, conditions and SAM
``Globals``, plans every resource's names and attributes on first use (so any order works) and
builds the specs. What each resource type plans and builds is looked up in `_planners` and
`_builders`, the tables `hypd_local.template.Stack` fills from `template_plan`,
`template_functions` and `template_resources`. Also here: the helpers those modules share.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from hypd_local.intrinsics import NO_VALUE, Resolver, TemplateError, is_intrinsic, scalar_str
from hypd_local.partitions import dns_suffix, partition_of
from hypd_local.template_specs import (
    AlarmSpec,
    ApiAccountSpec,
    ApiSpec,
    FunctionSpec,
    LayerSpec,
    LogGroupSpec,
    ManagedPolicySpec,
    QueueSpec,
    Resource,
    ResourcePolicySpec,
    RoleSpec,
    RouteSpec,
    RuleSpec,
    ScheduleGroupSpec,
    ScheduleSpec,
    StateMachineSpec,
    StreamMappingSpec,
    TableSpec,
    TopicSpec,
)

LOG = logging.getLogger("hypd_local.template")

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


_IMPLICIT_API = "ServerlessRestApi"

_IMPLICIT_API_STAGE = "Prod"


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


class StackBase:
    """A template resolved for one region, account and stack name.

    ``aws_endpoint`` is used only for SQS queue URLs, which embed the endpoint; None means AWS's
    own (``https://sqs.<region>.amazonaws.com``).
    """

    _planners: ClassVar[Mapping[str, Callable[[Any, str], Resource]]] = {}
    """Resource type -> the method that plans its names and attributes."""
    _builders: ClassVar[Mapping[str, Callable[[Any, str], None]]] = {}
    """Resource type -> the method that builds its spec."""

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
        self.stream_mappings: dict[str, StreamMappingSpec] = {}
        self.layers: dict[str, LayerSpec] = {}
        self.roles: dict[str, RoleSpec] = {}
        self.managed_policies: dict[str, ManagedPolicySpec] = {}
        self.functions: dict[str, FunctionSpec] = {}
        self.state_machines: dict[str, StateMachineSpec] = {}
        self.queues: dict[str, QueueSpec] = {}
        self.topics: dict[str, TopicSpec] = {}
        self.log_groups: dict[str, LogGroupSpec] = {}
        self.rules: dict[str, RuleSpec] = {}
        self.schedules: dict[str, ScheduleSpec] = {}
        self.schedule_groups: dict[str, ScheduleGroupSpec] = {}
        self.apis: dict[str, ApiSpec] = {}
        self.api_accounts: dict[str, ApiAccountSpec] = {}
        self._routes: dict[str, list[RouteSpec]] = {}
        self.resource_policies: dict[str, ResourcePolicySpec] = {}
        self.alarms: dict[str, AlarmSpec] = {}

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
            planner = self._planners.get(rtype)
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

    def _explicit_name(self, logical_id: str, explicit_prop: str | None) -> str | None:
        """The resource's name property `explicit_prop`, if the template sets it."""
        if explicit_prop is None:
            return None
        explicit = self._resolve_prop(logical_id, explicit_prop)
        if explicit is None:
            return None
        return scalar_str(explicit, f"Resources.{logical_id}.{explicit_prop}")

    def _name(self, logical_id: str, explicit_prop: str | None, limit: int) -> str:
        explicit = self._explicit_name(logical_id, explicit_prop)
        return explicit if explicit is not None else f"{self.stack_name}-{logical_id}"[:limit]

    def _generated_name(self, logical_id: str, explicit_prop: str | None = None) -> str:
        """The resource's `explicit_prop` if set, else the name CloudFormation makes up for a
        role or a rule (`generated_name`)."""
        explicit = self._explicit_name(logical_id, explicit_prop)
        return explicit if explicit is not None else generated_name(self.stack_name, logical_id)

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

    # ------------------------------------------------------------------ specs
    def _build_specs(self) -> None:
        for logical_id, raw in self._raw.items():
            builder = self._builders.get(raw["Type"])
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


# ---------------------------------------------------------------------------------- helpers
_MISSING = object()


class _Unsupported:
    """The Ref value of a resource type the local cloud does not emulate."""

    def __init__(self, logical_id: str, rtype: str) -> None:
        self.logical_id = logical_id
        self.type = rtype

    def __repr__(self) -> str:
        return f"<unsupported {self.type} {self.logical_id}>"


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


def _pick(mapping: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {key: mapping[key] for key in keys if key in mapping}


GENERATED_NAME_LIMIT = 64
"""The longest name of an IAM role and of an EventBridge rule."""

GENERATED_SUFFIX_LENGTH = 13
"""The random part CloudFormation appends to the names it makes up for roles and rules."""


def generated_name(stack_name: str, logical_id: str) -> str:
    """``<stack>-<LogicalId>-<SUFFIX>`` in at most 64 characters, as CloudFormation names an
    IAM role or an EventBridge rule that the template leaves unnamed.

    CloudFormation appends a random upper-case suffix and, when the whole would pass the 64
    characters, shortens the stack name and the logical id, so a long stack's role name
    does not start with ``<stack>-<LogicalId>`` (and two rules whose logical ids differ only
    at the end still get two names). AWS does not publish the exact rule (docs/deploy.md):
    here the longer of the two parts loses a character at a time. The suffix is stable for a
    stack and logical id, so every name is known before anything is made.
    """
    suffix = _stable_id(f"{stack_name}/{logical_id}", GENERATED_SUFFIX_LENGTH).upper()
    room = GENERATED_NAME_LIMIT - GENERATED_SUFFIX_LENGTH - 2  # the two hyphens
    stack, logical = stack_name, logical_id
    while len(stack) + len(logical) > room:
        if len(stack) >= len(logical):
            stack = stack[:-1]
        else:
            logical = logical[:-1]
    return f"{stack.rstrip('-')}-{logical}-{suffix}"


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
