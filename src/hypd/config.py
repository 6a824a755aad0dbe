"""Function configuration: one pydantic model per function, parsed from its environment once,
at init (template.yaml sets the variables).

Each field's alias is the variable's name. A missing or malformed variable is a
`ConfigurationError` naming the variable, raised when the function's module is imported (Lambda
reports it as an init error), never a KeyError on first use. `hypd.wiring` builds each
function's services from its model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from hypd.errors import PermanentError
from hypd.operations.kinds import SPECS
from hypd.operations.models import OperationKind

STATE_MACHINE_SETTINGS: dict[OperationKind, str] = {
    kind: spec.state_machine_variable for kind, spec in SPECS.items()
}
"""The environment variable (set by template.yaml) that names each kind's state machine (from
its spec: `hypd.operations.kinds`)."""


class ConfigurationError(PermanentError):
    """A function's environment lacks a variable it needs, or one is malformed."""

    code = "ConfigurationError"


class FunctionSettings(BaseModel):
    """What every function reads: its table and Region."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    table_name: str = Field(alias="TABLE_NAME", min_length=3)
    region: str | None = Field(default=None, alias="AWS_REGION")
    """Lambda sets AWS_REGION; AWS_DEFAULT_REGION is read when it is absent."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """The settings in `environ` (the process environment by default).

        Raises:
            ConfigurationError: a variable is missing or malformed (each is named).
        """
        env = dict(os.environ if environ is None else environ)
        if not env.get("AWS_REGION") and env.get("AWS_DEFAULT_REGION"):
            env["AWS_REGION"] = env["AWS_DEFAULT_REGION"]
        # An empty variable is an unset one (templates write "" for an absent optional ARN).
        present = {name: value for name, value in env.items() if value != ""}
        try:
            # By the variables' names only: an unrelated variable named like a field is ignored.
            return cls.model_validate(present, by_alias=True, by_name=False)
        except PydanticValidationError as exc:
            problems = [
                f"{'.'.join(str(part) for part in error['loc'])}: "
                + ("is not set" if error["type"] == "missing" else error["msg"])
                for error in exc.errors()
            ]
            raise ConfigurationError(
                f"{cls.__name__}: " + "; ".join(problems),
                details={"variables": [str(error["loc"][0]) for error in exc.errors()]},
            ) from exc


class ApiSettings(FunctionSettings):
    """The REST API function."""

    state_machines: dict[OperationKind, str] = Field(default_factory=dict)
    """The state machine of each operation kind it starts (`<LOGICAL_ID>_ARN`, per spec)."""
    dependency_chart: str | None = Field(default=None, alias="DEPENDENCY_CHART")
    """The HyperPod dependencies chart upgrades apply: the plan compares its release with
    the cluster's (`chart.chart_release`, which reads no archive)."""

    @model_validator(mode="before")
    @classmethod
    def _state_machines(cls, data: Any) -> Any:
        if isinstance(data, dict) and "state_machines" not in data:
            data = {
                **data,
                "state_machines": {
                    kind: data[variable]
                    for kind, variable in STATE_MACHINE_SETTINGS.items()
                    if data.get(variable)
                },
            }
        return data


class CsiDriverRoles(FunctionSettings):
    """The deployment's CSI driver roles, for the functions that install the drivers."""

    s3_csi_driver_role_arn: str | None = Field(default=None, alias="S3_CSI_DRIVER_ROLE_ARN")
    fsx_csi_driver_role_arn: str | None = Field(default=None, alias="FSX_CSI_DRIVER_ROLE_ARN")

    def csi_roles(self) -> dict[str, str]:
        """The role of each CSI driver add-on's pod identity (each driver its own)."""
        roles = {
            "aws-mountpoint-s3-csi-driver": self.s3_csi_driver_role_arn,
            "aws-fsx-csi-driver": self.fsx_csi_driver_role_arn,
        }
        return {addon: role for addon, role in roles.items() if role}


