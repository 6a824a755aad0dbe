"""STS: who the caller is, and the client that presigns EKS bearer tokens."""

from __future__ import annotations

from typing import Any

import boto3

from hypd.aws.clients import CLIENT_CONFIG
from hypd.aws.errors import translated
from hypd.aws.partitions import dns_suffix


def caller_arn(client: Any) -> str:
    """GetCallerIdentity's ``Arn``: an assumed-role session or a user."""
    return str(translated(lambda: client.get_caller_identity()["Arn"],
                          "reading the caller's identity (STS GetCallerIdentity)"))


def sts_endpoint(region: str) -> str:
    """The regional STS endpoint, the only host EKS accepts in a token."""
    return f"https://sts.{region}.{dns_suffix(region)}"


def token_sts_client(region: str, session: Any = None) -> Any:
    """An STS client for `eks_token`: endpoint pinned to the regional STS endpoint.

    It must not follow ``AWS_ENDPOINT_URL``: the token is a URL the EKS server validates (its
    host must be an STS host) and calls, not a request we send. On the local cloud
    ``AWS_ENDPOINT_URL`` points at the emulator; a token presigned for that host would be
    rejected ("unexpected hostname"), so we sign for ``sts.<region>.amazonaws.com`` and the local
    verifier forwards the signed query to its STS. Presigning makes no network call.
    """
    factory = session if session is not None else boto3
    return factory.client("sts", region_name=region, endpoint_url=sts_endpoint(region),
                          config=CLIENT_CONFIG)
