"""HyperPod's tags and training plans: ListTags, AddTags, DeleteTags (of clusters, scheduler
configs and compute quotas), DescribeTrainingPlan, ListTrainingPlans,
SearchTrainingPlanOfferings, and the ARNs and tags IAM reads."""

from __future__ import annotations

import copy
import hashlib
from datetime import datetime, timedelta
from typing import Any

from hypd_local.emulator.errors import ResourceNotFound, ValidationException
from hypd_local.emulator.hyperpod_core import PAGES as _PAGES
from hypd_local.emulator.hyperpod_core import _Plan, _zone_id
from hypd_local.emulator.hyperpod_events import HyperPodEvents
from hypd_local.emulator.hyperpod_state import Cluster, Governed
from hypd_local.emulator.service import operation


class HyperPodPlans(HyperPodEvents):
    """Tags, training plans and their offerings."""

    # --- tags ---------------------------------------------------------------------------------

    def _tagged(self, arn: str, now: datetime) -> Cluster | Governed:
        """A cluster, or a task governance resource (scheduler config, compute quota)."""
        c = self._clusters.get(arn)
        if c is not None and c.status.at(now) is not None:
            return c
        governed = self._governed.get(arn.rsplit("/", 1)[-1])
        if governed is not None and governed.arn == arn and governed.status != "Deleted":
            return governed
        raise ResourceNotFound(f"Resource '{arn}' not found.")

    def cluster_facts(self, name_or_arn: str) -> tuple[str, dict[str, str]] | None:
        """A cluster's ARN and tags, for authorising a request on it; None when there is none
        (IAM then authorises the request against ``cluster/*``)."""
        with self._lock:
            now = self._now()
            for c in self._clusters.values():
                if name_or_arn in (c.name, c.arn) and c.status.at(now) is not None:
                    return c.arn, {t["Key"]: t["Value"] for t in c.tags}
        return None

    def cluster_eks_arn(self, name_or_arn: str) -> str | None:
        """The ARN of the EKS cluster orchestrating a cluster (None: none, or no cluster)."""
        with self._lock:
            now = self._now()
            for c in self._clusters.values():
                if name_or_arn in (c.name, c.arn) and c.status.at(now) is not None:
                    eks = ((c.spec.get("Orchestrator") or {}).get("Eks") or {})
                    return str(eks["ClusterArn"]) if eks.get("ClusterArn") else None
        return None

    def training_plan_arn(self, name_or_arn: str) -> str | None:
        with self._lock:
            for plan in self._plans.values():
                if name_or_arn in (plan.seed.name, plan.arn):
                    return plan.arn
        return None

    @operation
    def list_tags(self, req: dict[str, Any]) -> dict[str, Any]:
        c = self._tagged(req["ResourceArn"], self._now())
        return {"Tags": copy.deepcopy(c.tags)}

    @operation
    def add_tags(self, req: dict[str, Any]) -> dict[str, Any]:
        c = self._tagged(req["ResourceArn"], self._now())
        merged = {t["Key"]: t["Value"] for t in c.tags}
        merged.update({t["Key"]: t["Value"] for t in req["Tags"]})
        if len(merged) > 50:
            raise ValidationException("A resource can have at most 50 tags.")
        c.tags = [{"Key": k, "Value": v} for k, v in merged.items()]
        return {"Tags": copy.deepcopy(req["Tags"])}

    @operation
    def delete_tags(self, req: dict[str, Any]) -> dict[str, Any]:
        c = self._tagged(req["ResourceArn"], self._now())
        drop = set(req["TagKeys"])
        c.tags = [t for t in c.tags if t["Key"] not in drop]
        return {}

    # --- training plans -----------------------------------------------------------------------

    def _plan_summary(self, plan: _Plan, t: datetime, full: bool) -> dict[str, Any]:
        seed = plan.seed
        status = plan.status(t)
        in_use = self._plan_use(plan.arn, t)
        out: dict[str, Any] = {
            "TrainingPlanArn": plan.arn,
            "TrainingPlanName": seed.name,
            "Status": status,
            "DurationHours": seed.duration_hours,
            "DurationMinutes": 0,
            "StartTime": plan.start,
            "EndTime": plan.end,
            "UpfrontFee": seed.upfront_fee,
            "CurrencyCode": seed.currency_code,
            "TotalInstanceCount": seed.instance_count,
            "AvailableInstanceCount": max(seed.instance_count - in_use, 0),
            "InUseInstanceCount": in_use,
            "TargetResources": list(seed.target_resources),
            "ReservedCapacitySummaries": [{
                "ReservedCapacityArn": self._arn(f"reserved-capacity/{seed.name}-rc"),
                "ReservedCapacityType": "Instance",
                "InstanceType": seed.instance_type,
                "TotalInstanceCount": seed.instance_count,
                "Status": status,
                "AvailabilityZone": seed.availability_zone,
                "AvailabilityZoneId": _zone_id(seed.availability_zone),
                "DurationHours": seed.duration_hours,
                "DurationMinutes": 0,
                "StartTime": plan.start,
                "EndTime": plan.end,
            }],
        }
        if full:
            out["UnhealthyInstanceCount"] = 0
            out["AvailableSpareInstanceCount"] = 0
        return out

    @operation
    def describe_training_plan(self, req: dict[str, Any]) -> dict[str, Any]:
        ident = req["TrainingPlanName"]
        for plan in self._plans.values():
            if ident in (plan.seed.name, plan.arn):
                return self._plan_summary(plan, self._now(), True)
        raise ResourceNotFound(f"Training plan '{ident}' not found.")

    @operation
    def list_training_plans(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        rows = [self._plan_summary(p, now, False) for p in self._plans.values()]
        if req.get("StartTimeAfter"):
            rows = [r for r in rows if r["StartTime"] > req["StartTimeAfter"]]
        if req.get("StartTimeBefore"):
            rows = [r for r in rows if r["StartTime"] < req["StartTimeBefore"]]
        for f in req.get("Filters") or []:
            if f["Name"] == "Status":
                rows = [r for r in rows if r["Status"] == f["Value"]]
        key = {"TrainingPlanName": "TrainingPlanName", "Status": "Status"}.get(
            req.get("SortBy", ""), "StartTime"
        )
        rows.sort(key=lambda r: r[key])
        if req.get("SortOrder") == "Descending":
            rows.reverse()
        return _PAGES.listing("TrainingPlanSummaries", rows, req)

    @operation
    def search_training_plan_offerings(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        hours = int(req.get("DurationHours") or 24)
        count = int(req.get("InstanceCount") or 1)
        targets = list(req.get("TargetResources") or ["hyperpod-cluster"])
        found: list[dict[str, Any]] = []
        for seed in self.catalog.offerings:
            if seed.availability_zone[:-1] != self.region:
                continue
            if req.get("InstanceType") and seed.instance_type != req["InstanceType"]:
                continue
            if count > seed.max_count:
                continue
            start = now + seed.lead_time
            if req.get("StartTimeAfter") and req["StartTimeAfter"] > start:
                start = req["StartTimeAfter"]
            start = start.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
            end = start + timedelta(hours=hours)
            if req.get("EndTimeBefore") and end > req["EndTimeBefore"]:
                continue
            digest = hashlib.sha256(
                f"{seed.instance_type}|{seed.availability_zone}|{count}|{start}|{hours}".encode()
            ).hexdigest()
            offering_id = f"tpo-{digest[:24]}"
            offering: dict[str, Any] = {
                "TrainingPlanOfferingId": offering_id,
                "TargetResources": targets,
                "DurationHours": hours,
                "DurationMinutes": 0,
                "UpfrontFee": f"{seed.hourly_fee_per_instance * count * hours:.2f}",
                "CurrencyCode": seed.currency_code,
                "ReservedCapacityOfferings": [{
                    "ReservedCapacityType": "Instance",
                    "InstanceType": seed.instance_type,
                    "InstanceCount": count,
                    "AvailabilityZone": seed.availability_zone,
                    "DurationHours": hours,
                    "DurationMinutes": 0,
                    "StartTime": start,
                    "EndTime": end,
                }],
            }
            if req.get("StartTimeAfter"):
                offering["RequestedStartTimeAfter"] = req["StartTimeAfter"]
            if req.get("EndTimeBefore"):
                offering["RequestedEndTimeBefore"] = req["EndTimeBefore"]
            self._offerings[offering_id] = offering
            found.append(offering)
        return {"TrainingPlanOfferings": found}
