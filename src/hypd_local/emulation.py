"""The EKS and HyperPod emulators wired into a running local cloud.

`Emulation` owns the emulators, the injected faults and the Kubernetes API servers, and keeps
them consistent as virtual time passes:

* requests for emulated operations reach the emulators through `EmulatorMiddleware`, in front
  of moto's app (everything else still goes to moto);
* every clock advance (and a slow real-time ticker, for a server left running) calls `tick()`,
  which lets the emulators emit the events that came due and then syncs Kubernetes: an ACTIVE
  EKS cluster gets its API server (endpoint and CA returned by DescribeCluster), a deleted one
  loses it, HyperPod nodes join, change labels and leave as their instances do (with their
  instance group's KubernetesConfig labels and taints), and a HyperPod cluster whose
  AutoScaling is InService gets managed Karpenter's CRDs, whose objects' status the
  `kube.karpenter` controller keeps up to date.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from hypd_local.clock import VirtualClock
from hypd_local.emulator.eks import ADDON_ISSUE_CODES, EksEmulator
from hypd_local.emulator.eks_model import AccessDecision as EksAccess
from hypd_local.emulator.errors import AwsError
from hypd_local.emulator.faults import Faults
from hypd_local.emulator.hyperpod import AUTOSCALING_FAILS, Catalog, HyperPodEmulator
from hypd_local.emulator.hyperpod_iam import Role
from hypd_local.emulator.middleware import EmulatorMiddleware
from hypd_local.iam.enforce import Enforcer, current_caller
from hypd_local.iam.principals import Directory
from hypd_local.iam.world import World
from hypd_local.kube import AccessDecision, AccessPolicy, KubeApiRegistry, karpenter

LOG = logging.getLogger(__name__)


class Emit(Protocol):
    """Put an event on the default bus (the emulators call it by position or by keyword)."""

    def __call__(
        self,
        source: str,
        detail_type: str,
        detail: Mapping[str, Any],
        resources: list[str] | None = None,
    ) -> None: ...


AdminHandler = Callable[[Any], tuple[int, Any]]

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
TICK_INTERVAL_SECONDS = 1.0
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


@functools.cache
def _cluster_instance_types() -> tuple[str, ...]:
    """botocore's ``ClusterInstanceType`` enum, read once per process (the SageMaker model is
    large: reading it at every cloud's start cost a third of a second)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for("ClusterInstanceType").enum)


def ec2_catalog(region: str, base: Catalog | None = None) -> Catalog:
    """The HyperPod catalogue whose zones of ``region`` offer what moto's EC2 offers there.

    DescribeInstanceTypeOfferings is answered by moto from its own data; HyperPod's
    CreateCluster checks "the zone offers the type" against the emulator's catalogue. Both now
    read moto's data, so a type EC2 lists for a zone is one HyperPod accepts there (and the
    other way round). The candidates are botocore's ``ClusterInstanceType`` enum.
    """
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS, INSTANCE_TYPES

    candidates = _cluster_instance_types()
    offerings: dict[str, set[str]] = {}
    for offering in INSTANCE_TYPE_OFFERINGS["availability-zone"].get(region, []):
        offerings.setdefault(offering["Location"], set()).add(offering["InstanceType"])
    if not offerings:  # a Region moto has no data for: keep the seeded catalogue
        return base or Catalog.default()
    return (base or Catalog.default()).with_ec2_offerings(
        region, candidates, offerings, INSTANCE_TYPES
    )


