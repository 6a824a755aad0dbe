"""Resource-based policies: may a service principal act on a resource of the account?

When an AWS service acts for the account (API Gateway or EventBridge invoking a function,
EventBridge publishing to a topic or sending a dead letter, CloudWatch notifying a topic), it
acts as its service principal, and only the resource's own policy can let it: a Lambda
permission, a queue, topic or bucket policy, a key policy. The service puts what it acts for in
the request context (``aws:SourceArn``, ``aws:SourceAccount``), except where AWS documents that
it does not: the SNS developer guide says the source keys are not supported in a KMS key policy
for EventBridge delivering to an encrypted topic, so a key policy statement conditioned on them
never matches EventBridge. Each rule is cited in docs/emulator.md.

What is evaluated:

- a resource with no policy lets no service principal in (an SNS topic's default policy names
  the account's principals; the local cloud does not credit it to a service, so the template
  grants each service by name, as AWS's confused-deputy guidance recommends);
- the statements of every policy attached to the resource are evaluated together
  (`hypd_local.iam.policy.evaluate`, Principal matched against ``{"Service": [name]}``): an
  explicit Deny refuses, else an Allow is needed;
- a topic encrypted with a key also needs the key's policy to allow ``kms:GenerateDataKey`` and
  ``kms:Decrypt`` to the publishing service (with the context that service sends to KMS); the
  AWS managed key ``alias/aws/sns`` allows account principals only (through SNS), never a
  service principal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypd_local.iam.policy import Outcome, Request, evaluate
from hypd_local.template_specs import ResourcePolicySpec

SNS_MANAGED_KEY = "alias/aws/sns"

KMS_SOURCE_KEYS_UNSUPPORTED = frozenset({"events.amazonaws.com"})
"""Services whose KMS requests for an encrypted topic carry no ``aws:SourceArn`` /
``aws:SourceAccount`` (SNS developer guide, "Enable compatibility between event sources from AWS
services and encrypted topics")."""


@dataclass(frozen=True)
class ServiceRequest:
    """A service principal's request on a resource, with what the service says it acts for."""

    service: str
    action: str
    resource: str
    source_arn: str | None = None
    source_account: str | None = None

    def context(self) -> dict[str, list[str]]:
        context: dict[str, list[str]] = {}
        if self.source_arn is not None:
            context["aws:sourcearn"] = [self.source_arn]
        if self.source_account is not None:
            context["aws:sourceaccount"] = [self.source_account]
        return context


class ResourcePolicies:
    """The account's resource-based policies, by the ARN they are attached to."""

    def __init__(self, specs: Iterable[ResourcePolicySpec], *, partition: str, region: str,
                 account_id: str, topic_keys: Mapping[str, str] | None = None,
                 live: Callable[[str], Any] | None = None) -> None:
        """``topic_keys``: topic ARN -> its KmsMasterKeyId, for the encrypted topics.
        ``live(arn)``: the ``Policy`` SQS or SNS holds now for a queue or topic ARN (None when
        it has none): queue and topic policies are read from there, so that one set by
        SetQueueAttributes / SetTopicAttributes counts; the others come from the template."""
        self._by_arn: dict[str, list[Mapping[str, Any]]] = {}
        self._topic_keys = dict(topic_keys or {})
        self._live = live
        self._partition = partition
        self._region = region
        self._account_id = account_id
        for spec in specs:
            for arn in spec.resources:
                self._by_arn.setdefault(arn, []).append(spec.document)

    def documents(self, arn: str) -> list[Any]:
        if self._live is not None and arn.split(":")[2:3] in (["sqs"], ["sns"]):
            found = self._live(arn)
            return [found] if found else []
        return list(self._by_arn.get(arn, ()))

    def refusal(self, request: ServiceRequest) -> str | None:
        """Why the resource's policy does not let the service do this, or None."""
        documents = self.documents(request.resource)
        if not documents:
            return (f"{request.resource} has no resource-based policy that allows "
                    f"{request.service} to perform {request.action}")
        outcome = evaluate(documents, Request(request.action, request.resource,
                                              request.context(),
                                              {"Service": [request.service]}))
        if outcome is Outcome.ALLOW:
            return None
        why = ("an explicit deny in its resource-based policy" if outcome is Outcome.DENY
               else "no statement of its resource-based policy allows it"
               + _context_note(request))
        return (f"{request.service} is not authorized to perform {request.action} on "
                f"{request.resource}: {why}")

    def key_arn(self, key: str) -> str | None:
        """The ARN of a topic's KmsMasterKeyId (key id or ARN); None for the AWS managed key."""
        if key == SNS_MANAGED_KEY or key.endswith(f":{SNS_MANAGED_KEY}"):
            return None
        if key.startswith("arn:"):
            return key
        return f"arn:{self._partition}:kms:{self._region}:{self._account_id}:key/{key}"

    def for_source(self, service: str, action: str, resource: str,
                   source_arn: str | None) -> str | None:
        """`refusal` of a service acting for a resource of this account (``source_arn``)."""
        return self.refusal(ServiceRequest(service, action, resource, source_arn,
                                           self._account_id))

    def publish_refusal(self, topic_arn: str, service: str, *,
                        source_arn: str | None) -> str | None:
        """May ``service`` publish to the topic: its topic policy, then (encrypted topic) its
        key's policy."""
        denial = self.for_source(service, "sns:Publish", topic_arn, source_arn)
        topic_key = self._topic_keys.get(topic_arn)
        if denial is not None or not topic_key:
            return denial
        key_arn = self.key_arn(topic_key)
        if key_arn is None:
            return (f"{topic_arn} is encrypted with the AWS managed key {SNS_MANAGED_KEY}, "
                    f"whose key policy cannot let {service} use it (a customer managed key can)")
        carries_source = service not in KMS_SOURCE_KEYS_UNSUPPORTED
        for action in ("kms:GenerateDataKey", "kms:Decrypt"):
            denial = self.refusal(ServiceRequest(
                service, action, key_arn,
                source_arn if carries_source else None,
                self._account_id if carries_source else None))
            if denial is not None:
                return f"KMS refused {topic_arn}'s key: {denial}"
        return None


def _context_note(request: ServiceRequest) -> str:
    keys: Sequence[str] = sorted(request.context())
    if keys:
        return f" (the request's context: {', '.join(keys)})"
    return " (the request carries no aws:SourceArn / aws:SourceAccount)"
