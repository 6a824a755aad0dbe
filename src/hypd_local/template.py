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

`Stack` is put together from one module per step: `template_stack` (reading, parameters,
references, loading, planning and building driven by the type tables below),
`template_plan` (names and attributes per type), `template_functions` (layers, roles,
policies, functions, state machines), `template_resources` (tables, queues, topics, log
groups, APIs, rules) and `template_specs` (the specs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from hypd_local.intrinsics import TemplateError
from hypd_local.template_functions import FunctionBuilders, substitute_definition
from hypd_local.template_plan import StackPlanners
from hypd_local.template_resources import ResourceBuilders
from hypd_local.template_specs import (
    ApiAccountSpec,
    ApiSpec,
    AsyncConfig,
    FunctionSpec,
    LayerSpec,
    LogGroupSpec,
    ManagedPolicySpec,
    QueueSpec,
    Resource,
    RoleSpec,
    RouteSpec,
    RuleSpec,
    ScheduleGroupSpec,
    ScheduleSpec,
    StateMachineSpec,
    TableSpec,
    TargetSpec,
    TopicSpec,
)
from hypd_local.template_stack import (
    DEFAULT_ACCOUNT_ID,
    merge_globals,
    read_template,
)

__all__ = [
    "DEFAULT_ACCOUNT_ID", "PROJECT_ROOT", "ApiAccountSpec", "ApiSpec", "AsyncConfig",
    "FunctionSpec", "LayerSpec", "LogGroupSpec", "ManagedPolicySpec", "QueueSpec", "Resource",
    "RoleSpec", "RouteSpec", "RuleSpec", "ScheduleGroupSpec", "ScheduleSpec", "Stack",
    "StateMachineSpec", "TableSpec", "TargetSpec", "TopicSpec", "describe_functions",
    "find_template", "merge_globals", "read_template", "resources_of_type", "substitute_definition",
]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The checkout this module runs from (its top level holds template.yaml), when it does."""
PACKAGED_PROJECT = Path(__file__).resolve().parent / "project"
"""The project's copy an installed wheel carries (setup.py: template.yaml, functions/,
layers/, statemachines/, charts/, as in the checkout)."""


def find_template(cwd: Path | None = None) -> Path:
    """``./template.yaml`` if the current directory has one; else the checkout's, when this
    runs from one; else the copy the installed wheel carries.

    Raises:
        TemplateError: none of them exists (a wheel built without setup.py's copy).
    """
    for candidate in ((cwd or Path.cwd()) / "template.yaml", PROJECT_ROOT / "template.yaml",
                      PACKAGED_PROJECT / "template.yaml"):
        if candidate.is_file():
            return candidate
    raise TemplateError(
        f"no template.yaml in the current directory, and the installed hypd carries none "
        f"({PACKAGED_PROJECT}): reinstall it from a wheel built by `pip wheel .`, or pass "
        "--template")


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


class Stack(FunctionBuilders):
    """A template resolved for one region, account and stack name (`StackBase`): every
    resource type the local cloud emulates, planned and built.

    ``aws_endpoint`` is used only for SQS queue URLs, which embed the endpoint; None means AWS's
    own (``https://sqs.<region>.amazonaws.com``).
    """

    _planners: ClassVar[Mapping[str, Callable[[Any, str], Resource]]] = {
        "AWS::DynamoDB::Table": StackPlanners._plan_table,
        "AWS::Serverless::SimpleTable": StackPlanners._plan_table,
        "AWS::Serverless::Function": StackPlanners._plan_function,
        "AWS::Lambda::Function": StackPlanners._plan_function,
        "AWS::Serverless::StateMachine": StackPlanners._plan_state_machine,
        "AWS::StepFunctions::StateMachine": StackPlanners._plan_state_machine,
        "AWS::Serverless::LayerVersion": StackPlanners._plan_layer,
        "AWS::Lambda::LayerVersion": StackPlanners._plan_layer,
        "AWS::Serverless::Api": StackPlanners._plan_api,
        "AWS::SQS::Queue": StackPlanners._plan_queue,
        "AWS::SNS::Topic": StackPlanners._plan_topic,
        "AWS::Logs::LogGroup": StackPlanners._plan_log_group,
        "AWS::Events::Rule": StackPlanners._plan_rule,
        "AWS::Scheduler::Schedule": StackPlanners._plan_schedule,
        "AWS::Scheduler::ScheduleGroup": StackPlanners._plan_schedule_group,
        "AWS::IAM::Role": StackPlanners._plan_role,
        "AWS::IAM::ManagedPolicy": StackPlanners._plan_managed_policy,
        "AWS::ApiGateway::Account": StackPlanners._plan_policy,
        # Monitoring: planned so that references resolve, not made. A key's policy and an
        # alarm's actions are read (`LocalCloud.fire_alarm` publishes as CloudWatch does).
        "AWS::KMS::Key": StackPlanners._plan_key,
        "AWS::CloudWatch::Alarm": StackPlanners._plan_alarm,
        "AWS::CloudWatch::Dashboard": StackPlanners._plan_dashboard,
        # The schema registry: planned so that references resolve, not made (nothing here
        # reads a registry; the tests check events against the schema files themselves).
        "AWS::EventSchemas::Registry": StackPlanners._plan_schema_registry,
        "AWS::EventSchemas::Schema": StackPlanners._plan_schema,
        # An email subscription to a topic: accepted, not made (nobody could confirm it).
        "AWS::SNS::Subscription": StackPlanners._plan_policy,
        # Resource-based policies: evaluated when a service delivers to the resource
        # (`hypd_local.iam.resource_policies`); an EventBusPolicy is accepted, not evaluated
        # (every sender to a bus is of this account).
        "AWS::SQS::QueuePolicy": StackPlanners._plan_policy,
        "AWS::SNS::TopicPolicy": StackPlanners._plan_policy,
        "AWS::S3::BucketPolicy": StackPlanners._plan_policy,
        "AWS::Lambda::Permission": StackPlanners._plan_policy,
        "AWS::IAM::Policy": StackPlanners._plan_policy,
        "AWS::Events::EventBusPolicy": StackPlanners._plan_policy,
    }

    _builders: ClassVar[Mapping[str, Callable[[Any, str], None]]] = {
        "AWS::DynamoDB::Table": ResourceBuilders._build_table,
        "AWS::Serverless::SimpleTable": ResourceBuilders._build_table,
        "AWS::Serverless::Function": FunctionBuilders._build_function,
        "AWS::Lambda::Function": FunctionBuilders._build_function,
        "AWS::Serverless::StateMachine": FunctionBuilders._build_state_machine,
        "AWS::StepFunctions::StateMachine": FunctionBuilders._build_state_machine,
        "AWS::Serverless::LayerVersion": FunctionBuilders._build_layer,
        "AWS::Lambda::LayerVersion": FunctionBuilders._build_layer,
        "AWS::Serverless::Api": ResourceBuilders._build_api,
        "AWS::SQS::Queue": ResourceBuilders._build_queue,
        "AWS::SNS::Topic": ResourceBuilders._build_topic,
        "AWS::Logs::LogGroup": ResourceBuilders._build_log_group,
        "AWS::Events::Rule": ResourceBuilders._build_rule,
        "AWS::Scheduler::Schedule": ResourceBuilders._build_schedule,
        "AWS::Scheduler::ScheduleGroup": ResourceBuilders._build_schedule_group,
        "AWS::IAM::Role": FunctionBuilders._build_role,
        "AWS::IAM::ManagedPolicy": FunctionBuilders._build_managed_policy,
        "AWS::ApiGateway::Account": ResourceBuilders._build_api_account,
        "AWS::SQS::QueuePolicy": ResourceBuilders._build_queue_policy,
        "AWS::SNS::TopicPolicy": ResourceBuilders._build_topic_policy,
        "AWS::S3::BucketPolicy": ResourceBuilders._build_bucket_policy,
        "AWS::KMS::Key": ResourceBuilders._build_key,
        "AWS::Lambda::Permission": ResourceBuilders._build_lambda_permission,
        "AWS::CloudWatch::Alarm": ResourceBuilders._build_alarm,
    }
