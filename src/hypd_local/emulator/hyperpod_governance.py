"""HyperPod task governance: cluster scheduler configs (the console's "cluster policy") and
compute quotas ("compute allocations"), the five operations of each (Create, Describe, List,
Update, Delete).

Life cycle, on the virtual clock, of both: ``Creating`` for ``durations.governance_create``,
then ``Created``, or ``CreateFailed`` with a ``FailureReason`` when the cluster's EKS cluster
did not have the task governance add-on ACTIVE when the creation was asked for (the trap the
HyperPod CLI's walkthrough documents: one created before the add-on is fully installed fails,
and must be deleted and created again), or no longer has it when the creation finishes;
``Updating`` for ``governance_update``, then ``Updated``; ``Deleting`` for
``governance_delete``, then ``Deleted``: Describe, Update and Delete then answer
ResourceNotFound and List shows it only when asked for ``Status: Deleted``. A step's end is
judged when the emulator first sees it come due (a tick or a request), the add-on's status as
the EKS emulator has it then.

Versions start at 1; every accepted update adds one and must name the current version as its
``TargetVersion`` (else ConflictException); Describe takes an earlier version and answers its
settings. Refusals (before anything changes):

- the cluster (``ClusterArn``) does not exist: ResourceNotFound; it is not orchestrated by EKS:
  ValidationException;
- a second scheduler config for a cluster whose config is not ``Deleted`` (a ``CreateFailed``
  one too: it must be deleted first): ConflictException;
- a quota whose ``Name`` (unique within the cluster, as the model documents) or
  ``ComputeQuotaTarget.TeamName`` is used by another quota of the cluster that is not
  ``Deleted``: ConflictException;
- the model's constraints the middleware validates too, checked here for direct calls, naming
  the member: ``TeamName`` pattern, ``FairShareWeight`` and priority class ``Weight`` 0-100;
  and the emulator's own choices: duplicate priority class names, and quota resources
  (``ComputeQuotaResources``, ``AbsoluteBorrowLimits``) whose ``InstanceType`` is not the type
  of one of the cluster's instance groups: ValidationException;
- an update of one that is not ``Created`` or ``Updated``: ConflictException.

Emulator choices where AWS's behaviour is not documented: DeleteX is accepted in any state
(the model declares no ConflictException for it) and again while ``Deleting`` (no change);
updates do not judge the add-on; the resources outlive their cluster; defaults the model
documents are not filled in, except ``ActivationState: Enabled``. The compute quotas' objects
in the cluster's Kubernetes API are made by the local cloud's sync (`hypd_local.emulation_teams`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hypd_local.emulator.errors import ConflictException, ResourceNotFound, ValidationException
from hypd_local.emulator.hyperpod_core import PAGES as _PAGES
from hypd_local.emulator.hyperpod_events import HyperPodEvents
from hypd_local.emulator.hyperpod_state import Cluster, Governed
from hypd_local.emulator.service import operation
from hypd_local.emulator.validation import compile_pattern

TASK_GOVERNANCE_ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
TEAM_NAME_PATTERN = "[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?"
"""ComputeQuotaTargetTeamName's pattern in the model (Java; matched whole)."""

GONE = "Deleted"
UPDATABLE = ("Created", "Updated")


@dataclass(frozen=True)
class Kind:
    """What differs between the two kinds of task governance resource."""

    resource: str
    """The ARN's resource type (and the SAR's)."""
    label: str
    id_member: str
    arn_member: str
    version_member: str
    summaries_member: str
    settings: tuple[str, ...]
    """The request members a version is made of."""
    summary: tuple[str, ...]
    """The members of a list entry (besides ARN, id and version)."""


SCHEDULER_CONFIG = Kind(
    "cluster-scheduler-config", "Cluster policy", "ClusterSchedulerConfigId",
    "ClusterSchedulerConfigArn", "ClusterSchedulerConfigVersion",
    "ClusterSchedulerConfigSummaries", ("SchedulerConfig", "Description"),
    ("Name", "CreationTime", "LastModifiedTime", "Status", "ClusterArn"),
)
COMPUTE_QUOTA = Kind(
    "compute-quota", "Compute quota", "ComputeQuotaId", "ComputeQuotaArn", "ComputeQuotaVersion",
    "ComputeQuotaSummaries",
    ("ComputeQuotaConfig", "ComputeQuotaTarget", "ActivationState", "Description"),
    ("Name", "Status", "ClusterArn", "ComputeQuotaConfig", "ComputeQuotaTarget",
     "ActivationState", "CreationTime", "LastModifiedTime"),
)
KINDS = {k.resource: k for k in (SCHEDULER_CONFIG, COMPUTE_QUOTA)}

