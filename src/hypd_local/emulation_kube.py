"""The Kubernetes side of the emulators: an ACTIVE EKS cluster's API server, HyperPod's nodes
joining, changing and leaving it with their instance group's labels and taints, managed
Karpenter's CRDs and status, the objects of EKS add-ons (`emulation_workloads`), the teams of
task governance's compute quotas (`emulation_teams`), the workloads of the training and
inference operators (`emulation_operators`, `emulation_endpoints`), and the emulators' state
read as their own clients would."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hypd_local.emulation_endpoints import INFERENCE_ADDON, InferenceOperatorSync
from hypd_local.emulation_operators import (
    TRAINING_ADDON,
    TrainingOperatorSync,
    operator_available,
)
from hypd_local.emulation_pods import Cluster
from hypd_local.emulation_teams import TeamSync
from hypd_local.emulation_workloads import AddonWorkloadSync
from hypd_local.emulator.eks import EksEmulator
from hypd_local.emulator.eks_model import AccessDecision as EksAccess
from hypd_local.emulator.errors import AwsError
from hypd_local.emulator.hyperpod import HyperPodEmulator
from hypd_local.emulator.hyperpod_iam import Role
from hypd_local.iam.principals import Directory
from hypd_local.kube import AccessDecision, AccessPolicy, KubeApiRegistry, karpenter

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"


ZONE_LABEL = "topology.kubernetes.io/zone"


REGION_LABEL = "topology.kubernetes.io/region"


# What manages the objects HyperPod writes into the Kubernetes API (managedFields' manager).
HYPERPOD_MANAGER = "sagemaker-hyperpod"


# ClusterKubernetesTaint Effect -> the Kubernetes taint effect.
TAINT_EFFECTS = {"NoSchedule": "NoSchedule", "PreferNoSchedule": "PreferNoSchedule",
                 "NoExecute": "NoExecute"}


@dataclass(frozen=True)
class GroupConfig:
    """An instance group's KubernetesConfig in Kubernetes terms: what HyperPod puts on (and
    has put on) its nodes."""

    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]

    @classmethod
    def of(cls, details: Mapping[str, Any] | None) -> GroupConfig:
        """From DescribeCluster's ``KubernetesConfig`` of a group (ClusterKubernetesConfigDetails:
        the Current* labels and taints, those HyperPod applies)."""
        details = details or {}
        taints = tuple(
            {"key": t["Key"], **({"value": t["Value"]} if t.get("Value") else {}),
             "effect": TAINT_EFFECTS[t["Effect"]]}
            for t in details.get("CurrentTaints") or []
        )
        return cls(dict(details.get("CurrentLabels") or {}), taints)


NO_CONFIG = GroupConfig({}, ())


def kube_access(decision: EksAccess | None) -> AccessDecision | None:
    """The EKS emulator's access decision in the Kubernetes API server's terms."""
    if decision is None:
        return None
    return AccessDecision(
        username=decision.username,
        groups=tuple(decision.groups),
        policies=tuple(
            AccessPolicy(p.policy_arn, tuple(p.namespaces) if p.scope_type == "namespace" else ())
            for p in decision.policies
        ),
    )


def iam_user_arn(caller_arn: str) -> str:
    """The ARN an access entry names for an STS caller ARN.

    moto's STS answers GetCallerIdentity for its default identity (the local cloud's fake
    credentials) with ``arn:aws:sts::<account>:user/moto``; AWS gives an IAM user's
    ``arn:aws:iam::<account>:user/<name>``, which is what the EKS emulator's creator entry and
    access entries name. Assumed-role ARNs pass through (the emulator maps them itself).
    """
    parts = caller_arn.split(":", 5)
    if len(parts) == 6 and parts[2] == "sts" and parts[5].startswith("user/"):
        return ":".join([parts[0], parts[1], "iam", "", parts[4], parts[5]])
    return caller_arn


class KubernetesSync(TeamSync, AddonWorkloadSync, TrainingOperatorSync, InferenceOperatorSync):
    """Keeps each EKS cluster's Kubernetes API in line with the emulators (`Emulation.tick`)."""

    region: str
    account_id: str
    eks: EksEmulator
    hyperpod: HyperPodEmulator
    directory: Directory
    _joined: dict[str, dict[str, tuple[GroupConfig, tuple[tuple[str, str], ...], bool]]]
    """EKS cluster -> joined node -> what was last written to it: its group's config, its
    labels and readiness (a node whose facts did not change is not written again)."""
    _workload_due: datetime | None

    def _sync_kubernetes(self, kube: KubeApiRegistry) -> None:
        active: set[str] = set()
        for name in self._eks_cluster_names():
            cluster = self.eks.describe_cluster({"name": name})["cluster"]
            if cluster["status"] not in ("ACTIVE", "UPDATING"):
                continue
            active.add(name)
            if name not in kube:
                url = kube.ensure(name, self._authorizer(name),
                                  kubernetes_version=cluster["version"],
                                  platform_version=cluster.get("platformVersion"))
                server = kube.get(name)
                assert server is not None
                self.eks.set_endpoint(name, url, server.certificate_authority_data)
        for name in kube.names():
            if name not in active:
                kube.remove(name)
                self._joined.pop(name, None)
                self._addon_namespaces.pop(name, None)
        self._sync_addon_workloads(kube, active)
        described = [self.hyperpod.describe_cluster({"ClusterName": summary["ClusterName"]})
                     for summary in self._hyperpod_clusters()]
        self._sync_nodes(kube, active, described)
        self._sync_karpenter(kube, active, described)
        self._sync_teams(kube, active, {c["ClusterArn"]: _eks_name(c) for c in described})
        self._sync_operators(kube, active)

    def _sync_operators(self, kube: KubeApiRegistry, active: set[str]) -> None:
        """The emulated operators of each cluster whose add-on runs (`emulation_operators`,
        `emulation_endpoints`), after the garbage collector; what they do next is due at
        `_workload_due`."""
        now = self.clock.now()
        seen: set[str] = set()
        due: list[datetime] = []
        for name in sorted(active):
            server = kube.get(name)
            if server is None:
                continue
            view = Cluster(server, now)
            view.collect_orphans()
            placed = self._addon_namespaces.get(name, {})
            for sync, addon in ((self._sync_jobs, TRAINING_ADDON),
                                (self._sync_inference, INFERENCE_ADDON)):
                running = addon in placed and operator_available(view, addon, placed[addon])
                uids, times = sync(view, name, running)
                seen |= uids
                due += times
        for memory in (self._attempts, self._progress):
            for gone in set(memory) - seen:
                del memory[gone]
        self._workload_due = min(due, default=None)

    def _sync_nodes(
        self, kube: KubeApiRegistry, active: set[str], described: list[dict[str, Any]]
    ) -> None:
        for cluster in described:
            eks_name = _eks_name(cluster)
            server = kube.get(eks_name) if eks_name in active else None
            if server is None:
                continue
            configs = {g["InstanceGroupName"]: GroupConfig.of(g.get("KubernetesConfig"))
                       for g in cluster.get("InstanceGroups") or []}
            joined = self._joined.setdefault(eks_name, {})
            seen: set[str] = set()
            for node in self._nodes(cluster["ClusterName"]):
                status = node["InstanceStatus"]["Status"]
                if status in ("Pending", "ShuttingDown", "NotFound"):
                    continue
                name = f"hyperpod-{node['InstanceId']}"
                seen.add(name)
                health = "Schedulable" if status == "Running" else "Unschedulable"
                config = configs.get(node["InstanceGroupName"], NO_CONFIG)
                labels = {
                    **config.labels,
                    "node.kubernetes.io/instance-type": node["InstanceType"],
                    "sagemaker.amazonaws.com/instance-group-name": node["InstanceGroupName"],
                    "sagemaker.amazonaws.com/compute-type": "hyperpod",
                    HEALTH_LABEL: health,
                }
                ready = status == "Running"
                applied = (config, tuple(sorted(labels.items())), ready)
                if joined.get(name) == applied:
                    continue  # nothing HyperPod says of the node changed since the last write
                if name not in joined:
                    details = self._node_details(cluster["ClusterName"], node["InstanceId"])
                    zone = (details.get("Placement") or {}).get("AvailabilityZone")
                    if zone:
                        labels[ZONE_LABEL] = str(zone)
                    labels[REGION_LABEL] = self.region
                    addresses = [{"type": kind, "address": str(details[key])}
                                 for kind, key in (("InternalIP", "PrivatePrimaryIp"),
                                                   ("InternalDNS", "PrivateDnsHostname"))
                                 if details.get(key)]
                    server.join_node(name, labels, config.taints, ready=ready,
                                     addresses=addresses)
                else:
                    # what HyperPod put there and the group no longer declares goes away
                    before = joined[name][0]
                    dropped = {k: None for k in before.labels if k not in labels}
                    server.update_node(name, labels={**dropped, **labels},
                                       taints=config.taints, remove_taints=before.taints,
                                       ready=ready)
                joined[name] = applied
            for gone in set(joined) - seen:
                server.remove_node(gone)
                del joined[gone]

    def _sync_karpenter(
        self, kube: KubeApiRegistry, active: set[str], described: list[dict[str, Any]]
    ) -> None:
        """Managed Karpenter's CRDs arrive when AutoScaling is InService (and stay, as on AWS,
        when it is disabled); its status controller sees the HyperPod cluster as it is now."""
        by_eks: dict[str, dict[str, Any]] = {}
        for cluster in described:
            current = by_eks.get(_eks_name(cluster))
            if current is None or current["ClusterStatus"] == "Deleting":
                by_eks[_eks_name(cluster)] = cluster
        for eks_name in sorted(active):
            server = kube.get(eks_name)
            if server is None:
                continue
            view = self._karpenter_view(by_eks[eks_name]) if eks_name in by_eks else None
            if view is not None and view.autoscaling_status == "InService":
                server.ensure_crds(karpenter.CRDS, HYPERPOD_MANAGER)
            server.observe_hyperpod(view)

    def _karpenter_view(self, cluster: dict[str, Any]) -> karpenter.HyperPodCluster:
        """The HyperPod cluster as managed Karpenter's status controller needs to know it."""
        cluster_subnets = (cluster.get("VpcConfig") or {}).get("Subnets") or []
        groups: dict[str, karpenter.InstanceGroup] = {}
        for group in cluster.get("InstanceGroups") or []:
            if group.get("Status") == "Deleting":
                continue
            types = ([group["InstanceType"]] if "InstanceType" in group else
                     (group.get("InstanceRequirements") or {}).get("DesiredInstanceTypes") or [])
            subnets = (group.get("OverrideVpcConfig") or {}).get("Subnets") or cluster_subnets
            name = group["InstanceGroupName"]
            groups[name] = karpenter.InstanceGroup(
                name,
                tuple(types),
                tuple(karpenter.Subnet(s, self._subnet(s, "availability_zone"),
                                       self._subnet(s, "availability_zone_id"))
                      for s in subnets),
                GroupConfig.of(group.get("KubernetesConfig")).labels,
            )
        status = (cluster.get("AutoScaling") or {}).get("Status")
        return karpenter.HyperPodCluster(cluster["ClusterName"], status, groups)

    def _authorizer(self, cluster_name: str) -> Callable[[str], AccessDecision | None]:
        def authorize(principal_arn: str) -> AccessDecision | None:
            return kube_access(self.eks.authorize(cluster_name, iam_user_arn(principal_arn)))

        return authorize

    # ------------------------------------------------------------------ reads
    def _eks_cluster_names(self) -> list[str]:
        return _all_pages(self.eks.list_clusters, {}, "nextToken", "clusters")

    def _hyperpod_clusters(self) -> list[dict[str, Any]]:
        return _all_pages(self.hyperpod.list_clusters, {}, "NextToken", "ClusterSummaries")

    def _nodes(self, cluster_name: str) -> list[dict[str, Any]]:
        return _all_pages(
            self.hyperpod.list_cluster_nodes,
            {"ClusterName": cluster_name},
            "NextToken",
            "ClusterNodeSummaries",
        )

    def _node_details(self, cluster_name: str, instance_id: str) -> dict[str, Any]:
        """DescribeClusterNode's NodeDetails ({} when the node is gone: it will not join)."""
        try:
            details: dict[str, Any] = self.hyperpod.describe_cluster_node(
                {"ClusterName": cluster_name, "NodeId": instance_id}
            )["NodeDetails"]
        except AwsError:
            return {}
        return details

    def _eks_status(self, arn: str) -> str | None:
        name = arn.rsplit("/", 1)[-1]
        try:
            return str(self.eks.describe_cluster({"name": name})["cluster"]["status"])
        except Exception:  # an unknown cluster is AWS's ResourceNotFoundException
            return None

    def _addon_status(self, eks_arn: str, addon: str) -> str | None:
        """An EKS add-on's status (DescribeAddon), None when it is not installed."""
        try:
            described = self.eks.describe_addon(
                {"clusterName": eks_arn.rsplit("/", 1)[-1], "addonName": addon})
        except AwsError:  # ResourceNotFoundException: no such cluster or add-on
            return None
        return str(described["addon"]["status"])

    def _role(self, arn: str) -> Role | None:
        """The IAM role ``arn`` as HyperPod sees it (trust, policies, boundary), or None."""
        record = self.directory.role(arn)
        if record is None:
            return None
        return Role(record.arn, record.trust_policy, record.policies, record.boundary)

    def _region_zones(self) -> list[str]:
        """The Region's zone names, as moto's EC2 describes them."""
        from moto.ec2.models import ec2_backends

        backend = ec2_backends[self.account_id][self.region]
        return sorted(zone.name for zone in backend.describe_availability_zones())

    def _subnet(self, subnet_id: str, attribute: str) -> str | None:
        from moto.ec2.models import ec2_backends

        try:
            subnet = ec2_backends[self.account_id][self.region].get_subnet(subnet_id)
        except Exception:  # moto's InvalidSubnetIdNotFound: AWS would say the same
            return None
        value = getattr(subnet, attribute, None)
        return str(value) if value else None


def _eks_name(cluster: Mapping[str, Any]) -> str:
    """The name of the EKS cluster a HyperPod cluster (DescribeCluster) is orchestrated by."""
    eks_arn = ((cluster.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn", "")
    return str(eks_arn).rsplit("/", 1)[-1]


def _all_pages(
    call: Callable[[dict[str, Any]], dict[str, Any]],
    request: dict[str, Any],
    token_key: str,
    items_key: str,
) -> list[Any]:
    """Every item of a paginated emulator listing (the emulators' own token member names)."""
    items: list[Any] = []
    token: str | None = None
    while True:
        page = call({**request, token_key: token} if token else dict(request))
        items += page.get(items_key, [])
        token = page.get(token_key)
        if not token:
            return items
