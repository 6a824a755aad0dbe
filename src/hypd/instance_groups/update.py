"""The one builder of UpdateCluster requests that carry instance groups.

Every capacity change hypd makes to a HyperPod cluster's groups goes through `update_request`:
an existing group it changes is resubmitted through the normaliser's allowlist
(`changed_groups`), so an unrelated scaling can never reset a carried member; a new group's spec
(built by `hypd.instance_groups.spec.group_spec`) is appended; a deleted group is named in
`InstanceGroupsToDelete` only. Groups the change does not touch are not sent at all: UpdateCluster
leaves the groups it does not list as they are.

Pure: no AWS calls; the input is never mutated.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from hypd.instance_groups.errors import (
    InstanceGroupExists,
    InstanceGroupNotFound,
    LastInstanceGroup,
    TooManyInstanceGroups,
)
from hypd.instance_groups.normalise import changed_groups

MAX_INSTANCE_GROUPS = 100
"""sagemaker ``ClusterInstanceGroupSpecifications``: at most 100 groups in a cluster."""


def group_names(described_cluster: Mapping[str, Any]) -> list[str]:
    """The names of the cluster's groups, in DescribeCluster's order."""
    return [
        str(details["InstanceGroupName"])
        for details in described_cluster.get("InstanceGroups", [])
        if details.get("InstanceGroupName")
    ]


def update_request(
    described_cluster: Mapping[str, Any],
    *,
    changes: Mapping[str, Mapping[str, Any]] | None = None,
    add: Sequence[Mapping[str, Any]] = (),
    delete: Sequence[str] = (),
) -> dict[str, Any]:
    """The UpdateCluster request that makes one capacity change to `described_cluster`.

    Args:
        described_cluster: DescribeCluster's answer (ClusterName, InstanceGroups).
        changes: group name -> spec members to set (see `changed_groups`).
        add: new groups' specs (`group_spec`).
        delete: names of groups to delete.

    Raises:
        InstanceGroupNotFound: a changed or deleted group is not in the cluster.
        InstanceGroupExists: a new group's name is taken.
        LastInstanceGroup: the change would delete every group.
        TooManyInstanceGroups: the cluster would have more than 100 groups.
        ValidationError, ImmutableField: a change the normaliser refuses.
        ValueError: nothing to change (a caller's bug, not a client's).
    """
    names = group_names(described_cluster)
    request: dict[str, Any] = {"ClusterName": described_cluster["ClusterName"]}
    if delete:
        missing = [name for name in delete if name not in names]
        if missing:
            raise InstanceGroupNotFound(
                f"Instance group {missing[0]} is not in the cluster",
                details={"instanceGroups": missing},
            )
        if set(names) <= set(delete) and not add:
            raise LastInstanceGroup(
                f"cluster {described_cluster['ClusterName']} must keep at least one instance "
                "group; add another group before deleting "
                + ", ".join(sorted(set(delete))),
                details={"instanceGroups": sorted(set(delete))},
            )
        request["InstanceGroupsToDelete"] = list(dict.fromkeys(delete))
    groups = changed_groups(described_cluster, changes or {})
    for spec in add:
        name = str(spec["InstanceGroupName"])
        if name in names:
            raise InstanceGroupExists(
                f"instance group {name} exists already in cluster "
                f"{described_cluster['ClusterName']}",
                details={"instanceGroup": name},
            )
        groups.append(copy.deepcopy(dict(spec)))
    if len(names) - len(request.get("InstanceGroupsToDelete", [])) + len(add) > (
        MAX_INSTANCE_GROUPS
    ):
        raise TooManyInstanceGroups(
            f"cluster {described_cluster['ClusterName']} has {len(names)} instance groups; "
            f"a cluster holds at most {MAX_INSTANCE_GROUPS}",
            details={"instanceGroups": len(names)},
        )
    if groups:
        request["InstanceGroups"] = groups
    if len(request) == 1:
        raise ValueError("update_request: the change changes nothing")
    return request
