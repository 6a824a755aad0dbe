"""S3: whether a bucket is there for this role, and the private buckets hypd makes and removes
(the inference operator's TLS certificate bucket, docs/features.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

from botocore.exceptions import ClientError

from hypd.aws.errors import (
    NETWORK_ERRORS,
    code_in,
    error_code,
    translate,
    translated,
    unless_not_found,
)
from hypd.errors import AwsRequestRejected

T = TypeVar("T")
_NO_BUCKET_CODES = ("404", "NoSuchBucket", "NotFound")
US_EAST_1 = "us-east-1"
"""The one Region whose CreateBucket takes no LocationConstraint."""


class BucketNameTaken(AwsRequestRejected):
    """CreateBucket: another AWS account owns a bucket of that name (BucketAlreadyExists;
    bucket names are global)."""

    code = "BucketNameTaken"


class BucketNotEmpty(AwsRequestRejected):
    """DeleteBucket: objects are still in the bucket after it was emptied (versions, or
    something writing to it)."""

    code = "BucketNotEmpty"


def bucket_exists(client: Any, bucket: str) -> bool:
    """HeadBucket: True when the bucket exists and this role may read it, False when there is
    no such bucket; a refusal is `hypd.errors.AwsAccessDenied` (the bucket is someone else's,
    or the role's grant does not cover it)."""
    answer = unless_not_found(
        lambda: client.head_bucket(Bucket=bucket),
        f"checking bucket {bucket}",
        code_in(*_NO_BUCKET_CODES),
    )
    return answer is not None


def _answered(call: Callable[[], T], action: str,
              answers: Mapping[str, Callable[[ClientError], T]]) -> T:
    """`call()`; an error whose code `answers` names is what its answer returns or raises,
    any other is translated (`hypd.aws.errors.translate`)."""
    try:
        return call()
    except ClientError as exc:
        answer = answers.get(error_code(exc))
        if answer is None:
            raise translate(exc, action) from exc
        return answer(exc)
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc


def _none(_exc: ClientError) -> None:
    return None


NO_BUCKET: Mapping[str, Callable[[ClientError], None]] = dict.fromkeys(_NO_BUCKET_CODES, _none)
"""No such bucket: None."""


def bucket_tags(client: Any, bucket: str) -> dict[str, str] | None:
    """GetBucketTagging: the bucket's tags ({} when it has none: NoSuchTagSet), or None when
    there is no such bucket. A bucket of another account answers AccessDenied
    (`hypd.errors.AwsAccessDenied`), as a grant that does not cover it does."""
    answer: dict[str, Any] | None = _answered(
        lambda: client.get_bucket_tagging(Bucket=bucket),
        f"reading the tags of S3 bucket {bucket}",
        {**NO_BUCKET, "NoSuchTagSet": lambda _exc: {"TagSet": []}},
    )
    if answer is None:
        return None
    return {str(t["Key"]): str(t.get("Value", "")) for t in answer.get("TagSet") or []}


def make_private_bucket(client: Any, bucket: str, region: str, tags: dict[str, str]) -> bool:
    """The bucket in `region`, created or already this account's, with every public access
    blocked, SSE-S3 default encryption, then `tags` (last: a bucket carrying them is complete;
    every step is idempotent, so a retry after a failure in between finishes it). Returns
    whether CreateBucket made it now.

    Raises:
        BucketNameTaken: another account owns a bucket of that name (BucketAlreadyExists).
    """
    action = f"creating S3 bucket {bucket} in {region}"
    params: dict[str, Any] = {"Bucket": bucket}
    if region != US_EAST_1:
        params["CreateBucketConfiguration"] = {"LocationConstraint": region}

    def create() -> bool:
        client.create_bucket(**params)
        return True

    def taken(exc: ClientError) -> NoReturn:
        raise BucketNameTaken(
            f"{action}: BucketAlreadyExists: another AWS account owns a bucket named {bucket}",
            details={"awsErrorCode": error_code(exc), "bucket": bucket}) from exc

    # us-east-1 answers success for a bucket this account already owns there, the other
    # Regions BucketAlreadyOwnedByYou: both are the bucket made.
    created = _answered(create, action, {
        "BucketAlreadyOwnedByYou": lambda _exc: False, "BucketAlreadyExists": taken})
    translated(lambda: client.put_public_access_block(
        Bucket=bucket, PublicAccessBlockConfiguration={
            "BlockPublicAcls": True, "IgnorePublicAcls": True,
            "BlockPublicPolicy": True, "RestrictPublicBuckets": True,
        }), f"blocking public access to S3 bucket {bucket}")
    # SSE-S3, not SSE-KMS: the inference operator's managed policy grants no KMS key's use.
    translated(lambda: client.put_bucket_encryption(
        Bucket=bucket, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}],
        }), f"setting the default encryption of S3 bucket {bucket}")
    translated(lambda: client.put_bucket_tagging(
        Bucket=bucket, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in tags.items()]}),
        f"tagging S3 bucket {bucket}")
    return created


def empty_and_delete_bucket(client: Any, bucket: str) -> bool:
    """Delete every object of the bucket, then the bucket; False when it was not there.

    Raises:
        BucketNotEmpty: objects are left after the emptying (an object version: hypd never
            turns versioning on; or something still writing to it).
    """
    emptied = _answered(lambda: _empty(client, bucket), f"emptying S3 bucket {bucket}",
                        NO_BUCKET)
    if emptied is None:
        return False
    action = f"deleting S3 bucket {bucket}"

    def not_empty(exc: ClientError) -> NoReturn:
        raise BucketNotEmpty(
            f"{action}: BucketNotEmpty: it still holds objects after hypd deleted every one "
            "it listed (versions, or something still writing to it)",
            details={"awsErrorCode": error_code(exc), "bucket": bucket}) from exc

    deleted = _answered(lambda: client.delete_bucket(Bucket=bucket), action,
                        {**NO_BUCKET, "BucketNotEmpty": not_empty})
    return deleted is not None


def _empty(client: Any, bucket: str) -> bool:
    """Delete the objects ListObjectsV2 lists, a page (up to 1,000) per DeleteObjects."""
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": o["Key"]} for o in page.get("Contents") or []]
        if not keys:
            continue
        errors = client.delete_objects(
            Bucket=bucket, Delete={"Objects": keys, "Quiet": True}).get("Errors") or []
        if errors:
            first = errors[0]
            raise AwsRequestRejected(
                f"emptying S3 bucket {bucket}: {first.get('Code')}: {first.get('Message')} "
                f"({len(errors)} object(s) not deleted, the first {first.get('Key')})",
                details={"awsErrorCode": str(first.get("Code")), "bucket": bucket})
    return True
