"""The operators' part of the template (docs/operations.md): the dashboard's body is JSON that
shows every function, state machine and dead-letter queue of the template and every metric hypd
emits, by the dimensions hypd emits it with; every alarm notifies the alarms topic, which
CloudWatch may publish to. A function or state machine added without its place on the
dashboard and in the alarms fails here, not unnoticed after deployment."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from hypd import clock, observability
from hypd.operations import lifecycle
from hypd.operations.models import ErrorInfo, Operation, OperationKind
from hypd_local.template import read_template, resources_of_type
from tests.build.support import FUNCTION_TYPE, STATE_MACHINE_TYPE, TEMPLATE

pytestmark = pytest.mark.build

TEMPLATE_DATA = read_template(TEMPLATE)
RESOURCES: dict[str, Any] = TEMPLATE_DATA["Resources"]
FUNCTIONS = set(resources_of_type(TEMPLATE_DATA, FUNCTION_TYPE))
MACHINES = set(resources_of_type(TEMPLATE_DATA, STATE_MACHINE_TYPE))
QUEUES = set(resources_of_type(TEMPLATE_DATA, "AWS::SQS::Queue"))
ALARMS = resources_of_type(TEMPLATE_DATA, "AWS::CloudWatch::Alarm")
TOPIC = {"Ref": "AlarmsTopic"}
MAX_ALARM_METRICS = 10
"""CloudWatch's hard limit of metrics in one metric-math alarm."""

_PLACEHOLDER = re.compile(r"\$\{(?!!)([^}]+)\}")


def dashboard() -> tuple[dict[str, Any], set[str]]:
    """The dashboard's body as JSON (each `${X}` of its Fn::Sub standing for the value of X,
    `${!...}` for the literal `${...}`) and the names its placeholders refer to."""
    (board,) = resources_of_type(TEMPLATE_DATA, "AWS::CloudWatch::Dashboard").values()
    text = board["Properties"]["DashboardBody"]["Fn::Sub"]
    assert isinstance(text, str), "DashboardBody is one Fn::Sub string"
    names = set(_PLACEHOLDER.findall(text))
    body = _PLACEHOLDER.sub(lambda m: "{" + m.group(1) + "}", text).replace("${!", "${")
    return json.loads(body), names


BODY, PLACEHOLDERS = dashboard()


def metric_widgets() -> list[dict[str, Any]]:
    return [w["properties"] for w in BODY["widgets"] if w["type"] == "metric"]


def shown(namespace: str, metric: str, dimension: str) -> set[str]:
    """The logical ids (`{Id}` or `{Id.Attribute}`) whose `metric` the dashboard shows."""
    found = set()
    for widget in metric_widgets():
        for line in widget["metrics"]:
            if line[:3] == [namespace, metric, dimension]:
                found.add(line[3].strip("{}").split(".")[0])
    return found


def searched() -> dict[str, tuple[str, ...]]:
    """Metric name -> the dimensions of its SEARCH schema `{hypd,...}`."""
    found = {}
    for widget in metric_widgets():
        for line in widget["metrics"]:
            expression = line[0].get("expression", "") if isinstance(line[0], dict) else ""
            match = re.fullmatch(
                r"SEARCH\('\{(\w+),([\w,]+)\} MetricName=\"(\w+)\"', '\w+', \d+\)", expression)
            if match:
                assert match.group(1) == observability.NAMESPACE
                found[match.group(3)] = tuple(match.group(2).split(","))
    return found


def emitted(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[str]]]:
    """Metric name -> its dimension sets, as hypd.observability emits them."""
    metrics: list[observability.Metric] = []
    monkeypatch.setattr(observability, "emit", lambda *found: metrics.extend(found))
    operation = lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag="t")
    steps: list[Callable[[Operation], Operation | None]] = [
        lifecycle.begin, lambda op: lifecycle.start_stage(op, "network"),
        lambda op: lifecycle.complete_stage(op, "network"),
        lambda op: lifecycle.fail(op, ErrorInfo(code="E", message="m")),
        lifecycle.retry, lifecycle.begin,
        lambda op: lifecycle.execution_ended(op, "ABORTED", None, None),
        lifecycle.retry, lifecycle.begin, lambda op: lifecycle.succeed(op, {}),
    ]
    for step in steps:
        after = step(operation.model_copy(deep=True))
        assert after is not None
        metrics.extend(observability.operation_metrics(operation, after))
        operation = after
    observability.repair_started("reboot", "t", "op-1")
    observability.unhealthy_nodes("t", 1)
    documents = [m.document(clock.now()) for m in metrics]
    return {d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"]:
            d["_aws"]["CloudWatchMetrics"][0]["Dimensions"] for d in documents}


# ---------------------------------------------------------------------------- the dashboard
def test_the_dashboard_refers_only_to_the_templates_resources() -> None:
    logical = {name.split(".")[0] for name in PLACEHOLDERS if not name.startswith("AWS::")}
    assert logical <= set(RESOURCES)
    assert all(w["properties"].get("region") == "{AWS::Region}"
               for w in BODY["widgets"] if w["type"] == "metric")


