"""The specs of what the functions use and what triggers them: tables (keys and indexes as
declared), queues, topics, log groups, the REST API and its routes, API Gateway's account,
EventBridge rules (declared ones and those SAM events imply) with their targets, and
EventBridge Scheduler's schedules and schedule groups."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hypd_local.intrinsics import TemplateError, scalar_str
from hypd_local.template_policies import PolicyBuilders, method_source_arn
from hypd_local.template_specs import (
    ApiAccountSpec,
    ApiSpec,
    LogGroupSpec,
    QueueSpec,
    ResourcePolicySpec,
    RouteSpec,
    RuleSpec,
    ScheduleGroupSpec,
    ScheduleSpec,
    StreamMappingSpec,
    TableSpec,
    TargetSpec,
    TopicSpec,
)
from hypd_local.template_stack import _IMPLICIT_API, _pick


class ResourceBuilders(PolicyBuilders):
    """``_build_<type>`` of tables, queues, topics, log groups, APIs and rules."""

    def _build_table(self, logical_id: str) -> None:
        where = f"Resources.{logical_id}.Properties"
        res = self._planned[logical_id]
        props = self.resolve(self._props(logical_id), where)
        if res.type == "AWS::Serverless::SimpleTable":
            key = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
            attr_type = {"String": "S", "Number": "N", "Binary": "B"}[key.get("Type", "String")]
            args: dict[str, Any] = {
                "TableName": res.ref,
                "AttributeDefinitions": [
                    {"AttributeName": key["Name"], "AttributeType": attr_type}
                ],
                "KeySchema": [{"AttributeName": key["Name"], "KeyType": "HASH"}],
                "BillingMode": "PAY_PER_REQUEST",
            }
            if "SSESpecification" in props:
                args["SSESpecification"] = props["SSESpecification"]
            self.tables[logical_id] = TableSpec(logical_id, res.ref, res.attributes["Arn"], args)
            return
        args = {"TableName": res.ref}
        for key in ("AttributeDefinitions", "KeySchema", "BillingMode", "ProvisionedThroughput",
                    "TableClass", "DeletionProtectionEnabled"):
            if key in props:
                args[key] = props[key]
        if props.get("GlobalSecondaryIndexes"):
            args["GlobalSecondaryIndexes"] = [
                _pick(index, "IndexName", "KeySchema", "Projection", "ProvisionedThroughput",
                      "OnDemandThroughput")
                for index in props["GlobalSecondaryIndexes"]
            ]
        if props.get("LocalSecondaryIndexes"):
            args["LocalSecondaryIndexes"] = [
                _pick(index, "IndexName", "KeySchema", "Projection")
                for index in props["LocalSecondaryIndexes"]
            ]
        stream = props.get("StreamSpecification")
        if stream and stream.get("StreamViewType"):
            args["StreamSpecification"] = {
                "StreamEnabled": True, "StreamViewType": stream["StreamViewType"],
            }
        if "KeySchema" not in args or "AttributeDefinitions" not in args:
            raise TemplateError(f"{where}: a table needs KeySchema and AttributeDefinitions")
        sse = props.get("SSESpecification")
        if sse:
            args["SSESpecification"] = {
                "Enabled": bool(sse.get("SSEEnabled", False)),
                **({"SSEType": sse["SSEType"]} if "SSEType" in sse else {}),
            }
        if props.get("Tags"):
            args["Tags"] = props["Tags"]
        ttl = props.get("TimeToLiveSpecification") or {}
        pitr = props.get("PointInTimeRecoverySpecification") or {}
        self.tables[logical_id] = TableSpec(
            logical_id,
            res.ref,
            res.attributes["Arn"],
            args,
            ttl_attribute=ttl.get("AttributeName") if ttl.get("Enabled") else None,
            point_in_time_recovery=bool(pitr.get("PointInTimeRecoveryEnabled", False)),
            stream_arn=res.attributes.get("StreamArn"),
        )

    def _build_queue(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        props = self.resolve(self._props(logical_id), f"Resources.{logical_id}.Properties")
        attributes: dict[str, str] = {}
        for key in ("DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod",
                    "ReceiveMessageWaitTimeSeconds", "VisibilityTimeout", "FifoQueue",
                    "ContentBasedDeduplication", "KmsMasterKeyId", "SqsManagedSseEnabled"):
            if key in props:
                attributes[key] = scalar_str(props[key])
        if "RedrivePolicy" in props:
            attributes["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
        self.queues[logical_id] = QueueSpec(
            logical_id, res.attributes["QueueName"], res.ref, res.attributes["Arn"], attributes
        )

    def _build_topic(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        props = self.resolve(self._props(logical_id), f"Resources.{logical_id}.Properties")
        attributes = {
            key: scalar_str(props[key])
            for key in ("DisplayName", "KmsMasterKeyId", "FifoTopic",
                        "ContentBasedDeduplication")
            if key in props
        }
        self.topics[logical_id] = TopicSpec(
            logical_id, res.attributes["TopicName"], res.ref, attributes
        )

    def _build_log_group(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        retention = self._resolve_prop(logical_id, "RetentionInDays")
        self.log_groups[logical_id] = LogGroupSpec(
            logical_id, res.ref, res.attributes["Arn"], int(retention) if retention else None
        )

    def _build_api(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        props = self._props(logical_id)
        if "DefinitionBody" in props or "DefinitionUri" in props:
            self._warn(f"{where}: an OpenAPI definition is not emulated; routes come from the "
                       "functions' Api events only")
        stage = self._resolve_prop(logical_id, "StageName")
        if not stage:
            raise TemplateError(f"{where}.StageName is required")
        auth_props = self._resolve_prop(logical_id, "Auth") or {}
        auth = auth_props.get("DefaultAuthorizer")
        invoke_role = auth_props.get("InvokeRole")
        method_settings = self._resolve_prop(logical_id, "MethodSettings") or []
        logs = bool(self._resolve_prop(logical_id, "AccessLogSetting")) or any(
            str(m.get("LoggingLevel", "OFF")).upper() != "OFF" or m.get("DataTraceEnabled")
            for m in method_settings if isinstance(m, dict))
        self.apis[logical_id] = ApiSpec(
            logical_id=logical_id,
            api_id=res.ref,
            stage=scalar_str(stage),
            routes=(),
            binary_media_types=tuple(self._resolve_prop(logical_id, "BinaryMediaTypes", []) or []),
            auth=auth,
            invoke_role=scalar_str(invoke_role, f"{where}.Auth.InvokeRole")
            if invoke_role is not None else None,
            logs_to_cloudwatch=logs,
            depends_on=self.dependencies_of(logical_id),
        )

    def _invoked_arn(self, owner: str, owner_arn: str) -> str:
        """What a SAM event of ``owner`` invokes: its AutoPublishAlias's ARN, if it has one."""
        alias = self._resolve_prop(owner, "AutoPublishAlias")
        return f"{owner_arn}:{scalar_str(alias)}" if alias else owner_arn

    def dependencies_of(self, logical_id: str) -> frozenset[str]:
        """The resources ``logical_id`` depends on through DependsOn, transitively."""
        found: set[str] = set()
        todo = list(self._raw.get(logical_id, {}).get("DependsOn", []))
        while todo:
            other = str(todo.pop())
            if other not in found:
                found.add(other)
                todo += self._raw.get(other, {}).get("DependsOn", [])
        return frozenset(found)

    def _build_api_account(self, logical_id: str) -> None:
        role = self._resolve_prop(logical_id, "CloudWatchRoleArn")
        self.api_accounts[logical_id] = ApiAccountSpec(
            logical_id, scalar_str(role, f"Resources.{logical_id}.Properties.CloudWatchRoleArn")
            if role is not None else None)

    def _build_rule(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        targets = []
        for i, target in enumerate(self._resolve_prop(logical_id, "Targets", []) or []):
            twhere = f"{where}.Targets[{i}]"
            if "Id" not in target or "Arn" not in target:
                raise TemplateError(f"{twhere}: a target needs Id and Arn")
            targets.append(TargetSpec(
                id=str(target["Id"]),
                arn=scalar_str(target["Arn"], twhere),
                input=target.get("Input"),
                input_path=target.get("InputPath"),
                input_transformer=target.get("InputTransformer"),
                dead_letter_arn=(target.get("DeadLetterConfig") or {}).get("Arn"),
                role_arn=target.get("RoleArn"),
                retry_policy=target.get("RetryPolicy"),
                http_parameters=target.get("HttpParameters"),
            ))
        pattern = self._resolve_prop(logical_id, "EventPattern")
        if isinstance(pattern, str):
            pattern = json.loads(pattern)
        self.rules[logical_id] = RuleSpec(
            logical_id=logical_id,
            name=res.ref,
            arn=res.attributes["Arn"],
            event_bus_name=self._bus_name(self._resolve_prop(logical_id, "EventBusName")),
            event_pattern=pattern,
            schedule_expression=self._resolve_prop(logical_id, "ScheduleExpression"),
            state=str(self._resolve_prop(logical_id, "State", "ENABLED")),
            targets=tuple(targets),
            description=str(self._resolve_prop(logical_id, "Description", "")),
        )

    def _build_schedule(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        props = {name: self._resolve_prop(logical_id, name) for name in self._props(logical_id)}
        for required in ("ScheduleExpression", "FlexibleTimeWindow", "Target"):
            if props.get(required) is None:
                raise TemplateError(f"{where}.{required} is required")
        target = dict(props["Target"])
        if "Arn" not in target or "RoleArn" not in target:
            raise TemplateError(f"{where}.Target: a target needs Arn and RoleArn")
        args: dict[str, Any] = {"Name": res.ref, "Target": target,
                                "GroupName": props.get("GroupName") or "default"}
        for name in ("Description", "ScheduleExpression", "ScheduleExpressionTimezone",
                     "FlexibleTimeWindow", "State", "KmsKeyArn", "ActionAfterCompletion"):
            if props.get(name) is not None:
                args[name] = props[name]
        for name in ("StartDate", "EndDate"):
            if props.get(name) is not None:
                text = scalar_str(props[name], f"{where}.{name}")
                try:
                    args[name] = datetime.fromisoformat(text.replace("Z", "+00:00"))
                except ValueError as exc:
                    raise TemplateError(f"{where}.{name}: {text!r} is not an ISO 8601 date "
                                        "and time") from exc
        self.schedules[logical_id] = ScheduleSpec(logical_id, res.ref, res.attributes["Arn"],
                                                  str(args["GroupName"]), args)

    def _build_schedule_group(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        tags = self._resolve_prop(logical_id, "Tags", []) or []
        self.schedule_groups[logical_id] = ScheduleGroupSpec(
            logical_id, res.ref, res.attributes["Arn"],
            tuple((str(t["Key"]), str(t["Value"])) for t in tags))

    def _build_sam_events(self, owner: str, owner_arn: str, *, target_kind: str) -> None:
        events = self._props(owner).get("Events") or {}
        for event_id, event in events.items():
            etype = event.get("Type")
            where = f"Resources.{owner}.Properties.Events.{event_id}.Properties"
            props = self.resolve(event.get("Properties") or {}, where)
            if etype in ("EventBridgeRule", "CloudWatchEvent", "Schedule", "ScheduleV2"):
                self._build_event_rule(owner, owner_arn, event_id, etype, props, target_kind, where)
            elif etype == "DynamoDB" and target_kind == "Lambda":
                self._build_stream_mapping(owner, event_id, props, where)
            elif etype == "Api":
                if target_kind != "Lambda":
                    self._warn(f"{where}: Api events of state machines are not emulated; ignored")
                    continue
                api_id = _IMPLICIT_API
                if "RestApiId" in props:
                    api_ref = props["RestApiId"]
                    api_id = next((r.logical_id for r in self._planned.values()
                                   if r.type == "AWS::Serverless::Api" and r.ref == api_ref), "")
                    if not api_id:
                        raise TemplateError(f"{where}.RestApiId: no AWS::Serverless::Api with id "
                                            f"{api_ref!r} in this template")
                path, method = props.get("Path"), props.get("Method")
                if not isinstance(path, str) or not path.startswith("/") or not method:
                    raise TemplateError(f"{where}: an Api event needs Path (starting with /) "
                                        "and Method")
                method = str(method).upper()
                method = "ANY" if method in ("ANY", "X-AMAZON-APIGATEWAY-ANY-METHOD") else method
                event_auth = props.get("Auth") or {}
                self._routes.setdefault(api_id, []).append(RouteSpec(
                    path=path,
                    method=method,
                    function_logical_id=owner,
                    event_id=event_id,
                    auth=event_auth.get("Authorizer"),
                    invoke_role=event_auth.get("InvokeRole"),
                ))
                # SAM's <Function><EventId>Permission<Stage>: API Gateway may invoke the
                # function (its alias) from this method of the API, in any stage.
                self._add_permission(
                    f"{owner}{event_id}Permission", self._invoked_arn(owner, owner_arn),
                    principal="apigateway.amazonaws.com", action="lambda:InvokeFunction",
                    source_arn=method_source_arn(self.partition, self.region, self.account_id,
                                                 str(self._planned[api_id].ref), method, path),
                    generated_by=owner)

    def _build_event_rule(
        self, owner: str, owner_arn: str, event_id: str, etype: str, props: dict[str, Any],
        target_kind: str, where: str,
    ) -> None:
        rule = self._planned[f"{owner}{event_id}"]
        schedule = None
        pattern = None
        if etype in ("Schedule", "ScheduleV2"):
            schedule = props.get("Schedule") or props.get("ScheduleExpression")
        else:
            pattern = props.get("Pattern")
            if not isinstance(pattern, dict):
                raise TemplateError(f"{where}.Pattern: an event pattern mapping is required")
        dlq = props.get("DeadLetterConfig") or {}
        dlq_arn = dlq.get("Arn")
        if dlq.get("Type") == "SQS":
            queue_id = str(dlq.get("QueueLogicalId") or f"{owner}{event_id}Queue")
            queue = self._planned[queue_id]
            dlq_arn = queue.attributes["Arn"]
            self.queues[queue_id] = QueueSpec(queue_id, queue.attributes["QueueName"], queue.ref,
                                              dlq_arn, {})
            # SAM's <Rule>QueuePolicy: EventBridge may send this rule's dead letters.
            self._add_resource_policy(ResourcePolicySpec(
                f"{rule.logical_id}QueuePolicy", (dlq_arn,),
                {"Version": "2012-10-17", "Statement": [{
                    "Action": "sqs:SendMessage", "Effect": "Allow",
                    "Principal": {"Service": "events.amazonaws.com"}, "Resource": dlq_arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": rule.attributes["Arn"]}}}]},
                generated_by=owner))
        target_id = (props.get("Target") or {}).get("Id") or f"{owner}{event_id}{target_kind}Target"
        target = TargetSpec(
            id=str(target_id),
            arn=owner_arn,
            input=props.get("Input"),
            input_path=props.get("InputPath"),
            input_transformer=props.get("InputTransformer"),
            dead_letter_arn=dlq_arn,
            retry_policy=props.get("RetryPolicy"),
        )
        if target_kind == "Lambda":
            # SAM's <Function><EventId>Permission: EventBridge may invoke it for this rule.
            self._add_permission(
                f"{owner}{event_id}Permission", owner_arn, principal="events.amazonaws.com",
                action="lambda:InvokeFunction", source_arn=rule.attributes["Arn"],
                generated_by=owner)
        enabled = props.get("Enabled", True)
        state = props.get("State") or ("ENABLED" if enabled else "DISABLED")
        self.rules[rule.logical_id] = RuleSpec(
            logical_id=rule.logical_id,
            name=rule.ref,
            arn=rule.attributes["Arn"],
            event_bus_name=self._bus_name(props.get("EventBusName")),
            event_pattern=pattern,
            schedule_expression=schedule,
            state=str(state),
            targets=(target,),
            description=str(props.get("Description", "")),
        )

    def _build_stream_mapping(self, owner: str, event_id: str, props: dict[str, Any],
                              where: str) -> None:
        """A SAM ``Type: DynamoDB`` event: the mapping Lambda reads the table's stream with."""
        stream = scalar_str(props.get("Stream"), f"{where}.Stream")
        table = next((spec for spec in self.tables.values() if spec.stream_arn == stream), None)
        if table is None:
            table_id = next((r.logical_id for r in self._planned.values()
                             if r.attributes.get("StreamArn") == stream), None)
            if table_id is None:
                raise TemplateError(f"{where}.Stream: {stream!r} is not the StreamArn of a "
                                    "table of this template with a StreamSpecification")
        else:
            table_id = table.logical_id
        position = str(props.get("StartingPosition", ""))
        if position not in ("TRIM_HORIZON", "LATEST"):
            raise TemplateError(f"{where}.StartingPosition: TRIM_HORIZON or LATEST is required "
                                "for a DynamoDB stream")
        batch_size = int(props.get("BatchSize", 100))
        if not 1 <= batch_size <= 10000:
            raise TemplateError(f"{where}.BatchSize: 1 to 10000, not {batch_size}")
        retries = int(props.get("MaximumRetryAttempts", -1))
        if not -1 <= retries <= 10000:
            raise TemplateError(f"{where}.MaximumRetryAttempts: -1 to 10000, not {retries}")
        age = int(props.get("MaximumRecordAgeInSeconds", -1))
        if age != -1 and not 60 <= age <= 604800:
            raise TemplateError(f"{where}.MaximumRecordAgeInSeconds: -1 or 60 to 604800, "
                                f"not {age}")
        types = list(props.get("FunctionResponseTypes") or [])
        if any(kind != "ReportBatchItemFailures" for kind in types):
            raise TemplateError(f"{where}.FunctionResponseTypes: only ReportBatchItemFailures")
        on_failure = ((props.get("DestinationConfig") or {}).get("OnFailure") or {}).get(
            "Destination")
        self.stream_mappings[f"{owner}{event_id}"] = StreamMappingSpec(
            logical_id=f"{owner}{event_id}",
            function_logical_id=owner,
            stream_arn=stream,
            table_logical_id=table_id,
            batch_size=batch_size,
            starting_position=position,
            maximum_retry_attempts=retries,
            maximum_record_age_seconds=age,
            bisect_on_error=bool(props.get("BisectBatchOnFunctionError", False)),
            report_item_failures=bool(types),
            on_failure=scalar_str(on_failure, f"{where}.DestinationConfig.OnFailure")
            if on_failure is not None else None,
            enabled=bool(props.get("Enabled", True)),
        )
