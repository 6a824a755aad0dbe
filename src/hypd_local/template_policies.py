"""The specs of the template's resource-based policies (`ResourcePolicySpec`) and alarms.

A resource-based policy is what lets a service principal act on a resource of the account:
API Gateway and EventBridge invoking a function (Lambda permissions, declared or implied by a
SAM ``Api`` / ``EventBridgeRule`` event exactly as the SAM translator makes them), EventBridge
publishing to a topic or sending a dead letter to a queue (topic and queue policies), a service
using a key (KMS key policies), a bucket's policy. `hypd_local.iam.resource_policies` evaluates
them; docs/emulator.md cites the rules.
"""

from __future__ import annotations

from typing import Any

from hypd_local.intrinsics import TemplateError, scalar_str
from hypd_local.template_plan import StackPlanners
from hypd_local.template_specs import AlarmSpec, ResourcePolicySpec


class PolicyBuilders(StackPlanners):
    """``_build_<type>`` of queue, topic, bucket and key policies, Lambda permissions, alarms."""

    def _policy_document(self, logical_id: str, prop: str) -> dict[str, Any]:
        document = self._resolve_prop(logical_id, prop)
        if not isinstance(document, dict):
            raise TemplateError(f"Resources.{logical_id}.Properties.{prop}: a policy document "
                                "mapping is required")
        return document

    def _add_resource_policy(self, spec: ResourcePolicySpec) -> None:
        self.resource_policies[spec.logical_id] = spec

    def _build_queue_policy(self, logical_id: str) -> None:
        where = f"Resources.{logical_id}.Properties.Queues"
        by_url = {res.ref: res.attributes["Arn"] for res in self._planned.values()
                  if res.type == "AWS::SQS::Queue"}
        arns = []
        for url in self._resolve_prop(logical_id, "Queues") or []:
            arn = by_url.get(scalar_str(url, where))
            if arn is None:
                raise TemplateError(f"{where}: {url!r} is not a queue of this template")
            arns.append(arn)
        self._add_resource_policy(ResourcePolicySpec(
            logical_id, tuple(arns), self._policy_document(logical_id, "PolicyDocument")))

    def _build_topic_policy(self, logical_id: str) -> None:
        where = f"Resources.{logical_id}.Properties.Topics"
        arns = tuple(scalar_str(arn, where) for arn in self._resolve_prop(logical_id, "Topics")
                     or [])
        self._add_resource_policy(ResourcePolicySpec(
            logical_id, arns, self._policy_document(logical_id, "PolicyDocument")))

    def _build_bucket_policy(self, logical_id: str) -> None:
        bucket = scalar_str(self._resolve_prop(logical_id, "Bucket"),
                            f"Resources.{logical_id}.Properties.Bucket")
        self._add_resource_policy(ResourcePolicySpec(
            logical_id, (f"arn:{self.partition}:s3:::{bucket}",),
            self._policy_document(logical_id, "PolicyDocument")))

    def _build_key(self, logical_id: str) -> None:
        # A key always has a policy; without KeyPolicy, KMS's default (the account root, which
        # delegates to IAM) applies.
        arn = self._planned[logical_id].attributes["Arn"]
        document = self._resolve_prop(logical_id, "KeyPolicy") or {
            "Version": "2012-10-17",
            "Statement": [{"Sid": "Enable IAM User Permissions", "Effect": "Allow",
                           "Principal": {"AWS": self._arn("iam", "root", region=False)},
                           "Action": "kms:*", "Resource": "*"}]}
        if not isinstance(document, dict):
            raise TemplateError(f"Resources.{logical_id}.Properties.KeyPolicy: a policy "
                                "document mapping is required")
        self._add_resource_policy(ResourcePolicySpec(logical_id, (arn,), document))

    def _build_lambda_permission(self, logical_id: str) -> None:
        where = f"Resources.{logical_id}.Properties"
        props = {name: self._resolve_prop(logical_id, name) for name in self._props(logical_id)}
        for required in ("Action", "FunctionName", "Principal"):
            if props.get(required) is None:
                raise TemplateError(f"{where}.{required} is required")
        self._add_permission(
            logical_id, self._function_arn(scalar_str(props["FunctionName"], where)),
            principal=scalar_str(props["Principal"], where),
            action=scalar_str(props["Action"], where),
            source_arn=props.get("SourceArn"), source_account=props.get("SourceAccount"))

    def _function_arn(self, name: str) -> str:
        """A FunctionName as Lambda takes it (name, ARN, partial ARN, with a qualifier)."""
        if name.startswith("arn:"):
            return name
        if ":" in name and not name.split(":", 1)[0].isdigit():
            base, qualifier = name.split(":", 1)
            return f"{self._arn('lambda', f'function:{base}')}:{qualifier}"
        return self._arn("lambda", f"function:{name}")

    def _add_permission(
        self, logical_id: str, function_arn: str, *, principal: str, action: str,
        source_arn: Any = None, source_account: Any = None, generated_by: str | None = None,
    ) -> None:
        """A Lambda permission as the statement Lambda adds to the function's policy."""
        # Lambda's Principal: "*", an account id, an ARN, or a service principal's name.
        grantee: Any
        if principal == "*":
            grantee = "*"
        elif principal.isdigit():
            grantee = {"AWS": f"arn:{self.partition}:iam::{principal}:root"}
        elif principal.startswith("arn:"):
            grantee = {"AWS": principal}
        else:
            grantee = {"Service": principal}
        statement: dict[str, Any] = {"Sid": logical_id, "Effect": "Allow", "Principal": grantee,
                                     "Action": action, "Resource": function_arn}
        condition: dict[str, Any] = {}
        if source_arn is not None:
            condition["ArnLike"] = {"AWS:SourceArn": scalar_str(source_arn)}
        if source_account is not None:
            condition["StringEquals"] = {"AWS:SourceAccount": scalar_str(source_account)}
        if condition:
            statement["Condition"] = condition
        self._add_resource_policy(ResourcePolicySpec(
            logical_id, (function_arn,), {"Version": "2012-10-17", "Statement": [statement]},
            generated_by))

    def _build_alarm(self, logical_id: str) -> None:
        res = self._planned[logical_id]
        where = f"Resources.{logical_id}.Properties"
        actions = tuple(
            scalar_str(action, f"{where}.{prop}")
            for prop in ("AlarmActions", "OKActions", "InsufficientDataActions")
            for action in self._resolve_prop(logical_id, prop) or [])
        self.alarms[logical_id] = AlarmSpec(logical_id, res.ref, res.attributes["Arn"], actions)


def method_source_arn(partition: str, region: str, account: str, api_id: str, method: str,
                      path: str) -> str:
    """The SourceArn of the permission SAM adds for an ``Api`` event: any stage, the method
    (``*`` for ANY), each ``{param}`` of the path as ``*``."""
    segments = ["*" if part.startswith("{") and part.endswith("}") else part
                for part in path.strip("/").split("/") if part]
    verb = "*" if method == "ANY" else method
    return (f"arn:{partition}:execute-api:{region}:{account}:{api_id}/*/{verb}/"
            + "/".join(segments))
