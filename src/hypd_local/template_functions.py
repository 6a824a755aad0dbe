"""The specs of what runs and as whom: layers, IAM roles and managed policies (a SAM
resource's generated role too), functions (code, handler, environment, layers, asynchronous
invocation) and state machines (definition and its substitutions)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypd_local import sam_roles
from hypd_local.intrinsics import TemplateError, scalar_str
from hypd_local.template_resources import ResourceBuilders
from hypd_local.template_specs import (
    AsyncConfig,
    FunctionSpec,
    LayerSpec,
    ManagedPolicySpec,
    QueueSpec,
    Resource,
    RoleSpec,
    StateMachineSpec,
)

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")

# Lambda SnapStart "is available in all commercial Regions except Asia Pacific (New Zealand)
# and Asia Pacific (Taipei)" (Lambda developer guide, "Improving startup performance with Lambda
# SnapStart", Supported Regions); the commercial Regions are the `aws` partition's.
SNAPSTART_PARTITION = "aws"
SNAPSTART_UNAVAILABLE = frozenset({"ap-east-2", "ap-southeast-6"})


def snapstart_offered(partition: str, region: str) -> bool:
    """Whether Lambda offers SnapStart in `region` (of `partition`), as AWS documents it."""
    return partition == SNAPSTART_PARTITION and region not in SNAPSTART_UNAVAILABLE


class FunctionBuilders(ResourceBuilders):
    """``_build_<type>`` of layers, roles, managed policies, functions and state machines."""

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
        snap_start = self._resolve_prop(logical_id, "SnapStart") or {}
        if not isinstance(snap_start, Mapping):
            raise TemplateError(f"{where}.SnapStart: expected a mapping, got {snap_start!r}")
        if (snap_start.get("ApplyOn") == "PublishedVersions"
                and not snapstart_offered(self.partition, self.region)):
            # What CreateFunction answers where SnapStart is not offered: the stack fails.
            raise TemplateError(
                f"{where}.SnapStart: InvalidParameterValueException: Lambda SnapStart is not "
                f"available in {self.region}; condition the property on the Region"
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
            alias=scalar_str(alias) if (alias := self._resolve_prop(
                logical_id, "AutoPublishAlias")) else None,
            snap_start=snap_start.get("ApplyOn") == "PublishedVersions",
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