def test_the_dashboard_shows_every_function_state_machine_and_queue() -> None:
    assert shown("AWS/Lambda", "Errors", "FunctionName") == FUNCTIONS
    assert shown("AWS/Lambda", "Throttles", "FunctionName") == FUNCTIONS
    assert shown("AWS/States", "ExecutionsFailed", "StateMachineArn") == MACHINES
    assert shown("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName") == QUEUES


def test_the_dashboard_searches_every_metric_hypd_emits_by_its_dimensions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metrics = emitted(monkeypatch)
    assert set(metrics) == {"OperationsStarted", "OperationsSucceeded", "OperationsFailed",
                            "OperationsCancelled", "StageDuration", "Repairs",
                            "UnhealthyNodes"}
    searches = searched()
    assert set(searches) == set(metrics)
    for name, dimensions in searches.items():
        assert list(dimensions) in metrics[name], f"{name} is not emitted by {dimensions}"


def test_the_dashboard_shows_every_alarm() -> None:
    (widget,) = [w["properties"] for w in BODY["widgets"] if w["type"] == "alarm"]
    assert {a.removesuffix(".Arn}").lstrip("{") for a in widget["alarms"]} == set(ALARMS)


# ---------------------------------------------------------------------------- the alarms
def alarm_metrics(alarm: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(namespace, metric, dimension, logical id) of each metric the alarm reads."""
    props = alarm["Properties"]
    if "Metrics" not in props:
        ((dimension,),) = [props["Dimensions"]]
        value = dimension["Value"]
        ref = value.get("Ref") or value["Fn::GetAtt"][0]
        return [(props["Namespace"], props["MetricName"], dimension["Name"], ref)]
    found = []
    for query in props["Metrics"]:
        if "MetricStat" in query:
            metric = query["MetricStat"]["Metric"]
            (dimension,) = metric["Dimensions"]
            found.append((metric["Namespace"], metric["MetricName"], dimension["Name"],
                          dimension["Value"]["Ref"]))
    return found


def alarmed(namespace: str, metric: str, dimension: str) -> set[str]:
    return {ref for alarm in ALARMS.values() for (n, m, d, ref) in alarm_metrics(alarm)
            if (n, m, d) == (namespace, metric, dimension)}


def test_every_function_state_machine_and_queue_is_alarmed() -> None:
    assert alarmed("AWS/Lambda", "Errors", "FunctionName") == FUNCTIONS
    assert alarmed("AWS/Lambda", "Throttles", "FunctionName") == FUNCTIONS
    assert alarmed("AWS/States", "ExecutionsFailed", "StateMachineArn") == MACHINES
    assert alarmed("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName") == QUEUES


@pytest.mark.parametrize("logical_id", sorted(ALARMS))
def test_every_alarm_notifies_the_alarms_topic(logical_id: str) -> None:
    props = ALARMS[logical_id]["Properties"]
    assert props["AlarmActions"] == [TOPIC]
    assert props["OKActions"] == [TOPIC]
    assert props["TreatMissingData"] == "notBreaching"
    # the key policy lets CloudWatch publish for alarms named after the stack
    assert props["AlarmName"]["Fn::Sub"].startswith("${AWS::StackName}-")
    if "Metrics" in props:
        stats = [q for q in props["Metrics"] if "MetricStat" in q]
        assert 0 < len(stats) <= MAX_ALARM_METRICS, (
            f"{logical_id}: CloudWatch allows {MAX_ALARM_METRICS} metrics in a metric-math "
            "alarm; split it in two")
        (returned,) = [q for q in props["Metrics"] if q.get("ReturnData", True)]
        assert returned["Expression"] == "SUM(METRICS())"


def test_cloudwatch_may_publish_to_the_encrypted_alarms_topic() -> None:
    topic = RESOURCES["AlarmsTopic"]["Properties"]
    assert topic["KmsMasterKeyId"] == {"Ref": "AlarmsKey"}
    key = RESOURCES["AlarmsKey"]["Properties"]
    assert key["EnableKeyRotation"] is True
    (grant,) = [s for s in key["KeyPolicy"]["Statement"]
                if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}]
    assert grant["Action"] == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert grant["Condition"]["ArnLike"]["aws:SourceArn"]["Fn::Sub"].endswith(
        ":alarm:${AWS::StackName}-*")
    subscription = RESOURCES["AlarmsEmailSubscription"]
    assert subscription["Condition"] == "HasAlarmEmail"
    assert subscription["Properties"]["TopicArn"] == TOPIC


def test_the_retry_rule_matches_every_temporary_error_and_nothing_else() -> None:
    from hypd.aws.errors import THROTTLING_CODES, UNAVAILABLE_CODES
    from statemachines.generate import TEMPORARY_ERRORS

    rule = RESOURCES["RetryTemporaryFailuresRule"]
    codes = rule["Properties"]["EventPattern"]["detail"]["error"]["code"]
    assert sorted(codes) == sorted(THROTTLING_CODES | UNAVAILABLE_CODES | set(TEMPORARY_ERRORS))
