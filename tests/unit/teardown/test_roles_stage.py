"""The roles stage's AMP workspace: AMP deletes a workspace in the background (DELETING, then
gone), so the stage asks once and reports it deleted only once AMP no longer lists it. The TLS
bucket hypd made goes at once, emptied first; one whose tags no longer say so is never deleted."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto.amp.models import amp_backends

from hypd.aws import s3 as s3_api
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.features.catalog import INSTALLED_BY_FEATURES, INSTALLED_BY_TAG, workspace_alias
from hypd.teardown.cluster_tasks import roles
from hypd.teardown.inputs import TeardownInput
from hypd.teardown.plan import Resource
from hypd.teardown.stages import TeardownFailed
from tests.unit.support import REGION

pytestmark = pytest.mark.usefixtures("moto_aws")

TAG = "t"
WHERE = TeardownInput(tag=TAG, eks_name="hypd-t", hyperpod_name="hypd-t")


class Clients:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def client(self, service: str) -> Any:
        client = boto3.client(service, region_name=REGION)
        client.meta.events.register(
            "before-call.*.*", lambda model, **_: self.calls.append(model.name))
        return client


def test_a_workspace_being_deleted_is_waited_for_not_deleted_again() -> None:
    amp = boto3.client("amp", region_name=REGION)
    created = amp.create_workspace(alias=workspace_alias(TAG), tags={HYPD_TAG_KEY: TAG})
    account = boto3.client("sts", region_name=REGION).get_caller_identity()["Account"]
    workspaces = amp_backends[account][REGION].workspaces
    workspaces[created["workspaceId"]].status = {"statusCode": "DELETING"}

    services = Clients()
    look = roles(services, WHERE, [], True)  # type: ignore[arg-type]

    assert [(r.type, r.detail["status"]) for r in look.left] == [
        ("AmpWorkspace", "DELETING")]
    assert "DeleteWorkspace" not in services.calls
    del workspaces[created["workspaceId"]]  # AMP finished
    assert not roles(services, WHERE, [], False).left  # type: ignore[arg-type]


def test_a_workspace_is_deleted_once_and_left_until_gone() -> None:
    amp = boto3.client("amp", region_name=REGION)
    amp.create_workspace(alias=workspace_alias(TAG), tags={HYPD_TAG_KEY: TAG})
    services = Clients()

    look = roles(services, WHERE, [], True)  # type: ignore[arg-type]

    assert services.calls.count("DeleteWorkspace") == 1
    assert [r.type for r in look.left] == ["AmpWorkspace"]  # looked at again next time


MADE = "hyperpod-tls-t-0123456789ab"
PLANNED = [Resource("S3Bucket", MADE, f"arn:aws:s3:::{MADE}")]


def made_bucket() -> Any:
    s3 = boto3.client("s3", region_name=REGION)
    s3_api.make_private_bucket(s3, MADE, REGION, {HYPD_TAG_KEY: TAG,
                                                   INSTALLED_BY_TAG: INSTALLED_BY_FEATURES})
    s3.put_object(Bucket=MADE, Key="certs/falcon.pem", Body=b"certificate")
    return s3


def test_the_tls_bucket_hypd_made_is_emptied_and_deleted_at_once() -> None:
    s3 = made_bucket()

    look = roles(Clients(), WHERE, PLANNED, True)  # type: ignore[arg-type]

    assert look.done
    assert look.found == PLANNED
    assert s3_api.bucket_tags(s3, MADE) is None
    # Looked at again (a retry): already gone, nothing more to do.
    assert roles(Clients(), WHERE, PLANNED, False).found == []  # type: ignore[arg-type]


def test_a_planned_bucket_no_longer_tagged_as_hypds_is_never_deleted() -> None:
    s3 = made_bucket()
    s3.delete_bucket_tagging(Bucket=MADE)  # someone took it over since the plan

    with pytest.raises(TeardownFailed, match=f"S3 bucket {MADE} no longer carries the tags"):
        roles(Clients(), WHERE, PLANNED, True)  # type: ignore[arg-type]

    assert [o["Key"] for o in s3.list_objects_v2(Bucket=MADE)["Contents"]] == [
        "certs/falcon.pem"]
