"""The IAM roles hypd makes for a cluster's features: their trust and permissions, exactly as
documented (../shared/docs/FEATURES-FACTS.md), and `ensure_role` / `remove_role`.

Each role is the cluster's own (``hypd-{tag}-{key}`` under path ``/hypd/``): an IRSA trust names
the cluster's OIDC provider, the observability trust its EKS cluster. Every role is created with
the deployment's FeatureRoleBoundary, and gets only its feature's AWS managed policies and its
one documented inline policy (the load balancer controller's: the one its project publishes,
`hypd.features.load_balancer_controller`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypd.aws import iam as iam_api
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.features import load_balancer_controller
from hypd.features.catalog import FeatureRole, Trust, role_name

POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"


@dataclass(frozen=True)
class RoleContext:
    tag: str
    partition: str
    region: str
    account: str
    eks_arn: str
    boundary_arn: str | None
    oidc_provider_arn: str | None = None
    workspace_arn: str | None = None
    tls_bucket: str | None = None


def managed_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{name}"


def trust_policy(role: FeatureRole, ctx: RoleContext) -> dict[str, Any]:
    statements: list[dict[str, Any]] = []
    if role.trust is Trust.POD_IDENTITY:
        statement: dict[str, Any] = {
            "Effect": "Allow",
            "Principal": {"Service": POD_IDENTITY_SERVICE},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
        if role.key == "observability":
            statement["Condition"] = {
                "StringEquals": {"aws:SourceAccount": ctx.account},
                "ArnEquals": {"aws:SourceArn": ctx.eks_arn},
            }
        statements.append(statement)
    else:
        if not ctx.oidc_provider_arn:
            raise ValueError(f"role {role.key} trusts the OIDC provider, which is not known")
        host = ctx.oidc_provider_arn.split(":oidc-provider/", 1)[1]
        subjects = [f"system:serviceaccount:{sa}" for sa in role.service_accounts]
        statements.append(
            {
                "Effect": "Allow",
                "Principal": {"Federated": ctx.oidc_provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {f"{host}:aud": "sts.amazonaws.com"},
                    "StringLike": {
                        f"{host}:sub": subjects[0] if len(subjects) == 1 else subjects
                    },
                },
            }
        )
        if role.also_trusted_service:
            statements.append(
                {
                    "Effect": "Allow",
                    "Principal": {"Service": role.also_trusted_service},
                    "Action": "sts:AssumeRole",
                }
            )
    return {"Version": "2012-10-17", "Statement": statements}


def inline_policy(role: FeatureRole, ctx: RoleContext) -> dict[str, Any] | None:
    """The role's one inline policy (None: it has none)."""
    p, r, a = ctx.partition, ctx.region, ctx.account
    if role.inline == "hyperpod-inference-v3":
        statements: list[dict[str, Any]] = [
            # Operator v3.0 tags the TLS certificates it imports and the objects it writes.
            {"Effect": "Allow", "Action": "acm:AddTagsToCertificate",
             "Resource": f"arn:{p}:acm:{r}:{a}:certificate/*"},
        ]
        if ctx.tls_bucket:
            statements.append({"Effect": "Allow", "Action": "s3:PutObjectTagging",
                               "Resource": f"arn:{p}:s3:::{ctx.tls_bucket}/*"})
    elif role.inline == "keda-metrics":
        statements = [
            # CloudWatch's metric reads support no resource-level permissions: only "*".
            {"Effect": "Allow",
             "Action": ["cloudwatch:GetMetricData", "cloudwatch:GetMetricStatistics",
                        "cloudwatch:ListMetrics"],
             "Resource": "*"},
            {"Effect": "Allow",
             "Action": ["aps:QueryMetrics", "aps:GetLabels", "aps:GetSeries",
                        "aps:GetMetricMetadata"],
             "Resource": f"arn:{p}:aps:{r}:{a}:workspace/*"},
        ]
    elif role.inline == "remote-write-and-logs":
        if not ctx.workspace_arn:
            raise ValueError("the observability role writes to a workspace, which is not known")
        statements = [
            {"Effect": "Allow", "Action": "aps:RemoteWrite", "Resource": ctx.workspace_arn},
            {"Effect": "Allow",
             "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents",
                        "logs:DescribeLogStreams"],
             "Resource": f"arn:{p}:logs:{r}:{a}:log-group:/aws/sagemaker/Clusters/*"},
        ]
    elif role.inline == load_balancer_controller.POLICY_NAME:
        # The controller's documented policy, unchanged but for the partition.
        return load_balancer_controller.policy(p)
    else:
        return None
    return {"Version": "2012-10-17", "Statement": statements}


def ensure_role(iam: Any, role: FeatureRole, ctx: RoleContext) -> tuple[str, list[str]]:
    """The role as documented: created, or brought back to its trust and policies. Returns its
    ARN and what had to be written (empty: it was right)."""
    name = role_name(ctx.tag, role)
    trust = trust_policy(role, ctx)
    changed: list[str] = []
    current = iam_api.get_role(iam, name)
    if current is None:
        current = iam_api.create_role(
            iam,
            name=name,
            path=role.path,
            trust_policy=trust,
            permissions_boundary=ctx.boundary_arn,
            description=f"hypd cluster {ctx.tag}: {role.key}",
            tags={HYPD_TAG_KEY: ctx.tag},
        )
        changed.append("role")
    elif current.trust_policy != trust:
        iam_api.update_trust_policy(iam, name, trust)
        changed.append("trust")
    wanted = sorted(managed_policy_arn(ctx.partition, n) for n in role.managed_policies)
    attached = iam_api.attached_policies(iam, name)
    for arn in wanted:
        if arn not in attached:
            iam_api.attach_policy(iam, name, arn)
            changed.append(arn.rsplit("/", 1)[-1])
    for arn in attached:
        if arn not in wanted:
            iam_api.detach_policy(iam, name, arn)
            changed.append(f"-{arn.rsplit('/', 1)[-1]}")
    document = inline_policy(role, ctx)
    if (
        document is not None
        and role.inline
        and iam_api.inline_policy(iam, name, role.inline) != document
    ):
        iam_api.put_inline_policy(iam, name, role.inline, document)
        changed.append(role.inline)
    return current.arn, changed


def remove_role(iam: Any, tag: str, role: FeatureRole) -> bool:
    """Delete the role (its policies first); False when it was not there."""
    return iam_api.delete_role(iam, role_name(tag, role))
