"""Instance groups: the one path by which hypd resubmits HyperPod instance groups."""

from hypd.instance_groups.normalise import (
    DROPPED_DETAILS_MEMBERS,
    DROPPED_SPEC_MEMBERS,
    FIXED_MEMBERS,
    MUTABLE_MEMBERS,
    RESUBMITTED_MEMBERS,
    changed_groups,
    resubmittable_group,
)

__all__ = [
    "DROPPED_DETAILS_MEMBERS",
    "DROPPED_SPEC_MEMBERS",
    "FIXED_MEMBERS",
    "MUTABLE_MEMBERS",
    "RESUBMITTED_MEMBERS",
    "changed_groups",
    "resubmittable_group",
]
