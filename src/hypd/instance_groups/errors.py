"""The named errors of instance-group requests (each maps to one HTTP status in the API)."""

from __future__ import annotations

from hypd.errors import ConflictError, NotFoundError, ValidationError


class InstanceGroupNotFound(NotFoundError):
    code = "InstanceGroupNotFound"


class InstanceGroupExists(ConflictError):
    code = "InstanceGroupExists"


class LastInstanceGroup(ConflictError):
    """A HyperPod cluster keeps at least one instance group."""

    code = "LastInstanceGroup"


class ImmutableField(ValidationError):
    """A change of a create-time field; `details.field` names it, the message says why."""

    code = "ImmutableField"


class TooManyInstanceGroups(ConflictError):
    """A HyperPod cluster holds at most 100 instance groups."""

    code = "TooManyInstanceGroups"
