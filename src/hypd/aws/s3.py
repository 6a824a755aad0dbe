"""S3: whether a bucket is there for this role."""

from __future__ import annotations

from typing import Any

from hypd.aws.errors import code_in, unless_not_found


def bucket_exists(client: Any, bucket: str) -> bool:
    """HeadBucket: True when the bucket exists and this role may read it, False when there is
    no such bucket; a refusal is `hypd.errors.AwsAccessDenied` (the bucket is someone else's,
    or the role's grant does not cover it)."""
    answer = unless_not_found(
        lambda: client.head_bucket(Bucket=bucket),
        f"checking bucket {bucket}",
        code_in("404", "NoSuchBucket", "NotFound"),
    )
    return answer is not None
