"""Creates a loaded `Stack` in moto through ordinary boto3 calls.

The order only satisfies moto's own checks (a function's role and layers must exist first);
names and ARNs were fixed by the loader, and each created resource is checked against them so a
drift between the loader's naming and moto's is caught at start-up.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import zipfile
from collections.abc import Callable
from typing import Any

from hypd_local.iam.policy import Request, decide, trusts
from hypd_local.iam.principals import Directory
from hypd_local.intrinsics import TemplateError
from hypd_local.streams import mapping_refusal
from hypd_local.template import Stack

LOG = logging.getLogger(__name__)

ClientFactory = Callable[[str], Any]


def provision(stack: Stack, client: ClientFactory, directory: Directory | None = None) -> None:
    """Create every emulated resource of ``stack`` in the moto server behind ``client``.

    ``directory`` (the local cloud's IAM) makes the AWS managed policies the roles attach known
    to moto, from moto's copy of AWS's documents, so that they count when calls are authorised.
    """
    _provision_iam(stack, client("iam"), directory)
    _provision_api_logging(stack, client("apigateway"), directory)

    logs = client("logs")
    for group in stack.log_groups.values():
        logs.create_log_group(logGroupName=group.name)
        if group.retention_days:
            logs.put_retention_policy(logGroupName=group.name, retentionInDays=group.retention_days)

    sqs = client("sqs")
    for queue in stack.queues.values():
        url = sqs.create_queue(QueueName=queue.name, Attributes=dict(queue.attributes))["QueueUrl"]
        _check(queue.logical_id, "queue URL", queue.url, url)

    sns = client("sns")
    for topic in stack.topics.values():
        arn = sns.create_topic(Name=topic.name, Attributes=dict(topic.attributes))["TopicArn"]
        _check(topic.logical_id, "topic ARN", topic.arn, arn)

    _provision_resource_policies(stack, sqs, sns)

    dynamodb = client("dynamodb")
    for table in stack.tables.values():
        arn = dynamodb.create_table(**table.create_args)["TableDescription"]["TableArn"]
        _check(table.logical_id, "table ARN", table.arn, arn)
        if table.ttl_attribute:
            dynamodb.update_time_to_live(
                TableName=table.name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": table.ttl_attribute},
            )
        if table.point_in_time_recovery:
            dynamodb.update_continuous_backups(
                TableName=table.name,
                PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
            )
        if table.stream_arn:
            _fix_stream_label(table.name, table.stream_arn)
            stream = dynamodb.describe_table(TableName=table.name)["Table"].get("LatestStreamArn")
            _check(table.logical_id, "stream ARN", table.stream_arn, stream)

    lambda_ = client("lambda")
    for layer in stack.layers.values():
        # The code is not needed: the layer's packages are installed in the local environment.
        arn = lambda_.publish_layer_version(
            LayerName=layer.name,
            Content={"ZipFile": _stub_zip(f"layer {layer.logical_id}")},
            CompatibleRuntimes=["python3.12"],
        )["LayerVersionArn"]
        _check(layer.logical_id, "layer version ARN", layer.arn, arn)

    for function in stack.functions.values():
        _check_assumable(stack, function.logical_id, function.role_arn, directory)
        args: dict[str, Any] = {
            "FunctionName": function.name,
            "Runtime": function.runtime,
            "Role": function.role_arn,
            "Handler": function.handler,
            # Execution is in-process (hypd_local.lambdas); moto only needs some code.
            "Code": {"ZipFile": _stub_zip(f"function {function.logical_id}")},
            "Description": function.description,
            "Timeout": function.timeout,
            "MemorySize": function.memory_size,
            "Environment": {"Variables": dict(function.environment)},
            "Architectures": list(function.architectures),
            "TracingConfig": {"Mode": function.tracing},
        }
        if function.async_config is not None and function.async_config.dead_letter_arn:
            args["DeadLetterConfig"] = {"TargetArn": function.async_config.dead_letter_arn}
        if function.layers:
            args["Layers"] = list(function.layers)
        arn = lambda_.create_function(**args)["FunctionArn"]
        _check(function.logical_id, "function ARN", function.arn, arn)
        if function.async_config is not None:
            lambda_.put_function_event_invoke_config(
                FunctionName=function.name, **function.async_config.to_api()
            )

    for mapping in stack.stream_mappings.values():
        function = stack.functions[mapping.function_logical_id]
        refusal = (mapping_refusal(mapping, function, directory) if directory is not None
                   else None)
        if refusal is not None:
            raise TemplateError(f"{mapping.logical_id}: {refusal}")

    sfn = client("stepfunctions")
    for machine in stack.state_machines.values():
        arn = sfn.create_state_machine(
            name=machine.name,
            definition=machine.definition,
            roleArn=machine.role_arn,
            type=machine.type,
        )["stateMachineArn"]
        _check(machine.logical_id, "state machine ARN", machine.arn, arn)

    events = client("events")
    buses = {"default"}
    for rule in stack.rules.values():
        if rule.event_bus_name not in buses:
            with contextlib.suppress(events.exceptions.ResourceAlreadyExistsException):
                events.create_event_bus(Name=rule.event_bus_name)
            buses.add(rule.event_bus_name)
        put: dict[str, Any] = {
            "Name": rule.name,
            "State": rule.state,
            "EventBusName": rule.event_bus_name,
            "Description": rule.description,
        }
        if rule.event_pattern is not None:
            put["EventPattern"] = json.dumps(rule.event_pattern)
        if rule.schedule_expression:
            put["ScheduleExpression"] = rule.schedule_expression
            LOG.info("rule %s has a schedule; the local cloud does not fire schedules",
                     rule.logical_id)
        arn = events.put_rule(**put)["RuleArn"]
        _check(rule.logical_id, "rule ARN", rule.arn, arn)
        if rule.targets:
            events.put_targets(
                Rule=rule.name,
                EventBusName=rule.event_bus_name,
                Targets=[target.to_api() for target in rule.targets],
            )

    _provision_schedules(stack, client)


def _provision_resource_policies(stack: Stack, sqs: Any, sns: Any) -> None:
    """The queue and topic policies, as the queues' and topics' ``Policy`` attribute (one
    document per resource: several policies' statements together), where SQS and SNS keep them
    and the local cloud reads them when a service delivers (`hypd_local.iam.resource_policies`)."""
    queues = {queue.arn: queue.url for queue in stack.queues.values()}
    topics = {topic.arn for topic in stack.topics.values()}
    merged: dict[str, list[Any]] = {}
    for spec in stack.resource_policies.values():
        for arn in spec.resources:
            if arn in queues or arn in topics:
                found = spec.document.get("Statement") or []
                merged.setdefault(arn, []).extend(found if isinstance(found, list) else [found])
    for arn, statements in merged.items():
        policy = json.dumps({"Version": "2012-10-17", "Statement": statements})
        if arn in queues:
            sqs.set_queue_attributes(QueueUrl=queues[arn], Attributes={"Policy": policy})
        else:
            sns.set_topic_attributes(TopicArn=arn, AttributeName="Policy", AttributeValue=policy)


def _provision_schedules(stack: Stack, client: ClientFactory) -> None:
    """EventBridge Scheduler's groups, then its schedules (last: their targets exist)."""
    if not stack.schedules and not stack.schedule_groups:
        return
    scheduler = client("scheduler")
    for group in stack.schedule_groups.values():
        arn = scheduler.create_schedule_group(
            Name=group.name, Tags=[{"Key": k, "Value": v} for k, v in group.tags],
        )["ScheduleGroupArn"]
        _check(group.logical_id, "schedule group ARN", group.arn, arn)
    for schedule in stack.schedules.values():
        arn = scheduler.create_schedule(**schedule.create_args)["ScheduleArn"]
        _check(schedule.logical_id, "schedule ARN", schedule.arn, arn)


# What API Gateway's CloudWatch role must be allowed (AmazonAPIGatewayPushToCloudWatchLogs).
_API_GATEWAY_LOG_ACTIONS = ("logs:CreateLogGroup", "logs:CreateLogStream",
                            "logs:DescribeLogGroups", "logs:DescribeLogStreams",
                            "logs:PutLogEvents", "logs:GetLogEvents", "logs:FilterLogEvents")


def _provision_api_logging(stack: Stack, apigateway: Any, directory: Directory | None) -> None:
    """API Gateway's account setting, as a deployment meets it.

    A stage that writes access or execution logs needs the Region's CloudWatch Logs role
    (``AWS::ApiGateway::Account``) before it is created; without one the deployment fails with
    API Gateway's BadRequestException. The role must trust apigateway.amazonaws.com and be
    allowed to write logs, or API Gateway refuses the setting.
    """
    preset = apigateway.get_account().get("cloudwatchRoleArn")
    for account in stack.api_accounts.values():
        arn = account.cloudwatch_role_arn
        record = directory.role(arn) if directory is not None and arn else None
        allowed = record is not None and trusts(record.trust_policy, "apigateway.amazonaws.com")
        if allowed and record is not None:
            allowed = all(decide(list(record.policies), record.boundary, Request(a)).allowed
                          for a in _API_GATEWAY_LOG_ACTIONS)
        if directory is not None and not allowed:
            raise TemplateError(
                f"{account.logical_id}: BadRequestException: The role ARN does not have "
                "required permissions set to API Gateway (it must trust "
                "apigateway.amazonaws.com and allow writing CloudWatch Logs)")
        apigateway.update_account(patchOperations=[
            {"op": "replace", "path": "/cloudwatchRoleArn", "value": arn}])
    for api in stack.apis.values():
        if not api.logs_to_cloudwatch or preset:
            continue
        if not api.depends_on & set(stack.api_accounts):
            raise TemplateError(
                f"{api.logical_id}: BadRequestException: CloudWatch Logs role ARN must be set "
                "in account settings to enable logging (a fresh account has none: declare an "
                "AWS::ApiGateway::Account with a CloudWatchRoleArn and make the API depend "
                "on it)")


def _fix_stream_label(table_name: str, stream_arn: str) -> None:
    """Give the new stream the label the stack planned (AWS's is the time it was enabled, so
    no template can know it; the local cloud fixes it, so references resolve at planning)."""
    from moto.dynamodb.models import dynamodb_backends

    parts = stream_arn.split(":")
    table = dynamodb_backends[parts[4]][parts[3]].get_table(table_name)
    table.latest_stream_label = stream_arn.rsplit("/", 1)[1]


def _check_assumable(stack: Stack, logical_id: str, role_arn: str,
                     directory: Directory | None) -> None:
    """Lambda refuses a function whose role it cannot assume (CreateFunction fails)."""
    trust = next((r.assume_role_policy for r in stack.roles.values() if r.arn == role_arn), None)
    if trust is None and directory is not None:
        record = directory.role(role_arn)
        trust = record.trust_policy if record is not None else None
    if trust is None:
        raise TemplateError(f"{logical_id}: InvalidParameterValueException: the role "
                            f"{role_arn} does not exist")
    if not trusts(trust, "lambda.amazonaws.com"):
        raise TemplateError(f"{logical_id}: InvalidParameterValueException: The role defined "
                            "for the function cannot be assumed by Lambda.")


def _provision_iam(stack: Stack, iam: Any, directory: Directory | None = None) -> None:
    """Managed policies first (roles name them as boundaries and managed policies), then the
    roles with their inline and managed policies, then the policies' ``Roles`` attachments."""
    for policy in stack.managed_policies.values():
        arn = iam.create_policy(
            PolicyName=policy.name, Path=policy.path, Description=policy.description,
            PolicyDocument=json.dumps(policy.document),
        )["Policy"]["Arn"]
        _check(policy.logical_id, "managed policy ARN", policy.arn, arn)
    for role in stack.roles.values():
        boundary = {"PermissionsBoundary": role.permissions_boundary} if (
            role.permissions_boundary) else {}
        arn = iam.create_role(
            RoleName=role.name, Path=role.path,
            AssumeRolePolicyDocument=json.dumps(role.assume_role_policy), **boundary,
        )["Role"]["Arn"]
        _check(role.logical_id, "role ARN", role.arn, arn)
        for name, document in role.policies:
            iam.put_role_policy(RoleName=role.name, PolicyName=name,
                                PolicyDocument=json.dumps(_versioned(document)))
        for policy_arn in role.managed_policy_arns:
            if directory is not None and ":iam::aws:policy/" in policy_arn:
                directory.ensure_aws_managed_policy(policy_arn)
            try:
                iam.attach_role_policy(RoleName=role.name, PolicyArn=policy_arn)
            except iam.exceptions.NoSuchEntityException:
                # AWS managed policies: moto does not load them by default
                LOG.info("role %s: managed policy %s is not known locally; not attached",
                         role.logical_id, policy_arn)
    for policy in stack.managed_policies.values():
        for role_name in policy.roles:
            iam.attach_role_policy(RoleName=role_name, PolicyArn=policy.arn)


def _versioned(document: Any) -> Any:
    """SAM writes inline policies without a Version, which IAM reads as 2008-10-17 and moto
    refuses; none of them uses policy variables, the one difference of 2012-10-17."""
    if isinstance(document, dict) and "Version" not in document:
        return {"Version": "2012-10-17", **document}
    return document


def _check(logical_id: str, what: str, planned: str, actual: str) -> None:
    if planned != actual:
        raise TemplateError(
            f"{logical_id}: the loader planned {what} {planned!r} but moto created {actual!r}"
        )


def _stub_zip(note: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("LOCAL_CLOUD.txt", f"{note}: runs in-process in the local cloud\n")
    return buffer.getvalue()
