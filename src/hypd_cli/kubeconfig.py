"""`hypd local kubeconfig TAG`: a kubeconfig for the EKS cluster of a cluster on the running
local cloud, so that kubectl (and helm, k9s...) talk to its emulated Kubernetes API.

The local cloud is the one ``HYPD_ENDPOINT`` (or ``--endpoint``) points at, as for every other
command: the REST API says which EKS cluster the tag has, the cloud's ``/_local/info`` where its
AWS endpoint is, and EKS's DescribeCluster the cluster's endpoint and CA. The kubeconfig names
cluster, user and context by the cluster's ARN, as ``aws eks update-kubeconfig`` does.

Credentials: the local cloud's own (its administrator). Like any principal, it needs an EKS
access entry with an access policy; a cluster hypd created was created by the pipeline's role,
so the command creates the entry (AmazonEKSClusterAdminPolicy, cluster scope) when there is
none, and says so (``--no-access-entry``: do not).

By default the user is a static bearer token, ready to use: a presigned STS GetCallerIdentity,
as ``aws eks get-token`` makes, good for 15 minutes after it is signed (EKS accepts a token for
15 minutes whatever its X-Amz-Expires). ``--exec`` writes the aws CLI's exec plugin instead
(``aws eks get-token`` with ``AWS_ENDPOINT_URL_STS`` set to the local STS endpoint and the local
credentials), which gets a fresh token whenever kubectl needs one; it needs the aws CLI.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from hypd_cli.api_client import ApiClient, ApiClientError, ApiError, is_local_endpoint
from hypd_cli.cli import ENDPOINT_ENV, EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE

ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
TOKEN_VALID_MINUTES = 15
_STS_CALLER = re.compile(r"^arn:(aws[a-z-]*):sts::(\d{12}):(assumed-role/([^/]+)/.+|user/(.+))$")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "kubeconfig",
        help="write a kubeconfig for a cluster's EKS cluster on the running local cloud",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("tag", metavar="TAG", help="the cluster's tag (hypd clusters list)")
    parser.add_argument("--output", metavar="FILE", type=Path, default=None,
                        help="write the kubeconfig to FILE (mode 0600) instead of stdout")
    parser.add_argument("--exec", dest="use_exec", action="store_true",
                        help="use the aws CLI's exec plugin (aws eks get-token) instead of a "
                        f"static token (valid {TOKEN_VALID_MINUTES} minutes)")
    parser.add_argument("--no-access-entry", action="store_true",
                        help="do not create an EKS access entry for the local credentials")
    parser.add_argument("--endpoint", metavar="URL", default=None,
                        help=f"the local cloud's REST API (default: ${ENDPOINT_ENV})")
    parser.set_defaults(func=run)


def principal_of(caller_arn: str) -> str:
    """The ARN an EKS access entry names for an STS caller (an assumed role's role, a user's
    IAM user)."""
    match = _STS_CALLER.match(caller_arn)
    if match is None:
        return caller_arn
    partition, account, _rest, role, user = match.groups()
    return (f"arn:{partition}:iam::{account}:role/{role}" if role
            else f"arn:{partition}:iam::{account}:user/{user}")


def _local_info(endpoint: str) -> dict[str, Any]:
    parts = urllib.parse.urlsplit(endpoint)
    url = f"{parts.scheme}://{parts.netloc}/_local/info"
    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - a loopback URL
        info: dict[str, Any] = json.loads(response.read())
    return info


def _session(info: dict[str, Any]) -> Any:
    import boto3

    credentials = info.get("credentials") or {}
    return boto3.session.Session(
        aws_access_key_id=credentials.get("accessKeyId", "testing"),
        aws_secret_access_key=credentials.get("secretAccessKey", "testing"),
        region_name=info["region"],
    )


def ensure_access_entry(eks: Any, cluster: str, principal: str, policy_arn: str) -> bool:
    """Create the principal's access entry with ``policy_arn`` (cluster scope) unless it has
    one; whether it was created."""
    try:
        eks.describe_access_entry(clusterName=cluster, principalArn=principal)
        return False
    except eks.exceptions.ResourceNotFoundException:
        pass
    eks.create_access_entry(clusterName=cluster, principalArn=principal)
    eks.associate_access_policy(clusterName=cluster, principalArn=principal,
                                policyArn=policy_arn, accessScope={"type": "cluster"})
    return True


def kubeconfig(cluster: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    name = str(cluster["arn"])
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {}, "current-context": name,
        "clusters": [{"name": name, "cluster": {
            "server": cluster["endpoint"],
            "certificate-authority-data": cluster["certificateAuthority"]["data"]}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "users": [{"name": name, "user": user}],
    }


def exec_user(cluster_name: str, info: dict[str, Any]) -> dict[str, Any]:
    """The aws CLI's exec plugin, pointed at the local STS and credentials."""
    credentials = info.get("credentials") or {}
    env = {"AWS_ENDPOINT_URL_STS": info["awsEndpoint"],
           "AWS_ACCESS_KEY_ID": credentials.get("accessKeyId", "testing"),
           "AWS_SECRET_ACCESS_KEY": credentials.get("secretAccessKey", "testing"),
           "AWS_REGION": info["region"]}
    return {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
        "args": ["--region", info["region"], "eks", "get-token", "--cluster-name", cluster_name,
                 "--output", "json"],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "interactiveMode": "Never",
    }}


