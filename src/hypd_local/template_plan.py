"""What each resource type of the template is called: names, ARNs, URLs and attributes, and
the resources a SAM resource implies (its role, its event rules and their queues, the implicit
API), planned before anything is built so that every ``Ref`` and ``Fn::GetAtt`` is known."""

from __future__ import annotations

import uuid
from typing import Any

from hypd_local.intrinsics import TemplateError, scalar_str
from hypd_local.template_specs import Resource
from hypd_local.template_stack import _IMPLICIT_API, StackBase, _stable_id

STREAM_LABEL = "2026-01-01T00:00:00.000"
"""The label of every table stream the local cloud makes (AWS's is the time it was enabled)."""


class StackPlanners(StackBase):
    """One ``_plan_<type>`` per resource type (`hypd_local.template.Stack._planners`)."""

    def _plan_table(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "TableName", 255)
        arn = self._arn("dynamodb", f"table/{name}")
        attributes = {"Arn": arn}
        stream = self._props(logical_id).get("StreamSpecification")
        if isinstance(stream, dict) and stream.get("StreamViewType"):
            # A stream's label is the time it was enabled; the local cloud fixes it when it
            # plans, so StreamArn resolves before the table exists (provision makes it so).
            attributes["StreamArn"] = f"{arn}/stream/{STREAM_LABEL}"
        return Resource(logical_id, self._raw[logical_id]["Type"], name, attributes)

    def _plan_function(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "FunctionName", 64)
        arn = self._arn("lambda", f"function:{name}")
        rtype = self._raw[logical_id]["Type"]
        if rtype == "AWS::Serverless::Function" and "Role" not in self._props(logical_id):
            role_name = self._generated_name(f"{logical_id}Role")
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
                role_name = self._generated_name(f"{logical_id}Role")
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
        name = self._generated_name(logical_id, "Name")
        bus = self._bus_name(self._resolve_prop(logical_id, "EventBusName"))
        arn = self._rule_arn(name, bus)
        return Resource(logical_id, self._raw[logical_id]["Type"], name, {"Arn": arn})

    def _plan_schedule(self, logical_id: str) -> Resource:
        # Ref is the schedule's name; GetAtt Arn is schedule/<group>/<name>.
        name = self._name(logical_id, "Name", 64)
        group = scalar_str(self._resolve_prop(logical_id, "GroupName", "default"),
                           f"Resources.{logical_id}.Properties.GroupName")
        return Resource(logical_id, self._raw[logical_id]["Type"], name,
                        {"Arn": self._arn("scheduler", f"schedule/{group}/{name}")})

    def _plan_schedule_group(self, logical_id: str) -> Resource:
        # Ref is the group's name; GetAtt Arn, State.
        name = self._name(logical_id, "Name", 64)
        return Resource(logical_id, self._raw[logical_id]["Type"], name,
                        {"Arn": self._arn("scheduler", f"schedule-group/{name}"),
                         "State": "ACTIVE"})

    def _plan_role(self, logical_id: str) -> Resource:
        name = self._generated_name(logical_id, "RoleName")
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

    def _plan_key(self, logical_id: str) -> Resource:
        # Planned, not made: the local cloud encrypts nothing with it; a topic keeps its
        # KmsMasterKeyId as an attribute. Ref is the key id (a UUID), as on AWS.
        key_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.stack_name}/{logical_id}"))
        return Resource(logical_id, self._raw[logical_id]["Type"], key_id,
                        {"Arn": self._arn("kms", f"key/{key_id}"), "KeyId": key_id})

    def _plan_alarm(self, logical_id: str) -> Resource:
        # CloudWatch alarms and dashboards: accepted, not emulated (the local cloud keeps no
        # metrics; the functions' EMF lines go to standard output). Ref is the name, as on AWS.
        name = self._name(logical_id, "AlarmName", 255)
        return Resource(logical_id, self._raw[logical_id]["Type"], name,
                        {"Arn": self._arn("cloudwatch", f"alarm:{name}")})

    def _plan_dashboard(self, logical_id: str) -> Resource:
        name = self._name(logical_id, "DashboardName", 255)
        return Resource(logical_id, self._raw[logical_id]["Type"], name)

    def _plan_schema_registry(self, logical_id: str) -> Resource:
        # Ref is the registry's ARN; GetAtt RegistryName and RegistryArn, as on AWS.
        name = self._name(logical_id, "RegistryName", 64)
        arn = self._arn("schemas", f"registry/{name}")
        return Resource(logical_id, self._raw[logical_id]["Type"], arn,
                        {"RegistryArn": arn, "RegistryName": name})

    def _plan_schema(self, logical_id: str) -> Resource:
        # Ref is the schema's ARN (schema/<registry>/<name>); GetAtt SchemaArn, SchemaName.
        where = f"Resources.{logical_id}.Properties"
        registry = scalar_str(self._resolve_prop(logical_id, "RegistryName"),
                              f"{where}.RegistryName")
        name = self._name(logical_id, "SchemaName", 385)
        arn = self._arn("schemas", f"schema/{registry}/{name}")
        return Resource(logical_id, self._raw[logical_id]["Type"], arn,
                        {"SchemaArn": arn, "SchemaName": name, "SchemaVersion": "1"})

    def _plan_policy(self, logical_id: str) -> Resource:
        # A resource whose Ref is only referred to (policies, permissions, subscriptions);
        # resource-based policies get their spec from `template_policies`.
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
                    else self._generated_name(rule_id)
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
            elif etype == "DynamoDB" and kind == "function":
                # SAM makes an AWS::Lambda::EventSourceMapping named <Function><EventId>;
                # Ref is its UUID.
                mapping_id = f"{owner}{event_id}"
                self._add_generated(Resource(
                    mapping_id, "AWS::Lambda::EventSourceMapping",
                    str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.stack_name}/{mapping_id}")),
                    generated_by=owner))
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
