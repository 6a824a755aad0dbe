"""HyperPod nodes: ListClusterNodes, DescribeClusterNode, the batch node actions (delete,
reboot, replace) and UpdateClusterSoftware."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime
from typing import Any

from hypd_local.emulator.errors import ConflictException, ResourceNotFound, ValidationException
from hypd_local.emulator.hyperpod_core import PAGES as _PAGES
from hypd_local.emulator.hyperpod_core import _zone_id
from hypd_local.emulator.hyperpod_events import HyperPodEvents
from hypd_local.emulator.hyperpod_state import Cluster, Node
from hypd_local.emulator.service import operation


class HyperPodNodes(HyperPodEvents):
    """The node operations."""

    def _node_summary(self, node: Node, t: datetime, logical: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "InstanceGroupName": node.group,
            "InstanceId": node.instance_id,
            "InstanceType": node.instance_type,
            "LaunchTime": node.launch_time,
            "InstanceStatus": self._instance_status(node, t),
            "PrivateDnsHostname": self._dns(node),
        }
        if logical and node.logical_id:
            out["NodeLogicalId"] = node.logical_id
        updated = node.software.at(t)
        if updated is not None:
            out["LastSoftwareUpdateTime"] = updated
        return out

    def _dns(self, node: Node) -> str:
        return f"ip-{node.ip.replace('.', '-')}.{self.region}.compute.internal"

    def _instance_status(self, node: Node, t: datetime) -> dict[str, Any]:
        status: dict[str, Any] = {"Status": node.status.at(t)}
        message = node.message.at(t)
        if message:
            status["Message"] = message
        return status

    @operation
    def list_cluster_nodes(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        nodes = c.live_nodes(now)
        if req.get("InstanceGroupNameContains"):
            nodes = [n for n in nodes if req["InstanceGroupNameContains"] in n.group]
        if req.get("CreationTimeAfter"):
            nodes = [n for n in nodes if n.launch_time > req["CreationTimeAfter"]]
        if req.get("CreationTimeBefore"):
            nodes = [n for n in nodes if n.launch_time < req["CreationTimeBefore"]]
        if req.get("SortBy") == "NAME":
            nodes.sort(key=lambda n: (n.group, n.instance_id))
        else:
            nodes.sort(key=lambda n: n.launch_time)
        if req.get("SortOrder") == "Descending":
            nodes.reverse()
        rows = [self._node_summary(n, now, bool(req.get("IncludeNodeLogicalIds"))) for n in nodes]
        return _PAGES.listing("ClusterNodeSummaries", rows, req)

    @operation
    def describe_cluster_node(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        ident = req.get("NodeId") or req.get("NodeLogicalId")
        if not ident:
            raise ValidationException("Either NodeId or NodeLogicalId must be specified.")
        node = self._node(c, ident, now)
        if node is None:
            raise ResourceNotFound(f"Node '{ident}' not found in cluster '{c.name}'.")
        g = c.groups[node.group]
        out = self._node_summary(node, now, True)
        out["PrivatePrimaryIp"] = node.ip
        out["Placement"] = {
            "AvailabilityZone": node.zone,
            "AvailabilityZoneId": _zone_id(node.zone),
        }
        for key in ("LifeCycleConfig", "OverrideVpcConfig", "ThreadsPerCore",
                    "InstanceStorageConfigs"):
            if key in g.spec:
                out[key] = copy.deepcopy(g.spec[key])
        k8s = g.spec.get("KubernetesConfig")
        if k8s:
            out["KubernetesConfig"] = {
                **({"CurrentLabels": dict(k8s["Labels"]), "DesiredLabels": dict(k8s["Labels"])}
                   if "Labels" in k8s else {}),
                **({"CurrentTaints": copy.deepcopy(k8s["Taints"]),
                    "DesiredTaints": copy.deepcopy(k8s["Taints"])} if "Taints" in k8s else {}),
            }
        out["CapacityType"] = (
            "Spot" if "Spot" in (g.spec.get("CapacityRequirements") or {}) else "OnDemand"
        )
        if "NetworkInterface" in g.spec:
            out["NetworkInterface"] = copy.deepcopy(g.spec["NetworkInterface"])
        return {"NodeDetails": out}

    def _batch(
        self,
        req: dict[str, Any],
        action: Callable[[Cluster, Node, datetime], None],
        allowed: set[str],
        not_found: str,
        bad_status: str,
        code_key: str,
    ) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        if not req.get("NodeIds") and not req.get("NodeLogicalIds"):
            raise ValidationException("Either NodeIds or NodeLogicalIds must be specified.")
        ok: list[str] = []
        failed: list[dict[str, Any]] = []
        ok_logical: list[str] = []
        failed_logical: list[dict[str, Any]] = []
        for key, ids in (("NodeId", req.get("NodeIds") or []),
                         ("NodeLogicalId", req.get("NodeLogicalIds") or [])):
            good = ok if key == "NodeId" else ok_logical
            bad = failed if key == "NodeId" else failed_logical
            for ident in dict.fromkeys(ids):
                node = self._node(c, ident, now)
                if node is None:
                    bad.append({key: ident, code_key: not_found,
                                "Message": f"Node '{ident}' was not found in cluster '{c.name}'."})
                    continue
                status = node.status.at(now)
                if status not in allowed:
                    bad.append({key: ident, code_key: bad_status,
                                "Message": f"Node '{ident}' is in {status} status."})
                    continue
                action(c, node, now)
                good.append(ident)
        out: dict[str, Any] = {}
        if ok:
            out["Successful"] = ok
        if failed:
            out["Failed"] = failed
        if ok_logical:
            out["SuccessfulNodeLogicalIds"] = ok_logical
        if failed_logical:
            out["FailedNodeLogicalIds"] = failed_logical
        return out

    @operation
    def batch_delete_cluster_nodes(self, req: dict[str, Any]) -> dict[str, Any]:
        def delete(c: Cluster, node: Node, now: datetime) -> None:
            g = c.groups[node.group]
            g.target.schedule(now, self._next_seq, (now, max((g.target.at(now) or 0) - 1, 0)))
            self._terminate(node, now)

        return self._batch(req, delete, {"Running", "Failure", "Pending",
                                         "DeepHealthCheckInProgress"},
                           "NodeIdNotFound", "InvalidNodeStatus", "Code")

    @operation
    def batch_reboot_cluster_nodes(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._batch(req, self._reboot, {"Running", "Failure"},
                           "InstanceIdNotFound", "InvalidInstanceStatus", "ErrorCode")

    @operation
    def batch_replace_cluster_nodes(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._batch(req, self._replace, {"Running", "Failure"},
                           "InstanceIdNotFound", "InvalidInstanceStatus", "ErrorCode")

    @operation
    def update_cluster_software(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        status = c.status.at(now)
        if status != "InService":
            raise ConflictException(
                f"Cluster '{c.name}' is in {status} status; its software can only be updated "
                "when InService."
            )
        live = {g.name: g for g in c.live_groups(now)}
        wanted = [s["InstanceGroupName"] for s in req.get("InstanceGroups") or []] or list(live)
        for name in wanted:
            if name not in live:
                raise ValidationException(
                    f"Instance group '{name}' does not exist in cluster '{c.name}'."
                )
        end = now + self.durations.software_update
        seq = self._next_seq
        for name in wanted:
            g = live[name]
            if "ImageId" in req:
                g.spec["_CurrentImageId"] = g.spec.get("ImageId", "default")
                g.spec["ImageId"] = req["ImageId"]
            g.status.schedule(now, seq, (now, "SystemUpdating"), (end, "InService"))
            for node in c.live_nodes(now):
                if node.group == name and node.status.at(now) == "Running":
                    node.status.schedule(now, seq, (now, "SystemUpdating"), (end, "Running"))
                    node.software.schedule(now, seq, (end, end))
        c.status.schedule(now, seq, (now, "SystemUpdating"), (end, "InService"))
        return {"ClusterArn": c.arn}
