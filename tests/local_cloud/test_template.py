"""The template loader: intrinsics, Globals, names, specs and its loud failures (no moto)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hypd_local.intrinsics import NO_VALUE, Resolver, TemplateError
from hypd_local.template import Stack, merge_globals, substitute_definition

from .conftest import FIXTURE_TEMPLATE, REAL_TEMPLATE


def write_template(tmp_path: Path, body: str, files: dict[str, str] | None = None) -> Path:
    for name, content in (files or {}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    template = tmp_path / "template.yaml"
    template.write_text(textwrap.dedent(body))
    return template


FUNCTION_FILES = {"fn/app.py": "def handler(event, context):\n    return event\n"}


# ------------------------------------------------------------------ the fixture template
def test_fixture_template_resolves_names_globals_and_intrinsics() -> None:
    # Given the fixture template
    # When it is loaded with default parameters
    stack = Stack(FIXTURE_TEMPLATE, region="eu-west-1", stack_name="fx")

    # Then physical names are derived from the stack name and logical ids
    refs = stack.refs()
    assert refs["FixtureTable"] == "fx-FixtureTable"
    assert refs["WorkerFunction"] == "fx-WorkerFunction"
    assert refs["RetryMachine"] == (
        "arn:aws:states:eu-west-1:123456789012:stateMachine:fx-RetryMachine")
    assert refs["FixtureLayer"] == "arn:aws:lambda:eu-west-1:123456789012:layer:fx-fixture:1"
    # and Globals are merged: map entries added, list items appended
    worker = stack.functions["WorkerFunction"]
    assert worker.environment["TABLE_NAME"] == "fx-FixtureTable"
    assert worker.layers == (refs["FixtureLayer"],)
    assert (worker.timeout, worker.memory_size, worker.handler) == (10, 256, "app.handler")
    # and intrinsics are resolved (Fn::If on a condition, Fn::Join, pseudo-parameters, GetAZs)
    assert worker.environment["GREETING"] == "hello"
    assert worker.environment["REGION_AND_ACCOUNT"] == "eu-west-1:123456789012"
    assert worker.environment["FIRST_ZONE"] == "eu-west-1a"
    assert worker.environment["WAIT_MACHINE_ARN"] == refs["WaitMachine"]


@pytest.mark.parametrize(
    ("region", "partition", "suffix"),
    [
        ("eu-west-1", "aws", "amazonaws.com"),
        ("cn-northwest-1", "aws-cn", "amazonaws.com.cn"),
        ("us-gov-west-1", "aws-us-gov", "amazonaws.com"),
    ],
)
def test_the_partition_and_domain_follow_the_region(
    region: str, partition: str, suffix: str
) -> None:
    stack = Stack(FIXTURE_TEMPLATE, region=region, stack_name="fx")
    assert (stack.partition, stack.url_suffix) == (partition, suffix)
    assert stack.refs()["RetryMachine"] == (
        f"arn:{partition}:states:{region}:123456789012:stateMachine:fx-RetryMachine")


def test_parameters_override_defaults_and_drive_conditions() -> None:
    stack = Stack(FIXTURE_TEMPLATE, parameters={"Flavour": "fancy", "Greeting": "hi"})

    assert stack.functions["WorkerFunction"].environment["GREETING"] == "hi, fancy"


def test_definition_substitutions_are_applied_to_the_asl_file() -> None:
    stack = Stack(FIXTURE_TEMPLATE)

    definition = json.loads(stack.state_machines["RetryMachine"].definition)
    flaky = definition["States"]["Flaky step"]
    assert flaky["Resource"] == stack.functions["WorkerFunction"].arn
    assert flaky["Retry"][0]["IntervalSeconds"] == 10  # a number substituted unquoted
    inline = json.loads(stack.state_machines["EventMachine"].definition)
    assert inline["States"]["Record start"]["Resource"] == stack.functions["ListenerFunction"].arn


def test_sam_events_imply_rules_queues_and_routes() -> None:
    stack = Stack(FIXTURE_TEMPLATE)

    ping = stack.rules["ListenerFunctionPing"]
    assert ping.event_pattern == {"source": ["fixture.test"], "detail-type": ["Ping"]}
    (target,) = ping.targets
    assert target.arn == stack.functions["ListenerFunction"].arn
    assert target.dead_letter_arn == stack.queues["ListenerFunctionPingQueue"].arn
    plain = stack.rules["WaitMachineStatusRule"]
    assert plain.event_pattern is not None
    assert plain.event_pattern["detail"] == {"stateMachineArn": [stack.refs()["WaitMachine"]]}
    listener = stack.functions["ListenerFunction"]
    assert listener.async_config is not None
    assert listener.async_config.maximum_retry_attempts == 1
    assert listener.async_config.on_failure == stack.queues["ListenerFailures"].arn
    assert not stack.warnings  # the queue policy is accepted (permissions are not emulated)
    start = stack.rules["EventMachineStart"]
    assert start.targets[0].arn == stack.refs()["EventMachine"]
    api = stack.apis["FixtureApi"]
    assert api.stage == "v1"
    assert ("/items/{itemId}", "GET") in {(r.path, r.method) for r in api.routes}
    assert ("/files/{proxy+}", "ANY") in {(r.path, r.method) for r in api.routes}



def test_a_long_stack_still_gets_distinct_role_and_rule_names_of_64_characters() -> None:
    """CloudFormation's generated names (``<stack>-<LogicalId>-<SUFFIX>``) shorten both parts
    of a long stack's name, so rules whose logical ids differ only at their end stay apart."""
    long_stack = "hypd-production-eu-west-inference-fleet-a"  # 41 characters
    stack = Stack(REAL_TEMPLATE, stack_name=long_stack)
    rules = [stack.refs()[logical] for logical in (
        "ClusterEventsFunctionHyperPodClusterStateChange",
        "ClusterEventsFunctionHyperPodNodeHealth", "ClusterEventsFunctionHyperPodClusterEvent")]
    roles = [role.name for role in stack.roles.values()]
    for name in rules + roles:
        assert len(name) <= 64, name
        assert re.fullmatch(r"hypd-[a-z-]+-[A-Za-z0-9]+-[A-Z0-9]{13}", name), name
    assert len(set(rules)) == 3
    assert len(set(roles)) == len(roles)
    again = Stack(REAL_TEMPLATE, stack_name=long_stack)
    assert [again.refs()[logical] for logical in (
        "ClusterEventsFunctionHyperPodClusterStateChange",
        "ClusterEventsFunctionHyperPodNodeHealth",
        "ClusterEventsFunctionHyperPodClusterEvent")] == rules, "stable for the stack"