def write(text: str, output: Path | None, out: TextIO) -> None:
    if output is None:
        out.write(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    endpoint = args.endpoint or os.environ.get(ENDPOINT_ENV)
    if not endpoint or not is_local_endpoint(endpoint):
        print(f"hypd local kubeconfig: give the local cloud's REST API with --endpoint or "
              f"{ENDPOINT_ENV} (hypd local up prints it); got {endpoint!r}", file=err)
        return EXIT_USAGE
    try:
        record = ApiClient.connect(endpoint, sign=False).call("getCluster", tag=args.tag)
        info = _local_info(endpoint)
    except ApiError as exc:
        print(f"hypd local kubeconfig: {exc} (hypd clusters list shows the tags; seeded "
              f"clusters get one with hypd clusters discover)", file=err)
        return EXIT_FAILED
    except (ApiClientError, urllib.error.URLError, OSError) as exc:
        print(f"hypd local kubeconfig: cannot reach the local cloud at {endpoint}: {exc}",
              file=err)
        return EXIT_UNREACHABLE
    eks_name = (record.get("eks") or {}).get("name")
    if not eks_name:
        print(f"hypd local kubeconfig: cluster {args.tag} has no EKS cluster", file=err)
        return EXIT_FAILED
    session = _session(info)
    eks = session.client("eks", endpoint_url=info["awsEndpoint"])
    cluster = eks.describe_cluster(name=eks_name)["cluster"]
    if cluster.get("status") not in ("ACTIVE", "UPDATING") or not cluster.get("endpoint"):
        print(f"hypd local kubeconfig: EKS cluster {eks_name} is {cluster.get('status')}: its "
              "Kubernetes API is not up yet", file=err)
        return EXIT_FAILED
    if not args.no_access_entry:
        caller = session.client("sts", endpoint_url=info["awsEndpoint"]).get_caller_identity()
        principal = principal_of(str(caller["Arn"]))
        partition = str(cluster["arn"]).split(":")[1]
        policy = f"arn:{partition}:eks::aws:cluster-access-policy/{ADMIN_POLICY}"
        if ensure_access_entry(eks, eks_name, principal, policy):
            print(f"Created an access entry for {principal} on {eks_name} with {ADMIN_POLICY}.",
                  file=err)
    if args.use_exec:
        user = exec_user(eks_name, info)
    else:
        from hypd.aws.sts import token_sts_client
        from hypd.kubernetes.token import eks_token

        signed = datetime.now(UTC)
        token = eks_token(token_sts_client(info["region"], session), eks_name, now=signed)
        user = {"token": token.value}
        until = signed.timestamp() + TOKEN_VALID_MINUTES * 60
        print(f"The token is valid for {TOKEN_VALID_MINUTES} minutes (until "
              f"{datetime.fromtimestamp(until, UTC):%H:%M:%S} UTC); run this again for a new "
              "one, or use --exec to have kubectl get tokens through aws eks get-token.",
              file=err)
    write(json.dumps(kubeconfig(cluster, user), indent=2) + "\n", args.output, out)
    if args.output is not None:
        print(f"Wrote {args.output}: export KUBECONFIG={args.output}", file=err)
    return EXIT_OK