class _WallClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class Emulation:
    def __init__(
        self,
        *,
        clock: VirtualClock,
        emit: Emit,
        account_id: str,
        region: str,
    ) -> None:
        self.clock = clock
        self.region = region
        self.account_id = account_id
        self.faults = Faults()
        self.directory = Directory(account_id, region)
        self.eks = EksEmulator(
            clock,
            cast(Any, emit),
            account_id,
            region,
            subnet_vpc=lambda s: self._subnet(s, "vpc_id"),
            caller_arn=self._caller_arn,
            subnet_zone=lambda s: self._subnet(s, "availability_zone"),
            region_zones=self._region_zones,
        )
        self.hyperpod = HyperPodEmulator(
            clock,
            cast(Any, emit),
            account_id,
            region,
            catalog=ec2_catalog(region),
            eks_lookup=self._eks_status,
            subnet_zone=lambda s: self._subnet(s, "availability_zone"),
            role_lookup=self._role,
        )
        self.enforcer = Enforcer(
            account_id=account_id, region=region, directory=self.directory,
            world=World(account_id, region, self.directory, eks=self.eks,
                        hyperpod=self.hyperpod),
            now=clock.now,
        )
        self.kube: KubeApiRegistry | None = None
        # EKS cluster -> joined node name -> the group config HyperPod applied to it
        self._joined: dict[str, dict[str, GroupConfig]] = {}
        self._tick_lock = threading.Lock()
        self._schedule_lock = threading.Lock()
        self._last_due: datetime | None = None
        self.schedule_version = 0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # ------------------------------------------------------------------ life cycle
    def wrap(self, app: Any) -> EmulatorMiddleware:
        return EmulatorMiddleware(
            app,
            emulators={"sagemaker": self.hyperpod, "eks": self.eks},
            faults=self.faults,
            region=self.region,
            account_id=self.account_id,
            after_dispatch=self.check_schedule,
            enforcer=self.enforcer,
        )

    def _caller_arn(self) -> str:
        """Who is calling the emulators now: the issued principal's session ARN, or the
        account's administrator (moto's default identity, as an IAM user)."""
        caller = current_caller()
        return caller.caller_arn if caller is not None else (
            f"arn:aws:iam::{self.account_id}:user/moto")

    def start(self, sts_endpoint: str) -> None:
        # Clients sign tokens with the real time: their age is judged on the wall clock.
        self.kube = KubeApiRegistry(self.clock, sts_endpoint=sts_endpoint, token_clock=_WallClock())
        self._unsubscribe = self.clock.subscribe(lambda _now: self.tick())
        self._stop.clear()
        self._ticker = threading.Thread(
            target=self._tick_forever, name="emulator-tick", daemon=True
        )
        self._ticker.start()

    def stop(self) -> None:
        self._stop.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._ticker is not None:
            self._ticker.join(timeout=5)
            self._ticker = None
        if self.kube is not None:
            self.kube.stop_all()
            self.kube = None
        self._joined.clear()

    def _tick_forever(self) -> None:
        # The clock also moves with real time; this makes events of a server left alone come due.
        while not self._stop.wait(TICK_INTERVAL_SECONDS):
            try:
                self.tick()
            except Exception:
                LOG.exception("emulator tick failed")

    # ------------------------------------------------------------------ time passes
    def tick(self, *, wait: bool = False) -> None:
        """Emit what came due and bring the Kubernetes side in line with the emulators.

        When another thread is ticking, return at once (it will see the same state), or, with
        ``wait``, tick again after it: then everything due by now has been emitted on return.
        """
        if not self._tick_lock.acquire(blocking=wait):
            return
        try:
            self.eks.tick()
            self.hyperpod.tick()
            if self.kube is not None:
                self._sync_kubernetes(self.kube)
        finally:
            self._tick_lock.release()
        self.check_schedule()

    def next_due(self) -> datetime | None:
        """The earliest scheduled change of either emulator strictly after now, or None."""
        times = [t for t in (self.eks.next_due(), self.hyperpod.next_due()) if t is not None]
        return min(times, default=None)

    def check_schedule(self) -> None:
        """Bump `schedule_version` and wake the clock's waiters if `next_due` changed.

        Called after every tick and every emulated request, so a task-token wait that found
        nothing scheduled notices a change scheduled later (it re-checks on the clock's poke
        without taking any emulator lock while it holds the clock's)."""
        due = self.next_due()
        with self._schedule_lock:
            if due == self._last_due:
                return
            self._last_due = due
            self.schedule_version += 1
        self.clock.poke()

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
        described = [self.hyperpod.describe_cluster({"ClusterName": summary["ClusterName"]})
                     for summary in self._hyperpod_clusters()]
        self._sync_nodes(kube, active, described)
        self._sync_karpenter(kube, active, described)

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
                    server.join_node(name, labels, config.taints, ready=status == "Running",
                                     addresses=addresses)
                else:
                    # what HyperPod put there and the group no longer declares goes away
                    dropped = {k: None for k in joined[name].labels if k not in labels}
                    server.update_node(name, labels={**dropped, **labels},
                                       taints=config.taints, remove_taints=joined[name].taints,
                                       ready=status == "Running")
                joined[name] = config
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

    # ------------------------------------------------------------------ admin routes
    def admin_routes(self) -> dict[tuple[str, str], AdminHandler]:
        """``/_local/faults/...`` endpoints for the emulators' own fault hooks.

        Each takes a JSON object, answers 201 ``{"injected": <what>, ...}``; 400
        ``{"message": ...}`` naming the field when the body is wrong; the status of the AWS error
        (e.g. 404) when the emulator refuses (unknown cluster, node or add-on).
        """

        def next_fails(
            injected: str, fail: Callable[[str | None, str], None], default: str
        ) -> AdminHandler:
            """A route that makes the next operation of a cluster (or of any) fail."""

            def handler(body: Any) -> tuple[int, Any]:
                fields = _fields(body, optional={"clusterName": str, "message": str})
                message = fields.get("message") or default
                fail(fields.get("clusterName"), message)
                return 201, {"injected": injected, "clusterName": fields.get("clusterName"),
                             "message": message}

            return handler

        def hyperpod_node_unhealthy(body: Any) -> tuple[int, Any]:
            fields = _fields(
                body,
                required={"clusterName": str, "nodeId": str},
                optional={"reason": str, "action": str, "repair": bool},
            )
            action = fields.get("action", "Replace")
            if action not in ("Reboot", "Replace"):
                raise _BadField("action", 'must be "Reboot" or "Replace"')
            reason = fields.get("reason") or "GPU health check failed"
            self.hyperpod.make_node_unhealthy(
                fields["clusterName"], fields["nodeId"], reason, action, fields.get("repair")
            )
            self.tick()
            return 201, {
                "injected": "hyperpod/node-unhealthy",
                "clusterName": fields["clusterName"],
                "nodeId": fields["nodeId"],
                "reason": reason,
                "action": action,
                "repair": fields.get("repair"),
            }

        def hyperpod_insufficient_capacity(body: Any) -> tuple[int, Any]:
            fields = _fields(
                body,
                required={"instanceType": str, "availabilityZone": str},
                optional={"enabled": bool},
            )
            enabled = fields.get("enabled", True)
            self.hyperpod.insufficient_capacity(
                fields["instanceType"], fields["availabilityZone"], enabled
            )
            self.tick()  # capacity back: continuous groups launched nodes; waits must see them
            return 201, {
                "injected": "hyperpod/insufficient-capacity",
                "instanceType": fields["instanceType"],
                "availabilityZone": fields["availabilityZone"],
                "enabled": enabled,
            }

        def eks_create_fails(body: Any) -> tuple[int, Any]:
            fields = _fields(body, optional={"name": str, "message": str})
            self.eks.fail_next_cluster(fields.get("name"), fields.get("message") or "")
            return 201, {
                "injected": "eks/create-fails",
                "name": fields.get("name"),
                "message": fields.get("message"),
            }

        def eks_unsupported_zones(body: Any) -> tuple[int, Any]:
            fields = _fields(body, required={"zones": list})
            zones = fields["zones"]
            if not all(isinstance(zone, str) and zone for zone in zones):
                raise _BadField("zones", "must be a list of zone names")
            self.eks.set_unsupported_zones(zones)
            return 201, {"injected": "eks/unsupported-zones", "zones": sorted(zones)}

        def eks_create_stalls(body: Any) -> tuple[int, Any]:
            fields = _fields(body, optional={"name": str, "seconds": int, "release": bool})
            if fields.get("release"):
                if "name" not in fields:
                    raise _BadField("name", "is required to release a stalled creation")
                self.eks.release_cluster(fields["name"])
            else:
                self.eks.stall_next_cluster(fields.get("name"), fields.get("seconds"))
            self.tick()
            return 201, {"injected": "eks/create-stalls", **fields}

        def eks_addon_stalls(body: Any) -> tuple[int, Any]:
            fields = _fields(
                body,
                required={"clusterName": str, "addonName": str},
                optional={"seconds": int, "release": bool},
            )
            if fields.get("release"):
                self.eks.release_addon(fields["clusterName"], fields["addonName"])
            else:
                self.eks.stall_addon(
                    fields["clusterName"], fields["addonName"], fields.get("seconds")
                )
            self.tick()
            return 201, {"injected": "eks/addon-stalls", **fields}

        def eks_addon_degraded(body: Any) -> tuple[int, Any]:
            fields = _fields(
                body,
                required={"clusterName": str, "addonName": str},
                optional={"issueCode": str, "message": str},
            )
            code = fields.get("issueCode", "InsufficientNumberOfReplicas")
            if code not in ADDON_ISSUE_CODES:
                raise _BadField("issueCode", f"must be one of {', '.join(ADDON_ISSUE_CODES)}")
            self.eks.degrade_addon(
                fields["clusterName"], fields["addonName"], code, fields.get("message") or ""
            )
            self.tick()
            return 201, {
                "injected": "eks/addon-degraded",
                "clusterName": fields["clusterName"],
                "addonName": fields["addonName"],
                "issueCode": code,
            }

        handlers: dict[str, AdminHandler] = {
            "hyperpod/create-fails": next_fails(
                "hyperpod/create-fails", self.hyperpod.fail_next_create,
                "Cluster creation failed: lifecycle script exited with a non-zero code."),
            "hyperpod/autoscaling-fails": next_fails(
                "hyperpod/autoscaling-fails", self.hyperpod.fail_next_autoscaling,
                AUTOSCALING_FAILS),
            "hyperpod/node-unhealthy": hyperpod_node_unhealthy,
            "hyperpod/insufficient-capacity": hyperpod_insufficient_capacity,
            "eks/create-fails": eks_create_fails,
            "eks/create-stalls": eks_create_stalls,
            "eks/unsupported-zones": eks_unsupported_zones,
            "eks/addon-stalls": eks_addon_stalls,
            "eks/addon-degraded": eks_addon_degraded,
        }
        return {
            ("POST", f"/_local/faults/{path}"): _guarded(handler)
            for path, handler in handlers.items()
        }

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