# ------------------------------------------------------------------ intrinsics
def resolver(
    conditions: dict[str, Any] | None = None, mappings: dict[str, Any] | None = None
) -> Resolver:
    refs = {"Env": "prod", "Table": "tbl", "AWS::Region": "us-east-1", "AWS::NoValue": NO_VALUE}
    atts = {("Table", "Arn"): "arn:aws:dynamodb:us-east-1:1:table/tbl"}

    def ref(name: str, where: str) -> object:
        if name not in refs:
            raise TemplateError(f"{where}: unknown {name}")
        return refs[name]

    return Resolver(
        ref=ref,
        get_att=lambda logical_id, attribute, where: atts[(logical_id, attribute)],
        conditions=conditions or {},
        mappings=mappings or {},
        region="us-east-1",
    )


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"Fn::Sub": "${Table}/${Table.Arn}/${!Literal}"},
         "tbl/arn:aws:dynamodb:us-east-1:1:table/tbl/${Literal}"),
        ({"Fn::Sub": ["${Name}-${AWS::Region}", {"Name": {"Ref": "Env"}}]}, "prod-us-east-1"),
        ({"Fn::Join": ["-", ["a", {"Ref": "Env"}, 3]]}, "a-prod-3"),
        ({"Fn::Select": [1, {"Fn::Split": [",", "x,y,z"]}]}, "y"),
        ({"Fn::GetAtt": "Table.Arn"}, "arn:aws:dynamodb:us-east-1:1:table/tbl"),
        ({"Fn::GetAtt": ["Table", "Arn"]}, "arn:aws:dynamodb:us-east-1:1:table/tbl"),
        ({"Fn::Base64": "hi"}, "aGk="),
        ({"Fn::FindInMap": ["Sizes", "prod", "Memory"]}, 1024),
        ({"Fn::If": ["IsProd", "big", "small"]}, "big"),
        ({"Fn::If": ["IsTest", "big", "small"]}, "small"),
        ({"Fn::ToJsonString": {"a": {"Ref": "Env"}}}, '{"a":"prod"}'),
        ({"Fn::Length": [1, 2, 3]}, 3),
        ({"keep": 1, "drop": {"Ref": "AWS::NoValue"}}, {"keep": 1}),
        ([1, {"Fn::If": ["IsTest", 2, {"Ref": "AWS::NoValue"}]}], [1]),
    ],
)
def test_intrinsic_functions(expression: object, expected: object) -> None:
    conditions = {
        "IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
        "IsTest": {"Fn::Not": [{"Condition": "IsProd"}]},
    }
    mappings = {"Sizes": {"prod": {"Memory": 1024}}}

    assert resolver(conditions, mappings).resolve(expression, "test") == expected


