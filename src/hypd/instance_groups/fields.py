"""The instance-group field catalogue: every field of a group body, mutable or create-time only.

One table, `GROUP_FIELDS`, says for each field of the API's group body which SageMaker members
it maps to, whether a PATCH may change it, and why not. It serves the PATCH check (an immutable
field's change is a 400 naming the field and the reason), `GET /catalog/instance-group-fields`
and the OpenAPI descriptions. Mutability is not decided here: a field is mutable exactly when
every member it maps to is in the normaliser's `MUTABLE_MEMBERS`, and an immutable field's
reason is the normaliser's `FIXED_MEMBERS` entry (a unit test holds both to it).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypd.instance_groups.normalise import FIXED_MEMBERS, MUTABLE_MEMBERS


@dataclass(frozen=True)
class GroupField:
    name: str
    """The field of the group body (camelCase)."""
    members: tuple[str, ...]
    """The ClusterInstanceGroupSpecification members it maps to."""
    description: str
    instead: str = ""
    """What to do instead of changing a create-time field."""

    @property
    def mutable(self) -> bool:
        return all(member in MUTABLE_MEMBERS for member in self.members)

    @property
    def reason(self) -> str | None:
        """Why a PATCH cannot change it (None for a mutable field)."""
        if self.mutable:
            return None
        fixed = next(member for member in self.members if member not in MUTABLE_MEMBERS)
        return FIXED_MEMBERS[fixed]


_REPLACE = "add a group with the value you want, move the work, then delete this group"

GROUP_FIELDS: tuple[GroupField, ...] = (
    GroupField("name", ("InstanceGroupName",), "The group's name.", _REPLACE),
    GroupField("instanceType", ("InstanceType",), "The ml.* instance type.", _REPLACE),
    GroupField("count", ("InstanceCount",), "The number of instances (the target count)."),
    GroupField(
        "minCount",
        ("MinInstanceCount",),
        "The minimum number of instances for the group to be InService.",
    ),
    GroupField(
        "capacity",
        ("CapacityRequirements", "TrainingPlanArn"),
        "On-demand, spot or a training plan: fixed for the life of the group.",
        _REPLACE,
    ),
    GroupField(
        "deepHealthChecks",
        ("OnStartDeepHealthChecks",),
        "Deep health checks run when instances start.",
        _REPLACE,
    ),
    GroupField(
        "efaOnly",
        ("NetworkInterface",),
        "EFA-only network interfaces (NetworkInterface efa-only).",
        _REPLACE,
    ),
    GroupField(
        "dedicatedSubnet",
        ("OverrideVpcConfig",),
        "A compute subnet of the group's own instead of the shared per-zone one.",
        _REPLACE,
    ),
    GroupField(
        "availabilityZone",
        ("OverrideVpcConfig",),
        "The zone of the group's subnet.",
        _REPLACE,
    ),
    GroupField(
        "executionRole",
        ("ExecutionRole",),
        "The IAM role the instances assume (the deployment's HyperPodExecutionRole).",
        _REPLACE,
    ),
    GroupField("threadsPerCore", ("ThreadsPerCore",), "Threads per core.", _REPLACE),
    GroupField(
        "labels",
        ("KubernetesConfig",),
        "Kubernetes labels of the group's nodes: a PATCH replaces the whole map.",
    ),
    GroupField(
        "taints",
        ("KubernetesConfig",),
        "Kubernetes taints of the group's nodes: a PATCH replaces the whole list (none with "
        "deep health checks).",
    ),
)

BY_NAME = {field.name: field for field in GROUP_FIELDS}
MUTABLE_FIELDS = tuple(field.name for field in GROUP_FIELDS if field.mutable)
CREATE_TIME_FIELDS = tuple(field.name for field in GROUP_FIELDS if not field.mutable)


def create_time_only(name: str) -> str:
    """The OpenAPI description suffix of a create-time field."""
    reason = BY_NAME[name].reason
    return f" Create-time only: a PATCH cannot change it ({reason})."
