"""The `storage` stage: the cluster's shared storage as a PersistentVolume and its claim.

* S3: the bucket (checked to exist and be reachable first) is mounted through the Mountpoint
  for Amazon S3 CSI driver (add-on ``aws-mountpoint-s3-csi-driver``, installed by the
  dependencies stage). Mountpoint volumes are statically provisioned: hypd writes the PV and a
  claim bound to it by name.
* FSx for Lustre: hypd creates the file system in the cluster's compute subnet and security
  group (inspect before create: found by its ``hypd:tag`` tag), waits until it is AVAILABLE,
  then writes a PV for the FSx CSI driver (``aws-fsx-csi-driver``) and its claim.

The claim is ``hypd-shared`` in namespace ``default``; workloads mount it by that name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypd.aws.fsx import create_file_system, list_file_systems
from hypd.aws.s3 import bucket_exists
from hypd.clusters.create_request import FsxDeploymentType, ResolvedCreate, StorageRequest
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.errors import PermanentError

CLAIM_NAMESPACE = "default"
CLAIM_NAME = "hypd-shared"
S3_DRIVER = "s3.csi.aws.com"
FSX_DRIVER = "fsx.csi.aws.com"
S3_NOMINAL_CAPACITY = "1200Gi"
"""Mountpoint ignores capacity; Kubernetes requires one on a PV and its claim."""

FSX_EXPECTED_SECONDS = 300
"""An FSx for Lustre file system takes about 5-10 minutes to become AVAILABLE: the first look
is at the early end, then every 30 s."""
FSX_TIMEOUT_SECONDS = 60 * 60
"""After this long still CREATING, the stage fails (FileSystemTimedOut) instead of waiting on."""

DEFAULT_FSX_DEPLOYMENT = FsxDeploymentType.PERSISTENT_2
FSX_THROUGHPUT_PER_TIB = 125
"""PERSISTENT_2's smallest PerUnitStorageThroughput (MB/s/TiB)."""


class StorageBucketNotFound(PermanentError):
    code = "StorageBucketNotFound"


class FileSystemFailed(PermanentError):
    code = "FileSystemFailed"


class FileSystemTimedOut(PermanentError):
    code = "FileSystemTimedOut"


def volume_name(tag: str) -> str:
    return f"hypd-{tag}-shared"


# ---------------------------------------------------------------------------- S3
def check_bucket(s3: Any, bucket: str) -> None:
    """The bucket exists and this role can reach it.

    Raises:
        StorageBucketNotFound: no such bucket.
        AwsAccessDenied: the bucket exists but is not ours to read (or the parameter
            StorageBuckets of the deployment does not cover it).
    """
    if not bucket_exists(s3, bucket):
        raise StorageBucketNotFound(
            f"storage.s3.bucket: bucket {bucket} does not exist; create it or name another",
            details={"bucket": bucket, "awsErrorCode": "NoSuchBucket"},
        )


def s3_manifests(tag: str, storage: StorageRequest, region: str | None) -> list[dict[str, Any]]:
    """A static Mountpoint PV and the claim bound to it."""
    assert storage.s3 is not None
    options = ["allow-delete", "allow-other"]
    if region:
        options.append(f"region {region}")
    if storage.s3.prefix:
        options.append(f"prefix {storage.s3.prefix}")
    attributes = {"bucketName": storage.s3.bucket}
    return _volume_and_claim(
        tag,
        driver=S3_DRIVER,
        handle=f"s3-csi-{storage.s3.bucket}",
        attributes=attributes,
        capacity=S3_NOMINAL_CAPACITY,
        mount_options=options,
    )


# ---------------------------------------------------------------------------- FSx
def ensure_file_system(
    fsx: Any,
    resolved: ResolvedCreate,
    *,
    subnet_id: str,
    security_group_id: str,
    client_token: str,
) -> dict[str, Any]:
    """The cluster's Lustre file system: found by its tag, else created. FileSystems[] entry.

    Raises:
        FileSystemFailed: the file system is FAILED or being deleted.
    """
    existing = find_file_system(fsx, resolved.tag)
    if existing is None:
        assert resolved.storage.fsx is not None
        spec = resolved.storage.fsx
        deployment = (spec.deployment_type or DEFAULT_FSX_DEPLOYMENT).value
        lustre: dict[str, Any] = {"DeploymentType": deployment}
        if deployment.startswith("PERSISTENT"):
            lustre["PerUnitStorageThroughput"] = FSX_THROUGHPUT_PER_TIB
        existing = create_file_system(
            fsx,
            {
                "ClientRequestToken": client_token[:63],
                "FileSystemType": "LUSTRE",
                "StorageCapacity": spec.storage_capacity_gib,
                "SubnetIds": [subnet_id],
                "SecurityGroupIds": [security_group_id],
                "LustreConfiguration": lustre,
                "Tags": [
                    {"Key": HYPD_TAG_KEY, "Value": resolved.tag},
                    {"Key": "Name", "Value": volume_name(resolved.tag)},
                ],
            },
            f"creating the FSx for Lustre file system of {resolved.tag}",
        )
    _raise_if_failed(existing)
    return existing


