"""HyperPod clusters: CreateCluster, DescribeCluster, ListClusters, DeleteCluster and
UpdateCluster (instance groups added, scaled, changed or deleted; AutoScaling enabled or
disabled; TieredStorageConfig, for EKS-orchestrated clusters only, reported once the update
that changes it is done; a capacity shortage rolled back, or retried by continuous
provisioning)."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from hypd_local.emulator.errors import ConflictException, ResourceInUse, ValidationException
from hypd_local.emulator.hyperpod_checks import HyperPodChecks
from hypd_local.emulator.hyperpod_core import PAGES as _PAGES
from hypd_local.emulator.hyperpod_iam import Role, autoscaling_role_problem
from hypd_local.emulator.hyperpod_state import Cluster, Group, Node, Notice
from hypd_local.emulator.service import operation

_NO_RESTRICTED = "RestrictedInstanceGroups are not supported by this emulator."
# Create-time choices an UpdateCluster group spec may omit (they are kept, not reset).
_KEPT_ON_UPDATE = ("InstanceType", "InstanceRequirements", "ThreadsPerCore",
                   "CapacityRequirements", "NetworkInterface", "TrainingPlanArn", "ImageId",
                   "_CurrentImageId")


class HyperPodClusters(HyperPodChecks):
    """The cluster operations."""

    @operation
    def create_cluster(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        name = req["ClusterName"]
        if any(c.name == name and c.status.at(now) is not None for c in self._clusters.values()):
            raise ResourceInUse(f"Cluster with name '{name}' already exists.")
        groups = req.get("InstanceGroups") or []
        if not groups and not req.get("RestrictedInstanceGroups"):
            raise ValidationException("At least one instance group must be specified.")
        if req.get("RestrictedInstanceGroups"):
            raise ValidationException(_NO_RESTRICTED)
        names = [g["InstanceGroupName"] for g in groups]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValidationException(f"Duplicate instance group names: {', '.join(dupes)}.")
        self._check_eks(req.get("Orchestrator"))
        self._check_tiered_storage(req.get("TieredStorageConfig"), req.get("Orchestrator"))
        continuous = req.get("NodeProvisioningMode") == "Continuous"
        autoscaling = req.get("AutoScaling")
        enabling = autoscaling is not None and autoscaling["Mode"] == "Enable"
        role = (
            self._autoscaling_role(req.get("NodeProvisioningMode"), req.get("ClusterRole"),
                                   req.get("NodeRecovery", "Automatic"))
            if enabling else None
        )
        vpc = req.get("VpcConfig")
        resolved = [self._check_group(spec, vpc, now) for spec in groups]
        self._check_capacity([(None, s, t) for s, (t, _z) in zip(groups, resolved, strict=True)],
                             now)

        arn = self._arn(f"cluster/{self._hex(12, name)}")
        spec: dict[str, Any] = {
            k: copy.deepcopy(req[k])
            for k in ("VpcConfig", "Orchestrator", "NodeRecovery", "NodeProvisioningMode",
                      "ClusterRole")
            if k in req
        }
        c = Cluster(name, arn, now, spec, copy.deepcopy(req.get("Tags") or []))
        self._clusters[arn] = c
        seq = self._next_seq
        c.status.schedule(now, seq, (now, "Creating"))
        if "TieredStorageConfig" in req:
            c.tiered_storage.schedule(now, seq, (now, copy.deepcopy(req["TieredStorageConfig"])))
        fail = self._fail_next.take(name, None) or self._execution_role_problem(groups, spec)
        d = self.durations
        for gspec, (itype, zone) in zip(groups, resolved, strict=True):
            g = Group(gspec["InstanceGroupName"], copy.deepcopy(gspec), itype, zone)
            g.status.schedule(now, seq, (now, "Creating"))
            g.target.schedule(now, seq, (now, gspec["InstanceCount"]))
            c.groups[g.name] = g
        short = [g for g in c.groups.values() if self._capacity_short(g)]
        short_names = {g.name for g in short}
        if fail is None and short and not continuous:
            fail = self._ice_message(short[0])
        ready = now + d.cluster_create
        launched: list[Node] = []
        for g in c.groups.values():
            if g.name in short_names:
                if continuous:
                    c.notices.append(Notice(now + d.capacity_failure, self._next_seq(), "Error",
                                            self._ice_message(g), g.name))
                continue
            before = set(c.nodes)
            end = self._launch(c, g, g.target.at(now) or 0, now)
            launched += [c.nodes[i] for i in c.nodes if i not in before]
            if not continuous:
                ready = max(ready, end)
        if fail is not None:
            at = now + d.cluster_create
            for node in launched:
                node.status.schedule(at, self._next_seq, (at, "ShuttingDown"),
                                     (at + d.node_terminate, None))
            for g in c.groups.values():
                g.status.schedule(now, self._next_seq, (at, "Failed"))
            c.failure.schedule(now, self._next_seq, (at, fail))
            c.status.schedule(now, self._next_seq, (at, "Failed"))
            if autoscaling is not None and enabling:
                c.autoscaling = dict(autoscaling)
                c.autoscaling_status.schedule(
                    now, self._next_seq, (now, "Creating"), (at, "Failed")
                )
                c.autoscaling_failure.schedule(now, self._next_seq, (at, fail))
            return {"ClusterArn": arn}
        if autoscaling is not None and enabling:
            ready = max(ready, self._enable_autoscaling(c, autoscaling, role, now))
        seq = self._next_seq
        for g in c.groups.values():
            g.status.schedule(now, seq, (ready, "InService"))
        c.status.schedule(now, seq, (ready, "InService"))
        return {"ClusterArn": arn}

    def _enable_autoscaling(
        self, c: Cluster, autoscaling: dict[str, Any], role: Role | None, now: datetime
    ) -> datetime:
        """AutoScaling goes Creating, then InService; or Failed with a FailureMessage when a
        failure was injected or the cluster role fails HyperPod's checks (judged now). Returns
        when it settles."""
        at = now + self.durations.autoscaling_enable
        problem = self._fail_autoscaling.take(c.name, None)
        if problem is None and role is not None:
            problem = autoscaling_role_problem(role, c.arn, {t["Key"]: t["Value"]
                                                             for t in c.tags})
        c.autoscaling = dict(autoscaling)
        seq = self._next_seq
        c.autoscaling_status.schedule(
            now, seq, (now, "Creating"), (at, "InService" if problem is None else "Failed")
        )
        c.autoscaling_failure.schedule(now, seq, (now, None), *([(at, problem)] if problem else []))
        return at

    @operation
    def describe_cluster(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        return self._describe_at(self._cluster(req["ClusterName"], now), now)

    @operation
    def list_clusters(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        rows = []
        for c in self._clusters.values():
            status = c.status.at(now)
            if status is None:
                continue
            if req.get("NameContains") and req["NameContains"] not in c.name:
                continue
            if req.get("CreationTimeAfter") and not c.created > req["CreationTimeAfter"]:
                continue
            if req.get("CreationTimeBefore") and not c.created < req["CreationTimeBefore"]:
                continue
            plans = sorted({g.spec["TrainingPlanArn"] for g in c.live_groups(now)
                            if "TrainingPlanArn" in g.spec})
            if req.get("TrainingPlanArn") and req["TrainingPlanArn"] not in plans:
                continue
            row: dict[str, Any] = {
                "ClusterArn": c.arn,
                "ClusterName": c.name,
                "CreationTime": c.created,
                "ClusterStatus": status,
            }
            if plans:
                row["TrainingPlanArns"] = plans
            rows.append(row)
        if req.get("SortBy") == "NAME":
            rows.sort(key=lambda r: r["ClusterName"])
        else:
            rows.sort(key=lambda r: r["CreationTime"])  # stable: creation order breaks ties
        if req.get("SortOrder") == "Descending":
            rows.reverse()
        return _PAGES.listing("ClusterSummaries", rows, req)

    @operation
    def delete_cluster(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        status = c.status.at(now)
        if status not in ("InService", "Failed"):
            raise ConflictException(
                f"Cluster '{c.name}' is in {status} status and cannot be deleted; wait until it "
                "is InService or Failed."
            )
        d = self.durations
        end = now + d.cluster_delete
        seq = self._next_seq
        for node in c.live_nodes(now):
            if node.status.at(now) != "ShuttingDown":
                self._terminate(node, now)
        for g in c.live_groups(now):
            g.status.schedule(now, seq, (now, "Deleting"), (end, None))
        if c.autoscaling is not None and c.autoscaling_status.at(now) is not None:
            c.autoscaling_status.schedule(now, seq, (now, "Deleting"))
            c.autoscaling_failure.schedule(now, seq, (now, None))
        c.status.schedule(now, seq, (now, "Deleting"), (end, None))
        return {"ClusterArn": c.arn}

    @operation
    def update_cluster(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        status = c.status.at(now)
        if status != "InService":
            raise ConflictException(
                f"Cluster '{c.name}' is in {status} status; it can only be updated when InService."
            )
        if req.get("RestrictedInstanceGroups") or req.get("RestrictedInstanceGroupsConfig"):
            raise ValidationException(_NO_RESTRICTED)
        new_eks = ((req.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
        old_eks = ((c.spec.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
        if new_eks is not None and new_eks != old_eks:
            raise ValidationException(
                "Orchestrator.Eks.ClusterArn cannot be updated: the EKS cluster of a HyperPod "
                "cluster is immutable."
            )
        specs = req.get("InstanceGroups") or []
        to_delete = list(dict.fromkeys(req.get("InstanceGroupsToDelete") or []))
        live = {g.name: g for g in c.live_groups(now)}
        names = [s["InstanceGroupName"] for s in specs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValidationException(f"Duplicate instance group names: {', '.join(dupes)}.")
        for name in to_delete:
            if name not in live:
                raise ValidationException(
                    f"InstanceGroupsToDelete: instance group '{name}' does not exist in cluster "
                    f"'{c.name}'."
                )
            if name in names:
                raise ValidationException(
                    f"Instance group '{name}' cannot be both updated and deleted."
                )
        if to_delete and len(to_delete) == len(live) and not [n for n in names if n not in live]:
            raise ValidationException("A cluster must keep at least one instance group.")
        # the cluster-level settings after the update
        mode = req.get("NodeProvisioningMode", c.spec.get("NodeProvisioningMode"))
        role_arn = req.get("ClusterRole", c.spec.get("ClusterRole"))
        recovery = req.get("NodeRecovery", c.spec.get("NodeRecovery", "Automatic"))
        enabled = c.autoscaling is not None and c.autoscaling.get("Mode") == "Enable"
        autoscaling = req.get("AutoScaling")
        role: Role | None = None
        if autoscaling is not None and autoscaling["Mode"] == "Enable":
            role = self._autoscaling_role(mode, role_arn, recovery)
        elif enabled and autoscaling is None and recovery != "Automatic":
            raise ValidationException(
                "NodeRecovery must stay Automatic while AutoScaling is enabled; disable "
                "AutoScaling first."
            )
        if (
            "ClusterRole" in req
            and req["ClusterRole"] != c.spec.get("ClusterRole")
            and enabled
        ):
            raise ValidationException(
                "ClusterRole cannot be changed while AutoScaling is enabled; disable AutoScaling "
                "first."
            )
        self._check_tiered_storage(req.get("TieredStorageConfig"), c.spec.get("Orchestrator"))
        vpc = c.spec.get("VpcConfig")
        changes: list[tuple[str | None, dict[str, Any], str]] = []
        resolved: dict[str, tuple[str, str]] = {}
        merged_specs: list[dict[str, Any]] = []
        for given in specs:
            name = given["InstanceGroupName"]
            old = live.get(name)
            spec = copy.deepcopy(given)
            if old is not None:
                self._check_immutable(old, given)
                for key in _KEPT_ON_UPDATE:
                    if key in old.spec and key not in spec:
                        spec[key] = copy.deepcopy(old.spec[key])
            merged_specs.append(spec)
            itype, zone = self._check_group(spec, vpc, now)
            if old is not None:
                itype, zone = old.instance_type, old.zone
            resolved[name] = (itype, zone)
            changes.append((c.arn, spec, itype))
        for name in to_delete:
            gone = live[name]
            changes.append((c.arn, {**gone.spec, "InstanceCount": 0}, gone.instance_type))
        self._check_capacity(changes, now)

        # apply
        d = self.durations
        seq = self._next_seq
        for key in ("NodeRecovery", "NodeProvisioningMode", "ClusterRole"):
            if key in req:
                c.spec[key] = copy.deepcopy(req[key])
        c.failure.schedule(now, seq, (now, None))
        c.status.schedule(now, seq, (now, "Updating"))
        ready = now + d.cluster_update
        rollback: list[tuple[Group, int, bool]] = []  # (group, old target, added)
        for merged in merged_specs:
            name = merged["InstanceGroupName"]
            itype, zone = resolved[name]
            old = live.get(name)
            count = merged["InstanceCount"]
            if old is None:
                g = Group(name, merged, itype, zone)
                c.groups[name] = g
                g.status.schedule(now, seq, (now, "Creating"))
                g.target.schedule(now, seq, (now, count))
                before = 0
            else:
                g = old
                g.spec = merged
                before = g.target.at(now) or 0
                g.target.schedule(now, seq, (now, count))
                g.status.schedule(now, seq, (now, "Updating"))
            group_ready = now + d.cluster_update
            if count > before:
                if self._capacity_short(g):
                    if c.continuous:
                        c.notices.append(Notice(now + d.capacity_failure, self._next_seq(),
                                                "Error", self._ice_message(g), g.name))
                    else:
                        rollback.append((g, before, old is None))
                else:
                    group_ready = max(group_ready, self._launch(c, g, count - before, now))
            elif count < before:
                up = [n for n in c.live_nodes(now)
                      if n.group == name and n.status.at(now) != "ShuttingDown"]
                for node in list(reversed(up))[: before - count]:
                    group_ready = max(group_ready, self._terminate(node, now))
            if c.continuous and not rollback:
                group_ready = now + d.cluster_update
            g.status.schedule(now, self._next_seq, (group_ready, "InService"))
            ready = max(ready, group_ready)
        if "TieredStorageConfig" in req:
            # the daemon is installed or removed on every node: DescribeCluster reports the
            # old config until the update is done
            at = now + d.tiered_storage_update
            c.tiered_storage.schedule(now, seq, (at, copy.deepcopy(req["TieredStorageConfig"])))
            ready = max(ready, at)
        for name in to_delete:
            g = live[name]
            end = now + d.group_delete
            for node in c.live_nodes(now):
                if node.group == name and node.status.at(now) != "ShuttingDown":
                    self._terminate(node, now)
            g.status.schedule(now, seq, (now, "Deleting"), (end, None))
            g.target.schedule(now, seq, (now, 0))
            ready = max(ready, end)
        if autoscaling is not None:
            retry = c.autoscaling_status.at(now) == "Failed"
            if autoscaling["Mode"] == "Enable" and (not enabled or retry):
                ready = max(ready, self._enable_autoscaling(c, autoscaling, role, now))
            elif autoscaling["Mode"] == "Disable" and enabled:
                c.autoscaling = dict(autoscaling)
                end = now + d.autoscaling_disable
                c.autoscaling_status.schedule(now, seq, (now, "Deleting"), (end, None))
                c.autoscaling_failure.schedule(now, seq, (now, None))
                ready = max(ready, end)
        if rollback:
            at = now + d.capacity_failure
            back = at + d.node_terminate
            c.failure.schedule(now, self._next_seq, (at, self._ice_message(rollback[0][0])))
            for g, old_target, added in rollback:
                if added:
                    g.status.schedule(now, self._next_seq, (at, "Deleting"), (back, None))
                else:
                    g.target.schedule(now, self._next_seq, (at, old_target))
                    g.status.schedule(now, self._next_seq, (back, "InService"))
            c.status.schedule(now, self._next_seq, (at, "RollingBack"),
                              (max(ready, back), "InService"))
            return {"ClusterArn": c.arn}
        c.status.schedule(now, self._next_seq, (ready, "InService"))
        return {"ClusterArn": c.arn}
