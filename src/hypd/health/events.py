"""The events hypd listens to, as pydantic models of their documented payloads.

`read_event` takes a raw EventBridge event: Powertools' `EventBridgeModel` reads the envelope
(id, time, source, detail-type) and `EventBridgeEnvelope` parses the `detail` into the model of
its detail-type. Anything that is not one of those events, or does not have the documented
shape, is `Malformed` with the reason: the handler counts it and keeps it, and nothing else
happens.

The payloads (HyperPod docs, "Amazon SageMaker AI events in EventBridge" and the cluster events
reference):

* ``SageMaker HyperPod Cluster State Change``: detail mirrors DescribeCluster (ClusterArn,
  ClusterName, ClusterStatus, FailureMessage, InstanceGroups, ...).
* ``SageMaker HyperPod Cluster Node Health Event``: detail {ClusterName, ClusterArn,
  InstanceId, Tags, HealthSummary {HealthStatus, HealthStatusReason, RepairAction,
  Recommendation}}.
* ``SageMaker HyperPod Cluster Event``: detail {EventDetails {EventId, ClusterArn, ClusterName,
  InstanceGroupName, InstanceId, ResourceType, EventTime (epoch ms), EventLevel, Description,
  EventDetails {EventMetadata}}}.
* ``Step Functions Execution Status Change`` (source aws.states), for the end of an execution
  of a state machine that holds a cluster's lock: detail {executionArn, stateMachineArn, name
  (the operation id), status}. The cluster is free again: a repair deferred because it was busy
  is started now.
* ``EKS Addon ...`` (source aws.eks; Creation/Update/Deletion Succeeded|Failed, Health
  Degraded|Restored): EventBridge's reference lists the detail-types but not the detail. The
  add-on's ARN in `resources` (``arn:aws:eks:REGION:ACCOUNT:addon/CLUSTER/NAME/ID``, which the
  rule matches on) names the cluster and the add-on; `clusterName`, `addonName`, `status` and
  `health.issues` (the members of EKS's Addon) are read from the detail when present.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as PydanticValidationError

from hypd import clock
from hypd.clusters.create_request import NAME_PREFIX

SAGEMAKER = "aws.sagemaker"
EKS = "aws.eks"
STATES = "aws.states"
STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"
ADDON_PREFIX = "EKS Addon "
EXECUTION_STATUS = "Step Functions Execution Status Change"

HEALTHY = "Healthy"
NO_REPAIR = "None"
RepairKind = Literal["reboot", "replace"]
_RECOMMENDED = re.compile(r"\b(replace|reboot)\b", re.IGNORECASE)


class _Detail(BaseModel):
    # Documented members are read; others (new ones AWS adds) are kept out of the way.
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class StateChangeDetail(_Detail):
    cluster_name: str = Field(alias="ClusterName", min_length=1)
    cluster_arn: str | None = Field(default=None, alias="ClusterArn")
    cluster_status: str = Field(alias="ClusterStatus", min_length=1)
    failure_message: str | None = Field(default=None, alias="FailureMessage")


class HealthSummary(_Detail):
    health_status: str = Field(alias="HealthStatus", min_length=1)
    health_status_reason: str | None = Field(default=None, alias="HealthStatusReason")
    repair_action: str | None = Field(default=None, alias="RepairAction")
    recommendation: str | None = Field(default=None, alias="Recommendation")

    @property
    def healthy(self) -> bool:
        return self.health_status == HEALTHY

    @property
    def repaired_by_hyperpod(self) -> bool:
        """HyperPod is repairing the node itself (its RepairAction names one)."""
        return bool(self.repair_action) and self.repair_action != NO_REPAIR

    @property
    def recommended(self) -> RepairKind | None:
        """The repair HyperPod recommends but does not take (from `Recommendation`, e.g.
        "Please Replace the Faulty Node."); None when it takes one, or recommends none."""
        if self.healthy or self.repaired_by_hyperpod:
            return None
        found = _RECOMMENDED.search(self.recommendation or "")
        if found is None:
            return None
        kind: RepairKind = "replace" if found.group(1).lower() == "replace" else "reboot"
        return kind


class NodeHealthDetail(_Detail):
    cluster_name: str = Field(alias="ClusterName", min_length=1)
    cluster_arn: str | None = Field(default=None, alias="ClusterArn")
    instance_id: str = Field(alias="InstanceId", pattern=r"^i-[0-9A-Za-z]+$")
    instance_group_name: str | None = Field(default=None, alias="InstanceGroupName")
    tags: Any = Field(default=None, alias="Tags")
    health_summary: HealthSummary = Field(alias="HealthSummary")


class ClusterEventDetails(_Detail):
    event_id: str = Field(alias="EventId", min_length=1)
    cluster_name: str = Field(alias="ClusterName", min_length=1)
    cluster_arn: str | None = Field(default=None, alias="ClusterArn")
    instance_group_name: str | None = Field(default=None, alias="InstanceGroupName")
    instance_id: str | None = Field(default=None, alias="InstanceId")
    resource_type: str | None = Field(default=None, alias="ResourceType")
    event_time: datetime = Field(alias="EventTime")
    event_level: str = Field(default="Info", alias="EventLevel")
    description: str | None = Field(default=None, alias="Description")

    @field_validator("event_time", mode="before")
    @classmethod
    def _epoch_ms(cls, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value / 1000, UTC)
        return value


class ClusterEventDetail(_Detail):
    event_details: ClusterEventDetails = Field(alias="EventDetails")


_ADDON_ARN = re.compile(r"^arn:[^:]+:eks:[^:]*:[^:]*:addon/(?P<cluster>[^/]+)/(?P<addon>[^/]+)")


class AddonDetail(_Detail):
    cluster_name: str = Field(alias="clusterName", min_length=1)
    addon_name: str = Field(alias="addonName", min_length=1)
    status: str | None = None
    health: dict[str, Any] = Field(default_factory=dict)

    @property
    def issues(self) -> list[dict[str, Any]]:
        found = self.health.get("issues")
        return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []


class ExecutionEndedDetail(_Detail):
    execution_arn: str = Field(alias="executionArn", min_length=1)
    state_machine_arn: str | None = Field(default=None, alias="stateMachineArn")
    name: str = Field(min_length=1)
    """The execution's name: hypd names each execution after its operation."""
    status: str = Field(min_length=1)


