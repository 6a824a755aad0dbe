"""The execution roles SAM generates for functions and state machines without a ``Role``.

The local cloud runs the untransformed template, so it makes these roles as SAM's transform
does (aws-sam-translator): the same trust policy, the same managed policies and the same
inline policies under the same names. ``tests/build/test_sam_roles.py`` compares them with the
real transform's output for template.yaml, so a change of SAM's behaviour, or of the template,
that this module does not follow fails there.

- A function: trusts ``lambda.amazonaws.com``; ``AWSLambdaBasicExecutionRole``, plus
  ``AWSXrayWriteOnlyAccess`` with ``Tracing: Active``, ``AWSLambdaVPCAccessExecutionRole``
  with a ``VpcConfig`` and ``AWSLambdaDynamoDBExecutionRole`` with a ``DynamoDB`` event; an
  inline policy for each ``EventInvokeConfig`` destination
  (``<Fn>EventInvokeConfig<OnFailure|OnSuccess><Type>Policy``) and for a ``DeadLetterQueue``;
  then ``<Fn>RolePolicy<i>`` for each entry of ``Policies`` (a managed policy name or ARN goes
  to the managed policies instead).
- A state machine: trusts ``states.amazonaws.com``; ``AWSXrayWriteOnlyAccess`` with
  ``Tracing.Enabled``; ``<SM>RolePolicy<i>`` for each entry of ``Policies``.
- A SAM policy template (``LambdaInvokePolicy: {FunctionName: ...}``) becomes the template's
  statements with its parameters substituted, exactly as SAM's policy_templates.json has them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hypd_local.intrinsics import TemplateError, is_intrinsic

LAMBDA_BASIC = "service-role/AWSLambdaBasicExecutionRole"
LAMBDA_VPC = "service-role/AWSLambdaVPCAccessExecutionRole"
LAMBDA_DYNAMODB = "service-role/AWSLambdaDynamoDBExecutionRole"
XRAY = "AWSXrayWriteOnlyAccess"


def _sub(text: str, **params: Any) -> dict[str, Any]:
    return {"Fn::Sub": [text, dict(params)]}


# SAM's policy templates (samtranslator/policy_templates_data/policy_templates.json) that the
# local cloud knows: name -> (parameters, statements).
TEMPLATES: dict[str, tuple[tuple[str, ...], Callable[..., list[dict[str, Any]]]]] = {
    "LambdaInvokePolicy": (("FunctionName",), lambda FunctionName: [{  # noqa: N803
        "Effect": "Allow",
        "Action": ["lambda:InvokeFunction"],
        "Resource": _sub("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:"
                         "function:${functionName}*", functionName=FunctionName),
    }]),
    "SQSSendMessagePolicy": (("QueueName",), lambda QueueName: [{  # noqa: N803
        "Effect": "Allow",
        "Action": ["sqs:SendMessage*"],
        "Resource": _sub("arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:"
                         "${queueName}", queueName=QueueName),
    }]),
    "SNSPublishMessagePolicy": (("TopicName",), lambda TopicName: [{  # noqa: N803
        "Effect": "Allow",
        "Action": ["sns:Publish"],
        "Resource": _sub("arn:${AWS::Partition}:sns:${AWS::Region}:${AWS::AccountId}:"
                         "${topicName}", topicName=TopicName),
    }]),
    "StepFunctionsExecutionPolicy": (("StateMachineName",), lambda StateMachineName: [{  # noqa: N803
        "Effect": "Allow",
        "Action": ["states:StartExecution"],
        "Resource": _sub("arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:"
                         "stateMachine:${stateMachineName}", stateMachineName=StateMachineName),
    }]),
    "DynamoDBCrudPolicy": (("TableName",), lambda TableName: [{  # noqa: N803
        "Effect": "Allow",
        "Action": ["dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:PutItem",
                   "dynamodb:Scan", "dynamodb:Query", "dynamodb:UpdateItem",
                   "dynamodb:BatchWriteItem", "dynamodb:BatchGetItem",
                   "dynamodb:DescribeTable", "dynamodb:ConditionCheckItem"],
        "Resource": [
            _sub("arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:"
                 "table/${tableName}", tableName=TableName),
            _sub("arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:"
                 "table/${tableName}/index/*", tableName=TableName),
        ],
    }]),
}


def managed_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{name}"


def _trust(service: str) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{
        "Action": ["sts:AssumeRole"], "Effect": "Allow", "Principal": {"Service": [service]},
    }]}


def _expand(owner: str, policies: Any, where: str, partition: str
            ) -> tuple[list[Any], list[tuple[str, Any]]]:
    """SAM's ``Policies``: managed policy names/ARNs, and named inline policies."""
    entries: Sequence[Any] = policies if isinstance(policies, list) else (
        [policies] if policies else [])
    managed: list[Any] = []
    inline: list[tuple[str, Any]] = []
    for index, entry in enumerate(entries):
        name = f"{owner}RolePolicy{index}"
        if isinstance(entry, str):
            managed.append(entry if entry.startswith("arn:") else managed_arn(partition, entry))
        elif is_intrinsic(entry):  # !Ref of a managed policy of the template: its ARN
            managed.append(entry)
        elif isinstance(entry, dict) and "Statement" in entry:
            inline.append((name, entry))
        elif isinstance(entry, dict) and len(entry) == 1 and next(iter(entry)) in TEMPLATES:
            template_name, arguments = next(iter(entry.items()))
            parameters, build = TEMPLATES[template_name]
            arguments = arguments if isinstance(arguments, dict) else {}
            missing = [p for p in parameters if p not in arguments]
            if missing:
                raise TemplateError(f"{where}.Policies[{index}].{template_name}: missing "
                                    f"{', '.join(missing)}")
            statements = build(**{p: arguments[p] for p in parameters})
            inline.append((name, {"Statement": statements}))
        elif isinstance(entry, dict) and len(entry) == 1 and next(iter(entry)).endswith(
                "Policy"):
            raise TemplateError(
                f"{where}.Policies[{index}]: the SAM policy template {next(iter(entry))} is "
                "not known to the local cloud (hypd_local/sam_roles.py)")
        else:
            raise TemplateError(f"{where}.Policies[{index}]: expected a policy document, a "
                                "managed policy or a SAM policy template")
    return managed, inline


