"""The TLS bucket hypd makes for the inference operator: its name (a valid S3 name the operator's
policy allows, the same for a cluster every time, another for another account, Region or tag),
and the S3 adapter that makes it private, encrypted and tagged, and empties and deletes it."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st

from hypd.aws import s3 as s3_api
from hypd.clusters.create_request import TAG_MAX_LENGTH, TAG_PATTERN
from hypd.clusters.feature_request import TLS_BUCKET_PATTERN
from hypd.clusters.models import CLUSTER_TAG_PATTERN
from hypd.features.tls_bucket import tls_bucket_name
from tests.support import PRIVATE_BUCKET, bucket_privacy
from tests.unit.support import ACCOUNT, REGION

# S3's rules for a general purpose bucket's name (docs: "Bucket naming rules").
S3_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
S3_RESERVED = re.compile(r"^(xn--|sthree-|amzn-s3-demo-)|(-s3alias|--ol-s3|\.mrap|--x-s3|"
                         r"--table-s3)$")


def valid_s3_name(name: str) -> bool:
    return (bool(S3_NAME.match(name)) and ".." not in name and not S3_RESERVED.search(name)
            and not re.fullmatch(r"\d+\.\d+\.\d+\.\d+", name))


ACCOUNTS = st.from_regex(r"\A\d{12}\Z")
REGIONS = st.sampled_from(["us-west-2", "us-east-1", "ap-southeast-2", "eu-central-1",
                           "us-gov-west-1", "cn-northwest-1", "ap-southeast-5"])
CREATED_TAGS = st.from_regex(TAG_PATTERN.replace("^", r"\A").replace("$", r"\Z")).filter(
    lambda t: len(t) <= TAG_MAX_LENGTH)
DISCOVERED_TAGS = st.from_regex(CLUSTER_TAG_PATTERN.replace("^", r"\A").replace("$", r"\Z"))


def test_the_name_is_the_tag_and_a_digest_of_account_region_and_tag() -> None:
    digest = hashlib.sha256(b"123456789012/us-west-2/train").hexdigest()[:12]
    assert tls_bucket_name("train", "123456789012", "us-west-2") == (
        f"hyperpod-tls-train-{digest}")


@given(tag=st.one_of(CREATED_TAGS, DISCOVERED_TAGS), account=ACCOUNTS, region=REGIONS)
def test_every_name_is_a_valid_s3_name_the_operators_policy_allows(
    tag: str, account: str, region: str
) -> None:
    name = tls_bucket_name(tag, account, region)
    assert len(name) <= 63
    assert valid_s3_name(name), name
    assert re.match(TLS_BUCKET_PATTERN, name), name
    assert name == tls_bucket_name(tag, account, region)  # a retry finds the same bucket


def test_another_account_region_or_tag_gets_another_name() -> None:
    names = {
        tls_bucket_name("train", "123456789012", "us-west-2"),
        tls_bucket_name("train", "210987654321", "us-west-2"),
        tls_bucket_name("train", "123456789012", "us-east-1"),
        tls_bucket_name("Train", "123456789012", "us-west-2"),
        tls_bucket_name("a" * 58, "123456789012", "us-west-2"),
        tls_bucket_name("a" * 57 + "b", "123456789012", "us-west-2"),
    }
    assert len(names) == 6
    assert tls_bucket_name("Team_A", ACCOUNT, REGION).startswith("hyperpod-tls-team-a-")
    long = tls_bucket_name("a" * 58, ACCOUNT, REGION)
    assert len(long) == 63
    assert long.startswith("hyperpod-tls-" + "a" * 37 + "-")


# ---------------------------------------------------------------------------- the adapter
NAME = "hyperpod-tls-train-0123456789ab"
TAGS = {"hypd:tag": "train", "hypd:installed-by": "features"}


@pytest.fixture
def s3(moto_aws: None) -> Any:
    return boto3.client("s3", region_name=REGION)


def test_a_bucket_is_made_private_encrypted_and_tagged_and_made_again_idempotently(
    s3: Any
) -> None:
    assert s3_api.make_private_bucket(s3, NAME, REGION, TAGS) is True
    assert s3.get_bucket_location(Bucket=NAME)["LocationConstraint"] == REGION
    assert bucket_privacy(s3, NAME) == PRIVATE_BUCKET
    assert s3_api.bucket_tags(s3, NAME) == TAGS
    # Again (a retry): BucketAlreadyOwnedByYou is the bucket made.
    assert s3_api.make_private_bucket(s3, NAME, REGION, TAGS) is False
    assert s3_api.bucket_tags(s3, NAME) == TAGS


def test_in_us_east_1_a_bucket_has_no_location_constraint(moto_aws: None) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    stub = Stubber(s3)
    stub.add_response("create_bucket", {}, {"Bucket": NAME})
    for operation in ("put_public_access_block", "put_bucket_encryption", "put_bucket_tagging"):
        stub.add_response(operation, {})
    with stub:
        s3_api.make_private_bucket(s3, NAME, "us-east-1", TAGS)
    stub.assert_no_pending_responses()


def test_a_name_another_account_owns_is_a_named_error(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOTO_ACCOUNT_ID", "111111111111")
    s3.create_bucket(Bucket=NAME, CreateBucketConfiguration={"LocationConstraint": REGION})
    monkeypatch.delenv("MOTO_ACCOUNT_ID")  # back to this account
    with pytest.raises(s3_api.BucketNameTaken) as taken:
        s3_api.make_private_bucket(s3, NAME, REGION, TAGS)
    assert taken.value.details == {"awsErrorCode": "BucketAlreadyExists", "bucket": NAME}
    assert "another AWS account owns" in taken.value.message


def test_tags_of_no_bucket_and_of_an_untagged_one(s3: Any) -> None:
    assert s3_api.bucket_tags(s3, NAME) is None
    s3.create_bucket(Bucket=NAME, CreateBucketConfiguration={"LocationConstraint": REGION})
    assert s3_api.bucket_tags(s3, NAME) == {}


def test_a_bucket_is_emptied_then_deleted_and_a_missing_one_is_no_error(s3: Any) -> None:
    s3_api.make_private_bucket(s3, NAME, REGION, TAGS)
    for key in ("certs/a.pem", "certs/b.pem"):
        s3.put_object(Bucket=NAME, Key=key, Body=b"-----BEGIN CERTIFICATE-----")
    assert s3_api.empty_and_delete_bucket(s3, NAME) is True
    assert s3_api.bucket_tags(s3, NAME) is None
    assert s3_api.empty_and_delete_bucket(s3, NAME) is False


def test_a_bucket_that_fills_again_is_a_named_error(s3: Any) -> None:
    stub = Stubber(s3)
    stub.add_response("list_objects_v2", {"KeyCount": 0}, {"Bucket": NAME})
    stub.add_client_error("delete_bucket", "BucketNotEmpty", "The bucket is not empty",
                          409, expected_params={"Bucket": NAME})
    with stub, pytest.raises(s3_api.BucketNotEmpty) as left:
        s3_api.empty_and_delete_bucket(s3, NAME)
    assert left.value.details["awsErrorCode"] == "BucketNotEmpty"
