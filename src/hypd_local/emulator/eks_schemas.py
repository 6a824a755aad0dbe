"""EKS add-on configuration schemas: what DescribeAddonConfiguration answers, and what CreateAddon
and UpdateAddon check ``configurationValues`` against (`eks_config`).

The schemas are data (`NO_CONFIGURATION`, `INFERENCE`, `OBSERVABILITY`), written in the
draft 2019-09 dialect EKS publishes add-on schemas in, with ``additionalProperties: false`` at
every level, as AWS's own add-ons do: a key the schema does not declare is refused. The keys of
the SageMaker HyperPod add-ons are those their documented configurations use
(../shared/docs/FEATURES-FACTS.md, sections 2 and 4); an add-on whose configuration the emulator
does not model takes none (`NO_CONFIGURATION`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

DIALECT = "https://json-schema.org/draft/2019-09/schema"

Schema = dict[str, Any]


def _object(properties: Mapping[str, Schema], description: str = "",
            required: Iterable[str] = ()) -> Schema:
    schema: Schema = {"type": "object", "properties": dict(properties),
                      "additionalProperties": False}
    if description:
        schema["description"] = description
    wanted = list(required)
    if wanted:
        schema["required"] = wanted
    return schema


def _typed(kind: str, description: str, **extra: Any) -> Schema:
    return {"type": kind, "description": description, **extra}


def _document(root: Schema) -> str:
    return json.dumps({"$schema": DIALECT, **root}, indent=2, sort_keys=True)


NO_CONFIGURATION = _document(_object({}, "This add-on version takes no configuration values."))
"""The schema of an add-on without configuration: an empty object, nothing else."""

_ROLE = "The ARN of an IAM role."

INFERENCE = _document(_object({
    "executionRoleArn": _typed("string", "The inference operator's execution role (IRSA)."),
    "tlsCertificateS3Bucket": _typed(
        "string", "The S3 bucket the operator stores endpoints' TLS certificates in."),
    "hyperpodClusterArn": _typed("string", "The HyperPod cluster the operator deploys to."),
    "jumpstartGatedModelDownloadRoleArn": _typed(
        "string", "The role that downloads gated JumpStart models."),
    "alb": _object({
        "enabled": _typed("boolean", "Install the bundled AWS Load Balancer Controller."),
        "serviceAccount": _object({
            "create": _typed("boolean", "Create the controller's service account."),
            "roleArn": _typed("string", _ROLE),
        }, "The load balancer controller's service account."),
    }, "The bundled AWS Load Balancer Controller."),
    "keda": _object({
        "enabled": _typed("boolean", "Install the bundled KEDA."),
        "auth": _object({
            "aws": _object({
                "irsa": _object({
                    "enabled": _typed("boolean", "KEDA authenticates with IRSA."),
                    "roleArn": _typed("string", _ROLE),
                }),
            }),
        }, "How KEDA authenticates to AWS."),
    }, "The bundled KEDA autoscaler."),
}, "Configuration of the SageMaker HyperPod inference operator.",
    required=("executionRoleArn", "tlsCertificateS3Bucket", "hyperpodClusterArn")))
"""amazon-sagemaker-hyperpod-inference: the keys TF and the Helm-to-add-on migration use."""

_BASIC = ("BASIC", "ADVANCED")
_DISABLED = ("DISABLED", "ADVANCED")
_METRIC_LEVELS: Mapping[str, tuple[str, ...] | None] = {
    "trainingMetrics": _BASIC,
    "inferenceMetrics": None,  # its levels are not documented: any string
    "taskGovernanceMetrics": _DISABLED,
    "scalingMetrics": _DISABLED,
    "customMetrics": _BASIC,
    "nodeMetrics": _BASIC,
    "acceleratedComputeMetrics": _BASIC,
    "networkMetrics": _DISABLED,
}


def _metric(levels: tuple[str, ...] | None) -> Schema:
    level = _typed("string", "How much of this group of metrics is collected.")
    if levels is not None:
        level["enum"] = list(levels)
    return _object({
        "level": level,
        "scrapeInterval": _typed("integer", "Seconds between two scrapes.", minimum=1),
    })


OBSERVABILITY = _document(_object({
    "ampWorkspace": _object({
        "prometheusEndpoint": _typed("string", "The workspace's Prometheus endpoint."),
        "arn": _typed("string", "The Amazon Managed Service for Prometheus workspace."),
    }, "Where metrics are written."),
    "amgWorkspace": _object({
        "workspaceName": _typed("string", "The Amazon Managed Grafana workspace's name."),
        "arn": _typed("string", "The Amazon Managed Grafana workspace."),
    }, "The dashboards' workspace."),
    "metricsProvider": _object({name: _metric(levels) for name, levels in
                                _METRIC_LEVELS.items()}, "Which metrics are collected."),
    "logging": _object({"enabled": _typed("boolean", "Send logs to CloudWatch Logs.")}),
}, "Configuration of SageMaker HyperPod observability."))
"""amazon-sagemaker-hyperpod-observability: the keys TF and the CLI use."""
