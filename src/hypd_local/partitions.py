"""Partitions on the local cloud: a Region's partition and domain, as the SDK's data says.

The local cloud plays AWS, so it names ARNs and endpoints from AWS's own data, botocore's
`partitions.json` (moto's `get_partition` agrees for every Region it knows), not from hypd's
code: an emulator that borrowed hypd's helper would repeat hypd's mistakes instead of
catching them. Reading the data needs neither moto nor a network, so the template reader
stays pure.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any


@cache
def _partition(region: str) -> dict[str, Any] | None:
    from botocore.loaders import Loader

    partitions = Loader().load_data("partitions")["partitions"]
    listed = next((p for p in partitions if region in (p.get("regions") or {})), None)
    return listed or next((p for p in partitions if re.match(p["regionRegex"], region)), None)


def partition_of(region: str) -> str:
    """The partition of `region` (`cn-north-1` -> `aws-cn`); `aws` for one none claims."""
    found = _partition(region)
    return str(found["id"]) if found else "aws"


def dns_suffix(region: str) -> str:
    """The domain of the Region's endpoints (`amazonaws.com.cn` in China)."""
    found = _partition(region)
    return str(found["outputs"]["dnsSuffix"]) if found else "amazonaws.com"