class CreateTaskSettings(CsiDriverRoles):
    """The create-cluster pipeline's tasks (ClusterTasksFunction)."""

    eks_cluster_role_arn: str = Field(alias="EKS_CLUSTER_ROLE_ARN")
    hyperpod_execution_role_arn: str = Field(alias="HYPERPOD_EXECUTION_ROLE_ARN")
    dependency_chart: str = Field(alias="DEPENDENCY_CHART")
    network_stack_role_arn: str | None = Field(default=None, alias="NETWORK_STACK_ROLE_ARN")
    kubernetes_access_roles: tuple[str, ...] = Field(
        default=(), alias="KUBERNETES_ACCESS_ROLE_ARNS"
    )
    """The roles of the other functions that use the cluster's Kubernetes API (the capacity
    tasks): each gets an access entry of its own, as this function does. Comma-separated."""
    kubernetes_read_roles: tuple[str, ...] = Field(default=(), alias="KUBERNETES_READ_ROLE_ARNS")
    """The roles that only read the cluster's Kubernetes API (the API function's feature
    reads): an access entry with AmazonEKSAdminViewPolicy. Comma-separated."""

    @field_validator("kubernetes_access_roles", "kubernetes_read_roles", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(arn for arn in value.split(",") if arn)
        return value


class CapacityTaskSettings(FunctionSettings):
    """The capacity state machines' tasks (CapacityTasksFunction)."""

    hyperpod_execution_role_arn: str = Field(alias="HYPERPOD_EXECUTION_ROLE_ARN")
    autoscaling_role_boundary_arn: str | None = Field(
        default=None, alias="AUTOSCALING_ROLE_BOUNDARY_ARN"
    )


class FeatureTaskSettings(CsiDriverRoles):
    """The managed features' tasks (FeatureTasksFunction)."""

    feature_role_boundary_arn: str | None = Field(
        default=None, alias="FEATURE_ROLE_BOUNDARY_ARN"
    )
    dependency_chart: str | None = Field(default=None, alias="DEPENDENCY_CHART")
    """The HyperPod dependencies chart an upgrade applies (the create's setting)."""
    kubernetes_read_roles: tuple[str, ...] = Field(default=(), alias="KUBERNETES_READ_ROLE_ARNS")
    """The roles that read the features in a cluster's Kubernetes API (the API function's):
    given their access entry on a cluster that lacks it (one created before hypd had
    features). Comma-separated."""

    @field_validator("kubernetes_read_roles", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(arn for arn in value.split(",") if arn)
        return value


class TeardownTaskSettings(FunctionSettings):
    """The teardown's deletions (TeardownTasksFunction): its table and Region only."""


class EventSettings(FunctionSettings):
    """The cluster events function (HyperPod's and EKS's events)."""

    notifications_topic_arn: str | None = Field(
        default=None, alias="HEALTH_NOTIFICATIONS_TOPIC_ARN"
    )
    dead_letter_queue_url: str | None = Field(default=None, alias="EVENTS_DEAD_LETTER_QUEUE_URL")
    node_action_state_machine_arn: str | None = Field(
        default=None, alias=SPECS[OperationKind.REBOOT_NODE].state_machine_variable
    )
    """The machine repairs start (every node action's)."""
    metrics_namespace: str = Field(default="hypd", alias="POWERTOOLS_METRICS_NAMESPACE")
    service_name: str = Field(default="hypd-cluster-events", alias="POWERTOOLS_SERVICE_NAME")


class PublisherSettings(FunctionSettings):
    """The events publisher (the table's stream -> hypd's events on the bus)."""

    event_bus_name: str = Field(default="default", alias="EVENT_BUS_NAME", min_length=1)
    event_source: str = Field(default="hypd", alias="EVENT_SOURCE", min_length=1)

    @field_validator("event_source")
    @classmethod
    def _not_aws(cls, value: str) -> str:
        if value.startswith("aws."):
            raise ValueError("a source beginning with 'aws.' is reserved for AWS services")
        return value


class DiscoverSettings(FunctionSettings):
    """The discover operation's tasks."""


class OperationTaskSettings(FunctionSettings):
    """The operation bookkeeping tasks (begin / succeed / fail, execution ends)."""