def test_conditions_combine() -> None:
    conditions = {
        "A": {"Fn::Equals": ["1", 1]},
        "B": {"Fn::Or": [{"Condition": "A"}, {"Fn::Equals": ["x", "y"]}]},
        "C": {"Fn::And": [{"Condition": "A"}, {"Fn::Not": [{"Condition": "B"}]}]},
    }
    res = resolver(conditions)

    assert (res.condition("A"), res.condition("B"), res.condition("C")) == (True, True, False)


def test_unknown_reference_and_unsupported_function_fail_with_their_location() -> None:
    with pytest.raises(TemplateError, match=r"here\.Fn::Sub: unknown Nope"):
        resolver().resolve({"Fn::Sub": "${Nope}"}, "here")
    with pytest.raises(TemplateError, match="Fn::ImportValue is not supported"):
        resolver().resolve({"Fn::ImportValue": "x"}, "there")


def test_globals_merge_rules() -> None:
    merged = merge_globals(
        {"Timeout": 3, "Layers": ["g"], "Environment": {"Variables": {"A": "1", "B": "1"}}},
        {"Timeout": 9, "Layers": ["l"], "Environment": {"Variables": {"B": "2"}}},
    )

    assert merged == {"Timeout": 9, "Layers": ["g", "l"],
                      "Environment": {"Variables": {"A": "1", "B": "2"}}}


# ------------------------------------------------------------------ loud failures
def test_an_unresolved_placeholder_in_a_definition_fails() -> None:
    with pytest.raises(TemplateError, match=r"without a substitution: \$\{WorkerFnArn\}"):
        substitute_definition('{"Resource": "${WorkerFnArn}"}', {"WorkerFunctionArn": "x"}, "sm")


def test_an_unused_substitution_fails() -> None:
    with pytest.raises(TemplateError, match="never used by the definition: Extra"):
        substitute_definition('{"Resource": "${A}"}', {"A": "x", "Extra": "y"}, "sm")