# ListX's SortBy -> the member it sorts on
_SORT_KEYS = {"Name": "Name", "CreationTime": "CreationTime", "Status": "Status",
              "ClusterArn": "ClusterArn"}


def addon_missing(eks_arn: str, status: str | None) -> str:
    """The FailureReason of a creation that finished without the task governance add-on."""
    name = eks_arn.rsplit("/", 1)[-1]
    state = "not installed" if status is None else f"{status}, not ACTIVE"
    return (f"The task governance add-on {TASK_GOVERNANCE_ADDON} is {state} on EKS cluster "
            f"'{name}'. Install the add-on and wait until it is ACTIVE, then delete this "
            "resource and create it again.")


def _range(value: Any, path: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or not 0 <= value <= 100):
        raise ValidationException(f"{path} must be an integer from 0 to 100, not {value!r}.")


class HyperPodGovernance(HyperPodEvents):
    """Scheduler configs and compute quotas, with their life cycles."""

    # --- time -------------------------------------------------------------------------------------

    def _tick_locked(self) -> int:
        self._settle_governance(self._now())
        return super()._tick_locked()

    def next_due(self) -> datetime | None:
        with self._lock:
            now = self._now()
            times = [r.pending[0] for r in self._governed.values()
                     if r.pending is not None and r.pending[0] > now]
            earlier = super().next_due()
            if earlier is not None:
                times.append(earlier)
            return min(times, default=None)

    def _settle_governance(self, now: datetime) -> None:
        for r in self._governed.values():
            if r.pending is None or r.pending[0] > now:
                continue
            status = r.pending[1]
            r.pending = None
            problem = (r.doomed or self._governance_problem(r)) if status == "Created" else None
            r.doomed = None
            if problem is not None:
                r.status, r.failure = "CreateFailed", problem
            else:
                r.status = status

    def _governance_problem(self, r: Governed) -> str | None:
        """Why a creation finishing now fails (None: it does not)."""
        cluster = self._clusters.get(r.cluster_arn)
        if cluster is None or cluster.status.at(self._now()) is None:
            return f"The cluster '{r.cluster_arn}' no longer exists."
        eks_arn = self._eks_arn_of(cluster)
        status = self._addon_lookup(eks_arn, TASK_GOVERNANCE_ADDON)
        return None if status == "ACTIVE" else addon_missing(eks_arn, status)

    # --- shared -----------------------------------------------------------------------------------

    @staticmethod
    def _eks_arn_of(c: Cluster) -> str:
        return str(((c.spec.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn", ""))

    def _governed_cluster(self, arn: str, now: datetime) -> Cluster:
        c = self._cluster(arn, now)
        if not self._eks_arn_of(c):
            raise ValidationException(
                f"Task governance is supported only for clusters orchestrated by Amazon EKS; "
                f"cluster '{c.name}' is not."
            )
        return c

    def _siblings(self, kind: Kind, cluster_arn: str,
                  skip: str | None = None) -> list[Governed]:
        """The resources of ``kind`` of a cluster that are not Deleted."""
        return [r for r in self._governed.values()
                if r.kind == kind.resource and r.cluster_arn == cluster_arn
                and r.status != GONE and r.ident != skip]

    def _find(self, kind: Kind, ident: str) -> Governed:
        r = self._governed.get(ident)
        if r is None or r.kind != kind.resource or r.status == GONE:
            raise ResourceNotFound(f"{kind.label} '{ident}' not found.")
        return r

    def _create(self, kind: Kind, req: dict[str, Any], cluster: Cluster,
                settings: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        ident = self._hex(12, kind.resource)
        caller = self._caller_arn()
        r = Governed(kind.resource, ident, self._arn(f"{kind.resource}/{ident}"), req["Name"],
                     cluster.arn, now, copy.deepcopy(req.get("Tags") or []),
                     [settings], "Creating", now, caller, caller,
                     pending=(now + self.durations.governance_create, "Created"))
        r.doomed = self._governance_problem(r)
        self._governed[ident] = r
        return {kind.arn_member: r.arn, kind.id_member: ident}

    def _update(self, kind: Kind, req: dict[str, Any],
                check: Callable[[Governed, dict[str, Any]], None]) -> dict[str, Any]:
        now = self._now()
        r = self._find(kind, req[kind.id_member])
        if r.status not in UPDATABLE:
            raise ConflictException(
                f"{kind.label} '{r.ident}' is {r.status}; it can be updated only when Created "
                "or Updated."
            )
        if req["TargetVersion"] != r.version:
            raise ConflictException(
                f"TargetVersion {req['TargetVersion']} is not the current version "
                f"{r.version} of {kind.label.lower()} '{r.ident}'."
            )
        settings = copy.deepcopy(r.current)
        for key in kind.settings:
            if key in req:
                settings[key] = copy.deepcopy(req[key])
        check(r, settings)
        r.versions.append(settings)
        r.status, r.failure, r.modified = "Updating", None, now
        r.modified_by = self._caller_arn()
        r.pending = (now + self.durations.governance_update, "Updated")
        return {kind.arn_member: r.arn, kind.version_member: r.version}

    def _delete(self, kind: Kind, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        r = self._find(kind, req[kind.id_member])
        if r.status != "Deleting":
            r.status, r.failure, r.doomed = "Deleting", None, None
            r.pending = (now + self.durations.governance_delete, GONE)
        return {}

    def _describe(self, kind: Kind, req: dict[str, Any]) -> dict[str, Any]:
        r = self._find(kind, req[kind.id_member])
        version = req.get(kind.version_member) or r.version
        if not 1 <= version <= r.version:
            raise ResourceNotFound(
                f"Version {version} of {kind.label.lower()} '{r.ident}' not found."
            )
        return self._described(kind, r, version)

    def _described(self, kind: Kind, r: Governed, version: int) -> dict[str, Any]:
        out: dict[str, Any] = {kind.arn_member: r.arn, kind.id_member: r.ident, "Name": r.name,
                               kind.version_member: version, "Status": r.status}
        if r.failure:
            out["FailureReason"] = r.failure
        out["ClusterArn"] = r.cluster_arn
        out.update(copy.deepcopy(r.versions[version - 1]))
        out["CreationTime"] = r.created
        if r.created_by:
            out["CreatedBy"] = {"IamIdentity": {"Arn": r.created_by}}
        out["LastModifiedTime"] = r.modified
        if r.modified_by:
            out["LastModifiedBy"] = {"IamIdentity": {"Arn": r.modified_by}}
        return out

    def _list(self, kind: Kind, req: dict[str, Any]) -> dict[str, Any]:
        rows: list[dict[str, Any]] = []
        for r in self._governed.values():
            if r.kind != kind.resource:
                continue
            wanted = req.get("Status")
            if (r.status != wanted) if wanted else (r.status == GONE):
                continue
            if req.get("NameContains") and req["NameContains"] not in r.name:
                continue
            if req.get("ClusterArn") and req["ClusterArn"] != r.cluster_arn:
                continue
            if req.get("CreatedAfter") and not r.created > req["CreatedAfter"]:
                continue
            if req.get("CreatedBefore") and not r.created < req["CreatedBefore"]:
                continue
            described = self._described(kind, r, r.version)
            rows.append({k: described[k] for k in (kind.arn_member, kind.id_member,
                                                   kind.version_member, *kind.summary)
                         if k in described})
        key = _SORT_KEYS.get(req.get("SortBy", ""), "CreationTime")
        rows.sort(key=lambda row: row[key])  # stable: creation order breaks ties
        if req.get("SortOrder", "Descending") == "Descending":
            rows.reverse()
        return _PAGES.listing(kind.summaries_member, rows, req)

    # --- cluster scheduler configs ----------------------------------------------------------------

    @staticmethod
    def _check_scheduler_config(config: dict[str, Any]) -> None:
        names: set[str] = set()
        for i, priority in enumerate(config.get("PriorityClasses") or []):
            _range(priority.get("Weight"), f"SchedulerConfig.PriorityClasses[{i}].Weight")
            if priority["Name"] in names:
                raise ValidationException(
                    f"SchedulerConfig.PriorityClasses[{i}].Name: priority class "
                    f"'{priority['Name']}' is given more than once."
                )
            names.add(priority["Name"])

    @operation
    def create_cluster_scheduler_config(self, req: dict[str, Any]) -> dict[str, Any]:
        c = self._governed_cluster(req["ClusterArn"], self._now())
        existing = self._siblings(SCHEDULER_CONFIG, c.arn)
        if existing:
            first = existing[0]
            raise ConflictException(
                f"Cluster '{c.name}' already has a cluster policy ('{first.name}', "
                f"{first.ident}, {first.status}); delete it before creating another."
            )
        self._check_scheduler_config(req["SchedulerConfig"])
        settings = {k: copy.deepcopy(req[k]) for k in SCHEDULER_CONFIG.settings if k in req}
        return self._create(SCHEDULER_CONFIG, req, c, settings)

    @operation
    def describe_cluster_scheduler_config(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._describe(SCHEDULER_CONFIG, req)

    @operation
    def list_cluster_scheduler_configs(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._list(SCHEDULER_CONFIG, req)

    @operation
    def update_cluster_scheduler_config(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._update(SCHEDULER_CONFIG, req, lambda _r, settings:
                            self._check_scheduler_config(settings.get("SchedulerConfig") or {}))

    @operation
    def delete_cluster_scheduler_config(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._delete(SCHEDULER_CONFIG, req)

    # --- compute quotas ---------------------------------------------------------------------------

    def _check_quota(self, c: Cluster, settings: dict[str, Any], name: str,
                     skip: str | None = None) -> None:
        target = settings["ComputeQuotaTarget"]
        team = target["TeamName"]
        if not compile_pattern(TEAM_NAME_PATTERN).fullmatch(team):
            raise ValidationException(
                f"ComputeQuotaTarget.TeamName '{team}' must match the pattern "
                f"{TEAM_NAME_PATTERN}."
            )
        _range(target.get("FairShareWeight"), "ComputeQuotaTarget.FairShareWeight")
        types = sorted({t for g in c.live_groups(self._now()) for t in (
            [g.spec["InstanceType"]] if g.spec.get("InstanceType") else
            (g.spec.get("InstanceRequirements") or {}).get("InstanceTypes", []))})
        config = settings.get("ComputeQuotaConfig") or {}
        sharing = config.get("ResourceSharingConfig") or {}
        for path, items in (("ComputeQuotaConfig.ComputeQuotaResources",
                             config.get("ComputeQuotaResources")),
                            ("ComputeQuotaConfig.ResourceSharingConfig.AbsoluteBorrowLimits",
                             sharing.get("AbsoluteBorrowLimits"))):
            for i, resource in enumerate(items or []):
                if resource["InstanceType"] not in types:
                    raise ValidationException(
                        f"{path}[{i}].InstanceType: {resource['InstanceType']} is not the "
                        f"instance type of an instance group of cluster '{c.name}' "
                        f"({', '.join(types) or 'none'})."
                    )
        for other in self._siblings(COMPUTE_QUOTA, c.arn, skip):
            if other.name == name:
                raise ConflictException(
                    f"A compute quota named '{name}' already exists in cluster '{c.name}' "
                    f"({other.ident})."
                )
            if other.current["ComputeQuotaTarget"]["TeamName"] == team:
                raise ConflictException(
                    f"Team '{team}' already has a compute quota in cluster '{c.name}' "
                    f"('{other.name}', {other.ident})."
                )

    @operation
    def create_compute_quota(self, req: dict[str, Any]) -> dict[str, Any]:
        c = self._governed_cluster(req["ClusterArn"], self._now())
        settings = {k: copy.deepcopy(req[k]) for k in COMPUTE_QUOTA.settings if k in req}
        settings.setdefault("ActivationState", "Enabled")
        self._check_quota(c, settings, req["Name"])
        return self._create(COMPUTE_QUOTA, req, c, settings)

    @operation
    def describe_compute_quota(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._describe(COMPUTE_QUOTA, req)

    @operation
    def list_compute_quotas(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._list(COMPUTE_QUOTA, req)

    @operation
    def update_compute_quota(self, req: dict[str, Any]) -> dict[str, Any]:
        def check(r: Governed, settings: dict[str, Any]) -> None:
            self._check_quota(self._governed_cluster(r.cluster_arn, self._now()), settings,
                              r.name, skip=r.ident)

        return self._update(COMPUTE_QUOTA, req, check)

    @operation
    def delete_compute_quota(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._delete(COMPUTE_QUOTA, req)

    # --- what IAM reads ---------------------------------------------------------------------------

    def governance_facts(self, ident_or_arn: str) -> tuple[str, dict[str, str]] | None:
        """A scheduler config's or compute quota's ARN and tags (by id or ARN), for
        authorising a request on it; None when there is none."""
        with self._lock:
            self._settle_governance(self._now())
            ident = ident_or_arn.rsplit("/", 1)[-1]
            r = self._governed.get(ident)
            if r is None or r.status == GONE:
                return None
            return r.arn, {t["Key"]: t["Value"] for t in r.tags}