def find_file_system(fsx: Any, tag: str) -> dict[str, Any] | None:
    for system in list_file_systems(fsx):
        tags = {t["Key"]: t.get("Value", "") for t in system.get("Tags", [])}
        if tags.get(HYPD_TAG_KEY) == tag and system.get("Lifecycle") not in ("DELETING",):
            return dict(system)
    return None


def _raise_if_failed(system: Mapping[str, Any]) -> None:
    lifecycle = system.get("Lifecycle")
    if lifecycle in ("FAILED", "MISCONFIGURED", "DELETING"):
        reason = (system.get("FailureDetails") or {}).get("Message") or "no reason given"
        raise FileSystemFailed(
            f"FSx file system {system.get('FileSystemId')} is {lifecycle}: {reason}",
            details={"fileSystemId": system.get("FileSystemId"), "awsErrorCode": lifecycle},
        )


def next_check_seconds(elapsed_seconds: float) -> int:
    """When to look at the file system again: near its expected end first, then every 30 s.

    Raises:
        FileSystemTimedOut: it has been creating for `FSX_TIMEOUT_SECONDS`.
    """
    if elapsed_seconds >= FSX_TIMEOUT_SECONDS:
        raise FileSystemTimedOut(
            f"the FSx for Lustre file system is still not AVAILABLE after "
            f"{int(elapsed_seconds // 60)} minutes",
            details={"elapsedSeconds": int(elapsed_seconds)},
        )
    if elapsed_seconds < FSX_EXPECTED_SECONDS:
        return int(FSX_EXPECTED_SECONDS - elapsed_seconds)
    return 30


def file_system_ready(system: Mapping[str, Any]) -> bool:
    return system.get("Lifecycle") == "AVAILABLE"


def mount_of(system: Mapping[str, Any]) -> dict[str, Any]:
    """What a volume needs of a file system (FileSystems[] entry), as the storage stage
    records it."""
    lustre = system.get("LustreConfiguration") or {}
    return {
        "fileSystemId": str(system["FileSystemId"]),
        "dnsName": str(system.get("DNSName", "")),
        "mountName": str(lustre.get("MountName", "")),
        "capacityGiB": int(system.get("StorageCapacity") or 1200),
    }


def fsx_manifests(tag: str, mount: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A static FSx for Lustre PV (`mount_of` the file system) and the claim bound to it."""
    return _volume_and_claim(
        tag,
        driver=FSX_DRIVER,
        handle=str(mount["fileSystemId"]),
        attributes={"dnsname": str(mount["dnsName"]), "mountname": str(mount["mountName"])},
        capacity=f"{int(mount['capacityGiB'])}Gi",
        mount_options=["flock"],
    )


def volume_manifests(tag: str, request: StorageRequest, region: str | None,
                     made: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The volume and claim of what the storage stage made (its output `made`)."""
    if made.get("kind") == "s3":
        return s3_manifests(tag, request, region)
    return fsx_manifests(tag, made)


# ---------------------------------------------------------------------------- both
def _volume_and_claim(
    tag: str,
    *,
    driver: str,
    handle: str,
    attributes: dict[str, str],
    capacity: str,
    mount_options: list[str],
) -> list[dict[str, Any]]:
    name = volume_name(tag)
    labels = {"app.kubernetes.io/managed-by": "hypd", "hypd.io/cluster-tag": tag}
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "capacity": {"storage": capacity},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": mount_options,
            "claimRef": {"namespace": CLAIM_NAMESPACE, "name": CLAIM_NAME},
            "csi": {"driver": driver, "volumeHandle": handle, "volumeAttributes": attributes},
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": CLAIM_NAME, "namespace": CLAIM_NAMESPACE, "labels": labels},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": name,
            "resources": {"requests": {"storage": capacity}},
        },
    }
    return [volume, claim]