def test_a_template_whose_asl_has_a_typo_does_not_load(tmp_path: Path) -> None:
    template = write_template(
        tmp_path,
        """
        Transform: AWS::Serverless-2016-10-31
        Resources:
          Fn:
            Type: AWS::Serverless::Function
            Properties: {CodeUri: fn, Handler: app.handler, Runtime: python3.12}
          Machine:
            Type: AWS::Serverless::StateMachine
            Properties:
              DefinitionUri: machine.asl.json
              DefinitionSubstitutions:
                FnArn: !GetAtt Fn.Arn
        """,
        {**FUNCTION_FILES,
         "machine.asl.json": '{"StartAt": "A", "States": {"A": {"Type": "Task", '
                             '"Resource": "${FnArm}", "End": true}}}'},
    )

    with pytest.raises(TemplateError, match=r"Machine.*\$\{FnArm\}"):
        Stack(template)


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ("""
          Fn:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: fn
              Handler: app.handler
              Layers: [arn:aws:lambda:us-west-2:1:layer:x:1]
         """, "not a layer of this template"),
        ("""
          Fn:
            Type: AWS::Serverless::Function
            Properties: {CodeUri: missing, Handler: app.handler}
         """, "is not a directory"),
        ("""
          Fn:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: fn
              Handler: app.handler
              Environment: {Variables: {X: !GetAtt Nope.Arn}}
         """, "unknown resource or parameter 'Nope'"),
        ("""
          Fn:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: fn
              Handler: app.handler
              Environment: {Variables: {X: !GetAtt Fn.StreamArn}}
         """, "has no attribute 'StreamArn'"),
        ("""
          Stream:
            Type: AWS::Kinesis::Stream
          Fn:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: fn
              Handler: app.handler
              Environment: {Variables: {X: !Ref Stream}}
         """, "does not emulate"),
    ],
)
def test_things_the_local_cloud_cannot_provide_fail_at_load(
    tmp_path: Path, resources: str, message: str
) -> None:
    body = "Resources:\n" + textwrap.indent(textwrap.dedent(resources), "  ")
    template = write_template(tmp_path, body, FUNCTION_FILES)

    with pytest.raises(TemplateError, match=message):
        Stack(template)


def test_parameters_are_checked(tmp_path: Path) -> None:
    template = write_template(
        tmp_path,
        """
        Parameters:
          Size: {Type: String, AllowedValues: [s, m]}
        Resources:
          Table:
            Type: AWS::Serverless::SimpleTable
        """,
    )

    with pytest.raises(TemplateError, match="no value and no Default"):
        Stack(template)
    with pytest.raises(TemplateError, match="is not in"):
        Stack(template, parameters={"Size": "xl"})
    with pytest.raises(TemplateError, match="unknown parameter"):
        Stack(template, parameters={"Size": "s", "Colour": "red"})
    assert Stack(template, parameters={"Size": "m"}).tables["Table"].name == "hypd-Table"


def test_resources_with_a_false_condition_are_skipped(tmp_path: Path) -> None:
    template = write_template(
        tmp_path,
        """
        Parameters:
          Enabled: {Type: String, Default: "no"}
        Conditions:
          IsEnabled: !Equals [!Ref Enabled, "yes"]
        Resources:
          Table:
            Type: AWS::Serverless::SimpleTable
            Condition: IsEnabled
        """,
    )

    assert "Table" not in Stack(template).tables
    assert "Table" in Stack(template, parameters={"Enabled": "yes"}).tables


def test_a_schema_registry_and_its_schemas_are_planned_and_resolve(tmp_path: Path) -> None:
    template = write_template(
        tmp_path,
        """
        Resources:
          Registry:
            Type: AWS::EventSchemas::Registry
            Properties: {RegistryName: !Sub "${AWS::StackName}-events"}
          Schema:
            Type: AWS::EventSchemas::Schema
            Properties:
              RegistryName: !GetAtt Registry.RegistryName
              SchemaName: hypd@Thing
              Type: JSONSchemaDraft4
              Content: '{"type": "object"}'
          Fn:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: fn
              Handler: app.handler
              Environment:
                Variables: {REGISTRY: !Ref Registry, SCHEMA: !Ref Schema,
                            NAME: !GetAtt Schema.SchemaName}
        """,
        FUNCTION_FILES,
    )

    stack = Stack(template, region="eu-west-1", stack_name="fx")

    assert stack.warnings == []
    assert stack.refs()["Registry"] == "arn:aws:schemas:eu-west-1:123456789012:registry/fx-events"
    assert stack.refs()["Schema"] == (
        "arn:aws:schemas:eu-west-1:123456789012:schema/fx-events/hypd@Thing")