_DESTINATION_ACTIONS = {
    "SQS": "sqs:SendMessage", "SNS": "sns:publish", "Lambda": "lambda:InvokeFunction",
    "EventBridge": "events:PutEvents",
}


def function_role(logical_id: str, props: Mapping[str, Any], partition: str,
                  destination_arn: Callable[[str, Mapping[str, Any]], Any]
                  ) -> tuple[dict[str, Any], list[Any], list[tuple[str, Any]]]:
    """(trust policy, managed policy ARNs, inline policies) of a function's generated role.

    ``destination_arn(condition, destination)`` gives an EventInvokeConfig destination's ARN
    (SAM makes the queue when an SQS destination names none).
    """
    where = f"Resources.{logical_id}.Properties"
    managed: list[Any] = [managed_arn(partition, LAMBDA_BASIC)]
    if props.get("Tracing") == "Active":
        managed.append(managed_arn(partition, XRAY))
    if props.get("VpcConfig"):
        managed.append(managed_arn(partition, LAMBDA_VPC))
    events = props.get("Events") or {}
    if any(isinstance(e, dict) and e.get("Type") == "DynamoDB" for e in events.values()):
        managed.append(managed_arn(partition, LAMBDA_DYNAMODB))
    inline: list[tuple[str, Any]] = []
    destinations = (props.get("EventInvokeConfig") or {}).get("DestinationConfig") or {}
    for condition in ("OnSuccess", "OnFailure"):
        destination = destinations.get(condition)
        if not isinstance(destination, dict):
            continue
        kind = str(destination.get("Type", ""))
        if kind not in _DESTINATION_ACTIONS:
            raise TemplateError(f"{where}.EventInvokeConfig.DestinationConfig.{condition}."
                                f"Type: {kind!r} is not SQS, SNS, Lambda or EventBridge")
        inline.append((f"{logical_id}EventInvokeConfig{condition}{kind}Policy", {"Statement": [{
            "Action": _DESTINATION_ACTIONS[kind], "Effect": "Allow",
            "Resource": destination_arn(condition, destination),
        }]}))
    dead_letter = props.get("DeadLetterQueue")
    if isinstance(dead_letter, dict) and dead_letter.get("TargetArn"):
        action = "sqs:SendMessage" if dead_letter.get("Type") == "SQS" else "sns:Publish"
        inline.append((f"{logical_id}RolePolicyDeadLetterQueue", {"Statement": [{
            "Action": action, "Effect": "Allow", "Resource": dead_letter["TargetArn"],
        }]}))
    more_managed, policies = _expand(logical_id, props.get("Policies"), where, partition)
    return _trust("lambda.amazonaws.com"), managed + more_managed, inline + policies


def state_machine_role(logical_id: str, props: Mapping[str, Any], partition: str
                       ) -> tuple[dict[str, Any], list[Any], list[tuple[str, Any]]]:
    where = f"Resources.{logical_id}.Properties"
    managed: list[Any] = []
    tracing = props.get("Tracing")
    if isinstance(tracing, dict) and tracing.get("Enabled"):
        managed.append(managed_arn(partition, XRAY))
    more_managed, policies = _expand(logical_id, props.get("Policies"), where, partition)
    return _trust("states.amazonaws.com"), managed + more_managed, policies
