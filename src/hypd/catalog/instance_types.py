"""HyperPod's ``ml.*`` instance types, their EC2 types and the zones that offer them."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

import botocore.loaders

from hypd.catalog.models import AvailabilityZone, HyperPodInstanceType
from hypd.errors import ValidationError

ML_PREFIX = "ml."
# An Availability Zone name (us-west-2c, us-gov-west-1a, ap-southeast-5b), not a zone ID.
ZONE_NAME_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d+[a-z]$"
_ZONE_NAME = re.compile(ZONE_NAME_PATTERN)
ZONE_FIELD = "availabilityZone"


@functools.cache
def hyperpod_instance_types() -> tuple[str, ...]:
    """The ``ml.*`` types a HyperPod instance group accepts: the ``ClusterInstanceType`` enum.

    Read from the botocore model shipped with the function, once per process and only when a
    route needs it (loading the SageMaker model costs ~60 ms; other routes need not pay it).
    """
    model = botocore.loaders.create_loader().load_service_model("sagemaker", "service-2")
    enum: list[str] = model["shapes"]["ClusterInstanceType"]["enum"]
    return tuple(sorted(enum))


def ec2_instance_type(instance_type: str) -> str:
    """``ml.g6.4xlarge`` -> ``g6.4xlarge``: the EC2 type HyperPod runs an ``ml.*`` type on."""
    if not instance_type.startswith(ML_PREFIX) or len(instance_type) == len(ML_PREFIX):
        raise ValueError(f"{instance_type!r} is not an ml.* instance type")
    return instance_type.removeprefix(ML_PREFIX)


def ec2_to_ml(candidates: Iterable[str]) -> dict[str, str]:
    """The EC2 type of each candidate ``ml.*`` type, keyed by EC2 type."""
    return {ec2_instance_type(name): name for name in candidates}


def check_zone(zone: str, zones: Sequence[AvailabilityZone]) -> AvailabilityZone:
    """The zone named ``zone`` among the Region's ``zones``.

    Raises:
        ValidationError: the name is malformed, or no available zone of the Region has it
            (the message and ``details.errors`` name ``availabilityZone``).
    """
    if not _ZONE_NAME.match(zone):
        problem = f"{zone!r} is not an Availability Zone name (e.g. us-west-2c)"
    else:
        for candidate in zones:
            if candidate.name == zone:
                return candidate
        region = zones[0].region if zones else "this Region"
        names = ", ".join(z.name for z in zones) or "none"
        problem = f"{zone} is not an available Availability Zone of {region} (zones: {names})"
    raise ValidationError(
        f"invalid request: {ZONE_FIELD}: {problem}",
        details={"errors": [{"field": ZONE_FIELD, "in": "query", "message": problem}]},
    )


def merge_offerings(
    candidates: Iterable[str],
    offerings: Iterable[tuple[str, str]],
    zones: Iterable[str],
    zone: str | None = None,
) -> list[HyperPodInstanceType]:
    """The candidate ``ml.*`` types that EC2 offers in ``zones``, each with its zones.

    ``offerings`` are EC2's ``(instance type, zone)`` pairs; offerings in zones outside
    ``zones`` (not available, not opted in) are ignored. With ``zone``, only the types offered
    there are kept (still listing every zone that offers them). Sorted by ``ml.*`` name.
    """
    by_ec2 = ec2_to_ml(candidates)
    usable = set(zones)
    offered: dict[str, set[str]] = {}
    for ec2_type, location in offerings:
        if ec2_type in by_ec2 and location in usable:
            offered.setdefault(ec2_type, set()).add(location)
    return sorted(
        (
            HyperPodInstanceType(
                instance_type=by_ec2[ec2_type],
                ec2_instance_type=ec2_type,
                availability_zones=tuple(sorted(locations)),
            )
            for ec2_type, locations in offered.items()
            if zone is None or zone in locations
        ),
        key=lambda t: t.instance_type,
    )
