"""Storage manifests: a static PV and the claim bound to it by name."""

from __future__ import annotations

import pytest

from hypd.clusters.create_request import StorageRequest
from hypd.create.storage import (
    CLAIM_NAME,
    FSX_TIMEOUT_SECONDS,
    FileSystemTimedOut,
    fsx_manifests,
    mount_of,
    next_check_seconds,
    s3_manifests,
)


def test_s3_volume_is_static_and_bound_to_the_claim_by_name() -> None:
    storage = StorageRequest.model_validate({"s3": {"bucket": "my-data", "prefix": "train/"}})
    volume, claim = s3_manifests("demo", storage, "us-west-2")

    assert volume["kind"] == "PersistentVolume"
    assert claim["kind"] == "PersistentVolumeClaim"
    csi = volume["spec"]["csi"]
    assert csi["driver"] == "s3.csi.aws.com"
    assert csi["volumeAttributes"] == {"bucketName": "my-data"}
    assert "region us-west-2" in volume["spec"]["mountOptions"]
    assert "prefix train/" in volume["spec"]["mountOptions"]
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"] == "hypd-demo-shared"
    assert claim["metadata"]["name"] == CLAIM_NAME
    assert volume["spec"]["claimRef"] == {"namespace": "default", "name": CLAIM_NAME}
    assert volume["spec"]["storageClassName"] == claim["spec"]["storageClassName"] == ""


def test_fsx_volume_names_the_file_system() -> None:
    system = {
        "FileSystemId": "fs-123",
        "DNSName": "fs-123.fsx",
        "StorageCapacity": 2400,
        "LustreConfiguration": {"MountName": "abcd"},
    }
    volume, claim = fsx_manifests("demo", mount_of(system))

    assert volume["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-123",
        "volumeAttributes": {"dnsname": "fs-123.fsx", "mountname": "abcd"},
    }
    assert claim["spec"]["resources"]["requests"]["storage"] == "2400Gi"


def test_file_system_checks_start_near_the_expected_end() -> None:
    assert next_check_seconds(0) == 300
    assert next_check_seconds(290) == 10
    assert next_check_seconds(900) == 30


def test_a_file_system_that_never_becomes_available_fails_the_stage() -> None:
    with pytest.raises(FileSystemTimedOut, match="60 minutes"):
        next_check_seconds(FSX_TIMEOUT_SECONDS)
