"""Smoke test: the project's own template.yaml loads and is provisioned (handlers not invoked)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from hypd_local import LocalCloud

from .conftest import REAL_TEMPLATE

pytestmark = pytest.mark.skipif(not REAL_TEMPLATE.is_file(), reason="no template.yaml")


def test_the_real_template_is_provisioned() -> None:
    with LocalCloud(REAL_TEMPLATE) as cloud:
        # the cloud's own stack: queue URLs name its endpoint
        stack = cloud.stack
        resources = cloud.resources

        # Every table, with its key schema and every GSI of the template
        for table in stack.tables.values():
            described = cloud.client("dynamodb").describe_table(TableName=table.name)["Table"]
            assert described["KeySchema"] == table.create_args["KeySchema"]
            assert sorted(i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])) == (
                sorted(i["IndexName"] for i in table.create_args.get("GlobalSecondaryIndexes", [])))
        assert "HypdTable" in stack.tables

        # Every function, with its layers and the template's environment
        lambda_ = cloud.client("lambda")
        assert {"ApiFunction", "OperationTasksFunction", "DiscoverFunction"} <= set(stack.functions)
        for function in stack.functions.values():
            config = lambda_.get_function(FunctionName=function.name)["Configuration"]
            assert [layer["Arn"] for layer in config["Layers"]] == list(function.layers)
            assert config["Environment"]["Variables"] == dict(function.environment)
            assert config["Environment"]["Variables"]["TABLE_NAME"] == resources["HypdTable"]

        # Every resource type of the template is known: monitoring is planned, not skipped
        assert stack.warnings == []
        assert stack.topics["AlarmsTopic"].attributes["KmsMasterKeyId"] == (
            stack.refs()["AlarmsKey"])

        # Every topic, with the template's attributes
        assert "HealthNotificationsTopic" in stack.topics
        for topic in stack.topics.values():
            attributes = cloud.client("sns").get_topic_attributes(TopicArn=topic.arn)[
                "Attributes"]
            assert {k: attributes.get(k) for k in topic.attributes} == dict(topic.attributes)

        # Every state machine, its definition free of placeholders
        for machine in stack.state_machines.values():
            described = cloud.client("stepfunctions").describe_state_machine(
                stateMachineArn=machine.arn)
            assert "${" not in described["definition"]
        assert "DiscoverStateMachine" in stack.state_machines

        # Every rule, with its targets (and their dead-letter queues)
        events = cloud.client("events")
        for rule in stack.rules.values():
            targets = events.list_targets_by_rule(Rule=rule.name,
                                                  EventBusName=rule.event_bus_name)["Targets"]
            assert [t["Arn"] for t in targets] == [t.arn for t in rule.targets]
            assert [t.get("DeadLetterConfig", {}).get("Arn") for t in targets] == [
                t.dead_letter_arn for t in rule.targets]
        ended = stack.rules["OperationTasksFunctionOperationExecutionEnded"]
        assert ended.targets[0].arn == stack.functions["OperationTasksFunction"].arn

        # The API's routes are served; an unknown one is refused without invoking anything
        assert cloud.api_url.endswith("/v1")
        assert {r.path for r in cloud.stack.apis["HypdApi"].routes} >= {"/clusters", "/operations"}
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(cloud.api_url + "/no-such-route", timeout=30)  # noqa: S310
        assert refused.value.code == 403
