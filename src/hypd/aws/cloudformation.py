"""CloudFormation adapter: the few stack calls the create pipeline's network stage needs.

Every call translates `ClientError` with `hypd.aws.errors.translate`, except the answers the
domain decides on: a stack that does not exist (None) and a create that finds the stack already
there (success: creation is idempotent by name).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hypd.aws.errors import NETWORK_ERRORS, error_code, translate, unless_not_found


@dataclass(frozen=True)
class Stack:
    stack_id: str
    name: str
    status: str
    status_reason: str | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    creation_time: datetime | None = None


def _is_missing_stack(exc: ClientError) -> bool:
    """CloudFormation's answer for an unknown stack: ValidationError "Stack ... does not exist"."""
    message = str(exc.response.get("Error", {}).get("Message", ""))
    return error_code(exc) == "ValidationError" and "does not exist" in message


def _stack(raw: dict[str, Any]) -> Stack:
    created = raw.get("CreationTime")
    return Stack(
        stack_id=raw["StackId"],
        name=raw["StackName"],
        status=raw["StackStatus"],
        status_reason=raw.get("StackStatusReason") or None,
        outputs={o["OutputKey"]: str(o.get("OutputValue", "")) for o in raw.get("Outputs") or []},
        tags={t["Key"]: t["Value"] for t in raw.get("Tags") or []},
        creation_time=created if isinstance(created, datetime) else None,
    )


def describe_stack(client: Any, name: str) -> Stack | None:
    """The live stack called `name`, or None if there is none (deleted stacks are not live)."""
    stacks = unless_not_found(
        lambda: client.describe_stacks(StackName=name)["Stacks"],
        f"describing stack {name}",
        _is_missing_stack,
    )
    return _stack(stacks[0]) if stacks else None


def create_stack(
    client: Any,
    name: str,
    template_body: str,
    tags: dict[str, str],
    client_request_token: str,
    *,
    timeout_minutes: int | None = None,
    role_arn: str | None = None,
) -> str | None:
    """Start creating the stack; its id, or None when a stack of that name already exists.

    A failed creation rolls back (CloudFormation's default), so a failed stack holds no
    resources. `tags` are stack tags, which CloudFormation also puts on every resource it makes.
    `role_arn`: the service role CloudFormation creates the resources with (the caller then
    needs only iam:PassRole on it, not the EC2 permissions themselves).
    """
    action = f"creating stack {name}"
    kwargs: dict[str, Any] = {
        "StackName": name,
        "TemplateBody": template_body,
        "Tags": [{"Key": key, "Value": value} for key, value in sorted(tags.items())],
        "ClientRequestToken": client_request_token,
        "OnFailure": "ROLLBACK",
    }
    if timeout_minutes is not None:
        kwargs["TimeoutInMinutes"] = timeout_minutes
    if role_arn:
        kwargs["RoleARN"] = role_arn
    try:
        return str(client.create_stack(**kwargs)["StackId"])
    except ClientError as exc:
        if error_code(exc) == "AlreadyExistsException":
            return None
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc


def get_template(client: Any, name: str) -> dict[str, Any]:
    """The stack's current template (JSON: botocore decodes a JSON body into a dict)."""
    try:
        body = client.get_template(StackName=name, TemplateStage="Original")["TemplateBody"]
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, f"reading the template of stack {name}") from exc
    template: dict[str, Any] = json.loads(body) if isinstance(body, str) else dict(body)
    return template


def update_stack(
    client: Any,
    name: str,
    template_body: str,
    client_request_token: str,
    *,
    role_arn: str | None = None,
) -> bool:
    """Start updating the stack to `template_body` (its tags are kept, and CloudFormation puts
    them on the resources it adds); False when the template changes nothing."""
    kwargs: dict[str, Any] = {
        "StackName": name,
        "TemplateBody": template_body,
        "ClientRequestToken": client_request_token,
    }
    if role_arn:
        kwargs["RoleARN"] = role_arn
    try:
        client.update_stack(**kwargs)
    except ClientError as exc:
        # CloudFormation has no error code of its own for an update that changes nothing: it
        # answers ValidationError, as for a malformed request, and only the message tells
        # them apart. So this one answer is recognised by its text.
        message = str(exc.response.get("Error", {}).get("Message", ""))
        if error_code(exc) == "ValidationError" and "No updates are to be performed" in message:
            return False
        raise translate(exc, f"updating stack {name}") from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, f"updating stack {name}") from exc
    return True


def delete_stack(client: Any, name: str) -> None:
    """Start deleting the stack (CloudFormation accepts a stack that is already gone)."""
    try:
        client.delete_stack(StackName=name)
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, f"deleting stack {name}") from exc


_OPERATION_STARTS = frozenset({"CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "DELETE_IN_PROGRESS"})
"""The stack's own event that begins one of its operations (its resources' events follow)."""


def _starts_operation(event: dict[str, Any]) -> bool:
    return (
        event.get("ResourceType") == "AWS::CloudFormation::Stack"
        and event.get("LogicalResourceId") == event.get("StackName")
        and event.get("ResourceStatus") in _OPERATION_STARTS
    )


def stack_failure_reason(client: Any, name: str) -> str:
    """Why the stack's latest operation failed: the earliest resource event in a *_FAILED state
    since that operation began (the root cause; later ones mostly say "Resource creation
    cancelled"; failures of earlier operations, e.g. an earlier update that rolled back, are
    history), else the stack's own status reason, else ""."""

    def current_events() -> list[Any]:
        # DescribeStackEvents answers newest first: read back to the operation's start.
        events: list[Any] = []
        for page in client.get_paginator("describe_stack_events").paginate(StackName=name):
            for event in page.get("StackEvents", []):
                if _starts_operation(event):
                    return events
                events.append(event)
        return events

    events = unless_not_found(current_events, f"reading events of stack {name}", _is_missing_stack)
    if events is None:
        return ""
    for event in reversed(events):
        if (
            str(event.get("ResourceStatus", "")).endswith("_FAILED")
            and event.get("ResourceType") != "AWS::CloudFormation::Stack"
            and event.get("ResourceStatusReason")
        ):
            return f"{event.get('LogicalResourceId')}: {event['ResourceStatusReason']}"
    stack = describe_stack(client, name)
    return (stack.status_reason if stack else None) or ""