class _BadField(ValueError):
    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")


_TYPE_NAMES = {str: "a string", bool: "a boolean"}


def _fields(
    body: Any,
    required: Mapping[str, type] | None = None,
    optional: Mapping[str, type] | None = None,
) -> dict[str, Any]:
    """The body's fields, checked: an object, required fields present, types right, no others."""
    required = dict(required or {})
    optional = dict(optional or {})
    if body is None and not required:
        return {}
    if not isinstance(body, dict):
        raise _BadField("body", "expected a JSON object")
    unknown = sorted(set(body) - set(required) - set(optional))
    if unknown:
        expected = ", ".join([*required, *optional])
        raise _BadField(unknown[0], f"unknown field (expected {expected})")
    out: dict[str, Any] = {}
    for name, kind in {**required, **optional}.items():
        value = body.get(name)
        if value is None:
            if name in required:
                raise _BadField(name, "is required")
            continue
        if not isinstance(value, kind) or (kind is str and not value):
            raise _BadField(
                name,
                f"must be {_TYPE_NAMES.get(kind, kind.__name__)}"
                + (" (not empty)" if kind is str else ""),
            )
        out[name] = value
    return out


def _guarded(handler: AdminHandler) -> AdminHandler:
    """400 for a bad body, the AWS error's status for an emulator's refusal."""

    def run(body: Any) -> tuple[int, Any]:
        try:
            return handler(body)
        except _BadField as exc:
            return 400, {"message": str(exc)}
        except AwsError as exc:  # e.g. SageMaker's ResourceNotFound, which AWS sends as 400
            status = 404 if "NotFound" in exc.code else exc.status
            return status, {"message": exc.message, "code": exc.code}
        except ValueError as exc:
            return 400, {"message": str(exc)}

    return run


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
