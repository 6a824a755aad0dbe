"""The inference operator's TLS certificate bucket hypd makes when a request names none
(docs/features.md): its name, and what S3 says of the bucket of that name.

The operator writes each endpoint's TLS certificate to an S3 bucket, and its AWS managed policy
(AmazonSageMakerHyperPodInferenceAccess) allows only buckets named ``hyperpod-tls*`` of its own
account. A bucket the user names is used as it is and never removed; the one hypd makes is
private, encrypted and tagged as the other things hypd installs for a feature, and removed
once the operator is off, or with the cluster.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypd.aws import s3 as s3_api
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.errors import AwsAccessDenied
from hypd.features.catalog import INSTALLED_BY_FEATURES, INSTALLED_BY_TAG

PREFIX = "hyperpod-tls-"
"""What the operator's managed policy allows (`feature_request.TLS_BUCKET_PATTERN`)."""
BUCKET_NAME_MAX = 63
"""S3's longest bucket name."""
DIGEST_LENGTH = 12
"""Hex digits of the digest in the name (48 bits)."""


def tls_bucket_name(tag: str, account: str, region: str) -> str:
    """The bucket hypd makes for cluster `tag`'s inference operator when the request names
    none: ``hyperpod-tls-{tag}-{digest}``, where the tag is lower-cased (any character S3
    refuses in a name becomes ``-``) and cut to fit S3's 63 characters (37 of it at most), and
    `digest` is the first 12 hex digits of the SHA-256 of ``{account}/{region}/{tag}``.

    Bucket names are global across every account: the digest makes the name each account's
    and Region's own, and keeps apart tags the lower-casing or the cut would make alike. The
    same cluster always gets the same name, so a retry finds the bucket it made.
    """
    digest = hashlib.sha256(f"{account}/{region}/{tag}".encode()).hexdigest()[:DIGEST_LENGTH]
    room = BUCKET_NAME_MAX - len(PREFIX) - 1 - len(digest)
    slug = re.sub(r"[^a-z0-9-]", "-", tag.lower())[:room].strip("-")
    return f"{PREFIX}{slug}-{digest}" if slug else f"{PREFIX}{digest}"


@dataclass(frozen=True)
class BucketFact:
    """The bucket of the name hypd gives the TLS bucket it makes, as S3 has it."""

    name: str
    tags: Mapping[str, str]
    refused: str | None = None
    """Why its tags could not be read (AccessDenied: most likely another account's)."""

    def made_for(self, tag: str) -> bool:
        """Did hypd make it for cluster `tag`? Both tags say so (hypd tags it last, once it
        is private and encrypted)."""
        return (self.tags.get(HYPD_TAG_KEY) == tag
                and self.tags.get(INSTALLED_BY_TAG) == INSTALLED_BY_FEATURES)


def read(s3: Any, name: str) -> BucketFact | None:
    """The bucket `name` and its tags; None when there is none. One whose tags S3 refuses
    (another account's) is a fact too: making it then fails on CreateBucket's clear answer
    (BucketAlreadyExists), and nothing deletes it."""
    try:
        tags = s3_api.bucket_tags(s3, name)
    except AwsAccessDenied as exc:
        return BucketFact(name, {}, refused=str(exc))
    return None if tags is None else BucketFact(name, tags)