SOURCES: dict[str, str] = {
    STATE_CHANGE: SAGEMAKER,
    NODE_HEALTH: SAGEMAKER,
    CLUSTER_EVENT: SAGEMAKER,
    EXECUTION_STATUS: STATES,
}
"""The source of each detail-type hypd reads (an event of another source is not one)."""

DETAIL_MODELS: dict[str, type[_Detail]] = {
    STATE_CHANGE: StateChangeDetail,
    NODE_HEALTH: NodeHealthDetail,
    CLUSTER_EVENT: ClusterEventDetail,
    EXECUTION_STATUS: ExecutionEndedDetail,
}


class Event(BaseModel):
    """One event hypd understood: the envelope's facts and the detail's model."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    id: str
    time: datetime
    source: str
    detail_type: str
    detail: Any
    """The model of `detail_type` (StateChangeDetail, NodeHealthDetail, ...)."""

    @property
    def cluster_name(self) -> str:
        """The HyperPod (or EKS) cluster the event is about ("" for an execution's end)."""
        detail = self.detail
        if isinstance(detail, ClusterEventDetail):
            return detail.event_details.cluster_name
        if isinstance(detail, ExecutionEndedDetail):
            return ""
        return str(detail.cluster_name)

    @property
    def tag(self) -> str | None:
        """The hypd cluster the event is about (None: a cluster hypd does not name)."""
        name = self.cluster_name
        return name.removeprefix(NAME_PREFIX) if name.startswith(NAME_PREFIX) else None

    @property
    def order(self) -> tuple[str, str]:
        """How events about one thing are ordered: their time, then their id."""
        when = self.detail.event_details.event_time if isinstance(
            self.detail, ClusterEventDetail) else self.time
        return clock.isoformat(when), self.id


class Malformed(Exception):
    """Not an event hypd handles, or not in its documented shape; `reason` says why."""

    def __init__(self, reason: str, detail_type: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail_type = detail_type


def _problems(exc: PydanticValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc']) or 'event'}: {error['msg']}"
        for error in exc.errors()
    )


def read_event(raw: Any) -> Event:
    """The event `raw` is, parsed.

    Raises:
        Malformed: not an EventBridge event, a detail-type hypd does not handle, or a detail
            without the documented members.
    """
    # Imported here: Powertools' parser package imports every event model and envelope it
    # has, and the API, which reads this module's models, never parses an event.
    from aws_lambda_powertools.utilities.parser import envelopes, parse
    from aws_lambda_powertools.utilities.parser.models import EventBridgeModel

    if not isinstance(raw, dict):
        raise Malformed(f"not an EventBridge event: a {type(raw).__name__}")
    try:
        envelope = EventBridgeModel.model_validate(raw)
    except PydanticValidationError as exc:
        raise Malformed(f"not an EventBridge event: {_problems(exc)}") from exc
    detail_type = envelope.detail_type
    model: type[_Detail] | None = DETAIL_MODELS.get(detail_type)
    if model is not None and SOURCES[detail_type] != envelope.source:
        model = None
    if model is None and envelope.source == EKS and detail_type.startswith(ADDON_PREFIX):
        model = AddonDetail
    if model is None:
        raise Malformed(f"not an event hypd handles: {envelope.source} {detail_type!r}",
                        detail_type)
    if model is AddonDetail:
        raw = _with_addon_names(raw, envelope.resources)
    try:
        detail = parse(event=raw, model=model, envelope=envelopes.EventBridgeEnvelope)
    except PydanticValidationError as exc:
        raise Malformed(f"{detail_type}: {_problems(exc)}", detail_type) from exc
    return Event(
        id=envelope.id,
        time=envelope.time,
        source=envelope.source,
        detail_type=detail_type,
        detail=detail,
    )


def _with_addon_names(raw: dict[str, Any], resources: list[str]) -> dict[str, Any]:
    """The add-on event with its cluster and add-on names (from its ARN) in the detail."""
    detail = raw.get("detail")
    if not isinstance(detail, dict):
        return raw
    for arn in resources:
        found = _ADDON_ARN.match(arn)
        if found is not None:
            names = {"clusterName": found["cluster"], "addonName": found["addon"]}
            return {**raw, "detail": {**names, **detail}}
    return raw