def test_monitoring_resources_are_planned_and_resolve(tmp_path: Path) -> None:
    template = write_template(
        tmp_path,
        """
        Resources:
          Key:
            Type: AWS::KMS::Key
          Topic:
            Type: AWS::SNS::Topic
            Properties: {KmsMasterKeyId: !Ref Key}
          Mail:
            Type: AWS::SNS::Subscription
            Properties: {TopicArn: !Ref Topic, Protocol: email, Endpoint: ops@example.com}
          Alarm:
            Type: AWS::CloudWatch::Alarm
            Properties: {AlarmName: !Sub "${AWS::StackName}-broken", AlarmActions: [!Ref Topic]}
          Board:
            Type: AWS::CloudWatch::Dashboard
            Properties:
              DashboardBody: !Sub '{"widgets": [{"type": "alarm",
                                   "properties": {"alarms": ["${Alarm.Arn}"]}}]}'
          Fn:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: fn
              Handler: app.handler
              Environment:
                Variables: {ALARM: !GetAtt Alarm.Arn, BOARD: !Ref Board, KEY: !GetAtt Key.Arn}
        """,
        FUNCTION_FILES,
    )

    stack = Stack(template, region="eu-west-1", stack_name="fx")

    assert stack.warnings == []
    key = stack.refs()["Key"]
    assert stack.topics["Topic"].attributes == {"KmsMasterKeyId": key}
    assert key == Stack(template, region="eu-west-1", stack_name="fx").refs()["Key"]  # stable
    assert stack.functions["Fn"].environment == {
        "ALARM": "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:fx-broken",
        "BOARD": "fx-Board",
        "KEY": f"arn:aws:kms:eu-west-1:123456789012:key/{key}",
    }


# ------------------------------------------------------------------ SnapStart by Region
@pytest.mark.parametrize(
    ("region", "snap_start"),
    [
        ("us-west-2", True),
        ("eu-central-1", True),
        ("ap-east-2", False),  # Asia Pacific (Taipei)
        ("ap-southeast-6", False),  # Asia Pacific (New Zealand)
        ("cn-north-1", False),
        ("us-gov-west-1", False),
    ],
)
def test_the_api_function_has_snapstart_only_where_lambda_offers_it(
    region: str, snap_start: bool
) -> None:
    # Given the real template, loaded in a Region
    stack = Stack(REAL_TEMPLATE, region=region)

    # Then the API function asks for SnapStart exactly where Lambda offers it
    assert stack.functions["ApiFunction"].snap_start is snap_start


def _unconditional_snapstart(template: dict[str, Any]) -> None:
    template["Resources"]["ApiFunction"]["Properties"]["SnapStart"] = {
        "ApplyOn": "PublishedVersions"}


@pytest.mark.parametrize("region", ["ap-east-2", "ap-southeast-6"])
def test_snapstart_asked_for_where_lambda_lacks_it_fails_the_stack(region: str) -> None:
    # Given the template as it was, SnapStart on whatever the Region
    # When it is deployed where Lambda does not offer SnapStart
    # Then the function is refused, as CreateFunction refuses it, naming the property
    with pytest.raises(TemplateError, match=r"ApiFunction\.Properties\.SnapStart: .*" + region):
        Stack(REAL_TEMPLATE, region=region, edit=_unconditional_snapstart)
    # And where Lambda offers it, the same template loads
    assert Stack(REAL_TEMPLATE, region="us-east-1",
                 edit=_unconditional_snapstart).functions["ApiFunction"].snap_start
