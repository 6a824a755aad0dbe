"""AWS partitions: which one a Region or an ARN belongs to, and the names that depend on it.

An ARN names its partition (`arn:aws-cn:...`); a Region's partition (`aws`, `aws-cn`,
`aws-us-gov`, ...) comes from botocore's own partition data (`botocore/data/partitions.json`,
what the SDK's endpoint rules resolve Regions with), so hypd knows every partition the
installed SDK knows. Code that builds an ARN or a service name takes the partition from the
Region it works in or from an ARN it already has, through these functions, never a literal
`aws`.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

DEFAULT_PARTITION = "aws"
"""botocore's answer for a Region no partition claims."""
GATEWAY_SERVICES = frozenset({"s3", "dynamodb"})
"""The services with gateway VPC endpoints."""


@cache
def _partitions() -> tuple[dict[str, Any], ...]:
    from botocore.loaders import Loader

    return tuple(Loader().load_data("partitions")["partitions"])


@cache
def _partition(region: str) -> dict[str, Any] | None:
    # As botocore resolves a Region: a partition that lists it, else one whose pattern it
    # matches (a Region newer than the installed botocore).
    partitions = _partitions()
    listed = next((p for p in partitions if region in (p.get("regions") or {})), None)
    return listed or next((p for p in partitions if re.match(p["regionRegex"], region)), None)


def partition_of(region: str) -> str:
    """The partition of `region`: `us-west-2` -> `aws`, `cn-north-1` -> `aws-cn`,
    `us-gov-west-1` -> `aws-us-gov`; `aws` for a Region no partition claims (as botocore)."""
    found = _partition(region)
    return str(found["id"]) if found else DEFAULT_PARTITION


def partition_of_arn(arn: str) -> str:
    """The partition an ARN names: `arn:aws-cn:iam::123456789012:role/x` -> `aws-cn`.

    Raises:
        ValueError: `arn` is not an ARN.
    """
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn" or not parts[1]:
        raise ValueError(f"{arn!r} is not an ARN")
    return parts[1]


def dns_suffix(region: str) -> str:
    """The domain of the Region's endpoints: `amazonaws.com`, `amazonaws.com.cn` in China."""
    found = _partition(region)
    return str(found["outputs"]["dnsSuffix"]) if found else "amazonaws.com"


def gateway_endpoint_service(region: str, service: str) -> str:
    """The service name of a gateway VPC endpoint (`s3`, `dynamodb`) in `region`.

    A gateway endpoint's service is its AWS-managed prefix list, named
    `com.amazonaws.{region}.{service}` in every partition, the China Regions included
    (`com.amazonaws.cn-north-1.s3`). What China names differently are *interface* endpoints:
    there many, S3's among them, are `cn.com.amazonaws.{region}.{service}`
    (`cn.com.amazonaws.cn-north-1.s3` is S3's PrivateLink endpoint, not its gateway). Sources:
    the Amazon VPC User Guide, "Gateway endpoints" (the prefix list name has the form
    `com.amazonaws.region.service`); AWS CDK's `GatewayVpcEndpointAwsService` (no partition
    exception) beside `InterfaceVpcEndpointAwsService` (a `cn.com.amazonaws` list for
    cn-north-1 and cn-northwest-1) in aws-cdk-lib/aws-ec2/lib/vpc-endpoint.ts; eksctl's
    DescribeVpcEndpointServices fixture for cn-north-1 (Gateway `com.amazonaws.cn-north-1.s3`,
    Interface `cn.com.amazonaws.cn-north-1.ec2`).
    """
    if service not in GATEWAY_SERVICES:
        raise ValueError(f"{service!r} has no gateway endpoint (only {sorted(GATEWAY_SERVICES)})")
    return f"com.amazonaws.{region}.{service}"
